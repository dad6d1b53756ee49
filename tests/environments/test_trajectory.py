"""The canonical record: its JSON Schema is a valid schema and agrees with validate_record; normalisation and hashing."""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonschema
import pytest

from environments.trajectory import TRAJECTORY_SCHEMA, content_hash, make_step, new_record, normalize_record, validate_record


def record() -> dict[str, Any]:
    return new_record(
        header={"env": "storebench", "task": "heat-wave", "seed": 2, "source": "rollout", "score": {"composite": 0.4, "passed": False}},
        steps=[
            make_step(index=0, source="env", message="Day 1 opens."),
            make_step(
                index=1,
                tool_calls=[{"id": "c1", "name": "get_finance", "arguments": {}}],
                results=[{"call_id": "c1", "content": {"cash": 100.0}, "is_error": False}],
                token_ids=[1, 2],
                logprobs=[-0.1, -0.2],
            ),
        ],
    )


def test_the_published_schema_is_valid_and_accepts_a_valid_record() -> None:
    jsonschema.Draft202012Validator.check_schema(TRAJECTORY_SCHEMA)
    jsonschema.validate(record(), TRAJECTORY_SCHEMA)
    assert validate_record(record()) == []


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda r: r["header"].pop("env"), "record.header.env"),
        (lambda r: r["steps"][1].update(source="robot"), "record.steps[1].source"),
        (lambda r: r["steps"][1]["tool_calls"][0].update(name=""), "record.steps[1].tool_calls[0].name"),
        (lambda r: r["steps"][1].update(logprobs=["x"]), "record.steps[1].logprobs[0]"),
        (lambda r: r["header"]["score"].update(composite=1.5), "record.header.score.composite"),
    ],
)
def test_schema_and_validator_agree_on_bad_records(mutate: Any, path: str) -> None:
    bad = record()
    mutate(bad)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, TRAJECTORY_SCHEMA)
    assert validate_record(bad)[0].path == path


def test_validator_goes_beyond_the_schema() -> None:
    nan = record()
    nan["steps"][1]["reward"] = float("nan")
    assert "not a finite number" in validate_record(nan)[0].reason
    swapped = record()
    swapped["steps"].reverse()
    assert "out of order" in validate_record(swapped)[0].reason
    stray = record()
    stray["steps"][1]["results"][0]["call_id"] = "c9"
    assert "answers no tool call" in validate_record(stray)[0].reason


def test_hash_ignores_key_order_and_omitted_empty_fields() -> None:
    full = normalize_record(record())
    sparse = record()
    for step in sparse["steps"]:
        step.pop("events")
        step.pop("latency_ms")
    reordered = json.loads(json.dumps(full, sort_keys=True))
    assert content_hash(normalize_record(sparse)) == content_hash(full) == content_hash(reordered)
    changed = copy.deepcopy(full)
    changed["steps"][1]["token_ids"] = [1, 3]
    assert content_hash(changed) != content_hash(full)
