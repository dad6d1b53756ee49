"""Hybrid GUI + shell data: verified trajectories of three kinds from the desktop's own solvers, and verified RL tasks.

    python -m environments.desktop.hybrid export --kinds gui,shell,mixed --tasks move-files,reply-mail,change-setting \
        --seeds 0-99 --drift none,low,high --out var/hybrid

Kinds (one solver each, all public-goal policies: none reads the task's solution):

    gui     GuiSolver: the gui-only anchor's clicks, typing and drags, plus what drift defeats it on: a control
            renamed by version 2 of its app is looked up by its new name (ALIASES), the Settings tab already open
            is not clicked again. No shell call.
    shell   the cli-preferring anchor: discovery and action through the shell (ls, mail list, settings list, ...).
    mixed   MixedSolver: per sub-goal, the shell where its path is strictly shorter (and it is reliable: the shell
            is drift-proof), the GUI where the GUI's path is no longer (CHANNELS). No task kind here needs the GUI
            alone: ops.py exposes every change to the shell too.

Every episode is a canonical trajectory record (environments.runner), replayed in a fresh environment
(environments.replay.replay_record: the state-hash chain and the final score) and kept only when the replay
agrees and the grade passes; the rest are counted by reason. RL tasks are (task, seed, drift) triples whose
oracle passes and replays (verified RLVR tasks). Only train-split tasks and seeds below HELD_OUT_SEEDS are
accepted: the held-out tasks (dev, test) and seeds (from 1000: calibration, evaluation) never appear.

Output: gui.jsonl, shell.jsonl, mixed.jsonl (records, one a line), rl_tasks.jsonl, manifest.json (counts kept and
rejected by reason, steps per task and shell-action share per kind and task, timings).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from environments.core import Env
from environments.desktop.anchors import CliPreferring, Script, ScriptPolicy, call, parse_screen
from environments.desktop.anchors_gui import GiveUp, GuiOnly
from environments.desktop.tasks import TEMPLATES
from environments.records import Record, header_score, record_score

FORMAT = "desktop-hybrid/1"
KINDS = ("gui", "shell", "mixed")
HELD_OUT_SEEDS = 1000  # seeds from here are the held-out ones (calibration, world-model and experiment test seeds)
TRAIN_TASKS = tuple(key for key, (split, _) in TEMPLATES.items() if split == "train")
# Version 1's control names -> version 2's (drift.RENAMES holds the new ids and names): what a user who has met the
# new version knows. A name two apps share ("Save") lists every new name; only one app is on screen at a time.
ALIASES: dict[str, tuple[str, ...]] = {
    "Move": ("Relocate",),
    "Open": ("View",),
    "Move here": ("Relocate here",),
    "Reply": ("Respond",),
    "Send": ("Send now",),
    "Compose": ("New message",),
    "New event": ("Add event",),
    "Save": ("Create", "Save changes"),
    "Privacy": ("Privacy & security",),
    "Buy now": ("Add to order",),
    "Search": ("Find",),
}
# The channel the mixed solver takes per sub-goal kind (shell_reward.CALLS has the call counts each way).
CHANNELS: dict[str, str] = {
    "move-files": "shell",  # one mv with a glob against a drag per file
    "reply-mail": "shell",  # 2 calls against 5
    "change-setting": "gui in the Display tab (2 calls each way, no key lookup), else shell (2 against 3)",
    "edit-cell": "shell",
    "schedule-event": "shell",
    "buy-cheapest": "shell",
}


class GuiSolver(GuiOnly):
    name = "hybrid-gui"

    def find(self, role: str, name: str = "", *, contains: tuple[str, ...] = (), prefix: str = "") -> dict[str, Any] | None:
        for candidate in (name, *ALIASES.get(name, ())):
            found = super().find(role, candidate, contains=contains, prefix=prefix)
            if found is not None:
                return found
        return None

    def _change_setting(self, goal: dict[str, Any]) -> Script:
        yield from self.do("open_app", app="settings")
        tab = self.find("tab", goal["section"].title())
        if tab is None or "selected" not in tab["states"]:
            yield from self.click("tab", goal["section"].title())
        box = self.find("checkbox", goal["label"])
        if box is not None:
            if ("checked" in box["states"]) != (goal["value"] == "on"):
                yield from self.click("checkbox", goal["label"])
        else:
            yield from self.click("button", goal["value"], prefix="settings.")


def channel(goal: dict[str, Any]) -> str:
    """The mixed solver's channel for one sub-goal (CHANNELS)."""
    if goal["kind"] == "change-setting" and goal["section"] == "display":  # the tab Settings opens on
        return "gui"
    return "shell"


class MixedSolver(ScriptPolicy):
    name = "hybrid-mixed"

    def __init__(self, env: Env, seed: int) -> None:
        super().__init__(env, seed)
        self.env = env

    def script(self, start: dict[str, Any]) -> Script:
        gui, shell = GuiSolver(self.env, self.seed), CliPreferring(self.env, self.seed)
        gui.screen = parse_screen(str(start.get("screen", "")))  # still current at the first GUI call: the shell opens no app
        try:
            for goal in start.get("goals", []):
                method = "_" + goal["kind"].replace("-", "_")
                yield from getattr(gui if channel(goal) == "gui" else shell, method)(goal)
        except GiveUp:
            pass
        yield call("submit")


SOLVERS: dict[str, type[ScriptPolicy]] = {"gui": GuiSolver, "shell": CliPreferring, "mixed": MixedSolver}


def _env(task: str, seed: int, drift: str) -> Any:
    from environments.registry import make

    return make(f"desktop/{task}", seed=seed, options={"drift": drift} if drift != "none" else None)


def calls_of(record: Record) -> list[str]:
    """The tool names the episode called, submit excluded."""
    return [c["name"] for s in record["steps"] if s["source"] != "env" for c in s.get("tool_calls") or [] if c["name"] != "submit"]


def rejection(kind: str, record: Record) -> str | None:
    """Why a record is not kept (None: keep it): the replay must agree and the grade pass, and a gui record holds no
    shell call, a shell record no GUI call."""
    from environments.replay import replay_record

    header = record["header"]
    if header.get("termination_reason") != "agent_stop":
        return f"ended {header.get('termination_reason')}"
    if not header_score(header)["passed"]:
        return "grade failed"
    names = set(calls_of(record))
    if (kind == "gui" and "shell" in names) or (kind == "shell" and names - {"shell"}):
        return "wrong channel"
    if not replay_record(record)["ok"]:
        return "replay diverged"
    return None


def solve(kind: str, task: str, seed: int, drift: str) -> Record:
    from environments.runner import run_episode

    env = _env(task, seed, drift)
    return run_episode(env, SOLVERS[kind](env, seed), harness={"hybrid_kind": kind})


def rl_task(task: str, seed: int, drift: str) -> bool:
    """Whether the oracle passes (task, seed, drift) and its record replays: a verified RLVR task."""
    from environments.desktop.anchors import Oracle
    from environments.replay import replay_record
    from environments.runner import run_episode

    env = _env(task, seed, drift)
    record = run_episode(env, Oracle(env, seed))
    return bool(record_score(record)["passed"]) and bool(replay_record(record)["ok"])


def check_split(tasks: Iterable[str], seeds: Iterable[int]) -> None:
    """Refuses held-out tasks and seeds (ValueError naming them)."""
    if bad := [t for t in tasks if t not in TRAIN_TASKS]:
        raise ValueError(
            f"task {bad[0]!r} is held out (split {TEMPLATES[bad[0]][0] if bad[0] in TEMPLATES else '?'}); "
            f"train tasks: {', '.join(TRAIN_TASKS)}"
        )
    if bad_seeds := [s for s in seeds if s >= HELD_OUT_SEEDS or s < 0]:
        raise ValueError(f"seed {bad_seeds[0]} is held out: training seeds are 0-{HELD_OUT_SEEDS - 1}")


def episodes(kinds: list[str], tasks: list[str], seeds: list[int], drifts: list[str]) -> Iterator[tuple[str, str, int, str]]:
    for kind in kinds:
        for task in tasks:
            for drift in drifts:
                for seed in seeds:
                    yield kind, task, seed, drift


def export(kinds: list[str], tasks: list[str], seeds: list[int], drifts: list[str], out: Path, *, rl: bool = True) -> dict[str, Any]:
    """Write the kept records per kind, the verified RL tasks and the manifest under `out`; returns the manifest."""
    check_split(tasks, seeds)
    out.mkdir(parents=True, exist_ok=True)
    stats: dict[str, dict[str, Any]] = {
        k: {
            "kept": 0,
            "rejected": Counter(),
            "actions": 0,
            "shell": 0,
            "by_task": defaultdict(lambda: {"kept": 0, "actions": 0, "shell": 0}),
        }
        for k in kinds
    }
    handles = {k: open(out / f"{k}.jsonl", "w", encoding="utf-8") for k in kinds}  # noqa: SIM115 - closed below
    started, cpu = time.perf_counter(), time.process_time()
    try:
        for kind, task, seed, drift in episodes(kinds, tasks, seeds, drifts):
            record = solve(kind, task, seed, drift)
            reason = rejection(kind, record)
            s = stats[kind]
            if reason:
                s["rejected"][reason] += 1
                continue
            names = calls_of(record)
            s["kept"] += 1
            s["actions"] += len(names)
            s["shell"] += names.count("shell")
            t = s["by_task"][task]
            t["kept"], t["actions"], t["shell"] = t["kept"] + 1, t["actions"] + len(names), t["shell"] + names.count("shell")
            handles[kind].write(json.dumps(record, sort_keys=True) + "\n")
    finally:
        for handle in handles.values():
            handle.close()
    trajectories_cpu = time.process_time() - cpu
    rl_kept, rl_rejected = 0, 0
    if rl:
        with open(out / "rl_tasks.jsonl", "w", encoding="utf-8") as handle:
            for task in tasks:
                for drift in drifts:
                    for seed in seeds:
                        if rl_task(task, seed, drift):
                            rl_kept += 1
                            handle.write(json.dumps({"task": f"desktop/{task}", "seed": seed, "drift": drift}, sort_keys=True) + "\n")
                        else:
                            rl_rejected += 1
    total = sum(s["kept"] + sum(s["rejected"].values()) for s in stats.values())
    manifest = {
        "format": FORMAT,
        "tasks": tasks,
        "seeds": [min(seeds), max(seeds)] if seeds else [],
        "drift": drifts,
        "kinds": {k: _kind_summary(s) for k, s in stats.items()},
        "trajectories": {"kept": sum(s["kept"] for s in stats.values()), "episodes": total},
        "rl_tasks": {"kept": rl_kept, "rejected": rl_rejected},
        "timing": {
            "wall_s": round(time.perf_counter() - started, 2),
            "cpu_s": round(time.process_time() - cpu, 2),
            "cpu_ms_per_trajectory": round(1000 * trajectories_cpu / total, 2) if total else 0.0,
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def _kind_summary(s: dict[str, Any]) -> dict[str, Any]:
    def per(kept: int, actions: int, shell: int) -> dict[str, Any]:
        return {
            "kept": kept,
            "steps_per_task": round(actions / kept, 3) if kept else 0.0,
            "shell_share": round(shell / actions, 3) if actions else 0.0,
        }

    return per(s["kept"], s["actions"], s["shell"]) | {
        "rejected": dict(sorted(s["rejected"].items())),
        "by_task": {task: per(t["kept"], t["actions"], t["shell"]) for task, t in sorted(s["by_task"].items())},
    }


def _parser() -> argparse.ArgumentParser:
    from environments.desktop.drift import LEVELS
    from environments.seeds import comma_choices, seeds_parse

    parser = argparse.ArgumentParser(prog="python -m environments.desktop.hybrid", description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="verified gui, shell and mixed trajectories and verified RL tasks")
    ex.add_argument("--kinds", type=comma_choices(KINDS, "kind"), default=list(KINDS), help="comma-separated: gui,shell,mixed")
    ex.add_argument("--tasks", type=comma_choices(TEMPLATES, "task"), default=list(TRAIN_TASKS), help="comma-separated train tasks")
    ex.add_argument("--seeds", type=seeds_parse, default=list(range(10)), help=f"e.g. 0-99 (below {HELD_OUT_SEEDS})")
    ex.add_argument("--drift", type=comma_choices(LEVELS, "drift level"), default=["none"], help="comma-separated levels")
    ex.add_argument("--no-rl", action="store_true", help="skip the RL task list")
    ex.add_argument("--out", required=True, help="the folder to write")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        manifest = export(args.kinds, args.tasks, args.seeds, args.drift, Path(args.out), rl=not args.no_rl)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps({k: manifest[k] for k in ("trajectories", "rl_tasks", "timing")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
