"""Evaluation and rollout lookups are scoped to the caller's projects: another project's row is a 404."""

from __future__ import annotations

from typing import Any

import pytest

from lab.errors import NotFound
from lab.projects.models import Project
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.selectors import evaluation_get, rollout_job_get
from lab.trajectories.models import AgentConfig, Task

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(project_a: Any) -> AgentConfig:
    return AgentConfig.objects.create(project=project_a, name="triage", kind="scripted", model="smart-triage")


def test_an_evaluation_is_found_only_within_the_callers_projects(project_a: Any, project_b: Any, agent: AgentConfig) -> None:
    evaluation = Evaluation.objects.create(project=project_a, agent=agent, task_set="toyenv/eval", seeds=[0])
    assert evaluation_get(projects=Project.objects.filter(pk=project_a.pk), pk=evaluation.pk) == evaluation
    with pytest.raises(NotFound, match=f"No evaluation {evaluation.pk} that you can see"):
        evaluation_get(projects=Project.objects.filter(pk=project_b.pk), pk=evaluation.pk)


def test_a_rollout_job_is_found_only_within_the_callers_projects(project_a: Any, project_b: Any, agent: AgentConfig) -> None:
    task = Task.objects.create(project=project_a, env="toyenv", key="toy-task")
    job = RolloutJob.objects.create(project=project_a, agent=agent, task=task, seed=3)
    found = rollout_job_get(projects=Project.objects.filter(pk=project_a.pk), pk=job.pk)
    assert (found, found.project) == (job, project_a)
    with pytest.raises(NotFound, match=f"No rollout {job.pk} that you can see"):
        rollout_job_get(projects=Project.objects.filter(pk=project_b.pk), pk=job.pk)


def test_the_lists_hold_only_the_callers_projects_and_the_active_list_only_unended_ones(
    project_a: Any, project_b: Any, agent: AgentConfig
) -> None:
    from lab.rollouts.selectors import evaluation_list, evaluation_list_active, rollout_job_find, rollout_job_list

    other_agent = AgentConfig.objects.create(project=project_b, name="triage", kind="scripted", model="smart-triage")
    mine = Evaluation.objects.create(project=project_a, agent=agent, task_set="toyenv/eval", seeds=[0], status="running")
    done = Evaluation.objects.create(project=project_a, agent=agent, task_set="toyenv/eval", seeds=[1], status="finished")
    Evaluation.objects.create(project=project_b, agent=other_agent, task_set="toyenv/eval", seeds=[0], status="running")
    visible = Project.objects.filter(pk=project_a.pk)
    assert set(evaluation_list(projects=visible)) == {mine, done}
    assert list(evaluation_list_active(projects=visible)) == [mine]
    task = Task.objects.create(project=project_b, env="toyenv", key="toy-task")
    theirs = RolloutJob.objects.create(project=project_b, agent=other_agent, task=task, seed=3)
    assert list(rollout_job_list(projects=visible)) == []
    assert rollout_job_find(projects=visible, pk=theirs.pk) is None
    assert rollout_job_find(projects=Project.objects.filter(pk=project_b.pk), pk=theirs.pk) == theirs
