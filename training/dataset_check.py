"""Which records of a dataset a run can learn from, and why each of the others is skipped: asked when a run is
created (lab.runs.services.run_create), so an empty training set is refused with its reasons instead of stopping the
recipe later ("no actor turns to train on").

    reason = record_skip_reason(record, recipe="sft", config=full_config, include_partial=False)   # "" when kept
    ending = partial_ending(record)     # "max_steps" for a demonstration cut short, "" for one that ended by itself

A partial demonstration is an episode that did not end by itself: cut at the step cap, timed out, out of context,
stopped by errors, cancelled or abandoned. Such episodes are left out unless the run asks for them (`include_partial`).
The other reasons mirror what the SFT recipe skips (training/recipes/sft.py: select_records, training_pairs) without
a tokenizer; a recipe without its own rules here is screened for partial demonstrations only.
"""

from __future__ import annotations

from typing import Any

from environments.records import AnyRecord, Record, header_score
from environments.roles import ACTOR, step_role
from training.data import AGENT_SOURCES, step_trainable, train_from_step
from training.policies.roles import is_actor_turn

PARTIAL_ENDINGS = frozenset(
    {
        "max_steps",
        "too_many_errors",
        "timeout",
        "context_window_exceeded",
        "cancelled",
        "abandoned",
        "agent_error",
        "infrastructure_error",
        "unexpected_error",
        "user_error",
    }
)


def partial_ending(record: AnyRecord) -> str:
    """The termination reason of a demonstration that was cut short, "" for one that ended by itself (or says nothing)."""
    header = record.get("header") or {}
    reason = header.get("termination_reason") or header_score(header).get("termination_reason") or ""
    return str(reason) if reason in PARTIAL_ENDINGS else ""


def record_skip_reason(record: Record, *, recipe: str, config: dict[str, Any], include_partial: bool) -> str:
    """Why `recipe` with `config` (the full config, defaults filled) would learn nothing from `record`; "" if it would."""
    ending = partial_ending(record)
    if ending and not include_partial:
        return f"partial demonstration (ended by {ending}), not included"
    if recipe != "sft":
        return ""
    header = record.get("header") or {}
    if config.get("view") == "diagnosis":
        return "" if (header.get("meta") or {}).get("view") == "diagnosis" else "not a diagnosis-view record (view=diagnosis)"
    score = header_score(header)
    if config.get("passed_only") and not score.get("passed"):
        return "did not pass (passed_only=true)"
    role = config.get("role") or ACTOR
    min_score = config.get("min_score")
    if role == ACTOR and min_score is not None and float(score.get("composite") or 0.0) < float(min_score):
        return f"score below min_score={min_score}"
    steps = record.get("steps") or []
    if role != ACTOR:
        return "" if any(step_role(s) == role for s in steps) else f"no {role} turns"
    turns = [s for s in steps if is_actor_turn(s, AGENT_SOURCES)]
    if not turns:
        return "no actor turns (only user, environment or system steps)"
    mark = train_from_step(record)
    if not any(s["index"] >= mark and step_trainable(s) for s in turns):
        return "no trainable actor turn (each is redacted or before the recovery mark)"
    return ""
