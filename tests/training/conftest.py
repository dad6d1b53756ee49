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


@pytest.fixture
def team_record(alice_record: dict[str, Any]) -> dict[str, Any]:
    """alice with a team: bob the critic advises after her lookup, she consults carol, the harness asks her to verify."""
    from environments.trajectory import make_step

    lookup = alice_record["steps"][1]
    steps = [
        alice_record["steps"][0],
        lookup,
        make_step(index=2, source="agent", role="critic", message="Answer with the color you found."),
        make_step(
            index=3,
            source="agent",
            tool_calls=[{"id": "c1", "name": "consult", "arguments": {}}],
            results=[{"call_id": "c1", "content": {"suggestion": "answer(color=red)"}, "is_error": False}],
        ),
        make_step(
            index=4,
            source="agent",
            role="consultant",
            reasoning="the lookup said red",
            tool_calls=[{"id": "k0", "name": "answer", "arguments": {"color": "red"}}],
        ),
        make_step(index=5, source="system", role="harness", message="Verify before finishing: is the answer supported?"),
        make_step(index=6, source="agent", message="The lamp is red."),
    ]
    consult = {
        "type": "function",
        "function": {"name": "consult", "description": "Ask carol.", "parameters": {"type": "object", "properties": {}}},
    }
    header = {**alice_record["header"], "reward": 0.99, "team": {"consultant": {"cost": 0.01}, "harness_level": "full"}}
    header["tools"] = [*header["tools"], consult]
    return {**alice_record, "header": header, "steps": steps}
