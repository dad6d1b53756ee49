"""ATIF (Agent Trajectory Interchange Format, v1.x): `{schema_version, session_id, agent, steps, ...}`.

ATIF is the closest format to ours: one step per turn, tool calls with their observation results in the
same step, and per-step metrics that may carry the sampled token ids and logprobs, which become the
step's `token_ids` / `prompt_token_ids` / `logprobs` for on-policy training. `step_id` counts from 1.
"""

from __future__ import annotations

from typing import Any

from environments.records import Record
from environments.trajectory import new_record
from lab.ingest.chat import StepList
from lab.ingest.common import upload_header
from lab.ingest.reader import Reader, RecordContext, drop_none

NAME = "atif"
SOURCES = ("system", "user", "agent")


def matches(value: Any) -> bool:
    if not isinstance(value, dict):
        return False
    version = value.get("schema_version")
    return (isinstance(version, str) and version.upper().startswith("ATIF")) or (
        "session_id" in value and "agent" in value and "steps" in value
    )


def to_record(raw: Any, origin: str, ctx: RecordContext, context: dict[str, Any]) -> Record:
    trajectory = Reader(raw, origin, ctx)
    version = trajectory.text("schema_version", required=True)
    agent = trajectory.child("agent", required=True)
    assert agent is not None
    policy = drop_none(
        {
            "kind": "external",
            "name": agent.text("name", required=True),
            "version": agent.get("version", "string"),
            "model": agent.get("model_name", "string"),
            "extra": agent.get("extra", "object"),
        }
    )
    tools = agent.array("tool_definitions")
    agent.done()
    steps = StepList(ctx)
    for i, value in enumerate(trajectory.array("steps", required=True)):
        step = Reader(value, f"{trajectory.at('steps')}[{i}]", ctx)
        step_id = step.get("step_id", "integer", required=True)
        if step_id != i + 1:
            ctx.fail(step.at("step_id"), f"step_id {step_id} is out of order or duplicated; expected {i + 1} (ATIF counts from 1)")
        _add_step(step, steps)
    final = trajectory.get("final_metrics", "object", default={})
    header = upload_header(
        fmt=NAME,
        env="atif",
        task=None,
        policy=policy,
        tools=tools,
        metrics=final,
        meta={
            "schema_version": version,
            "session_id": trajectory.get("session_id", "string"),
            "trajectory_id": trajectory.get("trajectory_id", "string"),
            "continued_trajectory_ref": trajectory.get("continued_trajectory_ref"),
            "notes": trajectory.get("notes", "string"),
            "extra": trajectory.get("extra", "object"),
        },
    )
    trajectory.done()
    return new_record(header=header, steps=steps.steps)


def _add_step(step: Reader, steps: StepList) -> None:
    source = step.text("source", required=True)
    if source not in SOURCES:
        step.ctx.fail(step.at("source"), f"{source!r} is not one of {list(SOURCES)}")
    calls = []
    for j, value in enumerate(step.array("tool_calls")):
        call = Reader(value, f"{step.at('tool_calls')}[{j}]", step.ctx)
        calls.append(
            {
                "id": call.text("tool_call_id", required=True),
                "name": call.text("function_name", required=True),
                "arguments": call.get("arguments", "object|string", default={}),
            }
        )
        call.done()
    call_ids = {call["id"] for call in calls}
    results: list[dict[str, Any]] = []
    loose: list[dict[str, Any]] = []
    result_paths: list[str] = []
    observation = step.child("observation")
    if observation is not None:
        for k, value in enumerate(observation.array("results")):
            result = Reader(value, f"{observation.at('results')}[{k}]", step.ctx)
            call_id = result.get("source_call_id", "string")
            entry = drop_none(
                {"call_id": call_id, "content": result.get("content"), "subagent_trajectory_ref": result.get("subagent_trajectory_ref")}
            )
            result.done()
            # An observation tied to no call of this step (ATIF allows it) stays in meta, not as a fake result.
            if call_id in call_ids:
                result_paths.append(result.path)
            (results if call_id in call_ids else loose).append({"content": None, **entry})
        observation.done()
    meta = drop_none(
        {
            "model_name": step.get("model_name", "string"),
            "reasoning_effort": step.get("reasoning_effort"),
            "is_copied_context": step.get("is_copied_context", "boolean"),
            "extra": step.get("extra", "object"),
            "observations": loose or None,
        }
    )
    token_fields: dict[str, Any] = {}
    metrics = step.child("metrics")
    if metrics is not None:
        token_fields = drop_none(
            {
                "token_ids": metrics.get("completion_token_ids", "array"),
                "prompt_token_ids": metrics.get("prompt_token_ids", "array"),
                "logprobs": metrics.get("logprobs", "array"),
            }
        )
        usage = drop_none({key: metrics.get(key, "number") for key in ("prompt_tokens", "completion_tokens", "cached_tokens", "cost_usd")})
        if metrics.has("extra"):
            usage["extra"] = metrics.get("extra", "object")
        if usage:
            meta["usage"] = usage
        metrics.done()
    steps.add(
        source,
        path=step.path,
        result_paths=result_paths,
        message=step.get("message", "string|array|null"),
        reasoning=step.get("reasoning_content", "string"),
        tool_calls=calls,
        results=results,
        timestamp=step.get("timestamp", "string"),
        meta=meta,
        **token_fields,
    )
    step.done()
