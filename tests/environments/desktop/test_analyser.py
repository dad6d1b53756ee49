from __future__ import annotations

from typing import Any

from environments.analyzers import analyze_record, analyzer_for
from environments.desktop.analyser import DesktopAnalyser
from environments.policies import make_policy
from environments.runner import run_episode
from tests.environments.desktop.conftest import new_desktop


def _step(name: str, content: dict[str, Any], *, error: bool = False, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "index": 1,
        "source": "agent",
        "tool_calls": [{"id": "c", "name": name, "arguments": {}}],
        "results": [{"call_id": "c", "content": content, "is_error": error}],
        "events": events or [],
    }


def _goal(before: float, after: float) -> dict[str, Any]:
    return {"entity": "task", "field": "goal", "before": before, "after": after, "op": "write"}


def test_it_is_the_registered_analyser_for_the_desktop() -> None:
    assert isinstance(analyzer_for("desktop"), DesktopAnalyser)


def test_rules_value_each_kind_of_transition() -> None:
    a = DesktopAnalyser()
    assert a.analyze([], _step("click", {"error": "no element 'mail.reply' on screen"}, error=True)).value == 0.1
    assert a.analyze([], _step("shell", {"error": "x"}, error=True)).value == 0.0
    assert a.analyze([], _step("click", {"result": "promo", "ad": True})).value == 0.1
    assert a.analyze([], _step("shell", {"output": ""}, events=[_goal(0.5, 0.25)])).value == 0.0
    progress = a.analyze([], _step("drag", {"result": "moved"}, events=[_goal(0.0, 0.5)]))
    assert progress.value == 1.0 and "50% done" in progress.guidance
    history = [_step("drag", {}, events=[_goal(0.0, 0.5)])]
    assert a.analyze(history, _step("submit", {"submitted": True})).value == 0.0
    assert a.analyze([_step("x", {}, events=[_goal(0.5, 1.0)])], _step("submit", {"submitted": True})).value == 1.0
    stray = a.analyze([], _step("shell", {"output": "bought"}, events=[{"entity": "shop", "field": "orders"}]))
    assert stray.value == 0.2 and "shop" in stray.guidance
    assert a.analyze([], _step("key", {"result": "nothing", "changed": False})).value == 0.3
    assert a.analyze([], _step("open_app", {"result": "opened mail"})).value == 1.0
    assert a.analyze([], {"index": 1, "source": "agent", "tool_calls": [], "results": []}).value == 0.0


def test_a_recorded_gui_episode_is_analysed_from_the_record_alone() -> None:
    env = new_desktop("move-files", 1000)
    record = run_episode(env, make_policy("gui-only", env, 1000))
    analyses = dict(analyze_record(record))
    drags = [s["index"] for s in record["steps"] if s.get("tool_calls") and s["tool_calls"][0]["name"] == "drag"]
    assert drags and all(analyses[i].value == 1.0 and "Progress" in analyses[i].guidance for i in drags)
    assert analyses[record["steps"][-1]["index"]].value == 1.0  # submit once the goal is met
