"""Header building, score and termination mapping shared by the foreign-format importers."""

from __future__ import annotations

import math
from typing import Any, cast

from environments.core import TERMINATION_REASONS
from environments.records import Header

TASK_UNKNOWN = "unknown"  # the format names no task; the lab can reassign episodes to a Task later

# Foreign termination reasons with a canonical equivalent (the original always stays in header.meta).
TERMINATION_EQUIVALENTS: dict[str, str] = {
    **{reason: reason for reason in TERMINATION_REASONS},
    # tau2: the simulated user ending the conversation is the scenario running its course, and a user
    # simulator failure is the harness's fault, never the agent's.
    "user_stop": "horizon_reached",
    "user_error": "infrastructure_error",
    # inspect_ai sample limits
    "message": "max_steps",
    "context": "context_window_exceeded",
    "time": "timeout",
    "working": "timeout",
    "operator": "cancelled",
}


def upload_header(*, fmt: str, env: str, task: Any, **fields: Any) -> Header:
    """A header with every field present, so imported episodes have one shape whatever their format."""
    header: Header = {
        "env": env,
        "task": str(task) if task not in (None, "") else TASK_UNKNOWN,
        "source": "upload",
        "seed": None,
        "policy": {},
        "harness": {},
        "termination_reason": None,
        "score": None,
        "reward": None,
        "started_at": None,
        "ended_at": None,
        "tools": [],
        "metrics": {},
        "meta": {"format": fmt},
    }
    meta = fields.pop("meta", {})
    header.update(cast(Header, {k: v for k, v in fields.items() if v is not None}))  # the importer's own header fields
    header["meta"].update({k: v for k, v in meta.items() if v is not None})
    return header


def set_termination(header: Header, original: str | None) -> None:
    if not original:
        return
    header["termination_reason"] = TERMINATION_EQUIVALENTS.get(original)
    if header["termination_reason"] != original:
        header["meta"]["original_termination_reason"] = original


def finite_number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def score_from_reward(reward: float | None, components: dict[str, float] | None = None, *, pass_at: float = 1.0) -> dict[str, Any] | None:
    """A canonical score from a reward: composite when it lies in [0, 1]; passed when it reaches `pass_at`.

    tau-bench and tau2 count a task as solved only at reward 1, hence the default.
    """
    if reward is None:
        return None
    score: dict[str, Any] = {"passed": reward >= pass_at - 1e-9, "components": dict(components or {})}
    if 0.0 <= reward <= 1.0:
        score["composite"] = reward
    return score
