"""The plain-loop helper: one external run per process, reported in the background.

import practicum_client as pc
pc.init(name="my sft", recipe="torch-loop", base_model="Qwen/Qwen3-0.6B")   # URL and key from the environment
for step in range(steps):
    loss = train_step()
    pc.log_metrics(step, {"loss": loss})
    if pc.should_stop():            # cancelled from the console
        break
pc.finish()
"""

from __future__ import annotations

from typing import Any

from practicum_client.client import Client
from practicum_client.errors import PracticumError
from practicum_client.runs import ExternalRun

_active: ExternalRun | None = None


def init(
    *,
    name: str = "",
    recipe: str = "external",
    base_model: str = "",
    config: dict[str, Any] | None = None,
    client: Client | None = None,
    interval_s: float = 2.0,
) -> ExternalRun:
    """Start the process's external run (finishing one still open)."""
    global _active
    if _active is not None:
        finish()
    _active = (client or Client()).runs.external(name=name, recipe=recipe, base_model=base_model, config=config, interval_s=interval_s)
    return _active


def active_run() -> ExternalRun:
    if _active is None:
        raise PracticumError("no_run", "call practicum_client.init(...) before log_metrics")
    return _active


def log_metrics(step: int, values: dict[str, Any], *, progress: float | None = None) -> None:
    """Record metrics at `step`; returns at once (the run's reporter sends them in the background)."""
    active_run().log(step, values, progress=progress)


def should_stop() -> bool:
    return active_run().should_stop()


def finish(status: str = "finished", *, error: str = "") -> dict[str, Any]:
    global _active
    run, _active = active_run(), None
    return run.finish(status, error=error)
