"""External runs through practicum-client: background reports, the console's cancel as a flag, the plain-loop helper."""

from __future__ import annotations

import time
from typing import Any

import pytest

import practicum_client
from lab.runs.models import Checkpoint, RunMetric, TrainingRun
from lab.runs.services import run_cancel
from practicum_client import PracticumError
from tests.clients.network import Network


def test_reports_land_as_the_runs_metrics_and_checkpoints(connect: Any) -> None:
    run = connect().runs.external(name="torch loop", recipe="torch", base_model="tiny", config={"lr": 0.1}, interval_s=0.05)
    for step in range(1, 6):
        run.log(step, {"loss": 1.0 / step, "note": "strings are left out", "nan": float("nan")}, progress=step / 5)
    run.checkpoint(5, path="/elsewhere/ckpt-5", eval_results={"toolgym/lookup": 0.5})
    assert run.flush(timeout_s=30)
    row = TrainingRun.objects.get(pk=run.id)
    assert (row.provenance, row.status, row.progress, row.config) == ("upload", "running", 1.0, {"lr": 0.1})
    assert list(RunMetric.objects.filter(run=row).order_by("step").values_list("name", "step", "value")) == [
        ("loss", s, 1.0 / s) for s in range(1, 6)
    ]
    assert list(Checkpoint.objects.filter(run=row).values_list("step", "eval_results")) == [(5, {"toolgym/lookup": 0.5})]
    assert run.finish()["status"] == "finished" and not run.should_stop()
    with pytest.raises(PracticumError):
        run.log(6, {"loss": 0.1})  # finished: the reporter is closed


def test_a_cancel_in_the_console_reaches_the_trainer_with_the_next_answer(connect: Any) -> None:
    run = connect().runs.external(name="to cancel", interval_s=0.05)
    run.log(1, {"loss": 1.0})
    assert run.flush() and not run.should_stop()
    run_cancel(run=TrainingRun.objects.get(pk=run.id))
    assert not run.should_stop()  # no request is made by asking
    run.log(2, {"loss": 0.9})
    assert run.flush() and run.should_stop()
    assert run.finish()["status"] == "cancelled"
    assert RunMetric.objects.filter(run_id=run.id).count() == 2


def test_a_slow_server_never_slows_the_loop(connect: Any) -> None:
    network = Network(delay_s=0.3)  # each request takes 0.3 s
    run = connect(network).runs.external(name="slow", interval_s=0.05)
    started = time.perf_counter()
    for step in range(200):
        run.log(step, {"loss": 1.0})
    elapsed = time.perf_counter() - started
    assert elapsed < 0.1, f"200 log calls took {elapsed:.3f} s"  # each request alone would take 0.3 s
    assert run.finish(timeout_s=60)["status"] == "finished"
    assert RunMetric.objects.filter(run_id=run.id).count() == 200  # all of it arrives, in a few batched reports
    assert len(network.posts) < 10


def test_the_plain_loop_helper_reports_to_one_run(connect: Any) -> None:
    with pytest.raises(PracticumError) as no_run:
        practicum_client.log_metrics(0, {"loss": 1.0})
    assert no_run.value.code == "no_run"
    run = practicum_client.init(name="plain loop", recipe="torch-loop", client=connect(), interval_s=0.05)
    for step in range(3):
        practicum_client.log_metrics(step, {"loss": 3.0 - step})
        assert not practicum_client.should_stop()
    assert practicum_client.finish()["status"] == "finished"
    assert list(RunMetric.objects.filter(run_id=run.id).order_by("step").values_list("value", flat=True)) == [3.0, 2.0, 1.0]
