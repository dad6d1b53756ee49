"""(task, trajectory) pairs from an exploration graph's paths, and priors to judge, without human labels.

    pairs = synthesise(graph, seed=1, drift="none")   # one replay-verified record per screen reached
    items = priors_dataset(pairs)                     # each pair's path as a prior, clean and corrupted

A pair is the path the explorer first reached a screen by, played again through the runner (so it is a canonical
record with its state-hash chain) and checked by environments.replay.replay_record. Its task is written from
what the path did (hindsight): the data it changed where it changed any ("In Settings: set display.theme to
dark"), else the steps on the screens they were taken on ('In Mail: click "Compose", then open the "Sent" tab').
The record's header keeps the carrier task (explore.CARRIER_TASK) so it replays; the synthesised task is
`header.meta.synthesised.instruction`, and a trainer must read that one, not the carrier's brief.

The prior dataset: each pair's steps as text (a "retrieved past trajectory": control, role, name, where on the
screen, which item of a list) and, beside it, the same prior corrupted by one of the drift kinds the desktop
models (drift.py): a renamed control (version 2's name), a moved element (its position mirrored), an inserted
promotion click, an A/B variant (a list item counted from the other end), a stale step (one step dropped). The
clean prior is labelled "right", each corruption "wrong" (labels by construction). Each item is a canonical
record (one user turn: the task, the screen, the prior; one agent turn: the verdict), header.meta.view =
"judge-prior".
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.desktop.drift import RENAMES
from environments.desktop.env import DesktopEnv
from environments.desktop.layout import APP_TITLES
from environments.desktop.screen_id import open_app
from environments.desktop.widgets import accessibility_text, accessibility_tree, find
from environments.records import Record, Step
from environments.replay import replay_record
from environments.trajectory import make_step, new_record

PRIOR_VIEW = "judge-prior"
CARRIER_TASK = "change-setting"  # the episode's task only carries the desktop: exploration reads no goal
CORRUPTIONS = ("renamed", "moved", "ad", "variant", "stale")


def make_env(seed: int, drift: str) -> DesktopEnv:
    from environments.registry import make

    env = make(f"desktop/{CARRIER_TASK}", seed=seed, options={"drift": drift} if drift != "none" else None)
    assert isinstance(env, DesktopEnv)
    return env


class PathPolicy(Policy):
    """Plays a fixed list of actions, then submits."""

    name = "explorer-path"

    def __init__(self, actions: list[dict[str, Any]]) -> None:
        self.actions = actions

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        done = sum(1 for s in history if s.get("source") != "env")
        nxt = self.actions[done] if done < len(self.actions) else {"name": "submit", "arguments": {}}
        return Action(tool_calls=[ToolCall(nxt["name"], dict(nxt["arguments"]), f"c{len(history)}")])


def describe_steps(seed: int, drift: str, actions: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str], str]:
    """Each action with the element it acted on (read on the screen it was taken on), the data changes the path
    made (the environment's events), and the app open at the end."""
    env = make_env(seed, drift)
    steps, changes = [], []
    for action in actions:
        args = action["arguments"]
        node = find(env.screen(), args["id"]) if action["name"] == "click" else None
        where = None
        if node is not None:
            siblings = next((p.children for p in _parents(env.screen(), node.id)), [node])
            visible = [c for c in siblings if c.visible and c.role == node.role]
            left, top, width, height = node.bounds
            where = {"x": left + width // 2, "y": top + height // 2, "index": visible.index(node) + 1, "of": len(visible)}
        steps.append({"action": action, "role": node.role if node else None, "name": node.name if node else None, "where": where})
        result = env.step(ToolCall(action["name"], dict(args)))
        changes += [
            f"set {e.entity.split(':', 1)[1]} to {e.after}" if e.entity.startswith("setting:") else f"{e.entity} {e.field} changed"
            for e in result.events
            if e.entity != "task"
        ]
    return steps, changes, open_app(accessibility_tree(env.screen()))


def _parents(root: Any, widget_id: str) -> Iterator[Any]:
    for child in root.children:
        if child.id == widget_id:
            yield root
        else:
            yield from _parents(child, widget_id)


def step_text(step: dict[str, Any]) -> str:
    action, args = step["action"], step["action"]["arguments"]
    if action["name"] == "click" and str(args.get("id", "")).startswith("launch."):
        return f"open {step['name']}"
    if action["name"] == "click" and step["role"]:
        verb = {"tab": "open the", "listitem": "select", "checkbox": "toggle", "textbox": "click into", "cell": "click"}.get(
            step["role"], "click"
        )
        return f'{verb} {step["role"]} "{step["name"]}"'
    if action["name"] == "type":
        return f'type "{args["text"]}"'
    if action["name"] == "key":
        return f"press {args['combo']}"
    return f"{action['name']} {json.dumps(args, sort_keys=True)}"


def instruction(steps: list[dict[str, Any]], changes: list[str], app: str) -> str:
    place = f"In {APP_TITLES.get(app, 'the desktop')}: " if app != "desktop" else "On the desktop: "
    return place + (", ".join(dict.fromkeys(changes)) if changes else ", then ".join(step_text(s) for s in steps))


def synthesise(graph: Any, *, seed: int, drift: str, explorer: str = "systematic") -> list[Record]:
    """One record per screen of `graph` (an explore.Graph) reached by at least one action, replay-verified (a failing replay raises)."""
    from environments.runner import run_episode

    pairs = []
    for screen, node in sorted(graph.nodes.items(), key=lambda kv: (len(kv[1]["path"]), kv[0])):
        if not node["path"]:
            continue
        steps, changes, app = describe_steps(seed, drift, node["path"])
        record = run_episode(make_env(seed, drift), PathPolicy(node["path"]), source="rollout")
        record["header"].setdefault("meta", {})["synthesised"] = {
            "instruction": instruction(steps, changes, app),
            "end_screen": screen,
            "explorer": explorer,
            "drift": drift,
            "steps": [{k: v for k, v in s.items() if k != "action"} for s in steps],
            "data_changes": changes,
        }
        report = replay_record(record)
        assert report["ok"], f"synthesised path to {screen} does not replay: {report['divergence']}"
        pairs.append(record)
    return pairs


# --- priors to judge ---------------------------------------------------------------------------------------------


def prior_lines(steps: list[dict[str, Any]], actions: list[dict[str, Any]]) -> list[str]:
    lines = []
    for step, action in zip(steps, actions, strict=True):
        text = step_text({**step, "action": action})
        if w := step.get("where"):
            text += f" at ({w['x']}, {w['y']})" + (f", item {w['index']} of {w['of']}" if w["of"] > 1 else "")
        lines.append(text)
    return lines


def corrupt(kind: str, lines: list[str], steps: list[dict[str, Any]], rng: random.Random) -> list[str] | None:
    """`lines` with one drift of `kind`, or None where the prior offers nothing that kind could change."""
    out = list(lines)
    if kind == "renamed":
        names = {key: v2 for key, (_, v2) in RENAMES.items()}
        hits = [i for i, s in enumerate(steps) if s["action"]["name"] == "click" and s["action"]["arguments"]["id"] in names]
        if not hits:
            hits = [i for i, s in enumerate(steps) if s["role"] == "button" and s["name"]]
            if not hits:
                return None
            i = rng.choice(hits)
            out[i] = out[i].replace(f'"{steps[i]["name"]}"', f'"{steps[i]["name"]} (new)"', 1)
            return out
        i = rng.choice(hits)
        return [*out[:i], out[i].replace(f'"{steps[i]["name"]}"', f'"{names[steps[i]["action"]["arguments"]["id"]]}"', 1), *out[i + 1 :]]
    if kind == "moved":
        hits = [i for i, s in enumerate(steps) if s["where"]]
        if not hits:
            return None
        i = rng.choice(hits)
        w = steps[i]["where"]
        out[i] = out[i].replace(f"({w['x']}, {w['y']})", f"({1280 - w['x']}, {800 - w['y']})", 1)
        return out
    if kind == "ad":
        i = rng.randrange(len(out) + 1)
        return [*out[:i], 'click dialog "Limited offer: 50% off" (promotion) at (640, 400)', *out[i:]]
    if kind == "variant":
        hits = [i for i, s in enumerate(steps) if s["where"] and s["where"]["of"] > 1 and 2 * s["where"]["index"] != s["where"]["of"] + 1]
        if not hits:
            return None
        i = rng.choice(hits)
        w = steps[i]["where"]
        out[i] = out[i].replace(f"item {w['index']} of {w['of']}", f"item {w['of'] + 1 - w['index']} of {w['of']}", 1)
        return out
    assert kind == "stale", f"unknown corruption {kind!r}"
    if len(out) < 2:
        return None
    del out[rng.randrange(len(out))]
    return out


def judge_record(pair: Record, lines: list[str], label: str, kind: str | None, screen: str) -> Record:
    synth, header = pair["header"]["meta"]["synthesised"], pair["header"]
    prompt = (
        f"Task: {synth['instruction']}\n\nDesktop screen:\n{screen}\n\nA past trajectory retrieved for a similar task:\n"
        + "\n".join(f"{n}. {line}" for n, line in enumerate(lines, 1))
        + "\n\nThe desktop may have changed since (renamed or moved controls, promotions, layout variants, steps that no "
        "longer apply). Answer `right` if this trajectory, step by step as written (names, positions, list items), is correct "
        "on this desktop and does the task, else `wrong`."
    )
    meta = {"view": PRIOR_VIEW, "label": label, "corruption": kind, "drift": synth["drift"], "end_screen": synth["end_screen"]}
    return new_record(
        header={
            "env": "desktop",
            "task": header["task"],
            "seed": header.get("seed"),
            "source": "upload",
            "policy": {"name": "explore-synth", "kind": "external"},
            "meta": meta,
        },
        steps=[make_step(index=0, source="user", message=prompt), make_step(index=1, source="agent", message=label)],
    )


def priors_dataset(pairs: list[Record], *, seed: int = 0) -> list[Record]:
    """Per pair the clean prior ("right") and each corruption that applies ("wrong"); the screen shown is the
    pair's opening screen."""
    rng = random.Random(f"desktop-priors-{seed}")
    out = []
    for pair in pairs:
        header = pair["header"]
        actions = [{"name": c["name"], "arguments": c["arguments"]} for s in pair["steps"][1:-1] for c in s.get("tool_calls") or []]
        steps = [{**s, "action": a} for s, a in zip(header["meta"]["synthesised"]["steps"], actions, strict=True)]
        pair_seed = header["seed"]
        assert pair_seed is not None, "a synthesised pair is a seeded episode"
        env = make_env(int(pair_seed), header["meta"]["synthesised"]["drift"])
        screen = accessibility_text(env.screen())
        lines = prior_lines(steps, actions)
        out.append(judge_record(pair, lines, "right", None, screen))
        for kind in CORRUPTIONS:
            if (bad := corrupt(kind, lines, steps, rng)) is not None and bad != lines:
                out.append(judge_record(pair, bad, "wrong", kind, screen))
    return out


def write_jsonl(path: Path, records: Sequence[Mapping[str, Any]]) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n")
    return len(records)
