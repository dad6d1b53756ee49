from __future__ import annotations

import hashlib
import random
import sys
import types

import pytest

from environments.core import ToolCall
from environments.desktop.anchors import parse_screen
from environments.desktop.env import MAX_STEPS
from environments.desktop.tasks import TEMPLATES
from environments.desktop.widgets import accessibility_text, canonical_json
from environments.registry import make
from tests.environments.desktop.conftest import do, new_desktop


def test_reset_observation_carries_the_brief_goals_and_the_screen() -> None:
    env = new_desktop("reply-mail")
    observation = env.reset()
    assert observation.text.startswith("You are at a desktop") and '[launch.mail] button "Mail"' in observation.text
    assert observation.data["goals"][0]["kind"] == "reply-mail" and observation.data["drift"] == "none"


def test_gui_results_carry_the_new_screen_and_shell_results_only_output() -> None:
    env = new_desktop()
    opened = do(env, "open_app", app="files").content
    assert opened["result"] == "opened files" and '[files.window] window "Files - ~"' in opened["screen"]
    assert "Files is open" in opened["description"]
    assert do(env, "shell", command="pwd").content == {"output": "/home/user"}
    assert set(do(env, "observe").content) == {"description", "screen"}


def test_the_state_hash_covers_the_widget_tree_and_the_app_data() -> None:
    env = new_desktop()
    start = env.state_hash()
    do(env, "open_app", app="calendar")
    do(env, "click", id="calendar.new")
    tree = canonical_json(env.screen())
    focused = env.state_hash()
    do(env, "click", id="calendar.date")  # only focus moves: the tree changes, the data does not
    assert canonical_json(env.screen()) != tree and env.state_hash() != focused != start
    before = env.state_hash()
    env.session.data.settings["display.theme"] = "dark"  # data alone (the screen shows the calendar)
    assert env.state_hash() != before


def test_snapshot_and_restore_resume_identically() -> None:
    env = new_desktop("errand", drift="high")
    do(env, "open_app", app="mail")
    blob, mark = env.snapshot(), env.state_hash()
    do(env, "shell", command="mv Downloads Archive")
    env.restore(blob)
    assert env.state_hash() == mark and "/home/user/Downloads" in env.session.data.dirs


def test_the_episode_ends_on_submit_or_after_max_steps_and_then_refuses_calls() -> None:
    env = new_desktop()
    for _ in range(MAX_STEPS - 1):
        assert not do(env, "wait").done
    last = do(env, "wait")
    assert last.done and last.termination_reason == "max_steps" and env.score().composite == 0.0
    assert do(env, "observe").is_error
    fresh_env = new_desktop()
    assert fresh_env.score().composite == 0.0 and do(fresh_env, "submit").termination_reason == "agent_stop"


def test_bad_options_and_arguments_are_refused_precisely() -> None:
    with pytest.raises(Exception, match="drift"):
        make("desktop/move-files", seed=1, options={"drift": "extreme"})
    env = new_desktop()
    assert "x: 5000 is above the maximum 1279" in do(env, "click", x=5000, y=3).content["error"]
    assert "give either id, or both x and y" in do(env, "click", x=3).content["error"]
    assert env.step(ToolCall("type", {"text": "a" * 600})).is_error


def test_a_screenshot_without_a_renderer_is_an_error_and_with_one_its_hash_is_returned(monkeypatch: pytest.MonkeyPatch) -> None:
    env = new_desktop()
    monkeypatch.setitem(sys.modules, "environments.desktop.render", None)  # as if render.py were absent
    assert "no renderer" in do(env, "observe", screenshot=True).content["error"]
    fake = types.ModuleType("environments.desktop.render")
    fake.render_png = lambda root: b"PNG:" + root.id.encode()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "environments.desktop.render", fake)
    result = do(env, "observe", screenshot=True)
    assert result.content["screenshot_sha256"] == hashlib.sha256(b"PNG:desktop").hexdigest()
    assert result.info["png"] == b"PNG:desktop" and "png" not in result.content


MALLORY_COMMANDS = (
    "mv Documents Archive",
    "mv Downloads/* Pictures",
    "sed -i 's/,/;/g' Documents/budget.csv",
    "mv Documents/budget.csv Archive",
    "rm -rf ~",
    "cat ../../../etc/shadow",
)


def test_mallorys_random_clicks_drags_keys_and_shell_never_raise() -> None:
    """Random GUI input over drifted desktops, interleaved with shell commands that pull files from under the apps."""
    rng = random.Random(7)
    for seed in range(8):
        env = new_desktop(rng.choice(list(TEMPLATES)), seed, rng.choice(("none", "high")))
        for _ in range(50):
            ids = [e["id"] for e in parse_screen(accessibility_text(env.screen()))]
            pick = rng.random()
            if pick < 0.4:
                call = ToolCall("click", {"id": rng.choice(ids)} if pick < 0.25 else {"x": rng.randrange(1280), "y": rng.randrange(800)})
            elif pick < 0.55:
                call = ToolCall("drag", {"from_id": rng.choice(ids), "to_id": rng.choice(ids)})
            elif pick < 0.7:
                call = ToolCall("key", {"combo": rng.choice(("enter", "tab", "escape", "backspace", "ctrl+s", "ctrl+a"))})
            elif pick < 0.8:
                call = ToolCall("type", {"text": rng.choice(("x,y", "../Archive", "2026-12-01", "lamp"))})
            elif pick < 0.9:
                call = ToolCall("open_app", {"app": rng.choice(("files", "mail", "calendar", "settings", "shop", "table"))})
            else:
                call = ToolCall("shell", {"command": rng.choice(MALLORY_COMMANDS)})
            result = env.step(call)
            assert isinstance(result.content, dict)
            if env.done:
                break
