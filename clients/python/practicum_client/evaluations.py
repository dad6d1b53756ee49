"""Evaluations: an agent on a task set × seeds, run by the server; start one and wait for its figures."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from practicum_client._http import Http, expect_object
from practicum_client.errors import PracticumError

ENDED = ("finished", "failed", "cancelled")


class Evaluations:
    def __init__(self, http: Http, project: str | None) -> None:
        self.http = http
        self.project = project

    def start(
        self, *, agent: str, task_set: str, seeds: list[int], options: dict[str, Any] | None = None, project: str | None = None
    ) -> dict[str, Any]:
        """Launch an evaluation of `agent` (an agent of the project, or an anchor's name) on `task_set`."""
        body: dict[str, Any] = {"agent": agent, "task_set": task_set, "seeds": list(seeds), "project": project or self.project}
        if options:
            body["options"] = options
        return expect_object(self.http.json("POST", "evaluations/", json={k: v for k, v in body.items() if v is not None}), "evaluation")

    def get(self, evaluation_id: int) -> dict[str, Any]:
        return expect_object(self.http.json("GET", f"evaluations/{int(evaluation_id)}/"), "evaluation")

    def cancel(self, evaluation_id: int) -> dict[str, Any]:
        return expect_object(self.http.json("POST", f"evaluations/{int(evaluation_id)}/cancel/"), "evaluation")

    def wait(
        self, evaluation_id: int, *, timeout_s: float | None = None, poll_s: float = 1.0, progress: Callable[[float], None] | None = None
    ) -> dict[str, Any]:
        """The evaluation once it has ended (its `aggregate` then holds the figures); `progress(fraction)` is called
        whenever the fraction of finished rollouts changes. TimeoutError after `timeout_s`."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        last = -1.0
        while True:
            evaluation = self.get(evaluation_id)
            fraction = float(evaluation.get("progress") or 0.0)
            if progress is not None and fraction != last:
                progress(fraction)
                last = fraction
            if evaluation.get("status") in ENDED:
                return evaluation
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"evaluation {evaluation_id} is {evaluation.get('status')} at {fraction:.0%} after {timeout_s} s")
            time.sleep(poll_s)

    def compare(self, evaluation_id: int, other_id: int) -> dict[str, Any]:
        """Paired differences (this − other) on shared (task, seed) with 95% intervals."""
        if evaluation_id == other_id:
            raise PracticumError("invalid_parameter", "compare an evaluation with another one")
        return expect_object(
            self.http.json("GET", f"evaluations/{int(evaluation_id)}/compare/", params={"with": int(other_id)}), "comparison"
        )
