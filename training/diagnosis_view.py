"""The diagnosis view as SFT data for a diagnoser, and the diagnoser's answer parsed back.

    record = diagnoser_record(failed, {"step_index": 4, "correction": {"name": "lookup", "arguments": {"item": "lamp"}}})
    record = as_diagnoser_record(export_line)     # a `GET /diagnoses/export/?view=diagnosis` line, same shape
    parsed = parse_diagnosis_answer(model_text)   # parsed.step_index, parsed.correction; or parsed.error

A diagnoser record has one user turn (the trajectory, one line per step, as environments.diagnosis.model_diagnoser
renders it) and one agent turn, the only supervised one: the answer as compact JSON, the pivotal step and the
correction, `{"step_index": K, "correction": {"name": TOOL, "arguments": {...}}}`. The export's diagnosis view
(environments.diagnosis.exports.diagnosis_example) answers with a `submit_diagnosis` call that also carries a
category and a long explanation; `as_diagnoser_record` keeps its prompt and replaces that call with the compact
answer, so a small model spends its tokens on the two figures the evaluation scores. The sft recipe applies it to
every diagnosis-view record with `view="diagnosis"`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from environments.diagnosis.model_diagnoser import render_trajectory
from environments.records import Header, Record, header_score
from environments.trajectory import make_step, new_record

DIAGNOSIS_VIEW = "diagnosis"


def diagnoser_prompt(record: Record, *, max_chars: int = 4_000) -> str:
    """The whole failed trajectory and what to answer; short, since a diagnoser is also a small model here."""
    header = record["header"]
    score = header_score(header)
    return (
        f"Failed episode of {header['env']}/{header['task']}, composite {score.get('composite')}.\n"
        f"{render_trajectory(record['steps'], max_chars=max_chars)}\n"
        'Answer {"step_index": N, "correction": {"name": TOOL, "arguments": {...}}}: the first wrong step and the call '
        "it should have made."
    )


def diagnosis_answer(diagnosis: dict[str, Any]) -> str:
    """The supervised answer: the pivotal step and the correction, as compact JSON."""
    correction = diagnosis.get("correction") or {}
    body = {
        "step_index": int(diagnosis["step_index"]),
        "correction": {"name": correction.get("name"), "arguments": correction.get("arguments") or {}},
    }
    return json.dumps(body, separators=(", ", ": "))


def _record(header: Header, prompt: str, diagnosis: dict[str, Any]) -> dict[str, Any]:
    steps = [make_step(index=0, source="user", message=prompt), make_step(index=1, source="agent", message=diagnosis_answer(diagnosis))]
    return new_record(header=header, steps=steps)


def diagnoser_record(record: Record, diagnosis: dict[str, Any], *, max_chars: int = 4_000) -> dict[str, Any]:
    """A diagnoser training example from a failed record and its (verified) diagnosis."""
    header = {
        "env": record["header"]["env"],
        "task": record["header"]["task"],
        "seed": record["header"].get("seed"),
        "source": "upload",
        "policy": {"name": "diagnoser", "kind": "external"},
        "meta": {"view": DIAGNOSIS_VIEW, "diagnosis": diagnosis, "episode_steps": len(record["steps"])},
    }
    return _record(header, diagnoser_prompt(record, max_chars=max_chars), diagnosis)


def as_diagnoser_record(example: dict[str, Any]) -> dict[str, Any]:
    """An export's diagnosis-view record with its `submit_diagnosis` turn replaced by the compact answer (the prompt is
    kept as the export wrote it); a record already in the compact shape is returned as is."""
    header = example.get("header") or {}
    meta = header.get("meta") or {}
    assert meta.get("view") == DIAGNOSIS_VIEW and isinstance(meta.get("diagnosis"), dict), (
        f"not a diagnosis-view record: header.meta.view={meta.get('view')!r}"
    )
    steps = example["steps"]
    if not any(step.get("tool_calls") for step in steps):
        return example
    prompt = next(str(s.get("message") or "") for s in steps if s.get("source") in ("user", "env"))
    return _record({k: v for k, v in header.items() if k != "tools"}, prompt, meta["diagnosis"])


@dataclass(frozen=True)
class ParsedDiagnosis:
    step_index: int | None
    correction: dict[str, Any] | None
    error: str | None  # None when the answer parsed; else what was wrong, naming the field

    @property
    def ok(self) -> bool:
        return self.error is None


def _bad(error: str) -> ParsedDiagnosis:
    return ParsedDiagnosis(None, None, error)


def parse_diagnosis_answer(text: str) -> ParsedDiagnosis:
    """The first JSON object in `text` (the model's first proposal), as step index and correction. Accepts the compact
    answer and a `submit_diagnosis` tool call's {"name": ..., "arguments": {...}} wrapping it."""
    start = text.find("{")
    if start < 0:
        return _bad("no JSON object in the answer")
    try:
        value, _ = json.JSONDecoder().raw_decode(text[start:])
    except json.JSONDecodeError as exc:
        return _bad(f"the answer is not valid JSON: {exc.msg} at character {exc.pos}")
    if isinstance(value, dict) and value.get("name") == "submit_diagnosis" and isinstance(value.get("arguments"), dict):
        value = value["arguments"]
    if not isinstance(value, dict):
        return _bad(f"the answer is a {type(value).__name__}, not an object")
    step = value.get("step_index")
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        return _bad(f"step_index: must be a step number, got {step!r}")
    correction = value.get("correction")
    if not isinstance(correction, dict) or not isinstance(correction.get("name"), str) or not correction["name"]:
        return _bad(f"correction: must be {{name, arguments}}, got {correction!r}")
    arguments = correction.get("arguments", {})
    if not isinstance(arguments, dict):
        return _bad(f"correction.arguments: must be an object, got {arguments!r}")
    return ParsedDiagnosis(step, {"name": correction["name"], "arguments": arguments}, None)
