"""Hypothesis fuzzing of every tool's arguments: schema-valid and hostile inputs alike."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from environments.core import ToolCall
from environments.storebench.tools import TOOLS

from .conftest import new_store

_BASE = new_store("support-backlog", 13)
for _ in range(3):
    _BASE.step(ToolCall(name="end_window", arguments={}))
_SNAPSHOT = _BASE.snapshot()

HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=60),
    st.sampled_from(["<script>alert(1)</script>", "'; DROP TABLE orders; --", "{{7*7}}", "P01-BLA-M\x00", "1e309", "NaN"]),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


def _valid(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 40), 40))
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum", -1000), max_value=min(schema.get("maximum", 1000), 10**7))
    if kind == "number":
        return st.floats(min_value=schema.get("minimum", -1000.0), max_value=schema.get("maximum", 1000.0), allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(_valid(schema["items"]), min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 5), 5))
    if kind == "object":
        props = schema.get("properties", {})
        required = schema.get("required", [])
        return st.fixed_dictionaries(
            {k: _valid(props[k]) for k in required}, optional={k: _valid(v) for k, v in props.items() if k not in required}
        )
    return HOSTILE


def _arguments(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    mutated = st.fixed_dictionaries({k: st.one_of(_valid(v), HOSTILE) for k, v in props.items()}) if props else st.just({})
    return st.one_of(_valid(schema), mutated, HOSTILE, st.dictionaries(st.text(max_size=8), HOSTILE, max_size=3))


def _check_result(result: Any) -> None:
    assert isinstance(result.is_error, bool)
    text = json.dumps(result.content, allow_nan=False)  # plain, finite JSON, or this raises
    assert isinstance(json.loads(text), dict)
    if result.is_error:
        assert result.content["error"] and len(result.content["error"]) < 2000


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_answers_any_arguments_without_raising(name: str) -> None:
    schema = TOOLS[name][0].parameters

    @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(arguments=_arguments(schema))
    def check(arguments: Any) -> None:
        env = new_store("support-backlog", 13)
        env.restore(_SNAPSHOT)
        result = env.step(ToolCall(name=name, arguments=arguments))
        _check_result(result)
        assert env.state_hash() == env.world.full_hash()
        assert math.isfinite(env.world.cash)

    check()
