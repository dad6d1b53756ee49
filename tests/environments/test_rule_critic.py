"""rule-critic: advice from the actor's own steps, in any environment; role turns in the history are ignored."""

from __future__ import annotations

from typing import Any

from environments.core import ToolSpec
from environments.registry import make
from environments.rule_critic import RuleCritic
from environments.runner import make_policy

TOOLS = [ToolSpec(name=n, description=n, parameters={"type": "object", "properties": {}, "additionalProperties": False}) for n in "abc"]


def step(index: int, name: str, *, error: str | None = None, role: str | None = None) -> dict[str, Any]:
    content = {"error": error} if error else {"ok": True}
    out = {
        "index": index,
        "source": "agent",
        "tool_calls": [{"id": f"c{index}", "name": name, "arguments": {"n": 1}}],
        "results": [{"call_id": f"c{index}", "content": content, "is_error": bool(error)}],
    }
    return {**out, "role": role} if role else out


OPENING = {"index": 0, "source": "env", "message": "go"}


def test_it_names_the_last_failing_call_and_its_error_first() -> None:
    history = [OPENING, step(1, "a", error="arguments.n: too big"), {"index": 2, "source": "system", "role": "harness"}]
    action = RuleCritic().act(history, TOOLS)
    assert (
        action.message
        == 'Your call a({"n": 1}) failed: arguments.n: too big. Check the arguments against the tool\'s schema before retrying.'
    )
    assert action.stop  # run as an actor by mistake, it ends the episode at once


def test_it_points_out_a_repeated_call_then_the_unused_tools() -> None:
    repeated = [OPENING, step(1, "a"), step(2, "a"), step(3, "a")]
    assert RuleCritic().act(repeated, TOOLS).message.startswith('You made the same call 3 times in a row (a:{"n": 1})')
    assert RuleCritic().act([OPENING, step(1, "a"), step(2, "b")], TOOLS).message.startswith("You have not used c;")
    everything = [OPENING, step(1, "a"), step(2, "b"), step(3, "c")]
    assert RuleCritic().act(everything, TOOLS).message == "No problem spotted: keep going, and check the result of each change."


def test_it_is_a_role_policy_of_every_environment_but_no_anchor() -> None:
    from environments.policies import policy_names, role_policy_names

    env = make("toolgym/lookup", seed=1)
    assert make_policy("rule-critic", env, 1).name == "rule-critic" and "rule-critic" in role_policy_names()
    assert "rule-critic" not in policy_names("storebench")
