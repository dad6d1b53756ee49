from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from training.tiny import tiny_model_path


@pytest.fixture(scope="session")
def tiny_path() -> Path:
    return tiny_model_path(0)


@pytest.fixture(scope="session")
def tokenizer(tiny_path: Path) -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_path)


@pytest.fixture
def alice_record() -> dict[str, Any]:
    """A two-turn tool episode: alice looks an item up, reads the result, and answers."""
    from environments.trajectory import make_step, new_record

    tools = [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "description": "Look an item up.",
                "parameters": {"type": "object", "properties": {"item": {"type": "string"}}},
            },
        }
    ]
    steps = [
        make_step(index=0, source="env", message="Find the color of the lamp."),
        make_step(
            index=1,
            source="agent",
            message="",
            tool_calls=[{"id": "c0", "name": "lookup", "arguments": {"item": "lamp"}}],
            results=[{"call_id": "c0", "content": {"color": "red"}, "is_error": False}],
        ),
        make_step(index=2, source="agent", message="The lamp is red."),
    ]
    header = {
        "env": "toolgym",
        "task": "lookup",
        "seed": 1,
        "source": "rollout",
        "tools": tools,
        "harness": {"system_prompt": "You are alice."},
        "score": {"composite": 1.0, "passed": True},
    }
    return new_record(header=header, steps=steps)
