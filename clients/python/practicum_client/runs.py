"""Training runs: the lab's own (launch, cancel, read) and external ones a trainer elsewhere reports into."""

from __future__ import annotations

import builtins
import math
from typing import Any

from practicum_client._http import Http, expect_object
from practicum_client.errors import PracticumError
from practicum_client.reporter import Reporter


class ExternalRun:
    """A run trained here-and-now by the caller's own loop, reported to the server in the background.

    `log` and `checkpoint` return at once (practicum_client.reporter buffers them); `should_stop()` is the
    console's cancel flag as of the last report's answer; `finish()` sends what is left and ends the run."""

    def __init__(self, http: Http, data: dict[str, Any], *, interval_s: float = 2.0, max_buffered: int = 100_000) -> None:
        self.http = http
        self.data = data
        self.id = int(data["id"])
        self.url = f"{http.url}/runs/{self.id}/"
        self._stop = data.get("status") == "cancelled"
        self.reporter = Reporter(self._send, interval_s=interval_s, max_buffered=max_buffered)

    def log(self, step: int, values: dict[str, Any], *, progress: float | None = None) -> None:
        """Record `values` ({name: number}) at `step`. Non-numbers and non-finite numbers are left out (a trainer's
        logs mix strings in); a bad step or name raises here, not later in the background."""
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise PracticumError("invalid_metrics", f"step={step!r}: a non-negative integer")
        numbers = {
            str(name): float(value)
            for name, value in values.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        }
        for name in numbers:
            if not 0 < len(name) <= 64:
                raise PracticumError("invalid_metrics", f"metric name {name[:80]!r}: 1 to 64 characters")
        if not numbers:
            return
        point: dict[str, Any] = {"step": step, "values": numbers}
        if progress is not None:
            point["progress"] = min(1.0, max(0.0, float(progress)))
        self.reporter.put("metrics", point)

    def checkpoint(self, step: int, *, path: str = "", eval_results: dict[str, Any] | None = None) -> None:
        """Record a checkpoint: where the trainer keeps it and its own evaluation results."""
        self.reporter.put("checkpoint", {"step": int(step), "path": path, "eval_results": eval_results or {}})

    def should_stop(self, *, refresh: bool = False) -> bool:
        """True once the console has cancelled the run. Without `refresh` no request is made: the flag comes with
        every report's answer; `refresh=True` asks the server now."""
        if refresh and not self._stop:
            self._stop = expect_object(self.http.json("GET", f"runs/{self.id}/"), "run").get("status") == "cancelled"
        return self._stop

    def flush(self, timeout_s: float = 30.0) -> bool:
        return self.reporter.flush(timeout_s)

    def finish(self, status: str = "finished", *, error: str = "", timeout_s: float = 30.0) -> dict[str, Any]:
        """Send what is buffered (up to `timeout_s`), then end the run as `finished` or `failed`. A run the console
        cancelled stays cancelled. The answer is the run as the server now has it."""
        self.reporter.close(timeout_s)
        self.data = expect_object(
            self.http.json("POST", f"runs/{self.id}/finish/", json={"status": status, "error": error}, idempotent=True), "run"
        )
        return self.data

    def _send(self, kind: str, payloads: list[dict[str, Any]]) -> None:
        if kind == "checkpoint":
            for payload in payloads:
                self.http.request("POST", f"runs/{self.id}/checkpoints/", json=payload, idempotent=True)
            return
        progress = [p.pop("progress") for p in payloads if "progress" in p]
        body: dict[str, Any] = {"metrics": payloads}
        if progress:
            body["progress"] = progress[-1]
        answer = expect_object(self.http.json("POST", f"runs/{self.id}/metrics/", json=body, idempotent=True), "metrics report")
        self._stop = self._stop or bool(answer.get("should_stop"))


class Runs:
    def __init__(self, http: Http, project: str | None) -> None:
        self.http = http
        self.project = project

    def list(self) -> list[dict[str, Any]]:
        page = self.http.json("GET", "runs/")
        return list(page.get("results", page) if isinstance(page, dict) else page)

    def get(self, run_id: int) -> dict[str, Any]:
        return expect_object(self.http.json("GET", f"runs/{int(run_id)}/"), "run")

    def create(
        self,
        *,
        recipe: str,
        base_model: str,
        config: dict[str, Any] | None = None,
        dataset: dict[str, Any] | None = None,
        name: str = "",
        project: str | None = None,
    ) -> dict[str, Any]:
        """Launch a run on the lab's own worker (a recipe of `python -m training`), on episodes matching `dataset`."""
        body = {
            "recipe": recipe,
            "base_model": base_model,
            "config": config or {},
            "dataset": dataset or {},
            "name": name,
            "project": project or self.project,
        }
        return expect_object(self.http.json("POST", "runs/", json={k: v for k, v in body.items() if v is not None}), "run")

    def cancel(self, run_id: int) -> dict[str, Any]:
        return expect_object(self.http.json("POST", f"runs/{int(run_id)}/cancel/"), "run")

    def metrics(self, run_id: int, *names: str) -> dict[str, dict[str, builtins.list[Any]]]:
        """{name: {"steps": [...], "values": [...]}}, all series or those named."""
        return expect_object(self.http.json("GET", f"runs/{int(run_id)}/metrics/", params={"name": list(names) or None}), "metrics")

    def checkpoints(self, run_id: int) -> builtins.list[dict[str, Any]]:
        return list(self.http.json("GET", f"runs/{int(run_id)}/checkpoints/"))

    def evaluate_checkpoint(self, run_id: int, *, task_set: str, seeds: builtins.list[int], step: int | None = None) -> dict[str, Any]:
        """Evaluate a native run's checkpoint (the latest, or the one at `step`); the answer is the evaluation."""
        body: dict[str, Any] = {"task_set": task_set, "seeds": list(seeds)}
        if step is not None:
            body["step"] = step
        return expect_object(self.http.json("POST", f"runs/{int(run_id)}/evaluate-checkpoint/", json=body), "evaluation")

    def external(
        self,
        *,
        name: str = "",
        recipe: str = "external",
        base_model: str = "",
        config: dict[str, Any] | None = None,
        project: str | None = None,
        interval_s: float = 2.0,
    ) -> ExternalRun:
        """Start a run trained by the caller and reported here; it shows live beside the lab's runs."""
        body = {"name": name, "recipe": recipe, "base_model": base_model, "config": config or {}, "project": project or self.project}
        data = expect_object(self.http.json("POST", "runs/external/", json={k: v for k, v in body.items() if v is not None}), "run")
        return ExternalRun(self.http, data, interval_s=interval_s)

    def attach(self, run_id: int, *, interval_s: float = 2.0) -> ExternalRun:
        """Report into an external run started earlier (a trainer restarted from its checkpoint)."""
        return ExternalRun(self.http, self.get(run_id), interval_s=interval_s)
