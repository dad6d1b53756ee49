"""GUI priors by structured exploration: the desktop's screen-transition graph, found without labels.

    python -m environments.desktop.explore run --seeds 1-5 --budget 200,500,1000 --drift none,high --out DIR
    python -m environments.desktop.explore report            # README table from training/results/desktop-explore/

A screen is screen_id.screen_id of its accessibility tree (per-seed content left out). Two explorers spend the
same budget of environment steps, every env.step counted, the steps that replay a path back to a screen included:

* systematic: breadth first over screens; at each screen it tries a click on the first and the last element of each
  kind of interactive element (screen_id.element_sig: two messages of a list stand for all), scrolling the list
  down, typing into a focused field, and the keys enter, escape and tab; once no screen is left to expand, a second
  pass clicks every element of every screen found (new screens found there are expanded in that pass). To leave a screen it resets the desktop and replays the path it first reached the screen by.
* random: the random-valid anchor's own script (anchors.RandomValid: clicks, typing, scrolls, keys, read-only
  shell commands, app switches) played episode after episode, a fresh desktop each, until the budget is spent.

Both record the graph: nodes are screens (with the shortest known path from the start), edges (screen, action
kind, screen) where the action kind is the action without per-seed content ("click button mail.reply Reply").
`run` writes one result file per (explorer, drift, budget, seed) and, under --out, the graphs and what
explore_synth.py makes from them: (task, trajectory) pairs and the judge-a-prior dataset.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from statistics import fmean
from typing import Any

from environments.core import ToolCall
from environments.desktop.env import MAX_STEPS, DesktopEnv
from environments.desktop.explore_synth import CARRIER_TASK, make_env, priors_dataset, synthesise, write_jsonl
from environments.desktop.screen_id import element_sig, interactive, screen_id
from environments.desktop.widgets import accessibility_tree
from environments.records import Record
from environments.stats import ci95, write_between_markers

REPO_ROOT = Path(__file__).resolve().parents[2]
RESULTS = REPO_ROOT / "training" / "results" / "desktop-explore"
README_PATH = Path(__file__).parent / "README.md"
TABLE_START, TABLE_END = "<!-- explore:start -->", "<!-- explore:end -->"
KEYS = ("enter", "escape", "tab")
EXPLORERS = ("systematic", "random")
Action = dict[str, Any]  # {"name", "arguments"}


def sample_text(field_name: str) -> str:
    """What the explorer types into a field, from its label: a valid date or time where one is asked for."""
    name = field_name.lower()
    return "2026-12-01" if "date" in name else "09:00" if "time" in name else "hello"


def candidates(tree: dict[str, Any], *, every: bool = False) -> list[tuple[str, Action]]:
    """(action kind, action) the systematic explorer tries on a screen: a click on the first and the last element of
    each kind (element_sig), or with `every` on each element; a scroll, typing into a focused field, three keys."""
    out: dict[str, Action] = {}
    by_sig: dict[str, list[str]] = {}
    for node in interactive(tree):
        by_sig.setdefault(element_sig(node), []).append(node["id"])
    for sig, ids in by_sig.items():  # the first and the last of a kind: a folder and a file, a header and a body cell
        for widget_id in ids if every else dict.fromkeys((ids[0], ids[-1])):
            out[f"click {sig} @{widget_id}"] = {"name": "click", "arguments": {"id": widget_id}}
    if any(n["role"] == "list" for n in _walk(tree)):
        out["scroll down"] = {"name": "scroll", "arguments": {"direction": "down", "amount": 5}}
    focused = [n for n in _walk(tree) if "focused" in n.get("states", ()) and n["role"] == "textbox"]
    if focused:
        out["type"] = {"name": "type", "arguments": {"text": sample_text(focused[0]["name"])}}
    out |= {f"key {k}": {"name": "key", "arguments": {"combo": k}} for k in KEYS}
    return list(out.items())


def _walk(tree: dict[str, Any]) -> Iterable[dict[str, Any]]:
    yield tree
    for child in tree.get("children", ()):
        yield from _walk(child)


def action_kind(tree: dict[str, Any], action: Action) -> str:
    """The action without per-seed content, read on the screen it was taken on."""
    name, args = action["name"], action.get("arguments") or {}
    if name == "click" and isinstance(args.get("id"), str):
        node = next((n for n in _walk(tree) if n["id"] == args["id"]), None)
        return f"click {element_sig(node)}" if node else "click (stale id)"
    if name in ("key", "open_app"):
        return f"{name} {args.get('combo') or args.get('app')}"
    if name == "shell":
        return f"shell {str(args.get('command', '')).split(' ', 1)[0]}"
    return name


@dataclass
class Graph:
    start: str
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)  # screen -> {"path", "found_at", "app"}
    edges: set[tuple[str, str, str]] = field(default_factory=set)
    steps: int = 0
    curve: list[tuple[int, int]] = field(default_factory=list)  # (steps, screens) each time a screen is found

    def see(self, tree: dict[str, Any], path: list[Action]) -> tuple[str, bool]:
        key = screen_id(tree)
        new = key not in self.nodes
        if new:
            self.nodes[key] = {"path": list(path), "found_at": self.steps, "tree": tree}
            self.curve.append((self.steps, len(self.nodes)))
        return key, new

    def metrics(self) -> dict[str, Any]:
        return {
            "screens": len(self.nodes),
            "edges": len(self.edges),
            "steps": self.steps,
            "max_depth": max((len(n["path"]) for n in self.nodes.values()), default=0),
        }

    def as_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "metrics": self.metrics(),
            "curve": self.curve,
            "edges": sorted(self.edges),
            "nodes": {k: {"path": n["path"], "found_at": n["found_at"]} for k, n in self.nodes.items()},
        }


def _tree(env: DesktopEnv) -> dict[str, Any]:
    return accessibility_tree(env.screen())


def systematic(env: DesktopEnv, budget: int) -> Graph:
    """Breadth first over screens (module docstring); stops when the budget or the frontier runs out."""
    env.reset()
    graph = Graph(start="")
    graph.start, _ = graph.see(_tree(env), [])
    queue, here = deque([(graph.start, False)]), graph.start
    tried: set[tuple[str, str]] = set()
    while queue and graph.steps < budget:
        screen, every = queue.popleft()
        node = graph.nodes[screen]
        for label, action in candidates(node["tree"], every=every):
            if (screen, label) in tried:
                continue
            tried.add((screen, label))
            if here != screen or env.session.calls + 1 >= MAX_STEPS:
                if graph.steps + len(node["path"]) + 1 > budget:
                    return graph
                env.reset()
                for step in node["path"]:
                    env.step(ToolCall(step["name"], step["arguments"]))
                    graph.steps += 1
                here = screen
            if graph.steps >= budget:
                return graph
            env.step(ToolCall(action["name"], action["arguments"]))
            graph.steps += 1
            target, new = graph.see(_tree(env), node["path"] + [action])
            graph.edges.add((screen, action_kind(node["tree"], action), target))
            here = target
            if new:
                queue.append((target, False))
        if not queue and not every:  # the first pass is done: a second one clicks every element of every screen
            queue.extend((s, True) for s in graph.nodes)
    return graph


def random_walk(env: DesktopEnv, budget: int, seed: int) -> Graph:
    """The random-valid anchor's script, episode after episode on a fresh desktop, until `budget` steps."""
    from environments.desktop.anchors import RandomValid

    env.reset()
    graph = Graph(start=screen_id(_tree(env)))
    episode = 0
    while graph.steps < budget:
        start = env.reset()
        tree = _tree(env)
        here, _ = graph.see(tree, [])
        path: list[Action] = []
        script = RandomValid(env, seed * 100_000 + episode).script(start.data or {})
        call = next(script)
        while call.name != "submit" and graph.steps < budget:
            action = {"name": call.name, "arguments": dict(call.arguments)}
            result = env.step(ToolCall(call.name, dict(call.arguments)))
            graph.steps += 1
            path.append(action)
            after = _tree(env)
            target, _ = graph.see(after, path)
            graph.edges.add((here, action_kind(tree, action), target))
            tree, here = after, target
            call = script.send(result.content if isinstance(result.content, dict) else {})
        episode += 1
    return graph


def explore(explorer: str, seed: int, drift: str, budget: int) -> Graph:
    env = make_env(seed, drift)
    return systematic(env, budget) if explorer == "systematic" else random_walk(env, budget, seed)


# --- result files and the table ----------------------------------------------------------------------------------


def provenance() -> dict[str, Any]:
    """The commit and the machine, without importing training (environments/ never does)."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        head = ""
    return {
        "commit": head,
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "python": platform.python_version(),
        },
    }


def result_path(root: Path, explorer: str, drift: str, budget: int, seed: int) -> Path:
    return root / f"{explorer}-{drift}-b{budget}-s{seed}.json"


def run_one(explorer: str, seed: int, drift: str, budget: int, root: Path = RESULTS) -> tuple[Path, Graph]:
    started = time.process_time()
    graph = explore(explorer, seed, drift, budget)
    data = {
        "experiment": "desktop-explore",
        "config": {"explorer": explorer, "drift": drift, "budget": budget, "carrier_task": CARRIER_TASK},
        "seed": seed,
        "metrics": graph.metrics(),
        "cpu_s": round(time.process_time() - started, 2),
        **provenance(),
    }
    path = result_path(root, explorer, drift, budget, seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    tmp.rename(path)  # a killed run leaves the old file or none
    return path, graph


def load_results(root: Path = RESULTS) -> list[dict[str, Any]]:
    out = []
    for path in sorted(root.glob("*.json")):
        data = json.loads(path.read_text())
        assert data.get("experiment") == "desktop-explore", f"{path}: not a desktop-explore result"
        out.append(data)
    return out


def _mean_ci(values: list[float]) -> str:
    return f"{fmean(values):.1f} ± {ci95(values):.1f}" if values else "-"


def table(root: Path = RESULTS) -> str:
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for r in load_results(root):
        c = r["config"]
        groups.setdefault((c["drift"], c["budget"], c["explorer"]), []).append(r)
    lines = [
        "| drift | budget (steps) | seeds | screens: systematic | screens: random | edges: systematic | edges: random |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for drift, budget in sorted({(d, b) for d, b, _ in groups}, key=lambda k: (k[0] != "none", k[0], k[1])):
        sy, ra = groups.get((drift, budget, "systematic"), []), groups.get((drift, budget, "random"), [])
        seeds = sorted({r["seed"] for r in sy} | {r["seed"] for r in ra})
        cells = [_mean_ci([float(r["metrics"][m]) for r in rs]) for m in ("screens", "edges") for rs in (sy, ra)]
        lines.append(f"| {drift} | {budget} | {len(seeds)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def readme_section(root: Path = RESULTS) -> str:
    return (
        "Unique screens (screen_id.py) and distinct edges (screen, action kind, screen) found within the budget, every "
        "environment step counted (replays included); mean ± 95% CI over seeds. Made by `python -m environments.desktop.explore "
        "run` then `report`, from the files under `training/results/desktop-explore/`.\n\n" + table(root)
    )


def write_readme(root: Path = RESULTS) -> None:
    write_between_markers(README_PATH, TABLE_START, TABLE_END, readme_section(root))


def _parser() -> argparse.ArgumentParser:
    from environments.desktop.drift import LEVELS
    from environments.seeds import comma_choices, seeds_parse

    def budgets(raw: str) -> list[int]:
        try:
            values = [int(p) for p in raw.split(",") if p]
        except ValueError:
            raise argparse.ArgumentTypeError(f"budget {raw!r}: not a comma-separated list of whole numbers") from None
        if any(v < 1 for v in values):
            raise argparse.ArgumentTypeError(f"budget {raw!r}: each must be at least 1")
        return values

    parser = argparse.ArgumentParser(prog="python -m environments.desktop.explore", description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="explore, write result files, graphs, synthesised pairs and the prior-judging set")
    run.add_argument("--seeds", type=seeds_parse, default=[1, 2, 3, 4, 5])
    run.add_argument("--budget", type=budgets, default=[200, 500, 1000], help="steps, e.g. 200,500,1000")
    run.add_argument("--drift", type=comma_choices(LEVELS, "drift level"), default=["none", "high"])
    run.add_argument("--explorers", type=comma_choices(EXPLORERS, "explorer"), default=list(EXPLORERS))
    run.add_argument("--out", required=True, help="folder for graphs, pairs.jsonl and priors.jsonl")
    run.add_argument("--results", default=str(RESULTS), help="folder for the result files")
    run.add_argument("--write-readme", action="store_true", help="then rewrite README.md's exploration table")
    rep = sub.add_parser("report", help="rewrite README.md's exploration table from the result files")
    rep.add_argument("--results", default=str(RESULTS))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    root = Path(args.results)
    if args.command == "run":
        out = Path(args.out)
        (out / "graphs").mkdir(parents=True, exist_ok=True)
        pairs: list[Record] = []
        for drift in args.drift:
            for seed in args.seeds:
                for budget in args.budget:
                    for explorer in args.explorers:
                        path, graph = run_one(explorer, seed, drift, budget, root)
                        (out / "graphs" / path.name).write_text(json.dumps(graph.as_json(), sort_keys=True) + "\n")
                        print(f"{path.name}: {graph.metrics()}", file=sys.stderr)
                        if explorer == "systematic" and budget == max(args.budget):
                            pairs += synthesise(graph, seed=seed, drift=drift)
        print(
            json.dumps(
                {"pairs": write_jsonl(out / "pairs.jsonl", pairs), "priors": write_jsonl(out / "priors.jsonl", priors_dataset(pairs))}
            )
        )
    if args.command == "report" or args.write_readme:
        write_readme(root)
        print(table(root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
