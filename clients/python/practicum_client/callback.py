"""A transformers `TrainerCallback` (TRL's trainers are Trainers too) that reports to an external run.

    from practicum_client import Client, PracticumCallback
    trainer = Trainer(..., callbacks=[PracticumCallback(Client(), name="sft on my data")])

Every `Trainer.log` (training loss, learning rate, eval metrics) becomes metrics at the global step; each save a
checkpoint (its folder as the path); a cancel in the console stops training at the next step end. Reports go
through the run's background reporter, so a slow server never slows a step.
"""

from __future__ import annotations

import json
import os
from typing import Any

from transformers import TrainerCallback

from practicum_client.client import Client
from practicum_client.runs import ExternalRun


def _config(args: Any) -> dict[str, Any]:
    """The training arguments as JSON values (what the run page shows as its config)."""
    settings = args.to_sanitized_dict() if hasattr(args, "to_sanitized_dict") else {}
    return {k: v for k, v in settings.items() if _json_value(v)}


def _json_value(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


class PracticumCallback(TrainerCallback):  # type: ignore[misc]  # transformers is untyped here
    def __init__(
        self,
        client: Client | None = None,
        *,
        run: ExternalRun | None = None,
        name: str = "",
        recipe: str = "transformers",
        interval_s: float = 2.0,
    ) -> None:
        """Report to `run`, or to a new external run made through `client` when training begins."""
        if run is None and client is None:
            client = Client()
        self.client, self.run, self.name, self.recipe, self.interval_s = client, run, name, recipe, interval_s

    def on_train_begin(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
        if self.run is None:
            assert self.client is not None
            base = str(getattr(getattr(model, "config", None), "_name_or_path", "") or "")
            self.run = self.client.runs.external(
                name=self.name or str(getattr(args, "run_name", "") or ""),
                recipe=self.recipe,
                base_model=base,
                config=_config(args),
                interval_s=self.interval_s,
            )

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self.run is not None and logs:
            progress = state.global_step / state.max_steps if state.max_steps else None
            self.run.log(int(state.global_step), logs, progress=progress)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None and self.run.should_stop():
            control.should_training_stop = True

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None:
            step = int(state.global_step)
            self.run.checkpoint(step, path=os.path.join(str(args.output_dir), f"checkpoint-{step}"))

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.run is not None:
            self.run.finish("finished")
