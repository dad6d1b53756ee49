"""Whole conversations: the anchors, exact replay, the user slot filled by another policy, options, judging."""

from __future__ import annotations

import json
from typing import Any

import pytest

from environments.core import Action, EnvError, Policy, ToolSpec
from environments.gym import ToolEnvGym
from environments.policies import make_policy
from environments.registry import env_meta
from environments.replay import replay_record
from environments.roles import Team, step_role
from environments.runner import run_episode
from environments.servicedesk.dialogue import STOP_MARK

from .conftest import new_desk, play

SAMPLE = (
    "downgrade-in-contract",
    "pay-then-roaming",
    "cancel-shipped-order",
    "pac-not-holder",
    "fraud-transfer",
    "cancel-line-declines-fee",
)


@pytest.mark.parametrize("task", SAMPLE)
def test_the_oracle_passes_and_its_episode_replays_exactly(task: str) -> None:
    record = play(task, "oracle", seed=3)
    score = record["header"]["score"]
    assert score["passed"] and score["components"] == {"state": 1.0, "statements": 1.0, "policy": 1.0, "outcome": 1.0}
    assert record["header"]["termination_reason"] in ("horizon_reached", "agent_stop")
    assert replay_record(record)["ok"]
    roles = [step_role(s) for s in record["steps"]]
    assert roles[0] == "env" and "user" in roles and record["header"]["team"]["slots"]["user"]["default"] is True


def test_a_conversation_ends_when_the_caller_says_goodbye_with_the_stop_mark() -> None:
    record = play("roaming-on", "oracle")
    last = record["steps"][-1]
    assert step_role(last) == "user" and last["message"].endswith(STOP_MARK) and record["header"]["termination_reason"] == "horizon_reached"


def test_the_shortcut_fails_on_policy_and_the_floors_fail_outright() -> None:
    shortcut = play("roaming-on", "shortcut")["header"]["score"]
    assert shortcut["components"]["state"] == 1.0 and shortcut["components"]["policy"] == 0.0 and not shortcut["passed"]
    assert {v.split(" ")[0] for v in shortcut["details"]["violations"]} == {"set_roaming"}
    assert not play("roaming-on", "do-nothing")["header"]["score"]["passed"]
    record = play("roaming-on", "random-valid")
    assert not record["header"]["score"]["passed"] and replay_record(record)["ok"]


def test_account_details_told_before_verification_do_not_count() -> None:
    env = new_desk("bill-total")
    env.hear("actor", env.goal.statements[0]["say"])
    assert env.score().details["missing_statements"] == ["bill total"]


class ScriptedModelUser(Policy):
    """Stands in for a model in the user slot: answers plainly from the goal card it was briefed with."""

    name = "model-user"

    def __init__(self, brief: str) -> None:
        self.brief = brief

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        asked = str(history[-1].get("message") or "")
        facts = dict(line[2:].split(": ", 1) for line in self.brief.splitlines() if line.startswith("- "))
        if "confirm" in asked:
            return Action(message="yes")
        if "anything else" in asked:
            return Action(message=f"no thanks {STOP_MARK}")
        return Action(message=" ".join(f"{facts['phone number']}, {facts['date of birth']}, {facts['postcode']}".split()))


def test_a_model_in_the_user_slot_is_briefed_with_the_goal_card_and_its_turns_replay() -> None:
    env = new_desk("suspend-lost-phone", 2)
    brief = env_meta("servicedesk").roles[0].brief
    assert brief is not None
    user = ScriptedModelUser(brief(env))
    record = run_episode(env, Team(actor=make_policy("oracle", env, 2), slots={"user": user}))
    assert record["header"]["team"]["slots"]["user"] == {"policy": {"name": "model-user", "kind": "scripted"}, "default": False}
    assert record["header"]["score"]["passed"] and replay_record(record)["ok"]
    assert [s["message"] for s in record["steps"] if step_role(s) == "user"][-1] == f"no thanks {STOP_MARK}"


def test_it_refuses_an_unknown_user_profile_and_names_the_known_ones() -> None:
    with pytest.raises(EnvError, match=r"options.user_profile: 'grumpy' is not one of \['chatty', 'confused', 'cooperative', 'difficult'"):
        new_desk(user_profile="grumpy")
    with pytest.raises(EnvError, match="options.attack"):
        new_desk(attack="shouting")


def test_the_gymnasium_wrapper_drives_it_with_text_actions() -> None:
    gym = ToolEnvGym("servicedesk/roaming-on")
    obs, info = gym.reset(seed=1)
    assert "roaming" in obs
    obs, reward, terminated, truncated, info = gym.step(json.dumps({"name": "list_plans", "arguments": {}}))
    assert "Max Unlimited" in obs and not terminated and reward == 0.0


def test_an_mcp_session_calls_its_tools_and_records_an_unfinished_call_as_abandoned() -> None:
    from environments.mcp_server import EpisodeSession

    session = EpisodeSession("servicedesk/roaming-on", 1)
    content, is_error = session.call("verify_identity", {"customer_id": "C-1001", "date_of_birth": "1900-01-01", "postcode": "X"})
    assert (content, is_error) == ({"verified": False, "reason": "date of birth or postcode does not match"}, False)
    record = session.record()
    assert record["header"]["termination_reason"] == "abandoned" and record["header"]["score"]["passed"] is False
