"""Evaluations: fan-out into rollout jobs, aggregate with the anchors beside, paired comparison, re-grading, the command."""

from __future__ import annotations

import io
import statistics
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from lab.rollouts.evaluations import evaluation_compare, evaluation_launch, evaluation_regrade
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.services import anchor_agent_resolve, rollout_run
from lab.trajectories.models import Step

pytestmark = pytest.mark.django_db
TASK = "storebench/payment-outage"


def _evaluate(project: Any, name: str, seeds: list[int]) -> Evaluation:
    evaluation = evaluation_launch(
        project=project, agent=anchor_agent_resolve(project=project, name=name), task_set=TASK, seeds=seeds, enqueue=False
    )
    for job in RolloutJob.objects.filter(evaluation=evaluation):
        rollout_run(job_id=job.pk)
    evaluation.refresh_from_db()
    return evaluation


def test_an_evaluation_aggregates_its_episodes_with_the_anchors_beside(project_a: Any) -> None:
    baseline = _evaluate(project_a, "do-nothing", [0, 1])
    evaluation = _evaluate(project_a, "naive-restock", [0, 1])
    assert (evaluation.status, evaluation.progress, evaluation.episodes.count()) == ("finished", 1.0, 2)
    episodes = sorted(evaluation.episodes.all(), key=lambda e: e.seed)
    composites = [e.composite for e in episodes]
    aggregate = evaluation.aggregate
    assert aggregate["episodes"] == 2 and aggregate["composite"]["mean"] == pytest.approx(statistics.fmean(composites))
    half = 12.706 * statistics.stdev(composites) / 2**0.5
    assert aggregate["composite"]["high"] == pytest.approx(statistics.fmean(composites) + half)
    passes = [bool(e.passed) for e in episodes]
    assert aggregate["pass_rate"] == pytest.approx(sum(passes) / 2)
    assert aggregate["pass_hat_k"]["2"] == (1.0 if all(passes) else 0.0)
    [row] = aggregate["per_task"]
    assert row["task"] == "payment-outage" and row["anchors"] == {"do-nothing": 0.0}
    assert aggregate["anchors"]["do-nothing"] == {"composite": 0.0, "pass_rate": 0.0, "episodes": 2}
    assert aggregate["jobs"]["finished"] == 2
    compared = evaluation_compare(a=evaluation, b=baseline)
    assert compared["pairs"] == 2 and compared["composite_diff"]["mean"] == pytest.approx(statistics.fmean(composites))
    assert compared["wins"] == sum(c > 0 for c in composites)


def test_regrading_from_stored_episodes_reproduces_the_figures_and_catches_tampering(project_a: Any) -> None:
    evaluation = _evaluate(project_a, "naive-restock", [0, 1])
    result = evaluation_regrade(evaluation=evaluation)
    assert result["matches"] and result["mismatches"] == []
    assert result["aggregate"]["composite"] == evaluation.aggregate["composite"]

    evaluation.aggregate = {**evaluation.aggregate, "pass_rate": 0.123}
    evaluation.save(update_fields=["aggregate"])
    assert not evaluation_regrade(evaluation=evaluation)["matches"]

    episode = evaluation.episodes.order_by("seed").first()
    step = Step.objects.filter(episode=episode, source="agent", index=3).get()
    step.tool_calls = [
        {"id": "x", "name": "create_purchase_order", "arguments": {"supplier_id": "SUP-1", "lines": [{"sku": "SKU-1", "quantity": 5}]}}
    ]
    step.save(update_fields=["tool_calls"])
    mismatch = evaluation_regrade(evaluation=evaluation)["mismatches"]
    assert [(m["episode"], m["step"]) for m in mismatch] == [(episode.pk, 3)]


def test_the_command_runs_anchors_and_the_agent_and_prints_the_table(project_a: Any) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", agent="naive-restock", tasks=TASK, seeds="0,1", anchors="do-nothing", inline=True, stdout=out, stderr=err)
    text = out.getvalue()
    evaluation = Evaluation.objects.filter(agent__name="naive-restock").get()
    mean = evaluation.aggregate["composite"]["mean"]
    assert f"evaluation {evaluation.pk}: naive-restock on {TASK}, seeds [0, 1]" in text
    assert "do-nothing" in text.splitlines()[1]  # the anchor's column
    task_line = next(line for line in text.splitlines() if line.startswith("payment-outage"))
    assert f"{mean:.3f} [" in task_line and task_line.rstrip().endswith("0.000")
    assert "pass^1" in text and "pass^2" in text
    assert "2/2 rollouts" in err.getvalue()
    assert "naive-restock    |" + "#" * 30 + "| 2/2 rollouts" in err.getvalue()  # a full bar, drawn by tqdm
    regrade = io.StringIO()
    call_command("evaluate", regrade=evaluation.pk, stdout=regrade)
    assert '"matches": true' in regrade.getvalue()


def test_the_command_names_no_default_task_set_and_asks_for_one(project_a: Any) -> None:
    # The lab knows no environment by name: there is no StoreBench default to fall back on.
    with pytest.raises(CommandError, match="--tasks is required"):
        call_command("evaluate", agent="naive-restock", seeds="0", inline=True, stdout=io.StringIO())
    assert not Evaluation.objects.exists()


def test_the_command_refuses_a_seed_range_past_the_maximum(project_a: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_SEEDS = 10
    with pytest.raises(CommandError, match="--seeds: '0-99999999999' holds more than 10 seeds"):
        call_command("evaluate", agent="naive-restock", tasks=TASK, seeds="0-99999999999", inline=True, stdout=io.StringIO())
    assert not Evaluation.objects.exists()


def test_an_upload_never_stands_beside_an_evaluation_as_the_anchors_score(project_a: Any) -> None:
    from lab.trajectories.models import Episode, Provenance
    from lab.trajectories.services import task_resolve

    # A row as the old code stored an upload that claimed to be the anchor's rollout: anchor_rows must still skip it.
    anchor = anchor_agent_resolve(project=project_a, name="do-nothing")
    Episode.objects.create(
        project=project_a,
        task=task_resolve(project=project_a, env="storebench", key="payment-outage"),
        agent=anchor,
        seed=0,
        source="rollout",
        provenance=Provenance.UPLOAD,
        composite=1.0,
        passed=True,
        status="finished",
    )
    evaluation = _evaluate(project_a, "naive-restock", [0])
    assert evaluation.aggregate["anchors"] == {} and evaluation.aggregate["per_task"][0]["anchors"] == {}
    recorded = _evaluate(project_a, "do-nothing", [0])
    assert Episode.objects.get(pk=recorded.episodes.get().pk).provenance == "recorded"
    assert _evaluate(project_a, "naive-restock", [0]).aggregate["anchors"]["do-nothing"]["composite"] == 0.0
