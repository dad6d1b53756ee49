"""Verification by replay: a corrected branch and an original-action retry, both stored as child episodes.

    diagnosis_verify(diagnosis=d)     # -> d with verification verified | refuted | failed and verification_result

Both children are Episodes with source=branch, parent=the diagnosed episode and branch_step=k; each holds the
parent's steps before k (replayed and hash-checked, so the chain equals the parent's up to k), then its own
step k and the continuation. The parent's rows are only read. `verification_result` is the before/after
table: the parent's outcome, each child's, the difference, and the child episode ids.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from environments.core import EnvError
from environments.diagnosis.branching import verify_correction
from environments.records import Header, Record, Step, record_score
from environments.replay import ReplayDivergence
from lab.diagnoses.analysis import record_env
from lab.diagnoses.models import Diagnosis, Verification
from lab.diagnoses.policies import continuation_seed_for, policy_factory_for_agent, policy_factory_for_episode
from lab.diagnoses.services import CONTENT_FIELDS
from lab.errors import DomainError
from lab.trajectories.models import AgentConfig, Episode
from lab.trajectories.services import episode_append_step, episode_finish, episode_start, episode_to_record


class ChildEpisodeSink:
    """Runner sink that stores a branch as a child Episode: the prefix first, then each new step as it happens."""

    def __init__(self, *, parent: Episode, diagnosis: Diagnosis, label: str, prefix: list[Step]) -> None:
        self.parent = parent
        self.diagnosis = diagnosis
        self.label = label
        self.prefix = prefix
        self.episode: Episode | None = None
        self.finished = False

    def on_start(self, header: Header) -> None:
        header = {**header, "parent": {"episode_id": self.parent.pk, "branch_step": self.diagnosis.step_index}}
        header["meta"] = {**(header.get("meta") or {}), "branch": self.label, "diagnosis": self.diagnosis.pk}
        self.episode = episode_start(
            # No agent: a branch is its own kind, never one of the agent's or anchor's episodes (the header names its policy).
            project=self.parent.project,
            task=self.parent.task,
            source="branch",
            seed=self.parent.seed,
            agent=None,
            header=header,
            parent=self.parent,
            branch_step=self.diagnosis.step_index,
        )
        for step in self.prefix:
            episode_append_step(episode=self.episode, step=step)

    def on_step(self, step: Step) -> None:
        assert self.episode is not None, "on_start comes first"
        episode_append_step(episode=self.episode, step=step)

    def on_finish(self, record: Record) -> None:
        assert self.episode is not None, "on_start comes first"
        header = record["header"]
        reason = header["termination_reason"]
        assert reason is not None, "run_episode names every episode's termination reason"
        episode_finish(episode=self.episode, reason=reason, score=header.get("score"), reward=header.get("reward"))
        self.finished = True

    def abort(self) -> None:
        if self.episode is not None and not self.finished:
            episode_finish(episode=self.episode, reason="unexpected_error")
            self.finished = True


def _mark(diagnosis: Diagnosis, state: str, result: dict[str, Any] | None) -> None:
    diagnosis.verification = state
    diagnosis.verification_result = result
    diagnosis.save(update_fields=["verification", "verification_result"])


def diagnosis_verify(*, diagnosis: Diagnosis, agent: AgentConfig | None = None, continuation_seed: int | None = None) -> Diagnosis:
    """Verify `diagnosis` by replay (module docstring). `agent` overrides the policy that continues both branches.

    Raises DomainError before anything runs when there is nothing to verify; a failure while running (a
    replay divergence, a policy that cannot be built) marks the diagnosis `failed` with the reason.
    """
    if not diagnosis.correction:
        raise DomainError("no_correction", f"diagnosis {diagnosis.pk} proposes no corrected action, so there is nothing to replay")
    parent = diagnosis.episode
    if agent is not None and agent.project_id != parent.project_id:
        raise DomainError("not_found", f"no agent {agent.name!r} in this project", status=404, path="agent")
    record = episode_to_record(parent)
    record_env(record)
    factory = policy_factory_for_agent(agent) if agent is not None else policy_factory_for_episode(parent)
    seed = continuation_seed if continuation_seed is not None else continuation_seed_for(parent)
    replayed = _content(diagnosis)
    _mark(diagnosis, Verification.RUNNING, None)
    sinks: dict[str, ChildEpisodeSink] = {}

    def sink_for(label: str, prefix: list[Step]) -> ChildEpisodeSink:
        sinks[label] = ChildEpisodeSink(parent=parent, diagnosis=diagnosis, label=label, prefix=prefix)
        return sinks[label]

    try:
        outcome = verify_correction(
            record,
            step_index=diagnosis.step_index,
            correction=diagnosis.correction,
            policy_factory=factory,
            continuation_seed=seed,
            sink_factory=sink_for,
            parent_ref={"episode_id": parent.pk, "branch_step": diagnosis.step_index},
        )
    except (ReplayDivergence, EnvError, DomainError, ValueError) as exc:
        for sink in sinks.values():
            sink.abort()
        _mark(diagnosis, Verification.FAILED, {"error": f"{type(exc).__name__}: {exc}"[:1000]})
        _link_children(diagnosis, sinks)
        return diagnosis
    score = record_score(record)
    result = {
        **outcome.as_json(),
        "parent": {
            "episode": parent.pk,
            "composite": score.get("composite"),
            "passed": score.get("passed"),
            "termination_reason": record["header"].get("termination_reason"),
        },
        "corrected_episode": sinks["corrected"].episode.pk if sinks["corrected"].episode else None,
        "retry_episode": sinks["retry"].episode.pk if sinks["retry"].episode else None,
        "category": diagnosis.category,
    }
    with transaction.atomic():
        # An edit while the branches ran voided this verdict before it was given: it stays unverified.
        if _content(Diagnosis.objects.select_for_update().get(pk=diagnosis.pk)) != replayed:
            diagnosis.refresh_from_db()
            _mark(diagnosis, Verification.UNVERIFIED, None)
            return diagnosis
        _link_children(diagnosis, sinks)
        _mark(diagnosis, Verification.VERIFIED if outcome.verified else Verification.REFUTED, result)
    return diagnosis


def _content(diagnosis: Diagnosis) -> dict[str, Any]:
    return {name: getattr(diagnosis, name) for name in CONTENT_FIELDS}


def _link_children(diagnosis: Diagnosis, sinks: dict[str, ChildEpisodeSink]) -> None:
    children = [s.episode for s in sinks.values() if s.episode is not None]
    if children:
        diagnosis.child_episodes.add(*children)
