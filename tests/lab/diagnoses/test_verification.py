from __future__ import annotations

from typing import Any

import pytest

from lab.diagnoses.models import Diagnosis
from lab.diagnoses.policies import runs_a_model
from lab.diagnoses.services import diagnosis_create
from lab.diagnoses.verification import diagnosis_verify
from lab.errors import DomainError
from lab.trajectories.models import Episode, Step
from lab.trajectories.services import episode_to_record

FIX = {"name": "add", "arguments": {"key": "a", "amount": 3}}


def diagnose(episode: Any, **extra: Any) -> Diagnosis:
    fields = {"step_index": 1, "category": "wrong_arguments", "explanation": "added to b", "correction": FIX, **extra}
    return diagnosis_create(episode=episode, **fields)


def test_a_correction_that_fixes_the_failure_is_verified_against_the_retry(tight_episode: Any) -> None:
    before = episode_to_record(tight_episode)
    steps_before = list(Step.objects.filter(episode=tight_episode).values())
    diagnosis = diagnosis_verify(diagnosis=diagnose(tight_episode))
    assert diagnosis.verification == "verified"
    result = diagnosis.verification_result
    assert result["parent"] == {"episode": tight_episode.pk, "composite": 0.0, "passed": False, "termination_reason": "agent_stop"}
    assert result["corrected"]["passed"] is True and result["corrected"]["composite"] == 1.0
    assert result["retry"]["passed"] is False and result["retry"]["composite"] == 0.0
    assert result["delta_composite"] == 1.0 and result["verified"] is True
    children = {c.pk: c for c in diagnosis.child_episodes.all()}
    assert set(children) == {result["corrected_episode"], result["retry_episode"]}
    for child in children.values():
        assert (child.source, child.parent_id, child.branch_step, child.status) == ("branch", tight_episode.pk, 1, "finished")
        record = episode_to_record(child)
        assert record["header"]["parent"] == {"episode_id": tight_episode.pk, "branch_step": 1}
        assert [s["state_hash"] for s in record["steps"][:1]] == [s["state_hash"] for s in before["steps"][:1]]
    assert children[result["corrected_episode"]].passed is True
    assert episode_to_record(Episode.objects.get(pk=tight_episode.pk)) == before  # the parent is never changed
    assert list(Step.objects.filter(episode=tight_episode).values()) == steps_before


def test_the_child_prefix_hash_chain_equals_the_parents_up_to_k(store: Any) -> None:
    episode = store("ledger/loose")
    diagnosis = diagnosis_verify(diagnosis=diagnose(episode, step_index=3, category="premature_end", correction=FIX))
    parent_chain = [s["state_hash"] for s in episode_to_record(episode)["steps"]]
    retry = Episode.objects.get(pk=diagnosis.verification_result["retry_episode"])
    corrected = Episode.objects.get(pk=diagnosis.verification_result["corrected_episode"])
    assert [s["state_hash"] for s in episode_to_record(retry)["steps"]] == parent_chain
    corrected_chain = [s["state_hash"] for s in episode_to_record(corrected)["steps"]]
    assert corrected_chain[:3] == parent_chain[:3] and corrected_chain[3] != parent_chain[3]
    assert diagnosis.verification == "verified"  # add a 3 instead of submitting, then the stubborn policy submits


def test_a_correction_no_better_than_the_retry_is_refuted(tight_episode: Any) -> None:
    diagnosis = diagnosis_verify(diagnosis=diagnose(tight_episode, correction={"name": "read", "arguments": {"key": "b"}}))
    assert diagnosis.verification == "refuted"
    assert diagnosis.verification_result["corrected"]["passed"] is False
    assert diagnosis.child_episodes.count() == 2


def test_nothing_runs_without_a_correction_and_an_invalid_correction_is_refuted(tight_episode: Any) -> None:
    with pytest.raises(DomainError, match="proposes no corrected action"):
        diagnosis_verify(diagnosis=diagnose(tight_episode, correction=None))
    failed = diagnosis_verify(diagnosis=diagnose(tight_episode, correction={"name": "add", "arguments": {"key": "z", "amount": 1}}))
    assert failed.verification == "refuted"  # a bad call is an error result the env answers, then the policy goes on


def test_verification_through_the_api_answers_the_before_after_table(alice_api: Any, tight_episode: Any) -> None:
    created = alice_api.post(
        "/api/v1/diagnoses/",
        {"episode": tight_episode.pk, "step_index": 1, "category": "wrong_arguments", "explanation": "b, not a", "correction": FIX},
        format="json",
    )
    assert created.status_code == 201, created.content
    answer = alice_api.post(f"/api/v1/diagnoses/{created.json()['id']}/verify/?wait=1")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert body["verification"] == "verified" and len(body["child_episodes"]) == 2
    assert body["verification_result"]["corrected"]["passed"] is True


def test_an_episode_whose_policy_cannot_be_rebuilt_is_refused(alice_api: Any, project_a: Any, record_factory: Any) -> None:
    from lab.trajectories.services import episodes_ingest

    episode = episodes_ingest(project=project_a, records=[record_factory(steps=3)])[0].episode  # env toyenv: not registered
    diagnosis = diagnosis_create(
        episode=episode, step_index=1, category="other", explanation="x", correction={"name": "lookup", "arguments": {}}
    )
    answer = alice_api.post(f"/api/v1/diagnoses/{diagnosis.pk}/verify/?wait=1")
    assert answer.status_code == 400
    assert "cannot rebuild the environment" in answer.json()["error"]["message"]


@pytest.fixture
def model_agent(project_a: Any, settings: Any) -> Any:
    """An openai agent on a declared endpoint where nothing listens: enough to tell who may make the server run it."""
    from lab.trajectories.models import AgentConfig

    settings.PRACTICUM_ENDPOINTS = {"nowhere": {"base_url": "http://127.0.0.1:9/v1", "key_env": ""}}
    return AgentConfig.objects.create(
        project=project_a, name="gpt", kind="openai", model="m", endpoint="nowhere", sampling={"max_retries": 0, "timeout_s": 1}
    )


@pytest.mark.parametrize("role", ["owner", "researcher", "expert", "viewer"])
def test_verifying_with_a_model_agent_needs_the_role_that_starts_rollouts(
    api: Any, role_users: Any, project_a: Any, tight_episode: Any, model_agent: Any, role: str
) -> None:
    diagnosis = diagnose(tight_episode)
    answer = api(role_users[role], project_a).post(f"/api/v1/diagnoses/{diagnosis.pk}/verify/?wait=1", {"agent": "gpt"}, format="json")
    if role in ("owner", "researcher"):
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert len(body["child_episodes"]) == 2  # both branches were played, by the (unreachable) model
        assert body["verification_result"]["retry"]["termination_reason"] == "agent_error"
    else:
        assert answer.status_code == 403
        expected = "verify diagnoses with a model agent" if role == "expert" else "verify diagnoses"
        assert expected in answer.json()["error"]["message"]
        assert Diagnosis.objects.get(pk=diagnosis.pk).child_episodes.count() == 0


def test_an_expert_may_not_verify_an_episode_a_model_played_but_may_verify_an_anchors(
    api: Any, role_users: Any, tight_episode: Any, store: Any, model_agent: Any, project_a: Any
) -> None:
    expert = api(role_users["expert"], project_a)
    Episode.objects.filter(pk=tight_episode.pk).update(agent=model_agent)
    answer = expert.post(f"/api/v1/diagnoses/{diagnose(tight_episode).pk}/verify/?wait=1")
    assert answer.status_code == 403 and "verify diagnoses with a model agent" in answer.json()["error"]["message"]
    anchor_episode = store("ledger/loose")  # another record: the same one would be the deduplicated episode above
    assert anchor_episode.pk != tight_episode.pk and not runs_a_model(anchor_episode.agent)
    assert expert.post(f"/api/v1/diagnoses/{diagnose(anchor_episode).pk}/verify/?wait=1").status_code == 200


def test_branch_episodes_are_their_own_kind_never_an_agents_or_anchors(tight_episode: Any, project_a: Any) -> None:
    from lab.console.selectors import leaderboard
    from lab.projects.models import Project
    from lab.trajectories.models import AgentConfig

    anchor = AgentConfig.objects.create(project=project_a, name="ledger-stubborn", kind="scripted", model="ledger-stubborn")
    Episode.objects.filter(pk=tight_episode.pk).update(agent=anchor, provenance="recorded")
    before = [(r.name, r.n, r.mean) for r in leaderboard(projects=Project.objects.filter(pk=project_a.pk)).overall]
    diagnosis = diagnosis_verify(diagnosis=diagnose(Episode.objects.get(pk=tight_episode.pk)))
    assert diagnosis.verification == "verified"  # one branch passed: counted, it would move the anchor's mean
    assert [(r.name, r.n, r.mean) for r in leaderboard(projects=Project.objects.filter(pk=project_a.pk)).overall] == before
    children = list(diagnosis.child_episodes.all())
    assert len(children) == 2 and all(c.agent_id is None and c.source == "branch" for c in children)
    assert not anchor.episodes.filter(source="branch").exists()
    assert all(episode_to_record(c)["header"]["policy"] for c in children)  # the policy that played it is still recorded


def test_branches_stored_before_they_were_their_own_kind_are_moved_apart_by_the_migration(tight_episode: Any, project_a: Any) -> None:
    import importlib

    from django.apps import apps

    from lab.console.selectors import leaderboard
    from lab.projects.models import Project
    from lab.trajectories.models import AgentConfig

    anchor = AgentConfig.objects.create(project=project_a, name="ledger-stubborn", kind="scripted", model="ledger-stubborn")
    Episode.objects.filter(pk=tight_episode.pk).update(agent=anchor, provenance="recorded")
    before = [(r.name, r.n, r.mean) for r in leaderboard(projects=Project.objects.filter(pk=project_a.pk)).overall]
    children = [c.pk for c in diagnosis_verify(diagnosis=diagnose(Episode.objects.get(pk=tight_episode.pk))).child_episodes.all()]
    Episode.objects.filter(pk__in=children).update(agent=anchor)  # as the old verifier stored them: the parent's agent
    assert anchor.episodes.filter(source="branch").count() == 2
    migration = importlib.import_module("lab.trajectories.migrations.0009_branch_episodes_are_their_own_kind")
    migration.branches_apart(apps, None)
    migration.branches_apart(apps, None)  # idempotent
    assert not anchor.episodes.filter(source="branch").exists()
    assert Episode.objects.get(pk=tight_episode.pk).agent_id == anchor.pk  # the diagnosed episode keeps its agent
    assert [(r.name, r.n, r.mean) for r in leaderboard(projects=Project.objects.filter(pk=project_a.pk)).overall] == before
