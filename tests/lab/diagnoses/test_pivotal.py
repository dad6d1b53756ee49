"""The pivotal step on request: labelled now within the caller's step budget, a queued pivotal-only job beyond it."""

from __future__ import annotations

from typing import Any

import pytest

from lab.diagnoses import pivotal, tasks
from lab.diagnoses.models import DiagnosisJob

pytestmark = pytest.mark.django_db


def test_a_short_episode_is_labelled_inline_without_a_job(tight_episode: Any, alice: Any) -> None:
    outcome = pivotal.episode_pivotal_find(
        episode=tight_episode, anchor="ledger-fixer", user=alice, inline_max_steps=tight_episode.step_count
    )
    tight_episode.refresh_from_db()
    assert outcome.job is None and outcome.label is not None
    assert (outcome.label["step"], tight_episode.meta["pivotal"]["step"], tight_episode.meta["pivotal"]["anchor"]) == (1, 1, "ledger-fixer")
    assert not DiagnosisJob.objects.exists()


def test_a_longer_episode_becomes_a_pivotal_only_job_queued_on_commit(
    tight_episode: Any, alice: Any, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    queued: list[int] = []
    monkeypatch.setattr(tasks.run_diagnosis_job, "delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        outcome = pivotal.episode_pivotal_find(
            episode=tight_episode, anchor="ledger-fixer", user=alice, inline_max_steps=tight_episode.step_count - 1
        )
    job = DiagnosisJob.objects.get()
    assert outcome.label is None and outcome.job == job and queued == [job.pk]
    assert (job.episode_ids, job.agent, job.rule_anchor, job.pivotal_anchor, job.verify) == (
        [tight_episode.pk],
        None,
        "",
        "ledger-fixer",
        False,
    )
    tight_episode.refresh_from_db()
    assert "pivotal" not in tight_episode.meta
