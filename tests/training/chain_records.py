"""Hand-built toolgym/chain records for the descriptor and TJPO tests: alice plays the chain, bob takes a shortcut
after an invalid turn, mallory babbles."""

from __future__ import annotations

from typing import Any

from environments.trajectory import make_step, new_record

LAMP_OWNED = {"entity": "note:alice", "field": "owns", "before": None, "after": "lamp", "op": "write"}


def agent_call(step: int, name: str, arguments: dict[str, Any], *, error: bool = False, events=(), reward=0.0, message=""):
    call_id = f"c{step}"
    return make_step(
        index=step,
        source="agent",
        message=message,
        tool_calls=[{"id": call_id, "name": name, "arguments": arguments}],
        results=[{"call_id": call_id, "content": {"error": "no"} if error else {"ok": True}, "is_error": error}],
        events=list(events),
        reward=reward,
    )


def chain_record(steps: list[dict[str, Any]], passed: bool = False, composite: float = 0.0) -> dict[str, Any]:
    header = {"env": "toolgym", "task": "chain", "seed": 1, "source": "rollout", "score": {"composite": composite, "passed": passed}}
    return new_record(header=header, steps=[make_step(index=0, source="env", message="Which color is the thing alice owns?"), *steps])


def alice_chain(passed: bool = True) -> dict[str, Any]:
    """The canonical chain: owner(alice) -> lookup(lamp) -> answer(red); no free text."""
    return chain_record(
        [
            agent_call(1, "owner", {"person": "alice"}, events=[LAMP_OWNED]),
            agent_call(
                2,
                "lookup",
                {"item": "lamp"},
                events=[{**LAMP_OWNED, "op": "read"}, {"entity": "note:lamp", "field": "color", "after": "red", "op": "write"}],
            ),
            agent_call(
                3, "answer", {"color": "red"}, events=[{"entity": "episode", "field": "answer", "after": "red", "op": "write"}], reward=1.0
            ),
        ],
        passed=passed,
        composite=1.0 if passed else 0.0,
    )


def bob_shortcut(passed: bool = True) -> dict[str, Any]:
    """An invalid first turn ("hmm"), then lookup(lamp) straight away and answer(red)."""
    invalid = make_step(
        index=1,
        source="agent",
        message="hmm",
        results=[{"call_id": "invalid", "content": {"error": "no tool call found"}, "is_error": True}],
        meta={"invalid_action": "no tool call found"},
    )
    return chain_record(
        [
            invalid,
            agent_call(2, "lookup", {"item": "lamp"}, events=[{"entity": "note:lamp", "field": "color", "after": "red", "op": "write"}]),
            agent_call(3, "answer", {"color": "red"}, events=[{"entity": "episode", "field": "answer", "after": "red", "op": "write"}]),
        ],
        passed=passed,
        composite=1.0 if passed else 0.0,
    )


def mallory_babble() -> dict[str, Any]:
    """One turn without a call: nothing reached the environment."""
    step = make_step(index=1, source="agent", message="", results=[], meta={"invalid_action": "no tool call found"})
    return chain_record([step])
