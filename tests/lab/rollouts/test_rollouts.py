"""Rollout jobs: every step persisted and published as it happens, crash resume by replay, cancel, harness stops."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, Policy, ToolCall
from environments.registry import make
from environments.replay import replay_record
from environments.runner import make_policy, run_episode
from lab.live.models import LiveEvent
from lab.rollouts import services
from lab.rollouts.models import RolloutJob
from lab.rollouts.services import anchor_agent_resolve, rollout_cancel, rollout_launch, rollout_run
from lab.screenshots.models import Screenshot
from lab.trajectories.models import AgentConfig, Step
from lab.trajectories.services import episode_to_record, task_resolve

pytestmark = pytest.mark.django_db


def _job(project: Any, agent_name: str, key: str = "payment-outage", seed: int = 0) -> RolloutJob:
    task = task_resolve(project=project, env="storebench", key=key)
    return rollout_launch(
        project=project, agent=anchor_agent_resolve(project=project, name=agent_name), task=task, seed=seed, enqueue=False
    )


def _uninterrupted_chain(agent: str, key: str, seed: int) -> list[str]:
    env = make(f"storebench/{key}", seed)
    return [s["state_hash"] for s in run_episode(env, make_policy(agent, env, seed))["steps"]]


def test_a_rollout_persists_each_step_publishes_it_and_matches_a_direct_run(project_a: Any) -> None:
    job = rollout_run(job_id=_job(project_a, "naive-restock").pk)
    assert job.status == "finished" and job.attempts == 1
    episode = job.episode
    episode.refresh_from_db()
    record = episode_to_record(episode)
    assert [s["state_hash"] for s in record["steps"]] == _uninterrupted_chain("naive-restock", "payment-outage", 0)
    assert (episode.status, episode.termination_reason, episode.source) == ("finished", "horizon_reached", "rollout")
    assert episode.composite == pytest.approx(record["header"]["score"]["composite"]) and episode.composite > 0.5
    assert record["header"]["policy"]["name"] == "naive-restock" and record["header"]["rollout_job"] == job.pk
    events = list(LiveEvent.objects.filter(stream=f"episode:{episode.pk}").order_by("seq").values_list("seq", "kind"))
    assert [kind for _, kind in events] == ["status"] + ["step"] * episode.step_count + ["status"]
    assert [seq for seq, _ in events] == list(range(1, episode.step_count + 3))
    assert replay_record(record)["ok"]


class _Killed(BaseException):
    """Stands in for SIGKILL in-process: escapes every `except Exception`, so nothing gets cleaned up."""


def test_a_crashed_rollout_resumes_by_replay_with_the_uninterrupted_chain(project_a: Any, monkeypatch: Any) -> None:
    job = _job(project_a, "random-valid", seed=3)  # random-valid carries an RNG: resuming must restore it too
    real_on_step = services.EpisodeSink.on_step

    def dies_after_40(self: Any, step: dict[str, Any]) -> None:
        real_on_step(self, step)
        if step["index"] == 40:
            raise _Killed()

    monkeypatch.setattr(services.EpisodeSink, "on_step", dies_after_40)
    with pytest.raises(_Killed):
        rollout_run(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.episode.status, job.episode.step_count) == ("running", "running", 41)
    monkeypatch.setattr(services.EpisodeSink, "on_step", real_on_step)
    job = rollout_run(job_id=job.pk)  # the redelivered task
    assert (job.status, job.attempts) == ("finished", 2)
    steps = episode_to_record(job.episode)["steps"]
    assert [s["index"] for s in steps] == list(range(len(steps)))  # nothing lost, nothing twice
    assert [s["state_hash"] for s in steps] == _uninterrupted_chain("random-valid", "payment-outage", 3)
    assert Step.objects.filter(episode=job.episode).count() == len(steps)


def test_cancelling_a_queued_rollout_never_starts_it(project_a: Any) -> None:
    job = rollout_cancel(job=_job(project_a, "do-nothing"))
    assert job.status == "cancelled"
    job = rollout_run(job_id=job.pk)
    assert job.status == "cancelled" and job.episode is None


def test_a_cancel_during_the_run_stops_after_the_current_step(project_a: Any, monkeypatch: Any) -> None:
    job = _job(project_a, "naive-restock")
    real_on_step = services.EpisodeSink.on_step

    def cancel_at_5(self: Any, step: dict[str, Any]) -> None:
        if step["index"] == 5:
            rollout_cancel(job=self.job)
        real_on_step(self, step)

    monkeypatch.setattr(services.EpisodeSink, "on_step", cancel_at_5)
    job = rollout_run(job_id=job.pk)
    job.episode.refresh_from_db()
    assert job.status == "cancelled"
    assert (job.episode.termination_reason, job.episode.status, job.episode.step_count) == ("cancelled", "finished", 6)


def test_an_unreachable_endpoint_ends_as_an_infrastructure_error_not_an_agent_failure(project_a: Any, settings: Any) -> None:
    settings.PRACTICUM_ENDPOINTS = {"gone": {"base_url": "http://127.0.0.1:9/v1", "key_env": ""}}
    agent = AgentConfig.objects.create(
        project=project_a, name="gone", kind="openai", model="m", endpoint="gone", sampling={"max_retries": 0, "timeout_s": 2}
    )
    task = task_resolve(project=project_a, env="toolgym", key="lookup")
    job = rollout_run(job_id=rollout_launch(project=project_a, agent=agent, task=task, seed=0, enqueue=False).pk)
    job.episode.refresh_from_db()
    assert job.status == "failed"
    assert (job.episode.termination_reason, job.episode.status) == ("infrastructure_error", "failed")


def test_a_bad_agent_config_fails_the_job_with_the_reason(project_a: Any) -> None:
    agent = AgentConfig.objects.create(project=project_a, name="bad", kind="hf", model="nowhere", harness={"window_turns": 0})
    task = task_resolve(project=project_a, env="toolgym", key="lookup")
    job = rollout_run(job_id=rollout_launch(project=project_a, agent=agent, task=task, seed=0, enqueue=False).pk)
    assert job.status == "failed" and "window_turns must be at least 1, got 0" in job.error and job.episode is None


class _ExplodingPolicy:
    """Acts like the anchor for three steps, then raises as a broken LLM client would (quoting its key)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.calls = inner, 0
        self.name, self.kind = inner.name, inner.kind

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    def act(self, history: list[dict[str, Any]], tools: list[Any]) -> Any:
        self.calls += 1
        if self.calls > 3:
            raise ValueError("the model server refused key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")
        return self.inner.act(history, tools)


def test_a_policy_that_raises_records_the_cause_on_the_episode_without_the_secret(project_a: Any, monkeypatch: Any) -> None:
    import training.policies  # rollouts build every policy through it (training.policies.team.team_from_config)

    real = training.policies.policy_from_config
    monkeypatch.setattr(training.policies, "policy_from_config", lambda *a, **k: _ExplodingPolicy(real(*a, **k)))
    job = rollout_run(job_id=_job(project_a, "naive-restock").pk)
    episode = job.episode
    episode.refresh_from_db()
    assert (job.status, episode.termination_reason, episode.status) == ("failed", "agent_error", "failed")
    cause = episode.metrics["termination_cause"]
    assert cause["type"] == "ValueError" and cause["message"].startswith("the model server refused key ")
    assert "abcdefghijklmnopqrstuvwxyz" not in cause["message"]
    assert episode.meta["header"]["termination_cause"] == cause


def test_a_job_that_fails_before_its_episode_keeps_its_error_without_the_secret(project_a: Any, monkeypatch: Any) -> None:
    """The job's error shows on the evaluation page and in the API: masked like an episode's cause."""
    import training.policies

    def refuses(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("the model server refused key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789")

    monkeypatch.setattr(training.policies, "policy_from_config", refuses)
    job = rollout_run(job_id=_job(project_a, "naive-restock").pk)
    assert job.status == "failed" and job.episode is None
    assert job.error.startswith("ValueError: the model server refused key ") and "abcdefghijklmnopqrstuvwxyz" not in job.error


class _LooksThenSubmits(Policy):
    """A vision policy's shape: it asks for a screenshot, then ends the task."""

    def act(self, history: list[dict[str, Any]], tools: list[Any]) -> Action:
        if len(history) == 1:
            return Action(tool_calls=[ToolCall(id="c1", name="observe", arguments={"screenshot": True})])
        return Action(tool_calls=[ToolCall(id="c2", name="submit", arguments={})])


def test_a_screenshot_a_policy_asked_for_is_stored_once_in_the_project_and_referenced_by_its_step(project_a: Any, monkeypatch: Any) -> None:
    import training.policies

    monkeypatch.setattr(training.policies, "policy_from_config", lambda *a, **k: _LooksThenSubmits())
    task = task_resolve(project=project_a, env="desktop", key="change-setting")
    job = rollout_launch(
        project=project_a, agent=anchor_agent_resolve(project=project_a, name="oracle"), task=task, seed=1000, enqueue=False
    )
    job = rollout_run(job_id=job.pk)
    steps = list(Step.objects.filter(episode=job.episode).order_by("index"))
    looked = steps[1]
    digest = looked.results[0]["content"]["screenshot_sha256"]
    assert looked.extra["meta"]["screenshot"] == digest  # the bytes the policy saw are the bytes stored
    assert [s.extra.get("meta", {}).get("screenshot") for s in steps if s.index != 1] == [None] * (len(steps) - 1)
    stored = Screenshot.objects.get(project=project_a, sha256=digest)
    assert bytes(stored.png).startswith(b"\x89PNG") and stored.width == 1280
