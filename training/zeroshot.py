"""What a model does in every environment before any training here: the zero-shot table, beside the anchors.

    python -m training.zeroshot run                      # SmolLM2 from the store + anchors, every suite, resumable
    python -m training.zeroshot run --model smol-base    # a zoo model (or a folder) instead
    python -m training.zeroshot report                   # training/README.md's table, rebuilt from the result files

Each (player, suite) is one result file, `training/results/zeroshot/<player>/<suite>.json`: the config, the seeds,
the model and the hash of its weights' source, the commit, per-episode outcomes, the summary (valid-call rate,
pass rate with a Wilson interval, mean composite with a seeded percentile bootstrap, n), wall time and machine.
A finished file is reused, so an interrupted run continues where it stopped; `report` reads only the files, names
a missing or malformed one and leaves it out (never rewriting the table from partial data silently: the rows it
could not read are listed under the table).

A suite is a few held-out tasks of one environment (its test split, or toolgym's held-out seeds), a turn cap the
CPU affords, and greedy decoding in the model's prompt style (tools listed compactly, results cut). Anchors play
the same jobs under the same cap: do-nothing, the environment's default scripted anchor, and the oracle where
there is one.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from environments.records import Record, header_score
from environments.registry import env_meta, list_tasks
from environments.stats import wilson
from training.provenance import commit, machine, write_result

REPO_ROOT = Path(__file__).resolve().parents[1]
RESULTS = REPO_ROOT / "training" / "results" / "zeroshot"
README = REPO_ROOT / "training" / "README.md"
BEGIN, END = "<!-- results:zeroshot:begin -->", "<!-- results:zeroshot:end -->"
HELD_OUT_SEED = 100_000  # training.zoo.corpus.HELD_OUT_SEED: no SFT demonstration reaches these seeds


@dataclass(frozen=True)
class Suite:
    name: str
    tasks: tuple[str, ...]  # task ids, played round-robin over the seeds
    episodes: int
    max_turns: int
    max_new_tokens: int = 96

    def jobs(self) -> list[tuple[str, int]]:
        return [(self.tasks[i % len(self.tasks)], HELD_OUT_SEED + i) for i in range(self.episodes)]


def _split(env: str, split: str) -> tuple[str, ...]:
    return tuple(t.id for t in list_tasks(env) if t.split == split)


def suites() -> list[Suite]:
    return [
        Suite("toolgym", ("toolgym/lookup", "toolgym/chain"), 16, 4, 64),
        Suite("phantom", ("phantom/lookup-test", "phantom/bridge-test"), 12, 8),
        Suite("storebench-short", _split("storebench-short", "test"), 8, 40),  # the anchors need 19-33 calls for a 2-3 day store
        Suite("servicedesk", _split("servicedesk", "test"), 10, 12),
        Suite("optionsdesk", ("optionsdesk/oos-short",), 6, 24),
        Suite("workdesk", _split("workdesk", "test"), 4, 12),
        Suite("desktop", _split("desktop", "test"), 4, 12),
    ]


# --- statistics --------------------------------------------------------------------------------------------------


def bootstrap(values: list[float], *, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """A seeded percentile bootstrap of the mean: inside the values' own range, as a bounded score's interval must be."""
    if not values:
        return (0.0, 0.0)
    rng = random.Random(seed)
    means = sorted(sum(rng.choices(values, k=len(values))) / len(values) for _ in range(resamples))
    return (means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1])


def summarise(episodes: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(episodes)
    valid = sum(e["valid_calls"] for e in episodes)
    attempts = valid + sum(e["invalid_calls"] for e in episodes)
    passed = sum(1.0 for e in episodes if e["passed"])
    composites = [e["composite"] for e in episodes]
    return {
        "n": n,
        "valid_call_rate": valid / attempts if attempts else None,
        "valid_call_ci": list(wilson(valid, attempts)) if attempts else None,
        "calls": attempts,
        "pass_rate": passed / n if n else 0.0,
        "pass_ci": list(wilson(passed, n)),
        "composite": sum(composites) / n if n else 0.0,
        "composite_ci": list(bootstrap(composites)),
    }


# --- playing -----------------------------------------------------------------------------------------------------


def _episode_row(record: Record) -> dict[str, Any]:
    header = record["header"]
    metrics = header.get("metrics") or {}
    agent = [s for s in record["steps"] if s.get("source") == "agent"]
    valid = metrics.get("valid_calls", sum(1 for s in agent if s.get("tool_calls") and not (s.get("meta") or {}).get("invalid_action")))
    invalid = metrics.get("invalid_calls", sum(1 for s in agent if (s.get("meta") or {}).get("invalid_action")))
    return {
        "task": f"{header['env']}/{header['task']}",
        "seed": header["seed"],
        "composite": float(header_score(header)["composite"]),
        "passed": bool(header_score(header)["passed"]),
        "valid_calls": int(valid),
        "invalid_calls": int(invalid),
        "turns": len(agent),
        "termination_reason": header.get("termination_reason"),
    }


def play_model(path: str, suite: Suite) -> list[dict[str, Any]]:
    from training.modeling import load_model
    from training.sampling import rollout_episodes
    from training.zoo import prompt_style_for

    model, tokenizer = load_model(path, trainable=False)
    style = prompt_style_for(path)
    context = int(getattr(model.config, "max_position_embeddings", 8192))
    records = rollout_episodes(
        model,
        tokenizer,
        suite.jobs(),
        max_turns=suite.max_turns,
        max_new_tokens=suite.max_new_tokens,
        temperature=0.0,
        style=style,
        max_prompt_tokens=context - suite.max_new_tokens,
    )
    return [_episode_row(r) for r in records]


def anchors_of(env: str) -> list[str]:
    meta = env_meta(env)
    wanted = ["do-nothing", meta.default_anchor, "oracle"]
    return [name for i, name in enumerate(wanted) if name and name in meta.anchors and name not in wanted[:i]]


def play_anchor(name: str, suite: Suite) -> list[dict[str, Any]]:
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode

    rows = []
    for task, seed in suite.jobs():  # through the runner, so an environment's user (a service-desk caller) speaks its turns
        env = make(task, seed)
        rows.append(_episode_row(run_episode(env, make_policy(name, env, seed), max_steps=suite.max_turns)))
    return rows


# --- result files ------------------------------------------------------------------------------------------------


def model_identity(player: str, path: str | None) -> dict[str, Any]:
    """What the player is and which weights: the store manifest's GGUF hash, or the zoo's config hash."""
    if path is None:
        return {"kind": "anchor", "name": player}
    from training.model_store import read_manifest
    from training.zoo import manifest as zoo_manifest

    store = read_manifest(Path(path))
    if store:
        return {
            "kind": "model",
            "name": player,
            "source_sha256": store["source"]["sha256"],
            "conversion_version": store.get("conversion_version"),
        }
    zoo = zoo_manifest(path)
    return {"kind": "model", "name": player, "zoo_hash": zoo.get("hash"), "base_model": zoo.get("base_model")}


def run(player: str, path: str | None, only: list[str] | None = None, say: Any = print) -> list[Path]:
    written = []
    for suite in suites():
        if only and suite.name not in only:
            continue
        env = suite.tasks[0].split("/")[0]
        names = [player] if path is not None else anchors_of(env)
        for name in names:
            out = RESULTS / name / f"{suite.name}.json"
            if out.exists():
                say(f"{name} / {suite.name}: done ({out.relative_to(REPO_ROOT)})")
                continue
            started = time.time()
            episodes = play_model(path, suite) if path is not None else play_anchor(name, suite)
            result = {
                "experiment": "zeroshot",
                "player": model_identity(name, path),
                "suite": asdict(suite),
                "seeds": suite.jobs(),
                "greedy": True,
                "commit": commit(),
                "episodes": episodes,
                "summary": summarise(episodes),
                "wall_s": round(time.time() - started, 1),
                "machine": machine(),
            }
            write_result(out, result)  # a killed run leaves no half-written result
            say(f"{name} / {suite.name}: {result['summary']} ({result['wall_s']} s)")
            written.append(out)
    return written


# --- the table ---------------------------------------------------------------------------------------------------


def load_results(root: Path = RESULTS) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
    """{(player, suite): result} from every file, and a line per file that could not be read (named, skipped)."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    problems = []
    for path in sorted(root.glob("*/*.json")):
        try:
            data = json.loads(path.read_text())
            summary = data["summary"]
            _ = (summary["n"], summary["pass_rate"], summary["composite"], summary["composite_ci"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"{path.relative_to(root)}: skipped ({type(exc).__name__}: {exc})")
            continue
        found[(path.parent.name, path.stem)] = data
    return found, problems


def _rate(value: float | None, ci: list[float] | None) -> str:
    return "—" if value is None or ci is None else f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def table(root: Path = RESULTS) -> str:
    results, problems = load_results(root)
    players = sorted({p for p, _ in results}, key=lambda p: (results_kind(results, p) == "anchor", p))
    lines = ["| suite | player | n | valid calls | pass rate | composite | wall |", "|---|---|---|---|---|---|---|"]
    for suite in [s.name for s in suites()]:
        for player in players:
            data = results.get((player, suite))
            if data is None:
                continue
            s = data["summary"]
            lines.append(
                f"| {suite} | {player} | {s['n']} | {_rate(s['valid_call_rate'], s['valid_call_ci'])} | "
                f"{_rate(s['pass_rate'], s['pass_ci'])} | {_rate(s['composite'], s['composite_ci'])} | {data['wall_s']:.0f} s |"
            )
    notes = [f"- {line}" for line in problems]
    return "\n".join(lines + ([""] + notes if notes else []))


def results_kind(results: dict[tuple[str, str], dict[str, Any]], player: str) -> str:
    return next((d["player"]["kind"] for (p, _), d in results.items() if p == player), "anchor")


def readme_section(root: Path = RESULTS) -> str:
    return (
        f"Greedy, held-out seeds (from {HELD_OUT_SEED}), turn caps per suite as in `training/zeroshot.py`; intervals: Wilson for "
        "rates, seeded percentile bootstrap for the mean composite; n episodes each. Made by `python -m training.zeroshot run` "
        f"(then `report`) from the files under `training/results/zeroshot/`.\n\n{table(root)}"
    )


def write_readme(path: Path = README, root: Path = RESULTS) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"error: {path} has no {BEGIN} ... {END} block to write the table into")
    head, rest = text.split(BEGIN, 1)
    path.write_text(f"{head}{BEGIN}\n{readme_section(root)}\n{END}{rest.split(END, 1)[1]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.zeroshot", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    play = sub.add_parser("run", help="play the model and the anchors on every suite (finished results are reused)")
    play.add_argument("--model", default="smollm2-135m-instruct", help="a packaged model of the store, a zoo spec, or a folder")
    play.add_argument("--suites", nargs="*", default=None, help="only these suites")
    play.add_argument("--no-anchors", action="store_true")
    sub.add_parser("report", help="rewrite training/README.md's zero-shot table from the result files")
    args = parser.parse_args(argv)
    if args.command == "report":
        write_readme()
        print(table())
        return 0
    from training.config import ConfigError
    from training.model_store import PACKAGED, ModelStoreError, installed_path
    from training.zoo import resolve

    try:
        path = str(installed_path(args.model)) if args.model in PACKAGED else str(resolve(args.model))
    except (ConfigError, ModelStoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    unknown = sorted(set(args.suites or []) - {s.name for s in suites()})
    if unknown:
        print(f"error: unknown suite(s) {', '.join(unknown)}; choose from {', '.join(s.name for s in suites())}", file=sys.stderr)
        return 2
    if not args.no_anchors:
        run("anchors", None, args.suites)
    run(args.model, path, args.suites)
    write_readme()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
