from __future__ import annotations

from typing import Any

from environments.diagnosis.branching import branch_run, correction_action, env_for_record
from environments.diagnosis.exports import diagnosis_example, recovery_example
from environments.diagnosis.rules import rule_diagnose
from environments.trajectory import validate_record
from tests.environments.diagnosis.conftest import factory, play
from tests.environments.diagnosis.ledger import TOOLS


def test_the_rule_diagnoses_the_pivotal_step_with_the_anchors_choice() -> None:
    record = play("ledger/loose", "ledger-stubborn")
    answer = rule_diagnose(record, anchor_factory=factory("ledger-fixer"))
    assert answer.error is None and answer.proposal is not None
    assert answer.proposal.step_index == 3
    assert answer.proposal.category == "premature_end"  # it submitted with a still 0
    assert answer.proposal.correction == {"name": "add", "arguments": {"key": "a", "amount": 3}}
    assert "ledger-fixer passes" in answer.proposal.explanation


def test_the_rule_calls_a_wasted_call_to_the_right_tool_wrong_arguments(tight_failure: dict[str, Any]) -> None:
    answer = rule_diagnose(tight_failure, anchor_factory=factory("ledger-fixer"))
    assert answer.proposal is not None and answer.proposal.step_index == 1
    # the fixer reads first, but a read changes nothing: the correction is its first write, an add to the
    # right key, so the agent's add with other arguments is a wrong-arguments error
    assert answer.proposal.category == "wrong_arguments"
    assert answer.proposal.correction["name"] == "add" and answer.proposal.correction["arguments"]["key"] == "a"


def test_the_rule_answers_no_diagnosis_when_the_anchor_cannot_pass(tight_failure: dict[str, Any]) -> None:
    answer = rule_diagnose(tight_failure, anchor_factory=factory("ledger-stubborn"))
    assert answer.proposal is None and answer.error == "no pivotal step: anchor_cannot_pass"


def test_both_export_views_are_valid_canonical_records(tight_failure: dict[str, Any]) -> None:
    diagnosis = {
        "step_index": 1,
        "category": "wrong_arguments",
        "explanation": "b, not a",
        "correction": {"name": "add", "arguments": {"key": "a", "amount": 3}},
        "evidence_steps": [1, 3],
        "confidence": None,
    }
    example = diagnosis_example(tight_failure, diagnosis, env_tools=TOOLS)
    assert validate_record(example) == []
    prompt = example["steps"][0]["message"]
    last = tight_failure["steps"][-1]["index"]
    assert last > 1 and "[1] agent" in prompt and f"[{last}] agent" in prompt  # the whole trajectory, past the error step
    call = example["steps"][1]["tool_calls"][0]
    assert call["name"] == "submit_diagnosis" and call["arguments"]["step_index"] == 1 and call["arguments"]["evidence_steps"] == [1, 3]

    env_policy = factory("ledger-stubborn")
    env = env_for_record(tight_failure)
    child = branch_run(
        tight_failure,
        step_index=1,
        first_action=correction_action(diagnosis["correction"]),
        policy=env_policy(env, 0),
        env=env,
        parent_ref={"episode_id": 5, "branch_step": 1},
    )
    recovery = recovery_example(child, diagnosis)
    assert validate_record(recovery) == []
    meta = recovery["header"]["meta"]["recovery"]
    assert meta["train_from_step"] == 1 and meta["outcome"]["passed"] is True
    assert recovery["steps"][1]["tool_calls"][0]["arguments"] == {"key": "a", "amount": 3}
