"""Reads of improvement loops: the list, one loop (404 outside the caller's projects), and its lineage chain."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from lab.errors import NotFound
from lab.improve.models import AUTOMATIC_STAGES, ImprovementLoop, Stage
from lab.projects.selectors import visible_get


def loop_list(*, projects: QuerySet) -> QuerySet[ImprovementLoop]:
    return ImprovementLoop.objects.filter(project__in=projects).select_related("project", "agent", "evaluation")


def loop_get(*, projects: QuerySet, pk: Any) -> ImprovementLoop:
    if not str(pk).isdigit() or len(str(pk)) > 18:
        raise NotFound("not_found", f"No improvement loop {str(pk)[:40]!r} that you can see.")
    loops = loop_list(projects=projects).select_related("dataset", "run", "checkpoint", "diagnosis_job", "promoted_agent")
    return visible_get(loops, pk=int(pk), what="improvement loop")


def loop_lineage(loop: ImprovementLoop) -> list[dict[str, Any]]:
    """The chain, one entry per stage: its status, what it made (kind and id, for links) and its summary."""
    made: dict[str, list[tuple[str, int]]] = {
        "select": [("evaluation", loop.evaluation_id)] + [("episode", pk) for pk in loop.episode_ids[:50]],
        "diagnose": [("diagnosis_job", loop.diagnosis_job_id)] if loop.diagnosis_job_id else [],
        "dataset": [("dataset", loop.dataset_id)] if loop.dataset_id else [],
        "train": [("run", loop.run_id)] if loop.run_id else [],
        "checkpoint": [("evaluation", int(pk)) for pk in loop.dev_evaluations.values()],
        "report": [("evaluation", pk) for pk in (loop.baseline_evaluation_id, loop.test_evaluation_id) if pk],
        "promote": [("agent", loop.promoted_agent_id)] if loop.promoted_agent_id else [],
    }
    anchor_evaluation = loop.stages.get("dataset", {}).get("anchor_evaluation")
    if anchor_evaluation:
        made["dataset"].insert(0, ("evaluation", int(anchor_evaluation)))
    order = [*AUTOMATIC_STAGES, Stage.PROMOTE]
    current = order.index(Stage(loop.stage)) if loop.stage in order else len(order)
    chain = []
    for index, stage in enumerate(order):
        info = dict(loop.stages.get(stage, {}))
        status = info.pop(
            "status", "finished" if index < current else ("waiting" if stage == Stage.PROMOTE and index == current else "pending")
        )
        if stage == loop.stage and loop.status in ("queued", "running") and status != "finished":
            status = "running" if loop.status == "running" else "queued"
        elif stage == loop.stage and loop.status == "cancelled" and status not in ("finished", "cancelled"):
            status = "stopping" if loop.ended_at is None else "cancelled"  # the worker stops at its next step
        chain.append({"stage": str(stage), "status": status, "made": [{"kind": k, "id": v} for k, v in made[stage] if v], "info": info})
    return chain
