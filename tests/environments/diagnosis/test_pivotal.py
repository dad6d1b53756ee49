from __future__ import annotations

from typing import Any

from environments.diagnosis.pivotal import find_pivotal_step
from tests.environments.diagnosis.conftest import factory, play


def test_the_pivotal_step_is_the_action_after_which_the_anchor_cannot_pass(tight_failure: dict[str, Any]) -> None:
    # 3 calls allowed: before step 1 the fixer reads, adds and submits (pass); after the wasted add to b it
    # has two calls left, not enough to read, add and submit.
    result = find_pivotal_step(tight_failure, anchor_factory=factory("ledger-fixer"))
    assert result.step == 1
    assert result.reason == "found"
    assert result.checks[1]["passed"] is True and result.checks[2]["passed"] is False


def test_binary_and_linear_search_agree_and_binary_runs_fewer_anchors() -> None:
    record = play("ledger/loose", "ledger-stubborn")  # 4 calls: recoverable until the premature submit at step 3
    binary = find_pivotal_step(record, anchor_factory=factory("ledger-fixer"), search="binary")
    linear = find_pivotal_step(record, anchor_factory=factory("ledger-fixer"), search="linear")
    assert binary.step == linear.step == 3
    assert linear.as_json()["anchor_runs"] == 4
    assert binary.as_json()["anchor_runs"] <= linear.as_json()["anchor_runs"]


def test_no_pivotal_step_when_the_anchor_cannot_pass_from_the_start(tight_failure: dict[str, Any]) -> None:
    result = find_pivotal_step(tight_failure, anchor_factory=factory("ledger-stubborn"))
    assert result.step is None
    assert result.reason == "anchor_cannot_pass"


def test_storebench_do_nothing_failure_has_a_pivotal_step_for_smart_triage() -> None:
    record = play("storebench/late-supplier", "do-nothing")
    assert record["header"]["score"]["passed"] is False
    result = find_pivotal_step(record, anchor_factory=factory("smart-triage"))
    assert result.reason == "found"
    k = result.step
    assert k is not None and 1 <= k < len(record["steps"])
    assert result.checks[k]["passed"] is True
    after = min(c for c in result.checks if c > k)
    assert result.checks[after]["passed"] is False
