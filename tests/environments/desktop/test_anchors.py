from __future__ import annotations

import pytest

from environments.desktop.anchors import parse_screen
from environments.desktop.tasks import TEMPLATES
from environments.desktop.widgets import accessibility_text
from environments.policies import make_policy, policy_names
from environments.runner import run_episode
from tests.environments.desktop.conftest import new_desktop


def _score(anchor: str, task: str, seed: int, drift: str = "none") -> dict:  # type: ignore[type-arg]
    env = new_desktop(task, seed, drift)
    return run_episode(env, make_policy(anchor, env, seed))["header"]["score"]


def test_the_anchors_are_declared() -> None:
    assert policy_names("desktop") == ["cli-preferring", "gui-only", "oracle", "random-valid"]


@pytest.mark.parametrize("task", list(TEMPLATES))
def test_oracle_tops_cli_which_tops_gui_and_random_fails(task: str) -> None:
    scores = {a: _score(a, task, 1001) for a in ("oracle", "cli-preferring", "gui-only", "random-valid")}
    assert scores["oracle"]["composite"] == 1.0 and scores["oracle"]["passed"]
    assert scores["cli-preferring"]["passed"] and scores["gui-only"]["passed"]
    assert 1.0 >= scores["cli-preferring"]["composite"] > scores["gui-only"]["composite"] >= 0.8
    assert not scores["random-valid"]["passed"] and scores["random-valid"]["composite"] < 0.5


def test_drift_defeats_the_gui_anchors_stored_names_but_not_the_shell() -> None:
    gui = [_score("gui-only", t, s, "high")["composite"] for t in TEMPLATES for s in (1000, 1001)]
    cli = [_score("cli-preferring", t, s, "high")["passed"] for t in TEMPLATES for s in (1000, 1001)]
    assert all(cli) and sum(gui) / len(gui) < 0.7


def test_parse_screen_reads_back_the_accessibility_text() -> None:
    env = new_desktop()
    env.session.ui.fields["calendar.title"] = 'say "hi"'
    env.session.ui.app, env.session.ui.view["calendar.mode"], env.session.ui.focus = "calendar", "new", "calendar.title"
    env._refresh()
    parsed = {e["id"]: e for e in parse_screen(accessibility_text(env.screen()))}
    assert parsed["calendar.title"] == {
        "id": "calendar.title",
        "role": "textbox",
        "name": "Title",
        "value": 'say "hi"',
        "states": {"editable", "focused"},
    }
