"""Writing many episodes and steps at once: PostgreSQL COPY, and the ORM's bulk_create elsewhere.

    insert_episodes(episodes)                 # ids given: drawn from the sequence and COPYed (PostgreSQL)
    copy_steps(copy_row(episode_id, step) for ...)   # rows streamed while the server stores the previous ones
    insert_steps([step_row(episode_id, step), ...])  # COPY on PostgreSQL, bulk_create elsewhere

A step row holds a record's step (environments/trajectory.py) one field per column, and the fields without a
column of their own in `extra`. The column lists are read off the Step model; the row builders below write their
values in that order by hand, since they run once per stored step (tests/lab/trajectories/test_step_shape.py
checks the two agree, and agree with the record's schema and lab.ingest.native_fast.NativeStep).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import orjson
from django.db import connection
from django.utils import timezone

from environments.records import Step as RecordStep
from lab.ingest.native_fast import NativeStep
from lab.trajectories.models import Episode, Step

# COPY's columns, in the order of the rows below: the model's own, less the id its sequence gives.
STEP_COPY_COLUMNS = tuple(str(field.column) for field in Step._meta.concrete_fields if not field.primary_key)
# The record's step fields that have a column of their own; the rest of a step goes to `extra`.
STEP_COLUMNS = tuple(column for column in STEP_COPY_COLUMNS if column not in ("episode_id", "extra"))
STEP_COLUMN_SET = frozenset(STEP_COLUMNS)
# Optional record fields with a column all the same (queried): "" stands for absent, and reads back as absent.
STEP_OPTIONAL_COLUMNS = ("role",)
STEP_DEFAULT_SET = STEP_COLUMN_SET - set(STEP_OPTIONAL_COLUMNS)  # the columns every normalized step has
# NativeStep's fields without a column.
_NATIVE_EXTRA_FIELDS = tuple(name for name in NativeStep.__struct_fields__ if name not in STEP_COLUMN_SET)
_NO_EXTRA = "{}"
_ENCODE = msgspec.json.encode
_ORJSON_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS


def step_row(episode_id: int, step: RecordStep) -> dict[str, Any]:
    """Step(**row)'s keyword arguments for a step."""
    row = {column: step.get(column) for column in STEP_COLUMNS}
    row["episode_id"] = episode_id
    row["tool_calls"] = row["tool_calls"] or []
    row["results"] = row["results"] or []
    row["events"] = row["events"] or []
    row["role"] = row["role"] or ""
    row["extra"] = {k: v for k, v in step.items() if k not in STEP_COLUMN_SET}
    return row


def copy_row(episode_id: int, step: Mapping[str, Any], *, extra: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """One COPY row, as `step_row` would store the step: message, token_ids and logprobs keep SQL NULL for
    None; tool_calls, results and events hold [] instead; `extra` takes the fields without a column."""
    get = step.get
    dumps = copy_value
    message, token_ids, logprobs = get("message"), get("token_ids"), get("logprobs")
    if extra is not None:
        extra_json = dumps(extra)
    elif len(step) <= len(STEP_COLUMNS) and step.keys() <= STEP_COLUMN_SET:
        extra_json = _NO_EXTRA  # a normalized step with nothing beyond the columns
    else:
        extra_json = dumps({k: v for k, v in step.items() if k not in STEP_COLUMN_SET})
    return (
        episode_id,
        step["index"],
        step["source"],
        None if message is None else dumps(message),
        get("reasoning"),
        dumps(get("tool_calls") or []),
        dumps(get("results") or []),
        get("reward"),
        get("sim_time_start"),
        get("sim_time_end"),
        dumps(get("events") or []),
        get("state_hash"),
        None if token_ids is None else dumps(token_ids),
        None if logprobs is None else dumps(logprobs),
        get("latency_ms"),
        get("role") or "",
        extra_json,
    )


def native_copy_row(episode_id: int, step: NativeStep) -> tuple[Any, ...]:
    """`copy_row` for a NativeStep: the same values, encoded by msgspec straight from the struct."""
    message, token_ids, logprobs = step.message, step.token_ids, step.logprobs
    extra = {key: value for key in _NATIVE_EXTRA_FIELDS if (value := getattr(step, key)) is not msgspec.UNSET}
    return (
        episode_id,
        step.index,
        step.source,
        None if message is None else _ENCODE(message).decode(),
        step.reasoning,
        _ENCODE(step.tool_calls).decode(),
        _ENCODE(step.results).decode(),
        step.reward,
        step.sim_time_start,
        step.sim_time_end,
        _ENCODE(step.events).decode(),
        step.state_hash,
        None if token_ids is None else _ENCODE(token_ids).decode(),
        None if logprobs is None else _ENCODE(logprobs).decode(),
        step.latency_ms,
        step.role if isinstance(step.role, str) else "",
        _ENCODE(extra).decode() if extra else _NO_EXTRA,
    )


def copy_value(value: Any) -> str:
    """JSON text for a jsonb column. orjson refuses what it would write differently from json (e.g. dates,
    integers beyond 64 bits); json.dumps then writes it, or raises as it always did."""
    try:
        return orjson.dumps(value, option=_ORJSON_STRICT).decode()
    except TypeError:  # orjson.JSONEncodeError included
        return json.dumps(value)


def insert_steps(rows: list[dict[str, Any]]) -> None:
    """Store `step_row`s."""
    if not rows:
        return
    if connection.vendor == "postgresql":
        copy_steps([copy_row(row["episode_id"], row, extra=row["extra"]) for row in rows])
    else:
        Step.objects.bulk_create([Step(**row) for row in rows], batch_size=500)


def copy_steps(rows: Iterable[tuple[Any, ...]]) -> None:
    """PostgreSQL COPY: several times faster than multi-row INSERT for the thousands of steps of an upload."""
    _copy_into(Step._meta.db_table, STEP_COPY_COLUMNS, rows)


def insert_episodes(episodes: list[Episode]) -> list[Episode]:
    """Insert new episodes and give them their ids. On PostgreSQL: ids drawn from the sequence, then one COPY,
    since bulk_create's per-field SQL compilation cost more than the whole step COPY of an upload."""
    if connection.vendor != "postgresql" or not episodes:
        return Episode.objects.bulk_create(episodes)
    for episode, pk in zip(episodes, draw_episode_ids(len(episodes)), strict=True):
        episode.pk = pk
    copy_episodes(episodes)
    return episodes


def draw_episode_ids(count: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id')) FROM generate_series(1, %s)", [Episode._meta.db_table, count])
        return [pk for (pk,) in cursor.fetchall()]


def copy_episodes(episodes: list[Episode]) -> None:
    """COPY episodes whose ids were drawn already."""
    if not episodes:
        return
    now = timezone.now()
    for episode in episodes:
        episode.created_at = now
    columns, attributes = _episode_copy_layout()
    _copy_into(Episode._meta.db_table, columns, (_episode_row(episode, attributes) for episode in episodes))
    for episode in episodes:
        episode._state.adding = False
        episode._state.db = "default"


@functools.cache
def _episode_copy_layout() -> tuple[list[str], list[tuple[str, bool]]]:
    """Episode's columns, and per column (attribute, holds JSON): read off the model once, not per row."""
    fields = Episode._meta.concrete_fields
    return [str(f.column) for f in fields], [(f.attname, f.get_internal_type() == "JSONField") for f in fields]


def _episode_row(episode: Episode, attributes: list[tuple[str, bool]]) -> list[Any]:
    row = []
    for attname, is_json in attributes:
        value = getattr(episode, attname)
        row.append(copy_value(value) if is_json and value is not None else value)
    return row


def _copy_into(table: str, columns: Iterable[str], rows: Iterable[Iterable[Any]]) -> None:
    """COPY rows into a table through psycopg's own cursor, its errors raised as Django's (IntegrityError, ...)."""
    names = ", ".join(connection.ops.quote_name(c) for c in columns)
    with (
        connection.cursor() as cursor,
        connection.wrap_database_errors,
        cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy,  # psycopg 3's cursor under Django's
    ):
        for row in rows:
            copy.write_row(row)
