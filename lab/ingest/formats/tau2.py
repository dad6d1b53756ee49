"""tau2-bench `Results{timestamp, info, tasks, simulations}`: one episode per simulation.

Messages carry `tool_calls[{id, name, arguments, requestor}]` (the simulated user may call tools too) and
tool results carry the call `id` and an `error` flag. The task a simulation ran and the run's `info` go into
each episode's header.meta; the lab stores each distinct one once per project and counts it once against the
upload's byte budget (lab.ingest.shared), so a large policy shared by thousands of simulations is stored once.
"""

from __future__ import annotations

from typing import Any

from environments.records import Record
from environments.trajectory import new_record
from lab.ingest.chat import StepList
from lab.ingest.common import finite_number, score_from_reward, set_termination, upload_header
from lab.ingest.reader import Reader, RecordContext, drop_none

NAME = "tau2"
SOURCES = {"assistant": "agent", "user": "user", "system": "system"}


def is_container(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("simulations"), list)


def matches(value: Any) -> bool:
    """A single simulation run, outside a Results file."""
    return isinstance(value, dict) and isinstance(value.get("messages"), list) and "termination_reason" in value and "task_id" in value


def container_context(results: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """What every simulation shares, and the top-level keys that are not understood."""
    tasks = {str(task.get("id")): task for task in results.get("tasks") or [] if isinstance(task, dict)}
    info = results.get("info") if isinstance(results.get("info"), dict) else {}
    context = {"info": info, "tasks": tasks, "timestamp": results.get("timestamp")}
    unmapped = [key for key in results if key not in ("timestamp", "info", "tasks", "simulations")]
    return context, unmapped


def to_record(raw: Any, origin: str, ctx: RecordContext, context: dict[str, Any]) -> Record:
    sim = Reader(raw, origin, ctx)
    task_id = sim.get("task_id", "string|integer", required=True)
    steps = StepList(ctx)
    for i, value in enumerate(sim.array("messages", required=True)):
        _add_message(Reader(value, f"{sim.at('messages')}[{i}]", ctx), steps)
    reward_info = sim.get("reward_info", "object")
    reward = finite_number((reward_info or {}).get("reward"))
    info = context.get("info", {})
    agent_info = info.get("agent_info") if isinstance(info.get("agent_info"), dict) else {}
    domain = (info.get("environment_info") or {}).get("domain_name") if isinstance(info.get("environment_info"), dict) else None
    header = upload_header(
        fmt=NAME,
        env=f"tau2-{domain}" if domain else "tau2",
        task=task_id,
        seed=sim.get("seed", "integer"),
        reward=reward,
        score=score_from_reward(reward, _components(reward_info or {})),
        started_at=sim.get("start_time", "string"),
        ended_at=sim.get("end_time", "string"),
        policy=drop_none(
            {
                "kind": "external",
                "name": agent_info.get("implementation"),
                "model": agent_info.get("llm"),
                "llm_args": agent_info.get("llm_args"),
            }
        ),
        harness=drop_none({"user": info.get("user_info"), "max_steps": info.get("max_steps"), "max_errors": info.get("max_errors")}),
        metrics=drop_none(
            {
                "duration_s": sim.get("duration", "number"),
                "agent_cost": sim.get("agent_cost", "number"),
                "user_cost": sim.get("user_cost", "number"),
            }
        ),
        meta={
            "simulation_id": sim.get("id", "string"),
            "trial": sim.get("trial", "integer"),
            "timestamp": sim.get("timestamp", "string") or context.get("timestamp"),
            "reward_info": reward_info,
            "task": context.get("tasks", {}).get(str(task_id)),
            "run_info": info or None,
        },
    )
    set_termination(header, sim.get("termination_reason", "string"))
    sim.done()
    return new_record(header=header, steps=steps.steps)


def _add_message(message: Reader, steps: StepList) -> None:
    role = message.text("role", required=True)
    content = message.get("content", "string|null")
    meta = drop_none(
        {"turn_idx": message.get("turn_idx", "integer"), "cost": message.get("cost", "number"), "usage": message.get("usage", "object")}
    )
    timestamp = message.get("timestamp", "string")
    if role == "tool":
        steps.answer(
            message.get("id", "string", required=True),
            content,
            is_error=bool(message.get("error", "boolean")),
            requestor=message.get("requestor", "string"),
            path=message.path,
        )
    elif role in SOURCES:
        calls = []
        for j, value in enumerate(message.array("tool_calls")):
            call = Reader(value, f"{message.at('tool_calls')}[{j}]", message.ctx)
            calls.append(
                {
                    "id": call.text("id", required=True),
                    "name": call.text("name", required=True),
                    "arguments": call.get("arguments", "object", default={}),
                }
            )
            call.skip("requestor")  # the step's source already says who called
            call.done()
        steps.add(SOURCES[role], message=content, tool_calls=calls, timestamp=timestamp, meta=meta, path=message.path)
    else:
        message.ctx.fail(message.at("role"), f"unknown role {role!r}; expected assistant, user, tool or system")
    message.done()


def _components(reward_info: dict[str, Any]) -> dict[str, float]:
    """Partial credit per check family; `reward_breakdown` when tau2 computed one."""
    components: dict[str, float] = {}
    breakdown = reward_info.get("reward_breakdown")
    if isinstance(breakdown, dict):
        components.update({str(k).lower(): float(v) for k, v in breakdown.items() if finite_number(v) is not None})
    db_check = reward_info.get("db_check")
    if isinstance(db_check, dict) and finite_number(db_check.get("db_reward")) is not None:
        components.setdefault("db", float(db_check["db_reward"]))
    # Named like tau2's RewardType values (lowercased), so a breakdown and the derived fractions never duplicate.
    families = (
        ("action_checks", "action_match", "action"),
        ("nl_assertions", "met", "nl_assertion"),
        ("communicate_checks", "met", "communicate"),
        ("env_assertions", "met", "env_assertion"),
    )
    for key, flag, name in families:
        checks = [c for c in reward_info.get(key) or [] if isinstance(c, dict)]
        if checks:
            components.setdefault(name, sum(1.0 for c in checks if c.get(flag)) / len(checks))
    return components
