"""The Gymnasium wrapper."""

from __future__ import annotations

import json

from gymnasium.utils.env_checker import check_env

from environments.gym import ToolEnvGym


def test_the_wrapper_passes_gymnasiums_env_checker() -> None:
    check_env(ToolEnvGym("storebench/launch-week"), skip_render_check=True)


def test_it_plays_tool_calls_as_json_text_to_the_end() -> None:
    env = ToolEnvGym("storebench/launch-week")
    observation, info = env.reset(seed=11)
    assert info["seed"] == 11 and len(json.loads(observation)["tools"]) == 29
    assert info["status"].startswith("Day 0 of ") and "40 of 40 operations left" in info["status"]
    observation, reward, terminated, truncated, info = env.step("not json")
    assert info["is_error"] and "not a JSON tool call" in json.loads(observation)["error"] and not terminated
    observation, reward, terminated, truncated, info = env.step(json.dumps({"name": "get_finance", "arguments": {}}))
    assert json.loads(observation)["cash"] == 25000 and reward == 0.0 and "39 of 40 operations left" in info["status"]
    for _ in range(30):
        observation, reward, terminated, truncated, info = env.step('{"name": "end_window", "arguments": {}}')
    assert terminated and not truncated and info["termination_reason"] == "horizon_reached"
    assert 0.0 <= reward <= 1.0
    env.close()
    env.close()
