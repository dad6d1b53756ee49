"""The service layer refuses what the API refuses: bad step indices, diagnoses past the end, cross-project links."""

from __future__ import annotations

from typing import Any

import pytest

from lab.diagnoses.services import diagnosis_create
from lab.errors import Conflict, DomainError
from lab.trajectories.models import EpisodeStatus, Step
from lab.trajectories.services import episode_append_step, episode_finish, episode_start, episode_to_record, episodes_ingest, task_resolve

pytestmark = pytest.mark.django_db


def _step(index: int, text: str = "") -> dict[str, Any]:
    return {"index": index, "source": "agent", "message": text or f"step {index}"}


@pytest.fixture
def running(project_a: Any, alice: Any) -> Any:
    task = task_resolve(project=project_a, env="toyenv", key="svc")
    return episode_start(project=project_a, task=task, source="rollout", seed=3, user=alice)


def test_append_refuses_a_gap_and_a_taken_index_but_accepts_a_retried_identical_write(running: Any) -> None:
    episode_append_step(episode=running, step=_step(0))
    with pytest.raises(DomainError, match="expected step index 1, got 2"):
        episode_append_step(episode=running, step=_step(2))
    again = episode_append_step(episode=running, step=_step(0))  # the same write after a crash: no duplicate
    assert again.index == 0 and Step.objects.filter(episode=running).count() == 1
    with pytest.raises(Conflict, match="already taken"):
        episode_append_step(episode=running, step=_step(0, "a different action"))


def test_append_refuses_an_invalid_step_and_a_closed_episode(running: Any) -> None:
    with pytest.raises(DomainError, match="source"):
        episode_append_step(episode=running, step={"index": 0, "source": "robot"})
    episode_append_step(episode=running, step=_step(0))
    episode_finish(episode=running, reason="agent_stop", score={"composite": 0.2, "passed": False, "components": {}})
    assert running.status == EpisodeStatus.FINISHED
    with pytest.raises(Conflict, match="finished"):
        episode_append_step(episode=running, step=_step(1))
    record = episode_to_record(running)
    assert record["header"]["termination_reason"] == "agent_stop" and len(record["steps"]) == 1


def test_a_diagnosis_past_the_last_step_is_refused(project_a: Any, alice: Any, record_factory: Any) -> None:
    [outcome] = episodes_ingest(project=project_a, records=[record_factory(steps=3)], user=alice)
    with pytest.raises(DomainError, match="step 3 does not exist"):
        diagnosis_create(episode=outcome.episode, step_index=3, category="wrong_tool", explanation="x")
    with pytest.raises(DomainError, match="not one of"):
        diagnosis_create(episode=outcome.episode, step_index=1, category="bad luck", explanation="x")
    with pytest.raises(DomainError, match="evidence step 9"):
        diagnosis_create(episode=outcome.episode, step_index=1, category="wrong_tool", explanation="x", evidence_steps=[0, 9])
    with pytest.raises(DomainError, match="correction"):
        diagnosis_create(episode=outcome.episode, step_index=1, category="wrong_tool", explanation="x", correction={"tool": "x"})
    made = diagnosis_create(
        episode=outcome.episode,
        step_index=2,
        category="wrong_tool",
        explanation="used refund instead of return",
        correction={"name": "process_return", "arguments": {"order_id": "O-1"}},
    )
    assert made.verification == "unverified"


def test_a_branch_into_another_project_is_refused(project_a: Any, project_b: Any, alice: Any, bob: Any, record_factory: Any) -> None:
    [outcome] = episodes_ingest(project=project_b, records=[record_factory(steps=2)], user=bob)
    task = task_resolve(project=project_a, env="toyenv", key="svc")
    with pytest.raises(DomainError, match="parent's project"):
        episode_start(project=project_a, task=task, source="branch", seed=1, parent=outcome.episode, branch_step=1)
    same = task_resolve(project=project_b, env="toyenv", key="svc")
    with pytest.raises(DomainError, match="no step 5"):
        episode_start(project=project_b, task=same, source="branch", seed=1, parent=outcome.episode, branch_step=5)


def test_bulk_ingest_is_atomic(project_a: Any, alice: Any, record_factory: Any) -> None:
    bad = record_factory(steps=2)
    bad["steps"][1]["index"] = 7
    with pytest.raises(DomainError) as caught:
        episodes_ingest(project=project_a, records=[record_factory(steps=2, seed=1), bad], user=alice)
    assert caught.value.details["record_index"] == 1 and caught.value.details["path"] == "steps[1].index"
    assert Step.objects.count() == 0
