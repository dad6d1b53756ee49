"""Comparisons of role configurations: one base agent and its variants evaluated on the same tasks and seeds.

    comparison = comparison_launch(project=p, base="solo", variants=["solo+critic", "solo+consult-0.05"],
                                   task_set="storebench/eval", seeds=[0, 1, 2])
    comparison_summary(comparison=comparison)  # each variant minus the base, paired, with 95% intervals

A variant is an agent config like any other (its `team` says which roles it brings: a critic on or off, a harness
level, a consultation cost), so a comparison is a grouping of ordinary evaluations: each runs, cancels, re-grades
and compares on its own, and the comparison adds only what they share (task set, seeds) and the teams compared.
Pairing on (task, seed) removes the task and seed variance the configurations share (lab.rollouts.aggregate.paired).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction

from environments import registry
from environments.core import EnvError
from lab.errors import DomainError
from lab.jobs import TERMINAL, job_user
from lab.projects.models import Project
from lab.rollouts.aggregate import paired, role_stats
from lab.rollouts.evaluations import evaluation_launch
from lab.rollouts.models import Comparison, Evaluation
from lab.rollouts.selectors import agent_team, evaluation_rows, evaluation_team
from lab.rollouts.services import agent_resolve_for_run

MAX_VARIANTS = 8


def comparison_launch(
    *,
    project: Project,
    base: str,
    variants: list[str],
    task_set: str,
    seeds: list[int],
    user: Any = None,
    enqueue: bool = True,
    options: dict[str, Any] | None = None,
) -> Comparison:
    """One evaluation per agent (the base first) on the same task set, seeds and options, grouped as a Comparison."""
    names = [base, *variants]
    if not isinstance(base, str) or not base.strip():
        raise DomainError("invalid_agent", f"base: name the base agent, got {base!r}"[:300], path="base")
    if not variants or len(variants) > MAX_VARIANTS or any(not isinstance(v, str) or not v.strip() for v in variants):
        raise DomainError("invalid_variants", f"variants must be 1 to {MAX_VARIANTS} agent names, got {variants!r}"[:300], path="variants")
    if len(set(names)) != len(names):
        raise DomainError("invalid_variants", f"variants repeat an agent (the base is {base!r}): {variants!r}"[:300], path="variants")
    env_name = comparison_plan(agents=len(names), task_set=task_set, seeds=seeds)["env"]
    with transaction.atomic():
        agents = [agent_resolve_for_run(project=project, name=name.strip(), env_name=env_name) for name in names]
        evaluations = [
            evaluation_launch(project=project, agent=agent, task_set=task_set, seeds=seeds, user=user, enqueue=enqueue, options=options)
            for agent in agents
        ]
        comparison = Comparison.objects.create(
            project=project,
            task_set=task_set,
            seeds=list(seeds),
            created_by=job_user(user),
            variants=[
                {"name": agent.name, "agent": agent.pk, "evaluation": e.pk, "team": agent_team(agent)}
                for agent, e in zip(agents, evaluations, strict=True)
            ],
        )
        comparison.evaluations.set(evaluations)
    return comparison


def comparison_plan(*, agents: int, task_set: Any, seeds: Any) -> dict[str, Any]:
    """What a launch would create: {"env", "jobs", "text"}; DomainError `too_many_jobs` (400, on `seeds`) above
    PRACTICUM_MAX_COMPARISON_JOBS, counted before anything is created. The console shows `text` before launching."""
    if not isinstance(task_set, str):
        raise DomainError("invalid_task_set", f"task_set must be a string, got {task_set!r}"[:300], path="task_set")
    try:
        specs = registry.task_set(task_set)
    except EnvError as exc:
        raise DomainError(exc.code, exc.message, path="task_set") from exc
    count = len(seeds) if isinstance(seeds, list) else 0
    jobs = agents * len(specs) * count
    text = f"{jobs} jobs ({agents} agents x {len(specs)} tasks x {count} seeds)"
    cap = settings.PRACTICUM_MAX_COMPARISON_JOBS
    if jobs > cap:
        raise DomainError(
            "too_many_jobs", f"the comparison would launch {text}; at most {cap} (PRACTICUM_MAX_COMPARISON_JOBS)", path="seeds"
        )
    return {"env": specs[0].env, "jobs": jobs, "text": text}


def _rows(evaluation: Evaluation) -> list[dict[str, Any]]:
    rows = (evaluation.aggregate or {}).get("rows")
    return rows if isinstance(rows, list) else evaluation_rows(evaluation)


def comparison_summary(*, comparison: Comparison) -> dict[str, Any]:
    """The base's figures, then each variant's: its team, its own figures, per-role statistics and the paired
    difference variant − base (composite and pass rate, 95% intervals, wins/losses/ties per (task, seed))."""
    by_id = {e.pk: e for e in comparison.evaluations.select_related("agent")}
    sides = []
    for variant in comparison.variants:
        evaluation = by_id.get(variant["evaluation"])
        if evaluation is None:  # deleted since: say so rather than fail
            sides.append({**variant, "status": "deleted", "rows": []})
            continue
        team = evaluation_team(evaluation) or variant.get("team") or {}
        sides.append({**variant, "team": team, "status": evaluation.status, "progress": evaluation.progress, "rows": _rows(evaluation)})
    out: list[dict[str, Any]] = []
    base_rows: list[dict[str, Any]] = []
    for i, side in enumerate(sides):
        rows = side.pop("rows")
        composites = [float(r["composite"]) for r in rows]
        entry = {
            **side,
            "base": i == 0,
            "episodes": len(rows),
            "composite": sum(composites) / len(composites) if rows else None,
            "pass_rate": sum(bool(r["passed"]) for r in rows) / len(rows) if rows else None,
            "roles": role_stats(rows),
        }
        if i:
            entry["vs_base"] = paired(rows, base_rows)
        else:
            base_rows = rows
        out.append(entry)
    done = all(s["status"] in TERMINAL or s["status"] == "deleted" for s in sides)
    return {
        "id": comparison.pk,
        "project": comparison.project.slug,
        "task_set": comparison.task_set,
        "seeds": comparison.seeds,
        "finished": done,
        "variants": out,
    }
