"""Dreamed trajectories: the world model's predicted screens, chained, as records that say they were dreamed.

    python -m environments.desktop.dream steps --out dream-steps.jsonl          # real screen, action, predicted next
    python -m environments.desktop.dream rollouts --out dreamed.jsonl [--records FILE] [--horizon 10] [--write-readme]
    python -m environments.desktop.dream report                                 # README table from the result file

The world model is worldmodel_predict.EditModel ("learnt edits") learnt from the train split's transitions (the
train tasks, seeds 1-10, all anchors, drift none/low/high: what README's world-model table trains on; or
`--train` a tuples file). `steps` writes single-step robustness data: for each real held-out transition (the dev
and test tasks, seeds 1000-1004) its screen, its action, the real next screen and the dreamed one (a perturbed
screen: what the model gets wrong is what a policy must stay robust to). `rollouts` starts from real opening
screens and applies each record's actions to the model's own last prediction, never looking at the real screen
again, and writes each as a canonical record with header.meta.dreamed = true and the world model's name; its
steps carry no state hashes, and environments.replay refuses it (EnvError "dreamed"). It also measures how far a
dreamed rollout stays faithful: per step k, the share of rollouts whose dreamed screen equals the real replay's
screen after the same k actions (the tree exactly), for the learnt model and for "no change".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from environments.desktop.worldmodel import anchor_records, read_records, read_tuples, record_transitions
from environments.desktop.worldmodel_eval import Predictor
from environments.desktop.worldmodel_predict import EditModel, NoChange
from environments.desktop.worldmodel_text import tree_text
from environments.records import Header, Record, ToolCallDict
from environments.stats import write_between_markers
from environments.trajectory import make_step, new_record

STEP_FORMAT = "desktop-dream-step/1"
TRAIN_TASKS, HELD_OUT_TASKS = ("move-files", "reply-mail", "change-setting"), ("edit-cell", "schedule-event", "buy-cheapest", "errand")
DRIFTS = ("none", "low", "high")
RESULT = Path(__file__).resolve().parents[2] / "training" / "results" / "desktop-dream" / "fidelity.json"
README_PATH = Path(__file__).parent / "README.md"
TABLE_START, TABLE_END = "<!-- dream:start -->", "<!-- dream:end -->"


def train_model(tuples: Iterable[dict[str, Any]] | None = None) -> EditModel:
    """The learnt-edits model from `tuples`, or from the train split's anchor episodes played here."""
    if tuples is None:
        records = anchor_records(TRAIN_TASKS, range(1, 11), DRIFTS, ("oracle", "cli-preferring", "gui-only", "random-valid"))
        tuples = (t for r in records for t in record_transitions(r))
    return EditModel.learn(tuples)


def held_out_records(seeds: Iterable[int] = range(1000, 1005), anchors: Iterable[str] = ("gui-only", "random-valid")) -> list[Record]:
    """Episodes of the held-out tasks: the GUI anchors, whose actions change screens (the shell's seldom do)."""
    return list(anchor_records(HELD_OUT_TASKS, seeds, DRIFTS, anchors))


def dream_steps(model: Predictor, records: Iterable[Record]) -> Iterable[dict[str, Any]]:
    for record in records:
        for t in record_transitions(record):
            dreamed = model.predict(t["tree"], t["action"])
            yield {
                "format": STEP_FORMAT,
                "world_model": model.name,
                **{k: t[k] for k in ("task", "seed", "drift", "policy", "step", "action")},
                "tree": t["tree"],
                "real_next_tree": t["next_tree"],
                "dreamed_next_tree": dreamed,
                "exact": dreamed == t["next_tree"],
            }


def rollout(model: Predictor, transitions: list[dict[str, Any]], horizon: int) -> tuple[list[dict[str, Any]], list[bool]]:
    """The dreamed screens after each of the first `horizon` actions, from the first real screen, and per step
    whether the dream equals the real screen there."""
    dreamed, matches, tree = [], [], transitions[0]["tree"] if transitions else None
    for t in transitions[:horizon]:
        tree = model.predict(tree, t["action"])
        dreamed.append(tree)
        matches.append(tree == t["next_tree"])
    return dreamed, matches


def dreamed_record(model: Predictor, source: Record, transitions: list[dict[str, Any]], dreamed: list[dict[str, Any]]) -> Record:
    """A canonical record of the dream: the real opening screen, then each action answered by the dreamed screen."""
    h = source["header"]
    header: Header = {
        "env": "desktop",
        "task": h["task"],
        "seed": h.get("seed"),
        "options": h.get("options") or {},
        "source": "upload",
        "policy": {"name": f"dream:{(h.get('policy') or {}).get('name', '')}", "kind": "external"},
        "meta": {
            "dreamed": True,
            "world_model": model.name,
            "dreamed_from": {"policy": (h.get("policy") or {}).get("name"), "steps": [t["step"] for t in transitions[: len(dreamed)]]},
        },
    }
    steps = [make_step(index=0, source="env", message=tree_text(transitions[0]["tree"]))]
    for i, (t, tree) in enumerate(zip(transitions, dreamed, strict=False), 1):
        call: ToolCallDict = {"id": f"d{i}", "name": t["action"]["name"], "arguments": t["action"]["arguments"]}
        steps.append(
            make_step(
                index=i,
                source="agent",
                tool_calls=[call],
                results=[{"call_id": call["id"], "content": {"screen": tree_text(tree), "dreamed": True}, "is_error": False}],
            )
        )
    return new_record(header=header, steps=steps)


def fidelity(models: list[Predictor], records: list[Record], horizon: int) -> tuple[dict[str, Any], list[Record]]:
    """Per model and step k: rollouts that reached k, and the share whose dreamed screen equals the real one there;
    and the dreamed records of the first model."""
    counts = {m.name: [[0, 0] for _ in range(horizon)] for m in models}
    dreams = []
    for record in records:
        transitions = list(record_transitions(record))
        if not transitions:
            continue
        for number, model in enumerate(models):
            dreamed, matches = rollout(model, transitions, horizon)
            for k, ok in enumerate(matches):
                counts[model.name][k][0] += 1
                counts[model.name][k][1] += ok
            if number == 0:
                dreams.append(dreamed_record(model, record, transitions, dreamed))
    by_k = {
        name: [{"k": k + 1, "n": n, "exact": hits / n if n else None} for k, (n, hits) in enumerate(rows)] for name, rows in counts.items()
    }
    return {"horizon": horizon, "records": len(records), "by_k": by_k}, dreams


def table(result: dict[str, Any]) -> str:
    names = list(result["by_k"])
    lines = [
        "| step k | rollouts | " + " | ".join(f"exact: {n}" for n in names) + " |",
        "| ---: | ---: | " + " | ".join("---:" for _ in names) + " |",
    ]
    for k in range(result["horizon"]):
        rows = [result["by_k"][n][k] for n in names]
        if not rows[0]["n"]:
            break
        lines.append(f"| {k + 1} | {rows[0]['n']} | " + " | ".join(f"{r['exact']:.3f}" for r in rows) + " |")
    return "\n".join(lines)


def readme_section(path: Path = RESULT) -> str:
    result = json.loads(path.read_text())
    c = result["config"]
    return (
        f"{result['fidelity']['records']} held-out episodes ({', '.join(c['anchors'])}; tasks {', '.join(c['tasks'])}; seeds "
        f"{c['seeds'][0]}-{c['seeds'][-1]}; drift {', '.join(c['drifts'])}), each dreamed from its real opening screen along its own "
        "actions; exact: the dreamed tree equals the real replay's after k actions. Made by `python -m environments.desktop.dream "
        f"rollouts` (then `report`) from `training/results/desktop-dream/fidelity.json`.\n\n{table(result['fidelity'])}"
    )


def write_readme(path: Path = RESULT) -> None:
    write_between_markers(README_PATH, TABLE_START, TABLE_END, readme_section(path))


def write_jsonl(path: str, rows: Iterable[Mapping[str, Any]]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, sort_keys=True, separators=(",", ":")) + "\n")
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    from environments.desktop.explore import provenance
    from environments.seeds import seeds_parse

    parser = argparse.ArgumentParser(prog="python -m environments.desktop.dream", description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("steps", "rollouts"):
        p = sub.add_parser(name)
        p.add_argument("--train", help="world-model tuples to learn from (default: the train split's anchor episodes, played here)")
        p.add_argument("--records", help="trajectory records to dream along (default: held-out anchor episodes)")
        p.add_argument("--seeds", type=seeds_parse, default=list(range(1000, 1005)), help="held-out seeds when --records is not given")
        p.add_argument("--out", required=True)
        if name == "rollouts":
            p.add_argument("--horizon", type=int, default=10)
            p.add_argument("--write-readme", action="store_true", help="write the fidelity result file and README table")
    sub.add_parser("report", help="rewrite README.md's dream table from the committed result file")
    args = parser.parse_args(argv)
    if args.command == "report":
        write_readme()
        print(readme_section())
        return 0
    if args.command == "rollouts" and not 1 <= args.horizon <= 80:
        parser.error(f"--horizon {args.horizon}: must be 1 to 80 (the desktop's step limit)")
    started = time.process_time()
    model = train_model(read_tuples(args.train) if args.train else None)
    records = read_records(args.records) if args.records else held_out_records(args.seeds)
    if args.command == "steps":
        print(json.dumps({"steps": write_jsonl(args.out, dream_steps(model, records))}))
        return 0
    result, dreams = fidelity([model, NoChange()], records, args.horizon)
    print(json.dumps({"dreamed": write_jsonl(args.out, dreams)}))
    if args.write_readme:
        config = {
            "tasks": list(HELD_OUT_TASKS),
            "seeds": args.seeds,
            "drifts": list(DRIFTS),
            "anchors": ["gui-only", "random-valid"],
            "records": args.records,
            "train": args.train or "anchor episodes: train tasks, seeds 1-10, drift none/low/high",
        }
        data = {
            "experiment": "desktop-dream",
            "config": config,
            "fidelity": result,
            "cpu_s": round(time.process_time() - started, 1),
            **provenance(),
        }
        RESULT.parent.mkdir(parents=True, exist_ok=True)
        RESULT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        write_readme()
    print(table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
