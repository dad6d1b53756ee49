from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from environments.core import EnvError
from environments.diagnosis.branching import action_from_step, branch_run, verify_correction
from environments.runner import make_policy
from tests.environments.diagnosis.conftest import factory, play

FIX = {"name": "add", "arguments": {"key": "a", "amount": 3}}


def hashes(record: dict[str, Any]) -> list[str]:
    return [s["state_hash"] for s in record["steps"]]


def test_the_corrected_run_passes_where_the_original_failed(tight_failure: dict[str, Any]) -> None:
    before = json.dumps(tight_failure, sort_keys=True)
    outcome = verify_correction(tight_failure, step_index=1, correction=FIX, policy_factory=factory("ledger-stubborn"), continuation_seed=0)
    assert tight_failure["header"]["score"]["passed"] is False
    assert (outcome.corrected.passed, outcome.corrected.composite) == (True, 1.0)
    assert (outcome.retry.passed, outcome.retry.composite) == (False, 0.0)
    assert outcome.verified is True
    assert outcome.as_json()["delta_composite"] == 1.0
    assert json.dumps(tight_failure, sort_keys=True) == before  # the parent is never changed


def test_children_share_the_parents_hash_chain_up_to_k_and_link_to_it(tight_failure: dict[str, Any]) -> None:
    children: dict[str, dict[str, Any]] = {}

    class Keep:
        def __init__(self, label: str) -> None:
            self.label = label

        def on_step(self, step: dict[str, Any]) -> None: ...

        def on_finish(self, record: dict[str, Any]) -> None:
            children[self.label] = record

    verify_correction(
        tight_failure,
        step_index=2,
        correction={"name": "add", "arguments": {"key": "a", "amount": 3}},
        policy_factory=factory("ledger-stubborn"),
        continuation_seed=0,
        sink_factory=lambda label, prefix: Keep(label),
        parent_ref={"episode_id": 7, "branch_step": 2},
    )
    for label in ("corrected", "retry"):
        child = children[label]
        assert child["header"]["source"] == "branch"
        assert child["header"]["parent"] == {"episode_id": 7, "branch_step": 2}
        assert hashes(child)[:2] == hashes(tight_failure)[:2]
    assert hashes(children["retry"]) == hashes(tight_failure)  # retrying the same action with a deterministic policy
    assert hashes(children["corrected"])[2] != hashes(tight_failure)[2]


def test_storebench_branch_prefix_chain_equals_the_parent() -> None:
    parent = play("storebench/late-supplier", "naive-restock")
    k = 40
    child = branch_run(parent, step_index=k, first_action=action_from_step(parent, k), policy=_policy(parent))
    assert hashes(child)[:k] == hashes(parent)[:k]
    assert hashes(child)[k] == hashes(parent)[k]  # the original action at k reproduces the parent's state
    assert child["steps"][k]["tool_calls"][0]["name"] == parent["steps"][k]["tool_calls"][0]["name"]


def _policy(record: dict[str, Any]) -> Any:
    from environments.diagnosis.branching import env_for_record

    env = env_for_record(record)
    return make_policy(record["header"]["policy"]["name"], env, 0)


def test_branching_at_a_step_that_is_not_an_agent_decision_is_refused(tight_failure: dict[str, Any]) -> None:
    broken = copy.deepcopy(tight_failure)
    with pytest.raises(EnvError, match="not a step of this episode"):
        branch_run(broken, step_index=9, first_action=action_from_step(broken, 1), policy=_policy(broken))
    with pytest.raises(EnvError, match="not a step of this episode"):
        action_from_step(broken, 0)


def test_the_original_action_of_an_invalid_step_is_rebuilt_as_invalid() -> None:
    record = {
        "header": {"termination_reason": "agent_stop"},
        "steps": [
            {"index": 0, "source": "env"},
            {"index": 1, "source": "agent", "tool_calls": [], "meta": {"invalid_action": "no JSON"}},
            {"index": 2, "source": "agent", "tool_calls": [{"id": "c", "name": "submit", "arguments": {}}]},
        ],
    }
    assert action_from_step(record, 1).error == "no JSON"
    last = action_from_step(record, 2)
    assert last.stop is True and last.tool_calls[0].name == "submit"
