"""The canonical trajectory record: one versioned JSON shape for the runner, the REST API, exports and training.

A superset of ATIF. A record is `{"schema_version", "header", "steps"}`. Each agent step holds its tool calls
and their results (the observation), so a step is one decision and what came of it.

    record = new_record(header={...}); record["steps"].append(make_step(...))
    errors = validate_record(record)      # [] when valid, else [TrajectoryError(path, reason)]
    content_hash(record)                  # stable across key order; used for idempotent uploads

Importers map foreign formats onto this shape; `lab` stores it faithfully as Episode + Step rows.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any, cast

import orjson

from environments.records import AnyRecord, Header, Record, Step, ToolCallDict, ToolResultDict

SCHEMA_VERSION = "practicum.trajectory/1"
SOURCES = ("rollout", "upload", "human", "branch")
STEP_SOURCES = ("agent", "user", "env", "human", "system")
MAX_STEPS = 100_000  # validate_record's default bound on an episode's length
MAX_DEPTH = 32  # deeper JSON is refused: no real trajectory nests this far, and it guards the parsers

_NUMBER_OR_NULL = {"type": ["number", "null"]}
_STRING_OR_NULL = {"type": ["string", "null"]}

TOOL_CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "name", "arguments"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string", "minLength": 1},
        "arguments": {"type": ["object", "string"]},  # a string when the model's JSON did not parse
    },
}

RESULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["call_id", "content"],
    "properties": {"call_id": {"type": "string"}, "content": {}, "is_error": {"type": "boolean"}},
}

_REQUIRED = object()  # a step field every step must give
_OPTIONAL = object()  # a step field present only when given

# The step's fields, declared once, each with its JSON Schema and its empty value. make_step fills in the fields
# with an empty value and normalize_record adds them when absent (lab stores each in a column of its own); the
# _OPTIONAL ones appear only when given (lab keeps them in Step.extra). STEP_SCHEMA, STEP_DEFAULTS and the fast
# step check below are read off it; lab.ingest.native_fast.NativeStep and lab's Step model follow it, which
# tests/lab/trajectories/test_step_shape.py checks.
_STEP_FIELDS: dict[str, tuple[dict[str, Any], Any]] = {
    "index": ({"type": "integer", "minimum": 0}, _REQUIRED),
    "source": ({"enum": list(STEP_SOURCES)}, _REQUIRED),
    "message": ({}, None),  # text, or a list of content parts as the producer sent them
    "reasoning": (_STRING_OR_NULL, None),
    "tool_calls": ({"type": "array", "items": TOOL_CALL_SCHEMA}, []),
    "results": ({"type": "array", "items": RESULT_SCHEMA}, []),
    "reward": (_NUMBER_OR_NULL, None),
    "sim_time_start": (_NUMBER_OR_NULL, None),
    "sim_time_end": (_NUMBER_OR_NULL, None),
    "events": ({"type": "array", "items": {"type": "object"}}, []),
    "state_hash": (_STRING_OR_NULL, None),
    "token_ids": ({"type": ["array", "null"], "items": {"type": "integer"}}, None),
    "logprobs": ({"type": ["array", "null"], "items": {"type": "number"}}, None),
    "prompt_token_ids": ({"type": ["array", "null"], "items": {"type": "integer"}}, _OPTIONAL),
    "latency_ms": (_NUMBER_OR_NULL, None),
    "timestamp": (_STRING_OR_NULL, _OPTIONAL),
    "meta": ({"type": "object"}, _OPTIONAL),
    # Which party of the episode took the turn (environments.roles): absent on an agent step means the actor.
    "role": ({"type": "string"}, _OPTIONAL),
}

STEP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [name for name, (_, empty) in _STEP_FIELDS.items() if empty is _REQUIRED],
    "properties": {name: schema for name, (schema, _) in _STEP_FIELDS.items()},
}
# Every field with an empty value: what make_step fills in and normalize_record adds when absent.
STEP_DEFAULTS: dict[str, Any] = {
    name: empty for name, (_, empty) in _STEP_FIELDS.items() if empty is not _REQUIRED and empty is not _OPTIONAL
}

# An OpenAI function tool as the agent saw it; the lab renders these and hashes them, so their shape is checked.
TOOL_SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["type", "function"],
    "properties": {
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "minLength": 1}, "description": {"type": "string"}, "parameters": {"type": "object"}},
        },
    },
}

HEADER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["env", "task", "source"],
    "properties": {
        "env": {"type": "string", "minLength": 1},
        "env_version": {"type": "string"},
        "task": {"type": "string", "minLength": 1},
        "task_version": {"type": "string"},
        "seed": {"type": ["integer", "null"], "minimum": -(2**63), "maximum": 2**63 - 1},  # stored in a 64-bit column
        "tool_schema_hash": _STRING_OR_NULL,
        "options": {"type": "object"},  # the environment's per-episode options (an attack setting, a reward mode)
        "policy": {"type": "object"},  # {name, kind, model, ...}
        "harness": {"type": "object"},
        "source": {"enum": list(SOURCES)},
        "parent": {
            "type": ["object", "null"],
            "properties": {"episode_id": {}, "branch_step": {"type": "integer", "minimum": 0}},
        },
        "termination_reason": _STRING_OR_NULL,
        "score": {
            "type": ["object", "null"],
            "properties": {
                "composite": {"type": "number", "minimum": 0, "maximum": 1},
                "passed": {"type": "boolean"},
                "components": {"type": "object", "additionalProperties": {"type": "number"}},
            },
        },
        "reward": _NUMBER_OR_NULL,
        "started_at": _STRING_OR_NULL,
        "ended_at": _STRING_OR_NULL,
        "tools": {"type": "array", "items": TOOL_SPEC_SCHEMA},  # OpenAI function schemas the agent was given
        "metrics": {"type": "object"},
        "meta": {"type": "object"},
    },
}

TRAJECTORY_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://practicum.dev/schemas/trajectory-1.json",
    "title": "Practicum trajectory record",
    "type": "object",
    "required": ["schema_version", "header", "steps"],
    "properties": {
        "schema_version": {"const": SCHEMA_VERSION},
        "header": HEADER_SCHEMA,
        "steps": {"type": "array", "items": STEP_SCHEMA},
    },
}


@dataclass(frozen=True)
class TrajectoryError:
    path: str  # e.g. "steps[3].tool_calls[0].name"
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def new_record(*, header: Header, steps: list[Step] | None = None) -> Record:
    return {"schema_version": SCHEMA_VERSION, "header": header.copy(), "steps": list(steps or [])}


_STEP_DEFAULT_KEYS = STEP_DEFAULTS.keys()


def _empty_step_fields() -> dict[str, Any]:
    """A fresh copy of STEP_DEFAULTS (its lists must not be shared between steps)."""
    return {key: (list(value) if isinstance(value, list) else value) for key, value in STEP_DEFAULTS.items()}


def make_step(
    *,
    index: int,
    source: str = "agent",
    message: Any = None,
    reasoning: str | None = None,
    tool_calls: list[ToolCallDict] | None = None,
    results: list[ToolResultDict] | None = None,
    **extra: Any,
) -> Step:
    """A step dict with every optional field present, so stored and exported steps have one shape."""
    step: dict[str, Any] = {"index": index, "source": source, **_empty_step_fields()}
    step.update(message=message, reasoning=reasoning, tool_calls=list(tool_calls or []), results=list(results or []))
    unknown = set(extra) - set(STEP_SCHEMA["properties"])
    assert not unknown, f"unknown step fields {sorted(unknown)}"
    step.update(extra)
    return cast(Step, step)  # its keys are _STEP_FIELDS' (checked just above), which Step declares


def validate_record(record: Any, *, max_steps: int = MAX_STEPS, checked_depth: int | None = None) -> list[TrajectoryError]:
    """Every problem with a record, each naming its field path. [] means valid.

    Beyond the JSON Schema: NaN/Infinity anywhere, nesting deeper than MAX_DEPTH, steps out of order or
    duplicated, results answering no call of their step. The header goes through the generic schema
    walker; steps, which are most of the work at upload time, through hand-written checks of the same rules.

    `checked_depth`: a caller that parsed the record with a parser refusing NaN/Infinity and measured its
    nesting (containers inside containers) vouches for it here; at most MAX_DEPTH skips that walk.
    """
    if checked_depth is None or checked_depth > MAX_DEPTH:
        depth_error = _non_finite_or_too_deep(record, "record", 0)
        if depth_error:
            return [depth_error]
    errors: list[TrajectoryError] = []
    if not isinstance(record, dict):
        return [TrajectoryError("record", f"expected object, got {type(record).__name__}")]
    for key in TRAJECTORY_SCHEMA["required"]:
        if key not in record:
            errors.append(TrajectoryError(f"record.{key}", "required field is missing"))
    if errors:
        return errors
    _check_schema(TRAJECTORY_SCHEMA["properties"]["schema_version"], record["schema_version"], "record.schema_version", errors)
    _check_schema(HEADER_SCHEMA, record["header"], "record.header", errors)
    steps = record["steps"]
    if not isinstance(steps, list):
        errors.append(TrajectoryError("record.steps", f"expected array, got {type(steps).__name__}"))
    if errors:
        return errors
    if len(steps) > max_steps:
        return [TrajectoryError("record.steps", f"at most {max_steps} steps per episode, got {len(steps)}")]
    if all(_step_ok(step, position) for position, step in enumerate(steps)):
        return []
    for position, step in enumerate(steps):  # the slow path names the first problem exactly
        problem = _step_problem(step, position)
        if problem:
            return [problem]
    return []


def header_errors(header: Any) -> list[TrajectoryError]:
    """The header's problems against HEADER_SCHEMA, as validate_record reports them; [] means valid."""
    errors: list[TrajectoryError] = []
    _check_schema(HEADER_SCHEMA, header, "record.header", errors)
    return errors


def _step_problem(step: Any, position: int) -> TrajectoryError | None:
    path = f"record.steps[{position}]"
    if not isinstance(step, dict):
        return TrajectoryError(path, f"expected object, got {type(step).__name__}")
    index = step.get("index")
    if "index" not in step or "source" not in step:
        return TrajectoryError(f"{path}.{'index' if 'index' not in step else 'source'}", "required field is missing")
    if not isinstance(index, int) or isinstance(index, bool):
        return TrajectoryError(f"{path}.index", f"expected integer, got {type(index).__name__}")
    if index != position:
        what = "duplicated" if 0 <= index < position else "out of order"
        return TrajectoryError(f"{path}.index", f"step index {index} is {what}; expected {position}")
    if step["source"] not in STEP_SOURCES:
        return TrajectoryError(f"{path}.source", f"{step['source']!r} is not one of {list(STEP_SOURCES)}")
    for key, value in step.items():
        sub = STEP_SCHEMA["properties"].get(key)
        if sub is None or key in ("index", "source", "tool_calls", "results") or value is None and "null" in sub.get("type", ()):
            continue
        errors: list[TrajectoryError] = []
        _check_schema(sub, value, f"{path}.{key}", errors)
        if errors:
            return errors[0]
    call_ids = set()
    for c, call in enumerate(_list_or_empty(step.get("tool_calls"))):
        if not isinstance(call, dict):
            return TrajectoryError(f"{path}.tool_calls[{c}]", f"expected object, got {type(call).__name__}")
        for key in ("id", "name", "arguments"):
            if key not in call:
                return TrajectoryError(f"{path}.tool_calls[{c}].{key}", "required field is missing")
        if not isinstance(call["id"], str):
            return TrajectoryError(f"{path}.tool_calls[{c}].id", f"expected string, got {type(call['id']).__name__}")
        if not isinstance(call["name"], str) or not call["name"]:
            return TrajectoryError(f"{path}.tool_calls[{c}].name", "expected a non-empty string")
        if not isinstance(call["arguments"], (dict, str)):
            return TrajectoryError(
                f"{path}.tool_calls[{c}].arguments", f"expected object or string, got {type(call['arguments']).__name__}"
            )
        call_ids.add(call["id"])
    for r, result in enumerate(_list_or_empty(step.get("results"))):
        if not isinstance(result, dict):
            return TrajectoryError(f"{path}.results[{r}]", f"expected object, got {type(result).__name__}")
        for key in ("call_id", "content"):
            if key not in result:
                return TrajectoryError(f"{path}.results[{r}].{key}", "required field is missing")
        if not isinstance(result["call_id"], str):
            return TrajectoryError(f"{path}.results[{r}].call_id", f"expected string, got {type(result['call_id']).__name__}")
        if "is_error" in result and not isinstance(result["is_error"], bool):
            return TrajectoryError(f"{path}.results[{r}].is_error", f"expected boolean, got {type(result['is_error']).__name__}")
        if call_ids and result["call_id"] not in call_ids:
            return TrajectoryError(f"{path}.results[{r}].call_id", f"{result['call_id']!r} answers no tool call of this step")
    for key in ("tool_calls", "results"):
        if key in step and not isinstance(step[key], list):
            return TrajectoryError(f"{path}.{key}", f"expected array, got {type(step[key]).__name__}")
    return None


_EXACT_TYPES: dict[str, frozenset[type]] = {
    "object": frozenset({dict}),
    "array": frozenset({list}),
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
}
# Checked by hand in _step_ok: the ordering of indexes, the source's enum, and calls and results.
_STEP_FIELDS_CHECKED_APART = frozenset({"index", "source", "tool_calls", "results"})


def _exact_types(schema: dict[str, Any]) -> frozenset[type]:
    kinds = schema["type"]
    return frozenset().union(*(_EXACT_TYPES[kind] for kind in ([kinds] if isinstance(kinds, str) else kinds)))


def _typed_step_fields() -> tuple[tuple[str, frozenset[type], frozenset[type] | None], ...]:
    """(field, its value's types, its items' types or None) for each step field whose schema is only types
    (items included): what _step_ok checks of them. Any other rule there would have to be added to _step_ok."""
    checks = []
    for name, schema in STEP_SCHEMA["properties"].items():
        if name in _STEP_FIELDS_CHECKED_APART or not schema:  # {}: any value (message)
            continue
        items = schema.get("items")
        assert schema.keys() <= {"type", "items"} and (items is None or items.keys() == {"type"}), (
            f"step field {name!r}: _step_ok checks types only, not {schema}"
        )
        checks.append((name, _exact_types(schema), None if items is None else _exact_types(items)))
    return tuple(checks)


_TYPED_STEP_FIELDS = _typed_step_fields()
_ABSENT = object()


def _step_ok(step: Any, position: int) -> bool:
    """True only for a step `_step_problem` accepts; False means "look closer", not "invalid".

    The same rules in straight-line code with exact type checks (stricter than the schema walker's isinstance).
    """
    if type(step) is not dict:
        return False
    get = step.get
    index = get("index")
    if type(index) is not int or index != position or get("source") not in STEP_SOURCES:
        return False
    for name, kinds, item_kinds in _TYPED_STEP_FIELDS:
        value = get(name, _ABSENT)
        if value is _ABSENT:
            continue
        if type(value) not in kinds:
            return False
        if item_kinds is not None and type(value) is list and not item_kinds.issuperset(map(type, value)):
            return False
    calls = get("tool_calls", _NO_ITEMS)
    results = get("results", _NO_ITEMS)
    if type(calls) is not list or type(results) is not list:
        return False
    call_ids = set()
    for call in calls:
        if type(call) is not dict or type(call.get("id")) is not str or type(call.get("name")) is not str or not call["name"]:
            return False
        if type(call.get("arguments")) not in (dict, str):
            return False
        call_ids.add(call["id"])
    for result in results:
        if type(result) is not dict or type(result.get("call_id")) is not str or "content" not in result:
            return False
        if "is_error" in result and type(result["is_error"]) is not bool:
            return False
        if call_ids and result["call_id"] not in call_ids:
            return False
    return True


_NO_ITEMS: list[Any] = []  # read, never written


def _list_or_empty(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def content_hash(record: AnyRecord) -> str:
    """A hash of what the record says, independent of key order and of the volatile `meta.ingest` block.

    The hashed text is `json.dumps(..., sort_keys=True, separators=(",", ":"), default=str)`; orjson writes
    the same bytes several times faster for plain JSON values, and anything it might write differently
    goes through json.dumps (see `_canonical_fast`).
    """
    header = {k: v for k, v in record.get("header", {}).items() if k != "ingest"}
    payload = {"header": header, "steps": record.get("steps", [])}
    canonical = _canonical_fast(payload)
    if canonical is None:
        canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(canonical).hexdigest()


_ORJSON_CANONICAL = (
    orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_SHORT_NEGATIVE_EXPONENT = re.compile(rb"e-[0-9](?![0-9])")


def _not_plain_json(value: Any) -> Any:
    raise TypeError(type(value).__name__)  # json.dumps(default=str) decides how to write it


def _canonical_fast(payload: dict[str, Any]) -> bytes | None:
    """orjson's sorted compact output when it is byte-identical to json.dumps's, else None.

    They differ only where orjson writes UTF-8 or DEL raw (json escapes them as \\uXXXX) and in two float forms:
    "0.00001" against "1e-05" below 1e-4, and "1e-7" against "1e-07". Integers beyond 64 bits, str/int
    subclasses (enums among them), dataclasses and dates are refused by the options and `_not_plain_json`.
    A plain Enum, which orjson writes as its value, cannot come out of parsed JSON; a record built in Python
    with one would hash as its value.
    """
    try:
        out = orjson.dumps(payload, default=_not_plain_json, option=_ORJSON_CANONICAL)
    except (orjson.JSONEncodeError, TypeError):
        return None
    if not out.isascii() or b"\x7f" in out or b"0.0000" in out:
        return None
    for match in _SHORT_NEGATIVE_EXPONENT.finditer(out):  # text such as "state-1" matches too: a digit must precede
        if out[match.start() - 1 : match.start()].isdigit():
            return None
    return out


def _non_finite_or_too_deep(value: Any, path: str, depth: int) -> TrajectoryError | None:
    if depth > MAX_DEPTH:
        return TrajectoryError(path, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, float) and not math.isfinite(value):
        return TrajectoryError(path, f"{value} is not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            found = _non_finite_or_too_deep(item, f"{path}.{key}", depth + 1)
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _non_finite_or_too_deep(item, f"{path}[{i}]", depth + 1)
            if found:
                return found
    return None


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def _type_ok(kind: str, value: Any) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def _check_schema(schema: dict[str, Any], value: Any, path: str, errors: list[TrajectoryError]) -> None:
    """A small validator for the schema subset above; messages name the path, as the API returns them."""
    if "const" in schema and value != schema["const"]:
        errors.append(TrajectoryError(path, f"must be {schema['const']!r}, got {value!r}"))
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(TrajectoryError(path, f"{value!r} is not one of {schema['enum']}"))
        return
    kinds = schema.get("type")
    if kinds is not None:
        kinds = [kinds] if isinstance(kinds, str) else kinds
        if not any(_type_ok(k, value) for k in kinds):
            errors.append(TrajectoryError(path, f"expected {' or '.join(kinds)}, got {type(value).__name__}"))
            return
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append(TrajectoryError(f"{path}.{key}", "required field is missing"))
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                _check_schema(sub, value[key], f"{path}.{key}", errors)
        if "additionalProperties" in schema:
            for key, item in value.items():
                if key not in schema.get("properties", {}):
                    _check_schema(schema["additionalProperties"], item, f"{path}.{key}", errors)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            _check_schema(schema["items"], item, f"{path}[{i}]", errors)
            if len(errors) > 20:  # enough to fix the first problems; the rest usually repeat them
                return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(TrajectoryError(path, f"{value} is below the minimum {schema['minimum']}"))
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(TrajectoryError(path, f"{value} is above the maximum {schema['maximum']}"))
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        errors.append(TrajectoryError(path, "must not be empty"))


def normalize_record(record: AnyRecord) -> Record:
    """The record with every step carrying every standard field (absent ones as their empty value).

    Two uploads that differ only in omitted-versus-empty fields then store and hash the same.
    """
    steps: list[Step] = []
    for step in record["steps"]:
        if step.keys() >= _STEP_DEFAULT_KEYS:
            steps.append(cast(Step, dict(step)))  # already complete (every imported step is): the same content, keys in its own order
            continue
        full = _empty_step_fields()
        full.update(step)
        steps.append(cast(Step, full))
    return {"schema_version": record.get("schema_version", SCHEMA_VERSION), "header": cast(Header, dict(record["header"])), "steps": steps}
