"""manage.py improve: start (a plan refused by the guard), a run lost mid-training resumed by `improve run`, show, promote."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from lab.diagnoses.models import DiagnosisJob
from lab.improve.models import ImprovementLoop, LoopDataset
from lab.runs.models import TrainingRun

pytestmark = pytest.mark.django_db


def test_start_refuses_a_leaking_plan_naming_the_task_and_seed(clumsy_evaluation: Any, tiny_model: str) -> None:
    with pytest.raises(CommandError, match="test_leakage: the picked episodes contains toolgym/chain seed 1"):
        call_command(
            "improve",
            "start",
            "--project",
            "acme",
            "--evaluation",
            str(clumsy_evaluation.pk),
            "--test-seeds",
            "1,20",
            "--base-model",
            tiny_model,
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
    assert not ImprovementLoop.objects.exists()


def test_a_loop_lost_mid_training_resumes_from_the_cli_without_redoing_finished_stages(
    clumsy_evaluation: Any, tiny_model: str, monkeypatch: Any
) -> None:
    """A worker that dies in the train stage (simulated: the process is interrupted) leaves the loop running there;
    `improve run` finishes it with the same diagnosis job, dataset and run, then promote makes the agent."""
    from lab.improve import stages

    def worker_dies(*, run_id: int) -> Any:
        TrainingRun.objects.filter(pk=run_id).update(status="running")
        raise KeyboardInterrupt  # not an Exception: nothing records the failure, as when the process is killed

    monkeypatch.setattr(stages, "run_execute", worker_dies)
    config = {"max_steps": 1, "save_every": 1, "batch_size": 2, "learning_rate": 1e-3, "device": "cpu"}
    args = [
        "improve",
        "start",
        "--project",
        "acme",
        "--evaluation",
        str(clumsy_evaluation.pk),
        "--test-seeds",
        "20-21",
        "--dev-seeds",
        "10",
        "--weights",
        "recovery=1,successes=1,anchors=0",
        "--base-model",
        tiny_model,
        "--recipe-config",
        json.dumps(config),
    ]
    with pytest.raises(KeyboardInterrupt):
        call_command(*args, stdout=io.StringIO(), stderr=io.StringIO())
    loop = ImprovementLoop.objects.get()
    assert (loop.status, loop.stage) == ("running", "train") and loop.run is not None
    before = (loop.diagnosis_job_id, loop.dataset_id, loop.run_id)

    monkeypatch.undo()
    out, err = io.StringIO(), io.StringIO()
    call_command("improve", "run", str(loop.pk), stdout=out, stderr=err)
    loop.refresh_from_db()
    assert (loop.status, loop.stage) == ("finished", "promote")
    assert (loop.diagnosis_job_id, loop.dataset_id, loop.run_id) == before
    assert DiagnosisJob.objects.count() == LoopDataset.objects.count() == TrainingRun.objects.count() == 1
    assert loop.run.status == "finished" and loop.checkpoint.run_id == loop.run_id
    text = out.getvalue()
    assert f"loop {loop.pk} [finished] at stage promote" in text and "report on 2 test pairs" in text
    assert f"run {loop.run_id}" in text and "composite" in text
    assert "checkpoint" in err.getvalue() and "100%" in err.getvalue()  # the progress bars

    out = io.StringIO()
    call_command("improve", "promote", str(loop.pk), stdout=out)
    loop.refresh_from_db()
    assert out.getvalue().strip() == f"promoted: agent {loop.promoted_agent.name} (hf, {loop.checkpoint.path})"
    shown = io.StringIO()
    call_command("improve", "show", str(loop.pk), stdout=shown)
    assert f"agent {loop.promoted_agent_id}" in shown.getvalue() and "done" in shown.getvalue()
