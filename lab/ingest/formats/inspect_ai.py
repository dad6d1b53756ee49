"""inspect_ai eval logs: `EvalLog{version, status, eval, plan, results, stats, samples}` as `.json`, or a
`.eval` zip with header.json and samples/{id}_epoch_{n}.json. One episode per sample (and epoch).

Strings moved out to `attachments` (`attachment://<hash>`) are put back before mapping. Letter scores
count C (correct) as 1, P (partial) as 0.5, I (incorrect) and N (no answer) as 0.
"""

from __future__ import annotations

import re
from typing import Any, cast

from environments.records import Record
from environments.trajectory import new_record
from lab.ingest.budget import ByteBudget
from lab.ingest.chat import StepList
from lab.ingest.common import finite_number, set_termination, upload_header
from lab.ingest.reader import Reader, RecordContext, drop_none

NAME = "inspect"
LETTER_SCORES = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
SOURCES = {"system": "system", "user": "user", "assistant": "agent"}
ATTACHMENT = re.compile(r"attachment://([0-9A-Za-z_\-]+)")
HEADER_KEYS = ("version", "status", "eval", "plan", "results", "stats", "error", "reductions", "location", "etag", "invalidated")


def is_container(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("eval"), dict)


def container_context(log: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The eval spec and plan every sample shares; run-level results/stats are summaries, not episode data."""
    context = {"eval": log.get("eval") or {}, "plan": log.get("plan"), "status": log.get("status"), "version": log.get("version")}
    unmapped = [key for key in log if key not in ("eval", "plan", "status", "version", "samples") and log[key] is not None]
    return context, unmapped


def matches(value: Any) -> bool:
    """A lone sample (as in samples/*.json): messages plus inspect's scores/epoch fields."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("messages"), list)
        and "epoch" in value
        and ("scores" in value or "target" in value)
    )


def resolve_attachments(value: Any, attachments: dict[str, Any], budget: ByteBudget | None = None, *, file: str = "") -> Any:
    """`value` with every `attachment://<hash>` replaced by its text; unknown hashes (and non-text attachments) stay as written.

    Each string's expansion is spent from `budget` before the string is built: a small sample that names a
    large attachment thousands of times is refused without the expansion ever existing.
    """
    sizes: dict[str, int] = {}

    def size(key: str) -> int:
        if key not in sizes:
            text = attachments.get(key)
            sizes[key] = len(text.encode()) if isinstance(text, str) else 0
        return sizes[key]

    def replace(match: re.Match[str]) -> str:
        text = attachments.get(match.group(1))
        return text if isinstance(text, str) else match.group(0)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            if "attachment://" not in value:
                return value
            if budget is not None:
                grown = sum(size(m.group(1)) for m in ATTACHMENT.finditer(value))
                budget.spend(grown, what="attachment:// references", file=file)
            return ATTACHMENT.sub(replace, value)
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(value)


def to_record(raw: Any, origin: str, ctx: RecordContext, context: dict[str, Any]) -> Record:
    attachments = raw.get("attachments") if isinstance(raw, dict) else None
    resolved = resolve_attachments(raw, attachments, ctx.budget, file=ctx.file) if isinstance(attachments, dict) else raw
    sample = Reader(resolved, origin, ctx)
    sample.skip("attachments", "input")  # attachments are resolved in place; input is repeated in messages
    sample_id = sample.get("id", "string|integer", required=True)
    steps = StepList(ctx)
    for i, value in enumerate(sample.array("messages", required=True)):
        _add_message(Reader(value, f"{sample.at('messages')}[{i}]", ctx), steps)
    if not steps.steps and isinstance(sample.value.get("input"), str):
        steps.add("user", message=sample.value["input"])
    eval_spec = context.get("eval", {})
    output = sample.child("output")
    output_meta: dict[str, Any] = {}
    if output is not None:
        output_meta = drop_none(
            {"model": output.get("model", "string"), "usage": output.get("usage", "object"), "time": output.get("time", "number")}
        )
        choices = output.array("choices")
        output.skip("completion")  # the last assistant message, already a step
        if choices and isinstance(choices[0], dict):
            output_meta["stop_reason"] = choices[0].get("stop_reason")
            _attach_logprobs(choices[0].get("logprobs"), steps)
        output.skip("choices")
        output.done()
    scores = sample.get("scores", "object", default={})
    header = upload_header(
        fmt=NAME,
        env=str(eval_spec.get("task") or "inspect"),
        env_version=str(eval_spec["task_version"]) if eval_spec.get("task_version") is not None else None,
        task=sample_id,
        score=score_from_inspect(scores),
        started_at=sample.get("started_at", "string"),
        ended_at=sample.get("completed_at", "string"),
        policy=drop_none(
            {"kind": "external", "model": eval_spec.get("model") or output_meta.get("model"), "solver": eval_spec.get("solver")}
        ),
        harness=drop_none({"plan": context.get("plan"), "config": eval_spec.get("config")}),
        metrics=drop_none(
            {
                "total_time": sample.get("total_time", "number"),
                "working_time": sample.get("working_time", "number"),
                "model_usage": sample.get("model_usage", "object"),
            }
        ),
        meta={
            "epoch": sample.get("epoch", "integer"),
            "uuid": sample.get("uuid", "string"),
            "target": sample.get("target", "string|array"),
            "sample_metadata": sample.get("metadata", "object"),
            "store": sample.get("store", "object") or None,
            "scores": scores or None,
            "output": output_meta or None,
            "eval": drop_none({k: eval_spec.get(k) for k in ("eval_id", "run_id", "task", "task_id", "created", "dataset", "model")})
            or None,
            "log_status": context.get("status"),
            "error": sample.get("error", "object"),
            "limit": sample.get("limit", "object"),
        },
    )
    error, limit = sample.value.get("error"), sample.value.get("limit")
    if isinstance(error, dict):
        set_termination(header, "unexpected_error")
    elif isinstance(limit, dict) and isinstance(limit.get("type"), str):
        set_termination(header, limit["type"])
    elif context.get("status") in (None, "success"):
        header["termination_reason"] = "agent_stop"
    sample.done()
    return new_record(header=header, steps=steps.steps)


def _content(content: Any) -> tuple[Any, str | None]:
    """Inspect content (text or parts) as (message, reasoning): reasoning parts move to the step's reasoning."""
    if not isinstance(content, list):
        return content, None
    reasoning: list[str] = [
        p["reasoning"] for p in content if isinstance(p, dict) and p.get("type") == "reasoning" and isinstance(p.get("reasoning"), str)
    ]
    rest = [p for p in content if not (isinstance(p, dict) and p.get("type") == "reasoning")]
    if len(rest) == 1 and isinstance(rest[0], dict) and rest[0].get("type") == "text":
        message: Any = rest[0].get("text")
    else:
        message = rest or None
    return message, "\n\n".join(reasoning) if reasoning else None


def _add_message(message: Reader, steps: StepList) -> None:
    role = message.text("role", required=True)
    content, reasoning = _content(message.get("content", "string|array|null"))
    meta = drop_none(
        {
            "id": message.get("id", "string"),
            "origin": message.get("source", "string"),
            "metadata": message.get("metadata", "object"),
            "model": message.get("model", "string"),
        }
    )
    message.skip("internal")  # provider-private state, meaningless outside inspect
    if role == "tool":
        error = message.get("error", "object")
        steps.answer(
            message.get("tool_call_id", "string"),
            content,
            is_error=error is not None,
            name=message.get("function", "string"),
            error=error,
            path=message.path,
        )
    elif role in SOURCES:
        calls = []
        for j, value in enumerate(message.array("tool_calls")):
            call = Reader(value, f"{message.at('tool_calls')}[{j}]", message.ctx)
            parse_error = call.get("parse_error", "string")
            entry = {
                "id": call.text("id", required=True),
                "name": call.text("function", required=True),
                "arguments": call.get("arguments", "object|string", default={}),
            }
            if parse_error:
                entry["parse_error"] = parse_error
            call.skip("type", "view", "internal")
            call.done()
            calls.append(entry)
        message.skip("tool_call_id")
        steps.add(SOURCES[role], message=content, reasoning=reasoning, tool_calls=calls, meta=meta, path=message.path)
    else:
        message.ctx.fail(message.at("role"), f"unknown role {role!r}; expected system, user, assistant or tool")
    message.done()


def _attach_logprobs(logprobs: Any, steps: StepList) -> None:
    """The final output's token logprobs belong to the last agent step (the completion they scored)."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    values = [finite_number(t.get("logprob")) for t in content or [] if isinstance(t, dict)]
    agent_steps = [s for s in steps.steps if s["source"] == "agent"]
    if values and all(v is not None for v in values) and agent_steps:
        agent_steps[-1]["logprobs"] = cast(list[float], values)  # none is None (checked just above)


def score_value(value: Any) -> dict[str, float]:
    """One scorer's value as named floats: letters, booleans, numbers, numeric text, or a dict of those."""
    if isinstance(value, dict):
        return {f".{k}{suffix}": number for k, item in value.items() for suffix, number in score_value(item).items()}
    if isinstance(value, bool):
        return {"": float(value)}
    if isinstance(value, str):
        if value in LETTER_SCORES:
            return {"": LETTER_SCORES[value]}
        try:
            parsed = finite_number(float(value))
        except ValueError:
            return {}
        return {} if parsed is None else {"": parsed}
    number = finite_number(value)
    return {} if number is None else {"": number}


def score_from_inspect(scores: dict[str, Any]) -> dict[str, Any] | None:
    components: dict[str, float] = {}
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else score
        for suffix, number in score_value(value).items():
            components[f"{name}{suffix}"] = number
    if not components:
        return None
    composite = sum(components.values()) / len(components)
    result: dict[str, Any] = {"passed": all(v >= 1.0 - 1e-9 for v in components.values()), "components": components}
    if 0.0 <= composite <= 1.0:
        result["composite"] = composite
    return result
