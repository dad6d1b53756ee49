"""World-model data: (screen, action, next screen) tuples from desktop episodes, one JSON object a line.

    python -m environments.desktop.worldmodel export --tasks move-files,reply-mail --seeds 1-20 --drift none,high --out train.jsonl
    python -m environments.desktop.worldmodel export --records episodes.jsonl --out tuples.jsonl   # recorded episodes
    python -m environments.desktop.worldmodel evaluate --train train.jsonl --test test.jsonl [--write-readme]
    python -m environments.desktop.worldmodel sft --tuples train.jsonl --out records.jsonl        # text world-model SFT

Every tuple comes from a replay (environments.replay.replay_steps) of a trajectory record: an anchor's episode
played here, or a recorded one. The replay verifies the state-hash chain step by step, so each tuple is what the
environment did; a record that diverges contributes the steps before the divergence and is named in the summary.
Screens are environments.desktop.widgets.accessibility_tree dicts. With the renderer (environments.desktop.render,
imported only when screenshots are wanted) each tuple also carries both screenshots' sha256 (and with --png the
PNG bytes, base64); where it cannot be imported the export is tree-only, the hashes are null and the summary says
`"renderer": "missing"`. The format is in README.md.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any, cast

from environments.desktop.env import DesktopEnv
from environments.desktop.widgets import accessibility_tree
from environments.desktop.worldmodel_eval import evaluate, table_markdown, write_readme
from environments.desktop.worldmodel_text import sft_record
from environments.records import Record
from environments.replay import ReplayDivergence, env_for_header, replay_steps
from environments.roles import is_runner_call
from environments.trajectory import validate_record

FORMAT = "desktop-worldmodel/1"
ANCHORS = ("oracle", "cli-preferring", "gui-only", "random-valid")


def load_renderer() -> ModuleType | None:
    """environments.desktop.render when it and Pillow are installed here, else None (a tree-only export)."""
    try:
        return importlib.import_module("environments.desktop.render")
    except ModuleNotFoundError:
        return None


def _screen(env: DesktopEnv, renderer: ModuleType | None, png: bool) -> dict[str, Any]:
    shot: dict[str, Any] = {"tree": accessibility_tree(env.screen()), "sha256": None}
    if renderer is not None:
        data: bytes = renderer.render_png(env.screen())
        shot["sha256"] = hashlib.sha256(data).hexdigest()
        if png:
            shot["png"] = base64.b64encode(data).decode("ascii")
    return shot


def record_transitions(record: Record, *, renderer: ModuleType | None = None, png: bool = False) -> Iterator[dict[str, Any]]:
    """The record's transitions, one per step with exactly one environment call (steps of several calls, and
    invalid actions, which reached no environment, give none). Raises ReplayDivergence where the replay leaves
    the record."""
    header = record["header"]
    if header.get("env") != "desktop":
        raise ValueError(f"record of {header.get('env')!r}: world-model tuples come from desktop episodes")
    env = env_for_header(header)
    assert isinstance(env, DesktopEnv)
    base = {
        "format": FORMAT,
        "task": header["task"],
        "seed": header.get("seed"),
        "drift": env.drift.level,
        "policy": (header.get("policy") or {}).get("name", ""),
        "source": header.get("source", ""),
    }
    before: dict[str, Any] = {}
    for step, _ in replay_steps(env, record["steps"]):
        if step["source"] == "env":
            before = _screen(env, renderer, png)
            continue
        calls = [c for c in step.get("tool_calls") or [] if not is_runner_call(c)]
        if len(calls) != 1 or (step.get("meta") or {}).get("invalid_action"):
            continue
        after = _screen(env, renderer, png)
        result: Mapping[str, Any] = next(iter(step.get("results") or []), {})
        yield {
            **base,
            "step": step["index"],
            "action": {"name": calls[0]["name"], "arguments": calls[0].get("arguments") or {}},
            "is_error": bool(result.get("is_error")),
            "tree": before["tree"],
            "next_tree": after["tree"],
            "screenshot_sha256": before["sha256"],
            "next_screenshot_sha256": after["sha256"],
            **({"screenshot_png": before["png"], "next_screenshot_png": after["png"]} if "png" in after else {}),
        }
        before = after


def sft_records(record: Record) -> Iterator[Record]:
    """The record's transitions as world-model SFT records (worldmodel_text.sft_record): EnvMeta.world_model."""
    for t in record_transitions(record, renderer=None):
        yield sft_record(t)


def anchor_records(tasks: Iterable[str], seeds: Iterable[int], drifts: Iterable[str], anchors: Iterable[str]) -> Iterator[Record]:
    """One episode per (anchor, task, drift level, seed), in that nesting order."""
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode

    seeds, drifts = list(seeds), list(drifts)
    for anchor in anchors:
        for task in tasks:
            for drift in drifts:
                for seed in seeds:
                    env = make(f"desktop/{task}", seed=seed, options={"drift": drift} if drift != "none" else None)
                    yield run_episode(env, make_policy(anchor, env, seed))


def export(records: Iterable[Record], out: Any, *, screenshots: bool = True, png: bool = False) -> dict[str, Any]:
    """Write every record's tuples to `out` (a text handle), one sorted-key JSON line each; returns the summary."""
    renderer = load_renderer() if screenshots else None
    summary: dict[str, Any] = {
        "format": FORMAT,
        "episodes": 0,
        "tuples": 0,
        "diverged": [],
        "renderer": "used" if renderer else ("missing" if screenshots else "off"),
    }
    for number, record in enumerate(records):
        summary["episodes"] += 1
        try:
            for t in record_transitions(record, renderer=renderer, png=png):
                out.write(json.dumps(t, sort_keys=True, separators=(",", ":")) + "\n")
                summary["tuples"] += 1
        except ReplayDivergence as exc:
            summary["diverged"].append({"record": number, "step": exc.index})
    return summary


def read_jsonl(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_records(path: str) -> list[Record]:
    """A JSONL file of trajectory records, each checked against the canonical shape before any is replayed."""
    records = read_jsonl(path)
    for line, record in enumerate(records, 1):
        if problems := validate_record(record):
            raise ValueError(f"{path} line {line}: not a trajectory record ({problems[0]})")
    return cast(list[Record], records)  # each one validated just above


def read_tuples(path: str) -> list[dict[str, Any]]:
    """A tuples file, each line checked: the format and the fields the predictors read."""
    tuples = read_jsonl(path)
    for line, t in enumerate(tuples, 1):
        if not isinstance(t, dict) or t.get("format") != FORMAT:
            raise ValueError(f"{path} line {line}: not a {FORMAT} tuple (format={t.get('format') if isinstance(t, dict) else t!r})")
        if missing := [k for k in ("task", "action", "tree", "next_tree") if k not in t]:
            raise ValueError(f"{path} line {line}: missing {', '.join(missing)}")
    return tuples


def _parser() -> argparse.ArgumentParser:
    from environments.desktop.calibration import TASKS
    from environments.desktop.drift import LEVELS
    from environments.seeds import comma_choices as choices
    from environments.seeds import seeds_parse

    parser = argparse.ArgumentParser(prog="python -m environments.desktop.worldmodel", description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="(tree, action, next tree) tuples of anchor episodes or of recorded ones")
    ex.add_argument("--tasks", type=choices(TASKS, "task"), default=list(TASKS), help="comma-separated task keys")
    ex.add_argument("--seeds", type=seeds_parse, default=[1000], help="e.g. 1-20 or 1000,1001")
    ex.add_argument("--drift", type=choices(LEVELS, "drift level"), default=["none"], help="comma-separated levels")
    ex.add_argument("--anchors", type=choices(ANCHORS, "anchor"), default=list(ANCHORS), help="comma-separated anchors")
    ex.add_argument("--records", help="a JSONL file of desktop trajectory records to replay instead of playing anchors")
    ex.add_argument("--out", required=True, help="the JSONL file to write")
    ex.add_argument("--no-screenshots", action="store_true", help="tree-only, even where a renderer is installed")
    ex.add_argument("--png", action="store_true", help="also store both screenshots' PNG bytes (base64)")
    ev = sub.add_parser("evaluate", help="no-change and learnt-edit predictors on held-out tuples")
    ev.add_argument("--train", required=True)
    ev.add_argument("--test", required=True)
    ev.add_argument("--write-readme", action="store_true", help="put the table into README.md (section World-model data)")
    sft = sub.add_parser("sft", help="tuples as canonical records for text world-model SFT (python -m training sft)")
    sft.add_argument("--tuples", required=True)
    sft.add_argument("--out", required=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "export":
            records = read_records(args.records) if args.records else anchor_records(args.tasks, args.seeds, args.drift, args.anchors)
            with open(args.out, "w", encoding="utf-8") as out:
                print(json.dumps(export(records, out, screenshots=not args.no_screenshots, png=args.png)))
        elif args.command == "evaluate":
            result = evaluate(read_tuples(args.train), read_tuples(args.test))
            command = f"python -m environments.desktop.worldmodel evaluate --train {args.train} --test {args.test}"
            if args.write_readme:
                write_readme(result, command)
            print(table_markdown(result, command=command))
        else:
            with open(args.out, "w", encoding="utf-8") as out:
                for t in read_tuples(args.tuples):
                    out.write(json.dumps(sft_record(t), sort_keys=True, separators=(",", ":")) + "\n")
    except (OSError, ValueError) as exc:
        print(f"error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
