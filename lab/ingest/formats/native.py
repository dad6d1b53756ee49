"""The canonical record itself (environments.trajectory). Import is the identity on exported records.

Steps missing optional fields get make_step's defaults; keys the schema does not know are reported as
unmapped and left out, because the lab stores only schema fields (the raw payload keeps them).
"""

from __future__ import annotations

from typing import Any, cast

from environments.records import Header, Record, Step
from environments.trajectory import HEADER_SCHEMA, SCHEMA_VERSION, STEP_SCHEMA, make_step, new_record
from lab.ingest.reader import Reader, RecordContext

NAME = "native"


def matches(value: Any) -> bool:
    return isinstance(value, dict) and str(value.get("schema_version", "")).startswith("practicum.trajectory")


def to_record(raw: Any, origin: str, ctx: RecordContext, context: dict[str, Any]) -> Record:
    record = Reader(raw, origin, ctx)
    version = record.get("schema_version", "string", required=True)
    if version != SCHEMA_VERSION:
        ctx.fail(record.at("schema_version"), f"unsupported version {version!r}; this server reads {SCHEMA_VERSION!r}")
    header = Reader(record.get("header", "object", required=True), record.at("header"), ctx)
    # each field read against its HEADER_SCHEMA type by the Reader, which Header follows
    known_header = cast(Header, {key: header.get(key) for key in HEADER_SCHEMA["properties"] if key in header.value})
    header.done()
    steps: list[Step] = []
    for i, value in enumerate(record.get("steps", "array", required=True)):
        if type(value) is dict and type(value.get("index")) is int and type(value.get("source")) is str and value.keys() <= _STEP_KEYS:
            steps.append(_full_step(value))  # the common case, without the Reader's per-field bookkeeping
            continue
        step = Reader(value, f"{record.at('steps')}[{i}]", ctx)
        index = step.get("index", "integer", required=True)
        source = step.get("source", "string", required=True)
        fields = {key: step.get(key) for key in STEP_SCHEMA["properties"] if key in step.value and key not in ("index", "source")}
        step.done()
        steps.append(cast(Step, {**make_step(index=index, source=source), **fields}))  # fields read against STEP_SCHEMA
    record.done()
    return new_record(header=known_header, steps=steps)


_STEP_KEYS = frozenset(STEP_SCHEMA["properties"])


_STEP_TEMPLATE = make_step(index=0, source="agent")
_LIST_DEFAULTS = tuple(key for key, default in _STEP_TEMPLATE.items() if isinstance(default, list))


def _full_step(value: dict[str, Any]) -> Step:
    """What the Reader path builds for a step holding only schema fields: make_step's defaults, then its own."""
    step = {**_STEP_TEMPLATE, **value}
    for key in _LIST_DEFAULTS:
        if key not in value:
            step[key] = []  # a list of its own, as make_step gives
    return cast(Step, step)  # its keys are schema fields (the caller checked)
