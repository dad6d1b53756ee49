"""Model diagnoses: any policy is shown a trajectory and answers with one `submit_diagnosis` tool call.

    answer = diagnose_with_policy(record, policy, env_tools=env.tools())
    answer.proposal    # a DiagnosisProposal when the answer is valid
    answer.error       # else what was wrong with it ("step_index: step 40 is past the end ...")

The answer is structured output (a tool call against SUBMIT_DIAGNOSIS's JSON Schema) and is validated in full:
the schema, that the step is an agent step of this episode, that the evidence steps exist, and that the
correction is a call of one of the environment's tools with arguments its schema accepts. A bad answer is
returned as such with the raw answer kept, never turned into a diagnosis.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from environments.core import Policy, ToolSpec, validate_arguments
from environments.diagnosis.taxonomy import AGENT_SOURCES, CATEGORIES
from environments.records import Record, Step, header_score
from environments.trajectory import make_step

SUBMIT_DIAGNOSIS = ToolSpec(
    name="submit_diagnosis",
    description="Submit your diagnosis of the episode: the first error step, its category, why, and the action that should have been taken.",
    parameters={
        "type": "object",
        "properties": {
            "step_index": {"type": "integer", "minimum": 0, "description": "Index of the first step where the agent went wrong."},
            "category": {"type": "string", "enum": list(CATEGORIES), "description": "One category of the taxonomy."},
            "explanation": {"type": "string", "minLength": 1, "maxLength": 4000, "description": "What went wrong and why it mattered."},
            "correction": {
                "type": "object",
                "description": "The tool call the agent should have made at that step.",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 100},
                    "arguments": {"type": "object", "additionalProperties": True},
                },
                "required": ["name", "arguments"],
                "additionalProperties": False,
            },
            "evidence_steps": {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 20},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["step_index", "category", "explanation", "correction"],
        "additionalProperties": False,
    },
)


@dataclass
class DiagnosisProposal:
    step_index: int
    category: str
    explanation: str
    correction: dict[str, Any] | None
    evidence_steps: list[int] = field(default_factory=list)
    confidence: float | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ModelAnswer:
    proposal: DiagnosisProposal | None
    error: str | None
    raw: dict[str, Any]  # what the policy answered: tool calls, message, parse error


def _clip(value: Any, limit: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 15] + f"...[{len(text) - limit + 15} more]"


def render_step(step: Step, *, result_chars: int = 300) -> str:
    """One line per step, as the diagnosing model sees it."""
    head = f"[{step['index']}] {step.get('source')}"
    if step.get("source") not in AGENT_SOURCES:
        return f"{head}: {_clip(step.get('message') or '', result_chars * 2)}"
    parts = []
    if step.get("message"):
        parts.append(f"says {_clip(step['message'], result_chars)}")
    results = {r.get("call_id"): r for r in step.get("results") or []}
    for call in step.get("tool_calls") or []:
        result: Mapping[str, Any] = results.get(call.get("id"), {})
        flag = " ERROR" if result.get("is_error") else ""
        parts.append(f"calls {call['name']}({_clip(call.get('arguments'), 200)}) ->{flag} {_clip(result.get('content'), result_chars)}")
    invalid = (step.get("meta") or {}).get("invalid_action")
    if invalid:
        parts.append(f"invalid action: {_clip(invalid, 200)}")
    return f"{head}: " + ("; ".join(parts) if parts else "(no action)")


def render_trajectory(steps: list[Step], *, max_chars: int = 60_000) -> str:
    """The steps as text within `max_chars`; the middle is elided first, since openings and endings explain most failures."""
    lines = [render_step(s) for s in steps]
    if sum(len(line) + 1 for line in lines) <= max_chars:
        return "\n".join(lines)
    budget = max_chars - 80
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > budget // 3:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > budget:
            break
        tail.insert(0, line)
        used += len(line) + 1
    skipped = len(lines) - len(head) - len(tail)
    return "\n".join([*head, f"... {skipped} steps omitted ...", *tail]) if skipped else "\n".join(head + tail)


def diagnosis_prompt(record: Record, *, env_tools: list[ToolSpec], description: str = "", max_chars: int = 60_000) -> str:
    header = record["header"]
    score = header_score(header)
    taxonomy = "\n".join(f"- {key}: {text}" for key, text in CATEGORIES.items())
    tool_names = ", ".join(t.name for t in env_tools)
    return (
        f"You are reviewing a failed episode of {header['env']}/{header['task']} (seed {header.get('seed')}). "
        f"It ended with {header.get('termination_reason')}; composite score {score.get('composite')}, passed {score.get('passed')}.\n"
        + (f"Task: {description}\n" if description else "")
        + f"\nFailure categories:\n{taxonomy}\n\nTrajectory (one line per step):\n{render_trajectory(record['steps'], max_chars=max_chars)}\n\n"
        "Find the FIRST step at which the agent made the mistake that led to the failure. Call submit_diagnosis with its "
        "step_index (a step number shown above), a category from the list, an explanation, and the corrected action as a tool "
        f"call {{name, arguments}} using one of the environment's tools ({tool_names}). Add evidence_steps and a confidence if you can."
    )


def validate_answer(arguments: Any, record: Record, env_tools: list[ToolSpec]) -> str | None:
    """None when the submitted diagnosis is valid for this episode; else a message naming the field."""
    problem = validate_arguments(SUBMIT_DIAGNOSIS.parameters, arguments)
    if problem:
        return problem
    steps = record["steps"]
    k = arguments["step_index"]
    if k >= len(steps):
        return f"arguments.step_index: step {k} is past the end (the episode has steps 0..{len(steps) - 1})"
    if steps[k].get("source") not in AGENT_SOURCES:
        return f"arguments.step_index: step {k} is a {steps[k].get('source')} step, not an agent decision"
    for i, ref in enumerate(arguments.get("evidence_steps") or []):
        if ref >= len(steps):
            return f"arguments.evidence_steps[{i}]: step {ref} is past the end (the episode has steps 0..{len(steps) - 1})"
    if not arguments["explanation"].strip():
        return "arguments.explanation: say what went wrong"
    correction = arguments["correction"]
    spec = next((t for t in env_tools if t.name == correction["name"]), None)
    if spec is None:
        return f"arguments.correction.name: {correction['name']!r} is not a tool of this environment"
    problem = validate_arguments(spec.parameters, correction["arguments"])
    if problem:
        return f"arguments.correction.{problem}"
    return None


def diagnose_with_policy(
    record: Record, policy: Policy, *, env_tools: list[ToolSpec], description: str = "", max_chars: int = 60_000
) -> ModelAnswer:
    """Ask `policy` for a diagnosis of `record` and validate its answer (see the module docstring)."""
    prompt = diagnosis_prompt(record, env_tools=env_tools, description=description, max_chars=max_chars)
    history = [make_step(index=0, source="env", message=prompt)]
    try:
        action = policy.act(history, [SUBMIT_DIAGNOSIS])
    except Exception as exc:  # a failing model is a bad answer to record, not a crash of the batch
        return ModelAnswer(None, f"the policy raised {type(exc).__name__}: {exc}"[:500], {"exception": repr(exc)[:500]})
    raw = {
        "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in action.tool_calls],
        "message": action.message,
        "error": action.error,
    }
    if action.error:
        return ModelAnswer(None, f"the answer could not be parsed: {action.error}"[:500], raw)
    calls = [c for c in action.tool_calls if c.name == SUBMIT_DIAGNOSIS.name]
    if len(calls) != 1:
        return ModelAnswer(None, f"expected exactly one submit_diagnosis call, got {[c.name for c in action.tool_calls]}", raw)
    arguments = calls[0].arguments
    problem = validate_answer(arguments, record, env_tools)
    if problem:
        return ModelAnswer(None, problem, raw)
    proposal = DiagnosisProposal(
        step_index=arguments["step_index"],
        category=arguments["category"],
        explanation=arguments["explanation"].strip(),
        correction={"name": arguments["correction"]["name"], "arguments": arguments["correction"]["arguments"]},
        evidence_steps=list(arguments.get("evidence_steps") or []),
        confidence=arguments.get("confidence"),
    )
    return ModelAnswer(proposal, None, raw)
