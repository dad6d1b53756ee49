"""Engine versions and per-episode options: part of the record's header, honoured by replay, refused when unknown."""

from __future__ import annotations

import pytest

from environments.core import EnvError
from environments.registry import get_task, make
from environments.replay import env_for_header, replay_record
from environments.runner import make_policy, run_episode
from environments.toolgym.env import ToolGymEnv


def test_an_unknown_engine_version_is_refused_with_unsupported_version() -> None:
    with pytest.raises(EnvError) as exc:
        make("storebench/launch-week", seed=1, version="0.0.1-never")
    assert exc.value.code == "unsupported_version"
    assert "0.0.1-never" in exc.value.message


def test_the_current_version_is_what_make_builds_by_default() -> None:
    env = make("storebench/launch-week", seed=1)
    assert env.version == type(env).version
    assert make("storebench/launch-week", seed=1, version=env.version).version == env.version


def test_an_env_without_options_refuses_them_by_name() -> None:
    with pytest.raises(EnvError) as exc:
        make("toolgym/echo", seed=1, options={"attack": "direct"})  # StoreBench has options since 2.0.0
    assert exc.value.code == "bad_options"
    assert "attack" in exc.value.message


class _WithOptions(ToolGymEnv):
    version = "2.0.0"
    frozen_versions = ("1.0.0",)
    options_schema = {"type": "object", "properties": {"mode": {"enum": ["a", "b"]}}, "additionalProperties": False}


def test_options_are_validated_against_the_schema_and_land_in_the_header() -> None:
    task = get_task("toolgym/echo")
    with pytest.raises(EnvError) as exc:
        _WithOptions(task, 0, options={"mode": "c"})
    assert exc.value.code == "bad_options" and "options.mode" in exc.value.message
    env = _WithOptions(task, 0, options={"mode": "a"}, version="1.0.0")
    assert (env.options, env.version) == ({"mode": "a"}, "1.0.0")
    env.reset()
    assert env.header()["options"] == {"mode": "a"} and env.header()["env_version"] == "1.0.0"
    assert "options" not in make("toolgym/echo", seed=0).header()


def test_a_record_replays_against_the_version_in_its_header_or_is_refused() -> None:
    env = make("storebench/launch-week", seed=4)
    record = run_episode(env, make_policy("do-nothing", env, 4))
    assert replay_record(record)["ok"]
    record["header"]["env_version"] = "0.0.1-never"
    with pytest.raises(EnvError) as exc:
        replay_record(record)
    assert exc.value.code == "unsupported_version"
    with pytest.raises(EnvError):
        env_for_header({**record["header"], "seed": None})
