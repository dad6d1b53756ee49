"""DesktopEnv: GUI and command-line tasks on a seeded desktop of small apps, with drift.

Tools
    observe (accessibility tree + description; screenshot=true renders a PNG through render.py when present),
    click, type, key, scroll, drag, wait, open_app (GUI actions, each answered with the new screen), shell (the
    desktop's own command line over the same data), submit (ends the episode). See tools.py.

Rewards
    0 on every step but the last, which carries the grade (grading.py): the final state against the state the
    task's solution produces, times a collateral-damage penalty, plus a CLI-aware efficiency credit for short
    correct paths. Passing needs the right final state with no collateral damage. The score's component
    `shell_aware` (shell_reward.py) adds credit for reaching the goal through the shell where it is the efficient
    path and penalises failed and destructive shell commands: what GRPO's reward_component="shell_aware" trains on.

Episode End
    "agent_stop" on submit; "max_steps" after MAX_STEPS calls (graded as it stands).

Arguments
    The task picks the template; the seed the desktop (files, mail, catalogue...), the task's subject and the
    drift draw; the option `drift` (none | low | high, default none) how much the apps drift (drift.py).

Version History
    1: first version.
"""

from __future__ import annotations

import copy
import hashlib
import importlib
import pickle
from dataclasses import dataclass, field
from typing import Any

import environments.desktop.gui as gui
import environments.desktop.ops as ops
import environments.desktop.shell_reward as shell_reward
from environments.core import Env, Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.desktop.apps import build_screen
from environments.desktop.drift import drift_for
from environments.desktop.grading import COLLATERAL_PENALTY, EFFICIENCY_WEIGHT, Grader
from environments.desktop.layout import APP_TITLES, Screen
from environments.desktop.shell import run_shell
from environments.desktop.shell_reward import Act, act_of_step, shell_aware
from environments.desktop.state import AppData, Ui, state_json
from environments.desktop.tasks import synthesize
from environments.desktop.tools import OPTIONS_SCHEMA, TOOLS
from environments.desktop.widgets import Widget, accessibility_text, canonical_json, walk
from environments.desktop.world import build_world
from environments.meta import ScoreComponent

MAX_STEPS = 80
# What the viewer says of each score component (grading.py and shell_reward.py, in a reader's words).
COMPONENTS = {
    "goal": ScoreComponent(
        "share of the goal's items in the right final state (each file, folder, setting, event, mail or order the task's "
        f"solution changes); enters the composite as {1 - EFFICIENCY_WEIGHT:g} × goal × ({1 - COLLATERAL_PENALTY:g} when "
        "anything else was damaged, else 1)",
        moved_by=("shell", "click", "type", "key", "drag"),
        check=False,
    ),
    "efficiency": ScoreComponent(
        "min(1, calls in the shortest known solution / tool calls other than submit); adds "
        f"{EFFICIENCY_WEIGHT:g} × efficiency to the composite only when the final state is right with no collateral damage",
        check=False,
    ),
    "shell_aware": ScoreComponent(
        f"a training reward, not part of the composite: the composite + {shell_reward.SHELL_WEIGHT:g} × the share of goal "
        "progress made through the shell where it is the shorter path (right final state only), minus "
        f"{shell_reward.FAILED_PENALTY:g} per failed shell command (at most {shell_reward.FAILED_CAP:g}) and "
        f"{shell_reward.DESTRUCTIVE_PENALTY:g} per destructive one (at most {shell_reward.DESTRUCTIVE_CAP:g}); "
        "an unfinished episode keeps only the penalties",
        moved_by=("shell",),
        check=False,
    ),
}


@dataclass
class Session:
    data: AppData
    ui: Ui = field(default_factory=Ui)
    calls: int = 0  # every tool call but submit: the "actions" of the efficiency credit
    counts: dict[str, int] = field(default_factory=lambda: {"gui": 0, "shell": 0, "ad_hits": 0, "stale_ids": 0, "noops": 0})
    goal: float = 0.0
    acts: list[Act] = field(default_factory=list)  # every call but submit, as the shell-aware reward reads it
    finished: bool = False
    reason: str | None = None


class DesktopEnv(Env):
    name = "desktop"
    version = "1"
    options_schema = OPTIONS_SCHEMA

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.drift = drift_for(seed, self.options.get("drift", "none"))
        self._png: tuple[str, bytes] | None = None  # (the tree's canonical JSON, its PNG): the last screenshot rendered
        self.reset()

    def reset(self) -> Observation:
        # World, task and grader are pure functions of the seed, so snapshots carry only the session.
        initial = build_world(self.seed)
        self.desk_task = synthesize(self.task.key, initial, self.seed)
        self.grader = Grader(self.desk_task, initial)
        self.session = Session(copy.deepcopy(initial))
        self._refresh()
        data = {"goals": list(self.desk_task.goals), "drift": self.drift.level, "screen": self._text}
        return Observation(text=f"{self.desk_task.brief}\n\n{self.description()}\n{self._text}", data=data)

    def _refresh(self) -> None:
        """Rebuild the frame after a change; every GUI action reads this one."""
        self._screen: Screen = build_screen(self.session.data, self.session.ui, self.drift, self.seed)
        self._json = canonical_json(self._screen.root)
        self._text = accessibility_text(self._screen.root)

    def screen(self) -> Widget:
        """The current frame's root: what render.render_png paints and accessibility_tree reads."""
        return self._screen.root

    def description(self) -> str:
        ui = self.session.ui
        where = f"{APP_TITLES[ui.app]} is open" if ui.app else "no app is open"
        ads = sum(1 for w in walk(self._screen.root) if w.role == "dialog" and "ad" in w.states)
        return f"Desktop: {where}; focus: {ui.focus or 'none'}" + ("; a promotion covers part of the window" if ads else "") + "."

    def tools(self) -> list[ToolSpec]:
        return list(TOOLS)

    @property
    def max_steps(self) -> int:
        return MAX_STEPS

    def step(self, call: ToolCall) -> StepResult:
        s = self.session
        if s.finished:
            return StepResult(content={"error": "the episode is over"}, is_error=True, done=True, termination_reason=s.reason)
        spec = self.tool(call.name)
        if spec is None:
            result = StepResult(content={"error": f"unknown tool {call.name!r}; tools: {[t.name for t in TOOLS]}"}, is_error=True)
        elif problem := validate_arguments(spec.parameters, call.arguments):
            result = StepResult(content={"error": problem}, is_error=True)
        else:
            result = self._apply(call.name, dict(call.arguments))
        if call.name != "submit":
            s.calls += 1
            s.acts.append(act_of_step(call.name, result.is_error, (e.as_json() for e in result.events)))
        if not s.finished and s.calls >= MAX_STEPS:
            s.finished, s.reason = True, "max_steps"
        if s.finished:
            result.done, result.termination_reason, result.reward = True, s.reason, self.score().composite
        return result

    def _apply(self, name: str, args: dict[str, Any]) -> StepResult:
        s = self.session
        if name == "submit":
            s.finished, s.reason = True, "agent_stop"
            return StepResult(content={"submitted": True})
        s.ui.tick += 1
        before_files, before = (
            dict(s.data.files),
            (s.data.settings.copy(), set(s.data.dirs), list(s.data.orders), len(s.data.mails), len(s.data.events)),
        )
        screen_before = self._json
        info: dict[str, Any] = {}
        try:
            if name == "shell":
                s.counts["shell"] += 1
                output, failed = run_shell(s.data, s.ui, args["command"])
                content: dict[str, Any] = {"output": output}
            else:
                s.counts["gui"] += name != "observe"
                content, info = self._gui(name, args)
                failed = False
        except ops.OpError as exc:
            content, failed = {"error": str(exc)}, True
            if name == "click" and "no element" in str(exc):
                s.counts["stale_ids"] += 1
        self._refresh()
        events = self._events(before_files, before)
        if name not in ("observe", "shell") and not failed:
            content.update(screen=self._text, description=self.description())
            if not events and self._json == screen_before:
                content["changed"] = False
                s.counts["noops"] += 1
        return StepResult(content=content, is_error=failed, events=events, info=info)

    def _gui(self, name: str, a: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        s, screen = self.session, self._screen
        if name == "observe":
            shot = self._screenshot() if a.get("screenshot") else {}
            return {"description": self.description(), "screen": self._text, **{k: v for k, v in shot.items() if k != "png"}}, shot
        if name == "click":
            outcome = gui.click(screen, s.data, s.ui, a.get("id"), a.get("x"), a.get("y"))
        elif name == "type":
            outcome = gui.type_text(s.ui, a["text"])
        elif name == "key":
            outcome = gui.press(screen, s.data, s.ui, a["combo"])
        elif name == "scroll":
            outcome = gui.scroll(screen, s.ui, a["direction"], a.get("amount", 3), a.get("id"))
        elif name == "drag":
            source = gui.point_of(screen, a.get("from_id"), a.get("from_x"), a.get("from_y"))
            outcome = gui.drag(screen, s.data, s.ui, source, gui.point_of(screen, a.get("to_id"), a.get("to_x"), a.get("to_y")))
        elif name == "open_app":
            outcome = gui.open_app(s.data, s.ui, a["app"])
        else:  # wait
            outcome = gui.Outcome("time passes")
        s.counts["ad_hits"] += outcome.ad
        content: dict[str, Any] = {"result": outcome.message, **({"hit": outcome.hit} if outcome.hit else {})}
        return (content | {"ad": True}) if outcome.ad else content, {}

    def _screenshot(self) -> dict[str, Any]:
        """The hook for render.py (written separately): its PNG's sha256 goes into the result, the bytes into info."""
        try:
            render = importlib.import_module("environments.desktop.render")
        except ModuleNotFoundError as exc:
            if exc.name != "environments.desktop.render":
                raise
            raise ops.OpError("screenshot: no renderer is installed here; observe without screenshot") from None
        if self._png is None or self._png[0] != self._json:
            self._png = (self._json, render.render_png(self.screen()))
        png = self._png[1]
        return {"screenshot_sha256": hashlib.sha256(png).hexdigest(), "png": png}

    def screenshot_png(self) -> bytes:
        """The current screen as PNG, rendered once per distinct tree: the lab storing the screenshot a policy just
        asked for (environments.screens.screenshot) gets the same bytes without painting them again."""
        return self._screenshot()["png"]

    def _events(self, files: dict[str, str], before: tuple[Any, ...]) -> list[Event]:
        """What the step changed in the apps' data, and the task's goal share when it moved (what the analyser reads)."""
        d = self.session.data
        out = [
            Event(f"file:{p}", "content", files.get(p), d.files.get(p))
            for p in sorted(set(files) | set(d.files))
            if files.get(p) != d.files.get(p)
        ]
        settings, dirs, orders, mails, events = before
        out += [Event(f"setting:{k}", "value", v, d.settings[k]) for k, v in settings.items() if d.settings[k] != v]
        out += [Event(f"folder:{p}", "exists", p in dirs, p in d.dirs) for p in sorted(dirs ^ d.dirs)]
        out += [Event("shop", "orders", orders, list(d.orders))] if orders != d.orders else []
        out += [Event("mail", "messages", mails, len(d.mails))] if mails != len(d.mails) else []
        out += [Event("calendar", "events", events, len(d.events))] if events != len(d.events) else []
        if out:
            goal = self.grader.grade(d, self.session.calls)["goal"]
            if goal != self.session.goal:
                out.append(Event("task", "goal", self.session.goal, goal))
                self.session.goal = goal
        return out

    def report(self) -> dict[str, Any]:
        return self.grader.grade(self.session.data, self.session.calls) | {
            "counts": dict(self.session.counts),
            "drift": self.drift.describe(),
        }

    def score(self) -> Score:
        s = self.session
        if not s.finished:  # an unfinished run scores 0, but its failed and destructive shell commands still cost
            report = self.grader.grade(s.data, s.calls) | {"composite": 0.0, "state_ok": False}
            shell = shell_aware(report, s.acts, [g["kind"] for g in self.desk_task.goals])
            return Score(composite=0.0, passed=False, components={"shell_aware": shell["shell_aware"]})
        report = self.report()
        passed = report["state_ok"] and report["composite"] >= self.task.pass_threshold
        shell = shell_aware(report, s.acts, [g["kind"] for g in self.desk_task.goals])
        return Score(
            composite=report["composite"],
            passed=passed,
            termination_reason=s.reason,
            components={"goal": report["goal"], "efficiency": report["efficiency"], "shell_aware": shell["shell_aware"]},
            details=report | {"shell": shell},
        )

    def snapshot(self) -> bytes:
        return pickle.dumps(self.session)

    def restore(self, blob: bytes) -> None:
        self.session = pickle.loads(blob)
        self._refresh()

    def state_hash(self) -> str:
        s = self.session
        extra = f"{s.calls}|{sorted(s.counts.items())}|{s.goal}|{s.finished}|{s.reason}"
        return hashlib.sha256(f"{self._json}\n{state_json(s.data, s.ui)}\n{extra}".encode()).hexdigest()[:32]

    @property
    def done(self) -> bool:
        return self.session.finished

    @property
    def termination_reason(self) -> str | None:
        return self.session.reason if self.session.finished else None

    def summary(self) -> str:
        return f"{self.description()} Calls: {self.session.calls}/{MAX_STEPS}."

    def status(self) -> dict[str, str]:
        s = self.session
        return {"calls": f"{s.calls}/{MAX_STEPS} calls", "app": APP_TITLES.get(s.ui.app, "desktop")}
