"""Evaluations: an agent × a task set × seeds, fanned out as rollout jobs and aggregated when the last one ends.

    evaluation = evaluation_launch(project=p, agent="my-agent", task_set="toolgym/eval", seeds=[0, 1, 2])
    checkpoint_evaluate(checkpoint=c, task_set="toolgym/lookup", seeds=[0, 1])  # the checkpoint's `hf` agent
    evaluation_compare(a=e1, b=e2)      # paired differences on shared (task, seed) with 95% intervals
    evaluation_regrade(evaluation=e)    # replays every stored episode, re-scores it, recomputes the figures

The aggregate (lab.rollouts.aggregate.summarize) is stored on the evaluation with, per task, the anchors'
mean composite on the same seeds beside the agent's, from the anchors' own rollouts.

Attack settings: an evaluation carries the episode options it was launched with. When they attack (the task set's
environment declares an attack axis, environments.attacks), every (task, seed) runs in both conditions, the options
as given and the same without the attack, so one evaluation yields all four figures on paired seeds: benign
utility, utility under attack, attack success rate and guidance compliance (aggregate["attack"]). The usual figures
(composite, pass rate, per task, compare) are those of the benign condition, comparable with any evaluation.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from environments import registry
from environments.attacks import attack_metrics, metric_row
from environments.core import EnvError
from environments.replay import ReplayDivergence, env_for_header, replay_prefix
from lab.errors import DomainError
from lab.jobs import TERMINAL, JobStatus, job_user
from lab.projects.models import Project
from lab.rollouts.aggregate import paired, role_stats, summarize
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.selectors import anchor_rows, evaluation_episodes, evaluation_rows, evaluation_team
from lab.rollouts.services import agent_resolve_for_run, episode_options_check, rollout_cancel, rollout_launch
from lab.runs.models import Checkpoint
from lab.runs.services import checkpoint_agent
from lab.trajectories.models import AgentConfig
from lab.trajectories.services import episode_to_record, task_resolve

MAX_SEEDS = 1000


def evaluation_launch(
    *,
    project: Project,
    agent: AgentConfig | str,
    task_set: str,
    seeds: list[int],
    user: Any = None,
    checkpoint: Checkpoint | None = None,
    enqueue: bool = True,
    options: dict[str, Any] | None = None,
) -> Evaluation:
    """The one way an Evaluation is made: validate, create it and one rollout job per (task, seed, condition); the jobs
    start after commit. `agent` is an AgentConfig or a name (an anchor of the task set's environment is created on
    demand); `options` the environment's episode options, an attack setting among them (see the module doc)."""
    if not seeds or len(seeds) > MAX_SEEDS or any(isinstance(s, bool) or not isinstance(s, int) for s in seeds):
        raise DomainError("invalid_seeds", f"seeds must be 1 to {MAX_SEEDS} integers, got {seeds!r}"[:300])
    if len(set(seeds)) != len(seeds):
        raise DomainError("invalid_seeds", f"seeds repeat: {seeds!r}"[:300])
    try:
        specs = registry.task_set(task_set)
    except EnvError as exc:
        raise DomainError(exc.code, exc.message, path="task_set") from exc
    options = episode_options_check(task_id=specs[0].id, options=options)
    conditions = evaluation_conditions(env_name=specs[0].env, options=options)
    if isinstance(agent, str):
        agent = agent_resolve_for_run(project=project, name=agent, env_name=specs[0].env)
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            project=project,
            agent=agent,
            task_set=task_set,
            seeds=list(seeds),
            checkpoint=checkpoint,
            options=options,
            status=JobStatus.RUNNING,
            started_at=timezone.now(),
            created_by=job_user(user),
        )
        for spec in specs:
            task = task_resolve(project=project, env=spec.env, key=spec.key)
            for seed in seeds:
                for condition in conditions:
                    rollout_launch(
                        project=project,
                        agent=agent,
                        task=task,
                        seed=seed,
                        evaluation=evaluation,
                        user=user,
                        enqueue=enqueue,
                        options=condition,
                    )
    return evaluation


def evaluation_conditions(*, env_name: str, options: dict[str, Any]) -> list[dict[str, Any]]:
    """The options each (task, seed) runs with: the benign pair first when the options attack, else just the options."""
    axis = registry.env_meta(env_name).attacks
    return [axis.benign(options), options] if axis and axis.attacked(options) else [options]


def attack_setting(*, task_set: str, attack: str, guidance: bool) -> dict[str, Any]:
    """A form's attack setting as episode options, in the option names the task set's environment declares."""
    if not attack and not guidance:
        return {}
    try:
        env_name = registry.task_set(task_set)[0].env
    except EnvError as exc:
        raise DomainError(exc.code, exc.message, path="task_set") from exc
    axis = registry.env_meta(env_name).attacks
    if not axis:
        raise DomainError("invalid_options", f"attack: {env_name} has no attack axis, so it takes no attack setting", path="attack")
    if problems := axis.problems({axis.attack_option: attack or "none"}):
        raise DomainError("invalid_options", problems[0].replace(f"options.{axis.attack_option}", "attack"), path="attack")
    out: dict[str, Any] = {axis.attack_option: attack} if attack else {}
    if guidance and axis.guidance:
        out[axis.guidance_option] = True
    return out


def checkpoint_evaluate(
    *,
    checkpoint: Checkpoint,
    task_set: str,
    seeds: list[int],
    user: Any = None,
    sampling: dict[str, Any] | None = None,
    harness: dict[str, Any] | None = None,
    enqueue: bool = True,
) -> Evaluation:
    """Evaluate a checkpoint as its `hf` agent (lab.runs.services.checkpoint_agent); the evaluation links back to it."""
    if checkpoint.run.reported:  # its path names the trainer's storage, not weights on this server
        raise DomainError(
            "external_checkpoint", f"run {checkpoint.run_id} was trained elsewhere; its checkpoints are not on this server", status=409
        )
    with transaction.atomic():
        agent = checkpoint_agent(checkpoint=checkpoint, sampling=sampling, harness=harness)
        return evaluation_launch(
            project=checkpoint.run.project, agent=agent, task_set=task_set, seeds=seeds, user=user, checkpoint=checkpoint, enqueue=enqueue
        )


def evaluation_refresh(*, evaluation_id: int) -> Evaluation:
    """Progress after a job ends; when none is left, the aggregate. Serialized by a row lock on the evaluation."""
    with transaction.atomic():
        evaluation = Evaluation.objects.select_for_update().get(pk=evaluation_id)
        counts = {s: 0 for s in JobStatus.values}
        for status in RolloutJob.objects.filter(evaluation=evaluation).values_list("status", flat=True):
            counts[status] += 1
        total = sum(counts.values())
        done = sum(counts[s] for s in TERMINAL)
        progress = done / total if total else 1.0
        if done == total and evaluation.status not in TERMINAL:
            episodes = evaluation_episodes(evaluation)
            evaluation.episodes.set(episodes)
            aggregate = evaluation_aggregate(evaluation, counts=counts)
            if counts[JobStatus.CANCELLED]:
                evaluation.mark_cancelled(progress=progress, aggregate=aggregate)
            else:
                evaluation.mark_finished(progress=progress, aggregate=aggregate)
        else:
            evaluation.progress = progress
            evaluation.save(update_fields=["progress"])
    return evaluation


def evaluation_aggregate(
    evaluation: Evaluation, *, rows: list[dict[str, Any]] | None = None, counts: dict[str, int] | None = None
) -> dict[str, Any]:
    rows = evaluation_rows(evaluation) if rows is None else rows
    attacked = [r for r in rows if r.get("attacked")]
    rows = [r for r in rows if not r.get("attacked")]
    summary = summarize(rows)
    anchors = {name: summarize(anchor) for name, anchor in anchor_rows(evaluation).items()}
    for entry in summary["per_task"]:
        entry["anchors"] = {
            name: next((t["composite"]["mean"] for t in anchor["per_task"] if t["task"] == entry["task"]), None)
            for name, anchor in anchors.items()
        }
    summary["anchors"] = {
        name: {"composite": a["composite"]["mean"], "pass_rate": a["pass_rate"], "episodes": a["episodes"]} for name, a in anchors.items()
    }
    summary["roles"] = role_stats(rows)
    summary["jobs"] = counts or {}
    summary["rows"] = rows
    if evaluation.options:
        summary["attack"] = attack_metrics(rows + attacked)
        summary["attack_rows"] = attacked
    return summary


def evaluation_cancel(*, evaluation: Evaluation) -> Evaluation:
    for job in RolloutJob.objects.filter(evaluation=evaluation).exclude(status__in=TERMINAL):
        rollout_cancel(job=job)
    return evaluation_refresh(evaluation_id=evaluation.pk)


def evaluation_compare(*, a: Evaluation, b: Evaluation) -> dict[str, Any]:
    if a.project_id != b.project_id:
        raise DomainError("cross_project", "compare evaluations of one project", status=404)
    rows_a, rows_b = a.aggregate.get("rows") or evaluation_rows(a), b.aggregate.get("rows") or evaluation_rows(b)
    sides = {
        key: {"id": e.pk, "agent": e.agent.name, "team": evaluation_team(e), "roles": role_stats(rows)}
        for key, e, rows in (("a", a, rows_a), ("b", b, rows_b))
    }
    return {**sides, **paired(rows_a, rows_b)}


def evaluation_regrade(*, evaluation: Evaluation) -> dict[str, Any]:
    """Replay each stored episode in a fresh environment, re-score it, recompute the figures and compare."""
    rows: list[dict[str, Any]] = []
    mismatches: list[dict[str, Any]] = []
    for episode in evaluation_episodes(evaluation):
        record = episode_to_record(episode)
        try:
            env = env_for_header({**record["header"], "seed": int(episode.seed or 0)})
            replay_prefix(env, record["steps"])
        except EnvError as exc:  # an engine this installation no longer runs: refused, never replayed on another
            mismatches.append({"episode": episode.pk, "step": None, "expected": episode.task.env_version, "got": exc.code})
            continue
        except ReplayDivergence as exc:
            mismatches.append({"episode": episode.pk, "step": exc.index, "expected": exc.expected, "got": exc.got})
            continue
        score = env.score()
        if metric_row(composite=score.composite, score=score.to_dict())["attacked"]:
            continue  # the figures regraded are the benign condition's (the attacked one stands beside them)
        rows.append(
            {
                "task": episode.task.key,
                "seed": episode.seed,
                "composite": score.composite,
                "passed": bool(score.passed),
                "termination_reason": episode.termination_reason,
                "episode": episode.pk,
            }
        )
    regraded = summarize(rows)
    matches = not mismatches and _figures(evaluation.aggregate) == _figures(regraded)
    return {"matches": matches, "mismatches": mismatches, "aggregate": regraded}


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    """What the scores decide: counts, means, spreads and pass rates. Interval bounds follow from them by a method
    that may change (an aggregate stored before the bounded intervals still matches its re-grade)."""

    def mean(ci: Any) -> Any:
        return {k: ci.get(k) for k in ("n", "mean", "sd")} if isinstance(ci, dict) else ci

    tasks = [(t.get("task"), t.get("n"), mean(t.get("composite")), t.get("pass_rate")) for t in summary.get("per_task") or []]
    return {
        "episodes": summary.get("episodes"),
        "composite": mean(summary.get("composite")),
        "pass_rate": summary.get("pass_rate"),
        "pass_hat_k": summary.get("pass_hat_k"),
        "per_task": tasks,
    }
