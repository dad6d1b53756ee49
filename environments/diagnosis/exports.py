"""Diagnosis datasets, in two views, each line a canonical trajectory record that training/data.py reads as is.

    diagnosis view:  the whole failed trajectory rendered as the diagnosing prompt, and the diagnosis as the
                     agent's `submit_diagnosis` call: trains a diagnoser. The whole trajectory, not the prefix
                     through the error step: a prefix would give the answer away (the pivotal step would always
                     be the last one shown) and differ from what a diagnoser is asked at use.
    recovery view:   the corrected child episode (prefix + correction + continuation); header.meta.recovery
                     says where the prefix ends (`train_from_step`), so a trainer can weight only the recovery.

Both put the diagnosis itself in header.meta so the lines are also plain data for analysis.
"""

from __future__ import annotations

from typing import Any

from environments.core import ToolSpec
from environments.diagnosis.model_diagnoser import SUBMIT_DIAGNOSIS, diagnosis_prompt
from environments.records import Header, Record, record_score
from environments.trajectory import make_step, new_record


def diagnosis_example(record: Record, diagnosis: dict[str, Any], *, env_tools: list[ToolSpec], max_chars: int = 60_000) -> Record:
    """`diagnosis` holds step_index, category, explanation, correction, evidence_steps, confidence (and optional ids)."""
    k = int(diagnosis["step_index"])
    arguments = {
        "step_index": k,
        "category": diagnosis["category"],
        "explanation": diagnosis["explanation"],
        "correction": diagnosis.get("correction"),
        "evidence_steps": list(diagnosis.get("evidence_steps") or []),
    }
    if diagnosis.get("confidence") is not None:
        arguments["confidence"] = diagnosis["confidence"]
    header: Header = {
        "env": record["header"]["env"],
        "task": record["header"]["task"],
        "seed": record["header"].get("seed"),
        "source": "upload",
        "policy": {"name": "diagnoser", "kind": "external"},
        "tools": [SUBMIT_DIAGNOSIS.openai_schema()],
        "meta": {"view": "diagnosis", "diagnosis": diagnosis, "episode_steps": len(record["steps"])},
    }
    steps = [
        make_step(index=0, source="user", message=diagnosis_prompt(record, env_tools=env_tools, max_chars=max_chars)),
        make_step(index=1, source="agent", tool_calls=[{"id": "diagnosis", "name": SUBMIT_DIAGNOSIS.name, "arguments": arguments}]),
    ]
    return new_record(header=header, steps=steps)


def recovery_example(child: Record, diagnosis: dict[str, Any], *, retry: Record | None = None) -> Record:
    """The corrected branch as a record; `retry`, when given, adds the original-action retry's outcome."""
    header = child["header"].copy()
    k = int(diagnosis["step_index"])
    assert header.get("source") == "branch" and (header.get("parent") or {}).get("branch_step") == k, (
        f"the child must be a branch at step {k}, got parent {header.get('parent')!r}"
    )
    recovery = {"diagnosis": diagnosis, "train_from_step": k, "outcome": _outcome(child)}
    if retry is not None:
        recovery["retry_outcome"] = _outcome(retry)
    header["meta"] = {**(header.get("meta") or {}), "view": "recovery", "recovery": recovery}
    return new_record(header=header, steps=child["steps"])


def _outcome(record: Record) -> dict[str, Any]:
    score = record_score(record)
    return {
        "composite": score.get("composite"),
        "passed": score.get("passed"),
        "termination_reason": record["header"].get("termination_reason"),
    }
