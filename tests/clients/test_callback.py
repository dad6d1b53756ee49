"""PracticumCallback on a real transformers.Trainer training the tiny model (built here; nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.runs.models import Checkpoint, RunMetric, TrainingRun
from lab.runs.services import run_cancel


def _trainer(tmp_path: Path, callback: Any, *, max_steps: int) -> Any:
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

    from training.tiny import tiny_model_path

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path(0))
    rows = [{"input_ids": [(7 * i + j) % 200 + 10 for j in range(16)]} for i in range(8)]
    data = [{**row, "labels": row["input_ids"]} for row in rows]
    args = TrainingArguments(
        output_dir=str(tmp_path / "out"),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_steps=2,
        save_strategy="steps",
        learning_rate=1e-3,
        report_to=[],
        use_cpu=True,
        disable_tqdm=True,
        run_name="tiny sft",
    )
    return Trainer(model=model, args=args, train_dataset=data, callbacks=[callback])


@pytest.mark.slow
def test_a_trainer_reports_its_losses_checkpoints_and_end(connect: Any, tmp_path: Path) -> None:
    from practicum_client import PracticumCallback

    callback = PracticumCallback(connect(), recipe="hf-trainer", interval_s=0.05)
    _trainer(tmp_path, callback, max_steps=4).train()
    run = TrainingRun.objects.get(pk=callback.run.id)
    assert (run.name, run.recipe, run.status, run.progress, run.provenance) == ("tiny sft", "hf-trainer", "finished", 1.0, "upload")
    assert "practicum-tiny-0" in run.base_model  # the model's own from_pretrained path
    assert run.config["max_steps"] == 4 and run.config["learning_rate"] == 1e-3
    losses = list(RunMetric.objects.filter(run=run, name="loss").order_by("step").values_list("step", "value"))
    assert [step for step, _ in losses] == [1, 2, 3, 4] and all(value > 0 for _, value in losses)
    assert RunMetric.objects.filter(run=run, name="train_loss").exists()  # the end-of-training summary log
    assert list(Checkpoint.objects.filter(run=run).order_by("step").values_list("step", "path")) == [
        (2, str(tmp_path / "out" / "checkpoint-2")),
        (4, str(tmp_path / "out" / "checkpoint-4")),
    ]


@pytest.mark.slow
def test_a_run_cancelled_in_the_console_stops_the_trainer(connect: Any, tmp_path: Path) -> None:
    from practicum_client import PracticumCallback

    client = connect()
    started = client.runs.external(name="to cancel", recipe="hf-trainer")
    started.reporter.close(timeout_s=1)  # this handle reports nothing; the trainer's below does
    run_cancel(run=TrainingRun.objects.get(pk=started.id))
    callback = PracticumCallback(run=client.runs.attach(started.id, interval_s=0.05))
    trainer = _trainer(tmp_path, callback, max_steps=50)
    trainer.train()
    assert trainer.state.global_step == 1  # stopped at the first step's end
    run = TrainingRun.objects.get(pk=started.id)
    assert run.status == "cancelled" and run.ended_at is not None
    assert list(RunMetric.objects.filter(run=run, name="loss").values_list("step", flat=True)) == [1]
