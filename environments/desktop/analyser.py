"""The desktop's GUI analyser (environments.analyzers): after each action, guidance and a value from the
executed transition, read from the record alone.

Rules, first match wins:
    no call                                                           value 0
    a click on an element id that is not on screen (a stale prior)    value 0.1
    any other failed call                                             value 0
    the click landed on a promotion                                   value 0.1
    the step moved the task's goal share down (a "task/goal" event)   value 0
    the step moved it up                                              value 1
    submit while the goal share is below 1                            value 0
    a data change that left the goal share where it was (collateral)  value 0.2
    the same call REPEATS times in a row                              value 0.2
    a GUI action that changed nothing on screen or in the data        value 0.3
    anything else (looking, navigating, filling a form)               value 1
The goal share comes from the environment's own "task/goal" events (grading.py's goal, recorded when a step's
data change moved it), so the analyser needs neither the hidden state nor a replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from environments.analyzers import NO_PROBLEM, StepAnalysis, repeated_call
from environments.records import Step
from environments.rule_critic import REPEATS, env_calls, failure_advice


def _goal(step: Step) -> tuple[float, float] | None:
    found = next((e for e in step.get("events") or [] if e.get("entity") == "task" and e.get("field") == "goal"), None)
    return (float(found["before"]), float(found["after"])) if found else None


def goal_share(history: list[Step]) -> float:
    """The goal share after `history`: the last recorded goal event's value (0 before any)."""
    return next((g[1] for s in reversed(history) if (g := _goal(s)) is not None), 0.0)


class DesktopAnalyser:
    def analyze(self, history: list[Step], step: Step) -> StepAnalysis:
        calls = env_calls(step)
        if not calls:
            return StepAnalysis("Call a tool: observe, a GUI action, shell, or submit when the task is done.", 0.0)
        call = calls[0]
        result: Mapping[str, Any] = next(iter(step.get("results") or []), {})
        raw = result.get("content")
        content: dict[str, Any] = raw if isinstance(raw, dict) else {}
        error = str(content.get("error", ""))
        if result.get("is_error") and call["name"] == "click" and error.startswith("no element"):
            return StepAnalysis(
                "That element id is not on this screen: ids and names change between app versions. "
                "Read the current screen and click what is there now.",
                0.1,
            )
        if failed := failure_advice(step):
            return StepAnalysis(failed, 0.0)
        if content.get("ad"):
            return StepAnalysis("Your click hit a promotion. Close it first (its close button, or escape for a pop-up), then act.", 0.1)
        moved = _goal(step)
        if moved is not None and moved[1] < moved[0]:
            return StepAnalysis(f"This step undid part of the task (goal {moved[0]:.0%} -> {moved[1]:.0%}); put it back.", 0.0)
        if moved is not None:
            return StepAnalysis(f"Progress: the task is {moved[1]:.0%} done.", 1.0)
        if call["name"] == "submit" and (share := goal_share(history)) < 1.0:
            return StepAnalysis(f"You submitted with the task {share:.0%} done; finish every part before submitting.", 0.0)
        if step.get("events"):
            changed = ", ".join(sorted({str(e.get("entity")) for e in step["events"]}))[:160]
            return StepAnalysis(f"This changed {changed}, which the task does not ask for; undo it if you can.", 0.2)
        if repeated := repeated_call(history, step):
            return StepAnalysis(f"You made the same call {REPEATS} times in a row ({repeated[:120]}); try another approach.", 0.2)
        if content.get("changed") is False:
            return StepAnalysis("Nothing changed on screen or in the data; check the screen for what you meant to click.", 0.3)
        return StepAnalysis(NO_PROBLEM, 1.0)
