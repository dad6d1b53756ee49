"""The step's shape agrees everywhere it is written down: the record's schema (environments/trajectory.py),
the fast path's struct (lab.ingest.native_fast.NativeStep) and the steps table (lab.trajectories.models.Step,
written by lab.trajectories.bulk). A field added to one and not the others fails here."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest

from environments.trajectory import RESULT_SCHEMA, STEP_DEFAULTS, STEP_SCHEMA, TOOL_CALL_SCHEMA, make_step, new_record, validate_record
from lab.ingest.native_fast import NativeResult, NativeStep, NativeToolCall
from lab.trajectories import bulk, imports
from lab.trajectories.models import Step
from lab.trajectories.services import episode_to_record, episodes_ingest

_PROPERTIES: dict[str, dict[str, Any]] = STEP_SCHEMA["properties"]
_OPTIONAL = [name for name in _PROPERTIES if name not in STEP_SCHEMA["required"] and name not in STEP_DEFAULTS]
# One value of each JSON type, to probe what each field takes.
_SAMPLES = {"string": "x", "integer": 3, "number": 2.5, "boolean": True, "null": None, "object": {"k": 1}, "array": []}
# The column type that holds each JSON type; {} (any value) and arrays and objects are JSON columns.
_COLUMN_TYPES = {"integer": {"PositiveIntegerField"}, "number": {"FloatField"}, "string": {"CharField", "TextField"}}


def _kinds(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema allows (an integer is a number too); every type for {}."""
    if "enum" in schema:
        return {"string"}
    if "type" not in schema:
        return set(_SAMPLES)
    kinds = {schema["type"]} if isinstance(schema["type"], str) else set(schema["type"])
    return kinds | {"integer"} if "number" in kinds else kinds


def _struct_fields(struct: type[msgspec.Struct]) -> dict[str, msgspec.structs.FieldInfo]:
    return {field.name: field for field in msgspec.structs.fields(struct)}


def test_the_steps_table_has_a_column_per_standard_field_then_extra_for_the_rest() -> None:
    assert ("episode_id", *STEP_SCHEMA["required"], *STEP_DEFAULTS, *bulk.STEP_OPTIONAL_COLUMNS, "extra") == bulk.STEP_COPY_COLUMNS
    assert (*STEP_SCHEMA["required"], *STEP_DEFAULTS, *bulk.STEP_OPTIONAL_COLUMNS) == bulk.STEP_COLUMNS
    assert set(_OPTIONAL) == {"prompt_token_ids", "timestamp", "meta", "role"}  # in Step.extra, but the role has a column
    assert bulk.STEP_OPTIONAL_COLUMNS == ("role",) and Step._meta.get_field("role").get_default() == ""  # "" for absent
    for name in bulk.STEP_COLUMNS:
        field = Step._meta.get_field(name)
        kinds = _kinds(_PROPERTIES[name])
        assert field.null == ("null" in kinds), f"Step.{name}: null={field.null}, but the schema allows {sorted(kinds)}"
        if kinds & {"array", "object"} or not _PROPERTIES[name]:
            assert field.get_internal_type() == "JSONField", name
        else:
            column_types = set.union(*(_COLUMN_TYPES[kind] for kind in kinds - {"null"}))
            assert field.get_internal_type() in column_types, f"Step.{name} is a {field.get_internal_type()} for {sorted(kinds)}"
        if name in STEP_DEFAULTS and not field.null:
            assert field.get_default() == STEP_DEFAULTS[name], name


@pytest.mark.parametrize(
    ("struct", "schema", "defaults"),
    [(NativeStep, STEP_SCHEMA, STEP_DEFAULTS), (NativeToolCall, TOOL_CALL_SCHEMA, {}), (NativeResult, RESULT_SCHEMA, {})],
)
def test_the_fast_path_structs_declare_the_schema_fields_with_their_defaults(
    struct: type[msgspec.Struct], schema: dict[str, Any], defaults: dict[str, Any]
) -> None:
    fields = _struct_fields(struct)
    assert set(fields) == set(schema["properties"])
    assert {name for name, field in fields.items() if field.required} == set(schema["required"])
    for name, field in fields.items():
        if name in schema["required"]:
            continue
        default = field.default_factory() if field.default_factory is not msgspec.NODEFAULT else field.default
        # A field without an empty value is left out when absent (UNSET), as the general path leaves it out.
        assert default == defaults.get(name, msgspec.UNSET), f"{struct.__name__}.{name} defaults to {default!r}"


def _probes() -> list[tuple[str, Any, bool]]:
    """(field, value, whether the schema allows it) for each field beyond index and source, with a value of
    each JSON type and, for arrays of plain values, an array holding one of each type."""
    probes = []
    for name, schema in _PROPERTIES.items():
        if name in ("index", "source"):
            continue
        kinds = _kinds(schema)
        probes += [(name, value, kind in kinds) for kind, value in _SAMPLES.items()]
        items = schema.get("items", {})
        if "type" in items and "properties" not in items:
            probes += [(name, [value], kind in _kinds(items)) for kind, value in _SAMPLES.items()]
    return probes


def test_the_schema_and_the_fast_path_struct_take_and_refuse_the_same_values() -> None:
    probes = _probes()
    assert len(probes) > 100
    disagreements = []
    for name, value, allowed in probes:
        step = {**make_step(index=0), name: value}
        valid = validate_record(new_record(header={"env": "x", "task": "x", "source": "upload"}, steps=[step])) == []
        try:
            msgspec.json.decode(json.dumps(step), type=NativeStep)
            decoded = True
        except msgspec.ValidationError:
            decoded = False
        if not valid == decoded == allowed:
            disagreements.append(f"{name}={value!r}: schema allows {allowed}, validate_record {valid}, NativeStep {decoded}")
    assert disagreements == []


def _step_with_every_field(index: int) -> dict[str, Any]:
    step = make_step(
        index=index,
        message=f"step {index}",
        reasoning="why",
        tool_calls=[{"id": f"c{index}", "name": "lookup", "arguments": {"n": index}}],
        results=[{"call_id": f"c{index}", "content": {"value": 2}, "is_error": False}],
        reward=0.25,
        sim_time_start=1.0,
        sim_time_end=2.5,
        events=[{"entity": "sku:1", "field": "on_hand", "op": "read"}],
        state_hash=f"{index:016x}",
        token_ids=[1, 2, 3],
        logprobs=[-0.5, -1.25],
        latency_ms=12.5,
        prompt_token_ids=[7, 8],
        timestamp="2026-01-01T00:00:00Z",
        meta={"note": "kept"},
        role="critic",
    )
    assert step.keys() == _PROPERTIES.keys(), "give the new field a value here"
    return step


@pytest.mark.django_db
def test_a_step_with_every_field_is_stored_one_field_per_column_and_comes_back_as_it_went_in(
    project_a: Any, project_b: Any, alice: Any, bob: Any
) -> None:
    steps = [_step_with_every_field(0), _step_with_every_field(1)]
    record = new_record(header={"env": "toyenv", "task": "toy-task", "seed": 1, "source": "upload"}, steps=steps)
    # The general path (COPY on PostgreSQL, the ORM elsewhere) and the native upload path (streamed on PostgreSQL).
    [general] = episodes_ingest(project=project_a, records=[copy.deepcopy(record)], user=alice)
    [native] = imports.upload_ingest(
        project=project_b, user=bob, data=json.dumps([record]).encode(), filename="body.json", fmt="native"
    ).outcomes
    for outcome in (general, native):
        assert episode_to_record(outcome.episode)["steps"] == steps
        row = Step.objects.get(episode=outcome.episode, index=1)
        assert {name: getattr(row, name) for name in bulk.STEP_COLUMNS} == {name: steps[1][name] for name in bulk.STEP_COLUMNS}
        assert row.extra == {name: steps[1][name] for name in _OPTIONAL if name not in bulk.STEP_OPTIONAL_COLUMNS}
