"""The contract check every registered environment must pass.

    problems = check_task("storebench/heat-wave", seed=5)     # [] when the environment keeps the contract
    report = check_all()                                      # {task_id: [problems]} over the whole registry
    for task_id, seed in contract_sample(): ...              # a bounded set per environment, for the test suite

Checks: reset is repeatable; tool schemas are valid OpenAI functions with closed argument objects and unique
names; bad input (unknown tool, extra fields, wrong types, non-objects) is answered with is_error and never
raises; the same seed and actions give the same state-hash chain; snapshot/restore resumes identically; the
score stays in [0, 1]; no tool result or event is anything but JSON; the status line is text; a done episode
names a known termination reason, and its score names one while an unfinished one's names none (no grade); the
metadata's panels call real tools with valid arguments, its demo task is one of the environment's tasks; every
score component the episode reports is explained (EnvMeta.score_components).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from environments.core import TERMINATION_REASONS, Env, ToolCall, chain_hash, tool_schema_hash
from environments.meta import EnvMeta
from environments.policies import make_policy, policy_names
from environments.records import Step
from environments.registry import env_meta, list_tasks, make

BAD_ARGUMENTS: tuple[Any, ...] = ({"__unexpected__": 1}, [], "text", None, 42, {"": float("nan")})


def _actions(env: Env, seed: int, steps: int) -> list[ToolCall]:
    """A deterministic action script: the env's random-valid anchor when it has one, else each tool with {}."""
    if "random-valid" in policy_names(env.name):
        probe = make(f"{env.name}/{env.task.key}", seed)
        policy = make_policy("random-valid", probe, seed)
        calls: list[ToolCall] = []
        history: list[Step] = [{"index": 0, "source": "env", "results": []}]
        for i in range(steps):
            action = policy.act(history, probe.tools())
            call = action.tool_calls[0] if action.tool_calls else ToolCall(name="__none__", arguments={})
            result = probe.step(call)
            calls.append(call)
            history = [
                *history[-1:],
                {"index": i + 1, "source": "agent", "results": [{"call_id": "c", "content": result.content, "is_error": result.is_error}]},
            ]
            if probe.done:
                break
        return calls
    return [ToolCall(name=t.name, arguments={}) for t in env.tools()][:steps]


def _chain(env: Env, calls: list[ToolCall]) -> list[str]:
    chain, out = "", []
    for call in calls:
        env.step(call)
        chain = chain_hash(chain, env.state_hash())
        out.append(chain)
    return out


def check_task(task_id: str, seed: int = 7, steps: int = 60) -> list[str]:
    problems: list[str] = []
    env = make(task_id, seed)
    first = env.reset()
    hash_a = env.state_hash()
    second = env.reset()
    if first.text != second.text or env.state_hash() != hash_a:
        problems.append("reset() twice gave different observations or states")
    tools = env.tools()
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        problems.append("tool names are not unique")
    for t in tools:
        schema = t.openai_schema()
        params = schema["function"]["parameters"]
        if schema["type"] != "function" or params.get("type") != "object" or params.get("additionalProperties") is not False:
            problems.append(f"{t.name}: parameters must be a closed JSON object schema")
        if not set(params.get("required", [])) <= set(params.get("properties", {})):
            problems.append(f"{t.name}: a required field is not declared")
        try:
            json.dumps(schema, allow_nan=False)
        except ValueError as exc:
            problems.append(f"{t.name}: schema is not JSON ({exc})")
    if tool_schema_hash(tools) != tool_schema_hash(env.tools()):
        problems.append("tool schema hash is unstable")
    for t in tools:
        for bad in BAD_ARGUMENTS:
            try:
                result = env.step(ToolCall(name=t.name, arguments=bad))
            except Exception as exc:
                problems.append(f"{t.name}: raised {type(exc).__name__} on arguments {bad!r}")
                continue
            if not result.is_error and bad is not None and not isinstance(bad, dict):
                problems.append(f"{t.name}: accepted non-object arguments {bad!r}")
    try:
        if not env.step(ToolCall(name="no_such_tool", arguments={})).is_error:
            problems.append("an unknown tool was not answered with is_error")
    except Exception as exc:
        problems.append(f"unknown tool raised {type(exc).__name__}")
    calls = _actions(env, seed, steps)
    chain_a, chain_b = _chain(make(task_id, seed), calls), _chain(make(task_id, seed), calls)
    if chain_a != chain_b:
        first_bad = next(i for i, (a, b) in enumerate(zip(chain_a, chain_b, strict=True)) if a != b)
        problems.append(f"same seed and actions diverged at action {first_bad}")
    half = len(calls) // 2
    original = make(task_id, seed)
    _chain(original, calls[:half])
    blob = original.snapshot()
    rest_a = _chain(original, calls[half:])
    restored = make(task_id, seed)
    restored.restore(blob)
    if _chain(restored, calls[half:]) != rest_a:
        problems.append("snapshot/restore did not resume identically")
    for call in calls[:10]:
        result = make(task_id, seed).step(call)
        try:
            json.dumps(
                {"content": result.content, "events": [e.__dict__ if hasattr(e, "__dict__") else str(e) for e in result.events]},
                allow_nan=False,
                default=_no_default,
            )
        except (TypeError, ValueError) as exc:
            problems.append(f"{call.name}: result is not plain JSON ({exc})")
    meta = env_meta(env.name)
    problems.extend(meta.problems(env))
    if meta.demo_task and meta.demo_task not in {t.key for t in list_tasks(env.name)}:
        problems.append(f"demo_task {meta.demo_task!r} is not a task of {env.name}")
    status = original.status()
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in status.items()):
        problems.append(f"status() must map text to text, got {status!r}")
    if original.done and original.termination_reason not in TERMINATION_REASONS:
        problems.append(f"done, but termination_reason {original.termination_reason!r} is not a known reason")
    score = original.score()
    if not 0.0 <= score.composite <= 1.0:
        problems.append(f"score {score.composite} outside [0, 1]")
    if not original.done and score.composite != 0.0:
        problems.append("an unfinished episode scored above 0")
    fresh = make(task_id, seed)
    fresh.reset()
    for ended in (fresh, original):  # the viewer tells a grade from no grade by the score's termination_reason
        named = ended.score().termination_reason
        if (named is None) == ended.done:
            problems.append(f"done={ended.done}, but the score's termination_reason is {named!r}")
    problems.extend(unexplained_components(meta, score.components))
    return problems


def unexplained_components(meta: EnvMeta, components: Mapping[str, Any]) -> list[str]:
    """A reported score component the environment does not explain (EnvMeta.score_components) would show in the
    viewer with no reason: one problem per such component."""
    return [
        f"score component {name!r} is not explained in EnvMeta.score_components of {meta.env}"
        for name in sorted(components)
        if name not in meta.score_components
    ]


def _no_default(value: Any) -> Any:
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    raise TypeError(f"{type(value).__name__} is not JSON")


def contract_sample(*, tasks_per_env: int = 3, seeds: tuple[int, ...] = (7, 11)) -> list[tuple[str, int]]:
    """(task id, seed) pairs: at most `tasks_per_env` tasks of each environment, spread evenly over its sorted
    tasks (so every split tends to appear), each with every seed. Deterministic, and bounded per environment so
    the suite does not grow with an environment's task count; `check_all` still covers everything."""
    assert tasks_per_env >= 1 and seeds, f"tasks_per_env={tasks_per_env}, seeds={seeds}: need at least one of each"
    by_env: dict[str, list[str]] = {}
    for task in list_tasks():
        by_env.setdefault(task.env, []).append(task.id)
    pairs: list[tuple[str, int]] = []
    for ids in by_env.values():
        step = max(1, len(ids) / tasks_per_env)
        chosen = sorted({ids[int(i * step)] for i in range(min(tasks_per_env, len(ids)))}, key=ids.index)
        pairs.extend((task_id, seed) for task_id in chosen for seed in seeds)
    return pairs


def check_all(seed: int = 7, steps: int = 60) -> dict[str, list[str]]:
    return {task.id: check_task(task.id, seed, steps) for task in list_tasks()}
