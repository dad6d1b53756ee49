from __future__ import annotations

import math

import pytest

from environments.trajectory import make_step
from tests.training.chain_records import agent_call, alice_chain, bob_shortcut, chain_record, mallory_babble
from training.descriptors import (
    Descriptor,
    describe,
    distance,
    distance_parts,
    distance_to_others,
    diversity_bonus,
    edit_distance,
    group_diversity,
    grouped_diversity,
    pass_at_k,
)

alice = describe(alice_chain())
bob = describe(bob_shortcut())
mallory = describe(mallory_babble())


# --- descriptors ---------------------------------------------------------------------------------------------
def test_the_canonical_chain_reaches_its_subgoals_in_order_and_reads_three_sources():
    assert alice == Descriptor(
        tools=("owner", "lookup", "answer"),
        subgoals=("owns", "color", "answer"),
        reasoning_chars=0,
        sources=frozenset({'owner({"person": "alice"})', 'lookup({"item": "lamp"})', 'answer({"color": "red"})'}),
    )


def test_an_invalid_turn_is_a_dash_its_text_counts_and_it_reads_nothing():
    assert bob.tools == ("-", "lookup", "answer")
    assert bob.subgoals == ("color", "answer") and bob.reasoning_chars == 3
    assert bob.sources == frozenset({'lookup({"item": "lamp"})', 'answer({"color": "red"})'})
    assert mallory == Descriptor(("-",), (), 0, frozenset())


def test_failed_calls_are_no_sources_user_steps_are_skipped_and_rewarded_steps_without_events_are_subgoals():
    user = make_step(index=2, source="agent", message="a user speaking", role="user")
    record = chain_record(
        [
            agent_call(1, "lookup", {"item": "ghost"}, error=True, message="try"),
            user,
            agent_call(3, "say", {"word": "hi"}, reward=0.5),
        ]
    )
    record["steps"][3]["reasoning"] = "because"
    d = describe(record)
    assert d.tools == ("lookup", "say") and d.sources == frozenset({'say({"word": "hi"})'})
    assert d.subgoals == ("reward:say",) and d.reasoning_chars == len("try") + len("because")


# --- distance ------------------------------------------------------------------------------------------------
def test_edit_distance_values():
    assert edit_distance(("a", "b", "c"), ("a", "c")) == 1
    assert edit_distance(("a", "b"), ("b", "a")) == 2
    assert edit_distance((), ("x", "y")) == 2 and edit_distance((), ()) == 0


def test_distance_parts_by_hand():
    # tools: 1 substitution of 3; subgoals: 1 deletion of 3; sources: 2 shared of 3; reasoning: 0 vs 3 chars
    assert distance_parts(alice, bob) == pytest.approx({"tools": 1 / 3, "subgoals": 1 / 3, "sources": 1 / 3, "reasoning": 1.0})
    assert distance(alice, bob) == pytest.approx(0.5) == distance(bob, alice)
    assert distance(alice, mallory) == pytest.approx((1 + 1 + 1 + 0) / 4)
    assert distance(bob, mallory) == pytest.approx((2 / 3 + 1 + 1 + 1) / 4)
    assert distance(alice, describe(alice_chain())) == 0.0 and distance(mallory, mallory) == 0.0


def test_order_alone_makes_a_distance():
    flipped = Descriptor(("lookup", "owner"), ("color", "owns"), 0, frozenset({"x"}))
    same = Descriptor(("owner", "lookup"), ("owns", "color"), 0, frozenset({"x"}))
    assert distance(flipped, same) == pytest.approx((1 + 1 + 0 + 0) / 4)


def test_group_diversity_is_the_mean_pairwise_distance():
    assert group_diversity([alice, bob, alice]) == pytest.approx((0.5 + 0 + 0.5) / 3)
    assert group_diversity([alice]) == 0.0 and group_diversity([]) == 0.0
    assert distance_to_others([alice, bob, mallory]) == pytest.approx([(0.5 + 0.75) / 2, (0.5 + 11 / 12) / 2, (0.75 + 11 / 12) / 2])
    assert grouped_diversity([alice, bob, mallory, alice], [0, 0, 1, 2]) == pytest.approx(0.5)  # groups of one are left out


def test_only_successful_rollouts_get_their_distance_to_the_group():
    bonus = diversity_bonus([alice, bob, mallory, mallory, alice, bob], [True, True, False, False, True, False], [0, 0, 0, 0, 1, 1])
    assert bonus.tolist() == pytest.approx([(0.5 + 0.75 + 0.75) / 3, (0.5 + 11 / 12 + 11 / 12) / 3, 0, 0, 0.5, 0])
    assert diversity_bonus([alice], [True], [7]).tolist() == [0.0]  # a group of one has no one to differ from


# --- pass@k --------------------------------------------------------------------------------------------------
def test_pass_at_k_is_the_unbiased_estimator():
    assert pass_at_k(4, 0, 4) == 0.0 and pass_at_k(4, 1, 4) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(5, 2, 2) == pytest.approx(1 - 3 / 10)  # 1 − C(3,2)/C(5,2)
    assert pass_at_k(10, 3, 4) == pytest.approx(1 - math.comb(7, 4) / math.comb(10, 4))
    with pytest.raises(AssertionError, match="pass@k"):
        pass_at_k(4, 5, 1)
