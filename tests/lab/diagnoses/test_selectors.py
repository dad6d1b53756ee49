"""Reads behind the diagnosis pages: cached step credit, the filtered list, jobs and their diagnoses, all scoped
to the caller's projects. Episodes are real runs of the tiny ledger environment."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.cache import cache

from lab.diagnoses import selectors
from lab.diagnoses.analysis import episode_step_credit
from lab.diagnoses.jobs import diagnosis_job_launch
from lab.diagnoses.services import diagnosis_create
from lab.errors import NotFound
from lab.projects.models import Project
from lab.trajectories.models import EpisodeStatus

pytestmark = pytest.mark.django_db


def test_credit_is_computed_once_per_finished_episode_and_then_read_from_the_cache(tight_episode: Any, monkeypatch: Any) -> None:
    cache.clear()
    calls: list[int] = []

    def counted(*, episode: Any) -> dict[str, Any]:
        calls.append(episode.pk)
        return episode_step_credit(episode=episode)

    monkeypatch.setattr(selectors, "episode_step_credit", counted)
    first = selectors.episode_credit_cached(episode=tight_episode)
    second = selectors.episode_credit_cached(episode=tight_episode)
    assert calls == [tight_episode.pk]
    assert first == second == {row["index"]: row["credit"] for row in episode_step_credit(episode=tight_episode)["credit"]}
    assert abs(sum(first.values()) - 1.0) < 1e-9


def test_a_running_episode_has_no_credit_yet(tight_episode: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(selectors, "episode_step_credit", lambda **kwargs: pytest.fail("credit of a running episode was computed"))
    tight_episode.status = EpisodeStatus.RUNNING
    assert selectors.episode_credit_cached(episode=tight_episode) == {}


def test_the_diagnosis_list_filters_by_category_task_and_episode_within_the_projects(store: Any, alice: Any, project_b: Any) -> None:
    tight, loose = store("ledger/tight"), store("ledger/loose")
    wrong_tool = diagnosis_create(episode=tight, step_index=1, category="wrong_tool", explanation="called the wrong tool", author=alice)
    wrong_args = diagnosis_create(episode=loose, step_index=1, category="wrong_arguments", explanation="wrong key", author=alice)
    mine = Project.objects.filter(pk=tight.project_id)

    def listed(**filters: str) -> set[int]:
        return set(selectors.diagnosis_list(projects=mine, filters=filters).values_list("pk", flat=True))

    assert listed() == {wrong_tool.pk, wrong_args.pk}
    assert listed(category="wrong_arguments") == {wrong_args.pk}
    assert listed(task="ledger/tight") == listed(task="tight") == {wrong_tool.pk}
    assert listed(episode=str(loose.pk)) == {wrong_args.pk}
    assert listed(episode="not-a-number", category="") == {wrong_tool.pk, wrong_args.pk}
    assert set(selectors.diagnosis_list(projects=Project.objects.filter(pk=project_b.pk), filters={})) == set()
    with pytest.raises(NotFound, match=f"No diagnosis {wrong_tool.pk} that you can see"):
        selectors.diagnosis_get(projects=Project.objects.filter(pk=project_b.pk), pk=wrong_tool.pk)
    assert selectors.diagnosis_get(projects=mine, pk=wrong_tool.pk) == wrong_tool


def test_a_verify_only_jobs_diagnoses_are_the_existing_ones_of_its_episodes(store: Any, alice: Any, project_b: Any) -> None:
    tight, loose = store("ledger/tight"), store("ledger/loose")
    on_tight = diagnosis_create(episode=tight, step_index=1, category="wrong_tool", explanation="called the wrong tool", author=alice)
    diagnosis_create(episode=loose, step_index=1, category="wrong_tool", explanation="not in the job", author=alice)
    job = diagnosis_job_launch(project=tight.project, episode_ids=[tight.pk], verify=True, user=alice, enqueue=False)
    mine = Project.objects.filter(pk=tight.project_id)
    assert selectors.diagnosis_job_get(projects=mine, pk=job.pk) == job
    assert list(selectors.diagnosis_job_diagnoses(job=job)) == [on_tight]
    with pytest.raises(NotFound, match=f"No diagnosis job {job.pk} that you can see"):
        selectors.diagnosis_job_get(projects=Project.objects.filter(pk=project_b.pk), pk=job.pk)
