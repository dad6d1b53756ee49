from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.diagnosis.model_diagnoser import SUBMIT_DIAGNOSIS, diagnose_with_policy, render_trajectory
from tests.environments.diagnosis.ledger import TOOLS


class Answers(Policy):
    """A scripted diagnoser: answers with a fixed action, and keeps what it was shown."""

    name = "scripted-diagnoser"

    def __init__(self, action: Action) -> None:
        self.action = action
        self.seen: list[tuple[list[dict[str, Any]], list[ToolSpec]]] = []

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        self.seen.append((history, tools))
        return self.action


def submit(**arguments: Any) -> Action:
    return Action(tool_calls=[ToolCall("submit_diagnosis", arguments)])


GOOD = {
    "step_index": 1,
    "category": "wrong_arguments",
    "explanation": "Added to b instead of a.",
    "correction": {"name": "add", "arguments": {"key": "a", "amount": 3}},
    "evidence_steps": [1, 3],
    "confidence": 0.8,
}


def test_a_valid_structured_answer_becomes_a_proposal(tight_failure: dict[str, Any]) -> None:
    policy = Answers(submit(**GOOD))
    answer = diagnose_with_policy(tight_failure, policy, env_tools=TOOLS)
    assert answer.error is None
    assert answer.proposal is not None and answer.proposal.as_json() == GOOD
    history, tools = policy.seen[0]
    assert tools == [SUBMIT_DIAGNOSIS]
    prompt = history[0]["message"]
    assert "[1] agent: calls add(" in prompt and "wrong_arguments:" in prompt and "ledger/tight" in prompt


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"step_index": 40}, "step 40 is past the end (the episode has steps 0..3)"),
        ({"step_index": 0}, "step 0 is a env step, not an agent decision"),
        ({"category": "bad_luck"}, "is not one of"),
        ({"correction": {"name": "delete_everything", "arguments": {}}}, "'delete_everything' is not a tool of this environment"),
        ({"correction": {"name": "add", "arguments": {"key": "c", "amount": 3}}}, "arguments.correction.arguments.key"),
        ({"evidence_steps": [2, 99]}, "evidence_steps[1]: step 99 is past the end"),
        ({"explanation": "   "}, "explanation: say what went wrong"),
        ({"confidence": 1.5}, "above the maximum"),
    ],
)
def test_bad_answers_are_refused_with_the_field_named(tight_failure: dict[str, Any], change: dict[str, Any], message: str) -> None:
    answer = diagnose_with_policy(tight_failure, Answers(submit(**{**GOOD, **change})), env_tools=TOOLS)
    assert answer.proposal is None
    assert answer.error is not None and message in answer.error
    assert answer.raw["tool_calls"][0]["name"] == "submit_diagnosis"  # the bad answer is kept as it came


def test_unparsed_output_missing_calls_and_a_raising_policy_are_bad_answers(tight_failure: dict[str, Any]) -> None:
    unparsed = diagnose_with_policy(tight_failure, Answers(Action(error="no JSON in <tool_call>")), env_tools=TOOLS)
    assert unparsed.proposal is None and "could not be parsed: no JSON" in (unparsed.error or "")
    chatty = diagnose_with_policy(tight_failure, Answers(Action(message="I think step 1 was wrong")), env_tools=TOOLS)
    assert chatty.error == "expected exactly one submit_diagnosis call, got []"

    class Broken(Policy):
        def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
            raise TimeoutError("model server did not answer")

    broken = diagnose_with_policy(tight_failure, Broken(), env_tools=TOOLS)
    assert broken.error == "the policy raised TimeoutError: model server did not answer"


def test_long_trajectories_are_elided_in_the_middle_within_the_budget() -> None:
    steps = [
        {
            "index": i,
            "source": "agent",
            "tool_calls": [{"id": f"c{i}", "name": "read", "arguments": {"key": "a"}}],
            "results": [{"call_id": f"c{i}", "content": {"value": i}}],
        }
        for i in range(500)
    ]
    text = render_trajectory(steps, max_chars=4000)
    assert len(text) <= 4000
    assert text.startswith("[0] agent") and "[499] agent" in text
    assert "steps omitted" in text
