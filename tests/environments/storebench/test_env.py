"""StoreBenchEnv: episode options and the per-day reward."""

from __future__ import annotations

import pytest

from environments.core import EnvError, ToolCall
from environments.registry import make
from environments.runner import make_policy, run_episode
from environments.storebench.env import OPTIONS_SCHEMA, StoreBenchEnv
from environments.storebench.scoring import running_value


def _episode(task: str, seed: int, policy: str, options: dict | None = None, version: str | None = None) -> dict:
    env = make(f"storebench/{task}", seed=seed, options=options, version=version)
    return run_episode(env, make_policy(policy, env, seed))


def test_the_options_schema_is_one_module_level_dict_with_a_terminal_default() -> None:
    assert StoreBenchEnv.options_schema is OPTIONS_SCHEMA
    assert OPTIONS_SCHEMA["properties"]["reward"]["enum"] == ["terminal", "daily"]
    assert make("storebench/launch-week", seed=1).daily_reward is False  # type: ignore[attr-defined]
    with pytest.raises(EnvError) as exc:
        make("storebench/launch-week", seed=1, options={"reward": "hourly"})
    assert exc.value.code == "bad_options" and "options.reward" in exc.value.message


@pytest.mark.parametrize("version", ["2.0.0", "1.0.0"])
def test_daily_rewards_come_on_end_window_steps_and_sum_to_the_terminal_composite(version: str) -> None:
    daily = _episode("launch-week", 5, "smart-triage", {"reward": "daily"}, version)
    terminal = _episode("launch-week", 5, "smart-triage", None, version)
    composite = daily["header"]["score"]["composite"]
    assert composite == terminal["header"]["score"]["composite"] > 0.5  # the option changes rewards, not play
    assert daily["header"]["options"] == {"reward": "daily"}
    days = [s for s in daily["steps"][1:] if s["tool_calls"][0]["name"] == "end_window"]
    others = [s for s in daily["steps"][1:] if s["tool_calls"][0]["name"] != "end_window"]
    assert len(days) == 30 and all(s["reward"] == 0.0 for s in others)
    assert sum(s["reward"] for s in days) == pytest.approx(composite, abs=1e-5)
    assert len({s["reward"] for s in days}) > 10  # a signal every day, not one lump at the end
    # Terminal mode: the composite once, on the final step.
    assert [s["reward"] for s in terminal["steps"][1:] if s["reward"]] == [composite]


def test_a_bankrupt_store_gets_daily_rewards_that_sum_to_zero() -> None:
    env = make("storebench/cash-crunch", seed=71, options={"reward": "daily"})
    rewards = []
    for _ in range(6):
        rewards.append(env.step(ToolCall("set_marketing_budget", {"channel": "web", "daily_budget": 20000})).reward)
        rewards.append(env.step(ToolCall("end_window", {})).reward)
        if env.done:
            break
    while not env.done:
        rewards.append(env.step(ToolCall("end_window", {})).reward)
    assert env.termination_reason == "bankrupt" and sum(rewards) == pytest.approx(0.0, abs=1e-5)


def test_the_running_value_at_the_horizon_is_the_composite() -> None:
    env = make("storebench/launch-week", seed=3)
    run_episode(env, make_policy("naive-restock", env, 3))
    assert env.done and running_value(env.world, calibration=env.calibration) == env.score().composite  # type: ignore[attr-defined]


def test_each_step_says_what_the_daily_rewards_so_far_sum_to() -> None:
    env = make("storebench/launch-week", seed=2, options={"reward": "daily"})
    total = 0.0
    for _ in range(4):
        env.step(ToolCall("fulfil_orders", {}))
        result = env.step(ToolCall("end_window", {}))
        total += result.reward
        assert result.info["value_mark"] == pytest.approx(total, abs=1e-6)
    assert "value_mark" not in make("storebench/launch-week", seed=2).step(ToolCall("end_window", {})).info
