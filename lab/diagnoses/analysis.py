"""Analyses of a stored episode: model and rule diagnoses, its pivotal step, and its step credit.

diagnosis_propose_model(episode=e, agent=a)            # -> DiagnosisAttempt (a Diagnosis when the answer is valid)
diagnosis_propose_rule(episode=e, anchor="smart-triage")
episode_label_pivotal(episode=e, anchor="smart-triage")  # stored in episode.meta["pivotal"]; the record is untouched
pivotal_problem(episode=e, anchor="")                   # why the pivotal search cannot run on e ("" when it can)
episode_step_credit(episode=e)                          # per-step graph credit, the graph and the top steps
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from environments import registry
from environments.core import Env, EnvError, ToolSpec
from environments.diagnosis.branching import env_for_record
from environments.diagnosis.credit_graph import dependency_graph, stationary_credit, top_steps
from environments.diagnosis.model_diagnoser import diagnose_with_policy
from environments.diagnosis.pivotal import find_pivotal_step
from environments.diagnosis.rules import rule_diagnose
from environments.diagnosis.taxonomy import AGENT_SOURCES
from environments.policies import policy_names
from environments.records import Record
from environments.replay import ReplayDivergence
from lab.diagnoses.models import DiagnosisAttempt, DiagnosisJob, Origin
from lab.diagnoses.policies import policy_factory_for_agent
from lab.diagnoses.services import diagnosis_attempt_record
from lab.errors import DomainError
from lab.trajectories.models import AgentConfig, Episode, EpisodeStatus, Step
from lab.trajectories.services import episode_to_record


def record_env(record: Record) -> Env:
    """A fresh environment for the record; DomainError when it cannot be rebuilt (unknown env, no seed)."""
    try:
        return env_for_record(record)
    except EnvError as exc:
        raise DomainError(exc.code, f"cannot rebuild the environment of this episode: {exc.message}") from exc


def record_tools(record: Record, env: Env | None = None) -> list[ToolSpec]:
    """The tools the agent was given (the header's schemas), else the environment's."""
    schemas = record["header"].get("tools") or []
    tools = [
        ToolSpec(name=f["name"], description=f.get("description", ""), parameters=f.get("parameters") or {"type": "object"})
        for f in (s.get("function", s) for s in schemas)
        if isinstance(f, dict) and f.get("name")
    ]
    return tools or (env.tools() if env is not None else [])


def diagnosis_propose_model(*, episode: Episode, agent: AgentConfig, job: DiagnosisJob | None = None) -> DiagnosisAttempt:
    if agent.project_id != episode.project_id:
        raise DomainError("not_found", f"no agent {agent.name!r} in this project", status=404, path="agent")
    record = episode_to_record(episode)
    env = record_env(record)
    policy = policy_factory_for_agent(agent)(env, 0)
    answer = diagnose_with_policy(record, policy, env_tools=record_tools(record, env), description=episode.task.description)
    return diagnosis_attempt_record(episode=episode, answer=answer, origin=Origin.MODEL, author_model=agent.name, job=job)


def _anchor_factory(anchor: str) -> Any:
    return policy_factory_for_agent(AgentConfig(name=anchor, kind="scripted", model=anchor))


def diagnosis_propose_rule(
    *, episode: Episode, anchor: str, seeds: tuple[int, ...] = (0,), job: DiagnosisJob | None = None
) -> DiagnosisAttempt:
    record = episode_to_record(episode)
    record_env(record)
    answer = rule_diagnose(record, anchor_factory=_anchor_factory(anchor), seeds=seeds)
    return diagnosis_attempt_record(episode=episode, answer=answer, origin=Origin.RULE, author_model=f"rule:pivotal/{anchor}", job=job)


def pivotal_problem(*, episode: Episode, anchor: str = "") -> str:
    """Why the pivotal search cannot run on `episode` with `anchor` (empty: the environment's default), as a sentence
    for the page; "" when it can. Cheap (no replay): the viewer asks on every render. What only a replay can tell
    (recorded states this installation does not reproduce) is refused by episode_label_pivotal."""
    env = episode.task.env
    if episode.status == EpisodeStatus.RUNNING:
        return "the episode is still running; look for its pivotal step once it ends"
    if episode.passed is None:
        return "the episode has no pass/fail score; the search looks for the step after which a failed episode could no longer pass"
    if episode.passed:
        return "the episode passed; pivotal mistakes are looked for in failed episodes"
    if env not in {meta.env for meta in registry.list_envs()}:
        return (
            f"its environment {env!r} is not installed here, so there is no environment to replay its steps in "
            "(an uploaded episode from another benchmark can be read and diagnosed by hand, not replayed)"
        )
    anchors = policy_names(env)
    name = anchor or registry.env_meta(env).default_anchor or (anchors[0] if anchors else "")
    if not anchors:
        return f"{env} has no scripted anchor to take over from the episode's steps"
    if name not in anchors:
        return f"{name!r} is not a policy of {env}; choose one of {', '.join(anchors)}"
    try:
        registry.get_task(f"{env}/{episode.task.key}")
    except EnvError:
        return f"its task {episode.task.key!r} is not a task of {env} here, so its world cannot be rebuilt"
    if episode.seed is None:
        return "the episode has no seed, so its world cannot be rebuilt for a replay"
    agent_steps = Step.objects.filter(episode=episode, source__in=AGENT_SOURCES, index__gte=1)
    if not agent_steps.exists():
        return "the episode has no agent steps: there is no decision whose consequences the search could weigh"
    if not agent_steps.exclude(tool_calls=[]).exists():
        return f"its {agent_steps.count()} agent steps make no tool calls: there is no action to replay and take over from"
    return ""


def episode_label_pivotal(*, episode: Episode, anchor: str, seeds: tuple[int, ...] = (0,), search: str = "binary") -> dict[str, Any]:
    """Find the pivotal step and label it in `episode.meta["pivotal"]` (the viewer shows it); returns the label.
    An episode the search cannot run on is refused (422) with the reason: pivotal_problem's, or a replay divergence."""
    if search not in ("binary", "linear"):
        raise DomainError("invalid_parameter", f"search={search!r}; use binary or linear", path="search")
    problem = pivotal_problem(episode=episode, anchor=anchor)
    if problem:
        code = "not_failed" if episode.passed else "pivotal_unavailable"
        raise DomainError(code, f"no pivotal search on episode {episode.pk}: {problem}")
    record = episode_to_record(episode)
    record_env(record)
    try:
        label = find_pivotal_step(record, anchor_factory=_anchor_factory(anchor), seeds=seeds, search=search).as_json()
    except ReplayDivergence as exc:
        raise DomainError(
            "replay_diverged",
            f"no pivotal search on episode {episode.pk}: its recorded steps do not replay in "
            f"{episode.task.env} here (state hash diverged at step {exc.index}: the record has {exc.expected}, this "
            f"installation gives {exc.got}); the search can only take over from states it reproduces",
            status=422,
        ) from None
    with transaction.atomic():
        locked = Episode.objects.select_for_update().get(pk=episode.pk)
        locked.meta = {**locked.meta, "pivotal": label}
        locked.save(update_fields=["meta"])
    episode.meta = locked.meta
    return label


def episode_step_credit(*, episode: Episode, damping: float = 0.85, top_fraction: float = 0.2) -> dict[str, Any]:
    """Graph credit of every agent step (sums to 1), the dependency edges, and the top steps by credit."""
    if not 0.0 <= damping < 1.0:
        raise DomainError("invalid_parameter", f"damping must be in [0, 1), got {damping}", path="damping")
    if not 0.0 < top_fraction <= 1.0:
        raise DomainError("invalid_parameter", f"top must be in (0, 1], got {top_fraction}", path="top")
    record = episode_to_record(episode)
    graph = dependency_graph(record["steps"], env=record["header"].get("env"))
    credit = stationary_credit(graph, damping=damping)
    return {
        "episode": episode.pk,
        "damping": damping,
        "credit": [{"index": i, "credit": credit[i]} for i in graph.nodes],
        "edges": graph.as_json()["edges"],
        "top_steps": top_steps(credit, fraction=top_fraction) if credit else [],
    }
