"""team_from_config: a Team from an agent config, each role's policy built by policy_from_config."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, Policy
from environments.policies import register_role_policy
from environments.registry import make
from training.policies.team import TeamConfigError, team_check, team_from_config


class _Critic(Policy):
    name = "team-test-critic"

    def act(self, history: list[dict[str, Any]], tools: list[Any]) -> Action:
        return Action(message=f"advice after {len(history)} steps")


register_role_policy("team-test-critic", lambda env, seed: _Critic())  # a role policy: never listed among anchors

_ACTOR = {"kind": "scripted", "name": "smart-triage", "model": "smart-triage"}


def _env() -> Any:
    return make("storebench/payment-outage", 0)


def test_a_plain_config_gives_a_team_with_only_the_actor() -> None:
    team = team_from_config(dict(_ACTOR), _env(), 0)
    assert team.actor.name == "smart-triage"
    assert (team.critic, team.consultant, team.harness_level, team.slots) == (None, None, "tools-only", {})


def test_each_role_gets_its_policy_settings_and_connection() -> None:
    config = {
        **_ACTOR,
        "team": {
            "critic": {"agent": {"kind": "scripted", "model": "team-test-critic"}, "every": 5, "on_error": True},
            "consultant": {"agent": {"kind": "scripted", "model": "smart-triage"}, "cost": 0.02},
            "harness_level": "guided",
        },
    }
    asked: list[tuple[str, str]] = []
    team = team_from_config(config, _env(), 0, connection_for=lambda role, cfg: asked.append((role, cfg["role"])))  # type: ignore[func-returns-value]
    assert team.critic is not None and team.critic.policy.name == "team-test-critic"
    assert (team.critic.every, team.critic.on_request, team.critic.on_error) == (5, False, True)
    assert team.consultant is not None and (team.consultant.cost, team.consultant.on_request) == (0.02, True)
    assert team.harness_level == "guided"
    assert sorted(asked) == [("actor", "actor"), ("consultant", "consultant"), ("critic", "critic")]


@pytest.mark.parametrize(
    ("team", "field", "words"),
    [
        ({"critic": {"agent": {"kind": "scripted"}, "every": -1}}, "team.critic.every", "must be an integer >= 0, got -1"),
        ({"judge": {}}, "team.judge", "unknown role"),
        ({"harness_level": "strong"}, "team.harness_level", "'strong' is not one of full, guided, light, tools-only"),
        ({"consultant": {"agent": {"kind": "scripted"}, "cost": 2}}, "team.consultant.cost", "within [0, 1]"),
        ({"critic": {"agent": {"kind": "scripted", "team": {"critic": {}}}}}, "team.critic.agent", "cannot itself be a team"),
        ({"critic": {"every": 2}}, "team.critic.agent", "required"),
        ({"critic": {"agent": "my-critic"}}, "team.critic.agent", "must be an agent config object"),
        ({"slots": {"critic": {"kind": "scripted"}}}, "team.slots.critic", "not a slot name"),
        ({"critic": {"agent": {"kind": "scripted"}, "on_error": "yes"}}, "team.critic.on_error", "true or false"),
        ([1], "team", "must be an object"),
    ],
)
def test_it_refuses_a_bad_team_naming_the_field(team: Any, field: str, words: str) -> None:
    with pytest.raises(TeamConfigError) as caught:
        team_from_config({**_ACTOR, "team": team}, _env(), 0)
    assert caught.value.field == field and words in str(caught.value)


def test_names_are_allowed_only_where_the_caller_resolves_them() -> None:
    assert team_check({"critic": {"agent": "my-critic"}}, names=True) == [("critic", "team.critic.agent", "my-critic")]
