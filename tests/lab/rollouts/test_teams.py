"""Team agent configs: checked at the edge (API), role agents resolved by name within the project only, and a
scripted team's rollout stored with its roles and exported per role.

The rollouts run through the real runner (environments.runner with environments.team); the critic is a small
test policy registered here, so its advice and sampled tokens are known.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from environments.core import Action, Policy
from environments.policies import register_role_policy
from lab.errors import DomainError
from lab.rollouts.services import rollout_launch, rollout_run
from lab.rollouts.teams import agent_config_dict, team_validate
from lab.trajectories.models import AgentConfig, Step
from lab.trajectories.roles import episode_role_stats
from lab.trajectories.services import episode_to_record

pytestmark = pytest.mark.django_db


class _RuleCritic(Policy):
    name = "lab-test-critic"

    def act(self, history: list[dict[str, Any]], tools: list[Any]) -> Action:
        failed = sum(1 for s in history for r in s.get("results") or [] if r.get("is_error"))
        return Action(message=f"{failed} failed calls so far; check stock before ordering", token_ids=[1, 2, 3])


register_role_policy("lab-test-critic", lambda env, seed: _RuleCritic())  # a role policy: never listed among anchors

_CRITIC = {"agent": {"kind": "scripted", "model": "lab-test-critic"}, "every": 5}


def test_the_api_creates_a_team_whose_named_role_is_resolved_in_the_project(alice_api: Any, project_a: Any) -> None:
    assert (
        alice_api.post("/api/v1/agents/", {"name": "critic", "kind": "scripted", "model": "lab-test-critic"}, format="json").status_code
        == 201
    )
    answer = alice_api.post(
        "/api/v1/agents/",
        {
            "name": "triage-team",
            "kind": "scripted",
            "model": "smart-triage",
            "team": {"critic": {"agent": "critic", "every": 5}, "harness_level": "guided"},
        },
        format="json",
    )
    assert answer.status_code == 201, answer.json()
    assert answer.json()["team"] == {"critic": {"agent": "critic", "every": 5}, "harness_level": "guided"}
    config = agent_config_dict(AgentConfig.objects.get(project=project_a, name="triage-team"))
    assert config["team"]["critic"] == {
        "agent": {"kind": "scripted", "name": "critic", "model": "lab-test-critic", "endpoint": "", "sampling": {}, "harness": {}},
        "every": 5,
    }
    assert config["team"]["harness_level"] == "guided"
    assert "team" not in agent_config_dict(AgentConfig.objects.get(project=project_a, name="critic"))


@pytest.mark.parametrize(
    ("team", "path", "words"),
    [
        ({"critic": {"agent": "critic", "every": -1}}, "team.critic.every", "must be an integer >= 0"),
        ({"judge": {"agent": "critic"}}, "team.judge", "unknown role"),
        ({"harness_level": "max"}, "team.harness_level", "not one of full, guided, light, tools-only"),
        ({"consultant": {"agent": "critic", "cost": 1.5}}, "team.consultant.cost", "within [0, 1]"),
        ({"critic": {"agent": "nobody"}}, "team.critic.agent", "no agent 'nobody' in project acme"),
        (
            {"critic": {"agent": {"kind": "openai", "model": "gpt", "endpoint": "http://10.0.0.1/v1"}}},
            "team.critic.agent.endpoint",
            "free URLs are off",
        ),
        ({"critic": {"agent": {"kind": "scripted", "api_key": "x"}}}, "team.critic.agent.api_key", "unknown field"),
        ({"critic": {"agent": {"kind": "human"}}}, "team.critic.agent.kind", "'human' is not one of"),
    ],
)
def test_the_api_refuses_a_bad_team_naming_the_field(alice_api: Any, project_a: Any, team: Any, path: str, words: str) -> None:
    AgentConfig.objects.create(project=project_a, name="critic", kind="scripted", model="lab-test-critic")
    answer = alice_api.post("/api/v1/agents/", {"name": "t", "kind": "scripted", "model": "smart-triage", "team": team}, format="json")
    assert answer.status_code == 400, answer.json()
    error = answer.json()["error"]
    assert error["path"] == path and words in error["message"], error


def test_a_role_named_from_another_project_is_not_found(alice_api: Any, project_a: Any, project_b: Any) -> None:
    AgentConfig.objects.create(project=project_b, name="bobs-critic", kind="scripted", model="lab-test-critic")
    answer = alice_api.post(
        "/api/v1/agents/",
        {"name": "t", "kind": "scripted", "model": "smart-triage", "team": {"critic": {"agent": "bobs-critic"}}},
        format="json",
    )
    assert answer.status_code == 400 and answer.json()["error"]["message"] == "team.critic.agent: no agent 'bobs-critic' in project acme"


def test_teams_cannot_nest_or_cycle(project_a: Any) -> None:
    AgentConfig.objects.create(project=project_a, name="critic", kind="scripted", model="lab-test-critic")
    AgentConfig.objects.create(
        project=project_a, name="team-a", kind="scripted", model="smart-triage", team={"critic": {"agent": "critic"}}
    )
    with pytest.raises(DomainError, match="agent 'team-a' is a team; a role cannot itself be a team"):
        team_validate(project=project_a, team={"critic": {"agent": "team-a"}}, agent_name="team-b")
    with pytest.raises(DomainError, match="agent 'critic' is a role of the team 'team-a'"):
        team_validate(project=project_a, team={"critic": {"agent": {"kind": "scripted", "model": "x"}}}, agent_name="critic")
    with pytest.raises(DomainError, match="this team's own agent"):
        team_validate(project=project_a, team={"critic": {"agent": "solo"}}, agent_name="solo")


def test_editing_a_team_needs_a_writer_and_is_checked_merged(api: Any, alice_api: Any, role_users: dict[str, Any], project_a: Any) -> None:
    agent = AgentConfig.objects.create(project=project_a, name="t", kind="scripted", model="smart-triage")
    viewer = api(role_users["viewer"], project_a)
    assert viewer.patch(f"/api/v1/agents/{agent.pk}/", {"team": {"harness_level": "full"}}, format="json").status_code == 403
    bad = alice_api.patch(f"/api/v1/agents/{agent.pk}/", {"team": {"critic": {"agent": "t"}}}, format="json")
    assert bad.status_code == 400 and "own agent" in bad.json()["error"]["message"]
    good = alice_api.patch(f"/api/v1/agents/{agent.pk}/", {"team": {"harness_level": "full"}}, format="json")
    assert good.status_code == 200 and AgentConfig.objects.get(pk=agent.pk).team == {"harness_level": "full"}


def test_a_scripted_team_rollout_is_stored_with_its_roles_and_exported_per_role(project_a: Any, alice_api: Any) -> None:
    AgentConfig.objects.create(project=project_a, name="critic", kind="scripted", model="lab-test-critic")
    agent = AgentConfig.objects.create(
        project=project_a,
        name="triage-team",
        kind="scripted",
        model="smart-triage",
        team={"critic": {**_CRITIC, "agent": "critic"}, "harness_level": "light"},
    )
    job = rollout_run(job_id=rollout_launch(project=project_a, agent=agent, task="storebench/payment-outage", seed=0, enqueue=False).pk)
    assert job.status == "finished", job.error
    episode = job.episode
    episode.refresh_from_db()
    record = episode_to_record(episode)
    actor_turns = sum(1 for s in record["steps"] if s["source"] == "agent" and "role" not in s)
    critic_rows = list(Step.objects.filter(episode=episode, role="critic").values_list("index", "token_ids"))
    assert len(critic_rows) == actor_turns // 5 > 0 and all(ids == [1, 2, 3] for _, ids in critic_rows)
    team = record["header"]["team"]
    assert (team["critic"]["policy"]["name"], team["critic"]["every"], team["harness_level"]) == ("lab-test-critic", 5, "light")
    stats = episode_role_stats(episode)
    assert stats["actor"]["turns"] == actor_turns and stats["critic"] == {
        "turns": len(critic_rows),
        "tokens": 3 * len(critic_rows),
        "cost": 0.0,
    }
    assert record["header"]["roles"]["critic"]["turns"] == len(critic_rows)  # the runner's accounting, kept at the finish
    lines = [
        json.loads(line) for line in b"".join(alice_api.get("/api/v1/datasets/export?view=role&role=critic").streaming_content).splitlines()
    ]
    assert [line["step_index"] for line in lines] == [index for index, _ in critic_rows]
    first = lines[0]
    assert first["episode_id"] == episode.pk and first["advice"].endswith("check stock before ordering")
    assert len(first["history"]) == first["step_index"] and (first["asked"], first["trigger"]) == (False, "schedule")
    assert first["outcome"] == {"composite": episode.composite, "passed": episode.passed, "reward": episode.reward}
    assert first["followup"]["steps"] > 0 and first["followup"]["succeeded"] == (first["followup"]["failed"] == 0)
    assert alice_api.get("/api/v1/datasets/export?view=role&role=Critic").status_code == 400


def test_a_team_with_a_local_model_role_goes_to_the_gpu_queue(project_a: Any) -> None:
    AgentConfig.objects.create(project=project_a, name="critic", kind="scripted", model="lab-test-critic")
    plain = AgentConfig.objects.create(
        project=project_a, name="plain-team", kind="scripted", model="smart-triage", team={"critic": {"agent": "critic"}}
    )
    assert rollout_launch(project=project_a, agent=plain, task="storebench/payment-outage", seed=0, enqueue=False).queue == "cpu"
    AgentConfig.objects.filter(name="critic").update(kind="hf", model="tiny")
    assert rollout_launch(project=project_a, agent=plain, task="storebench/payment-outage", seed=1, enqueue=False).queue == "gpu"
