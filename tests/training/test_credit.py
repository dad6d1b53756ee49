from __future__ import annotations

import math

import pytest
import torch

from training.credit import continuation_logprob, group_advantages, horizon, select_by_likelihood, select_for_refinement, turns_end
from training.data import TokenizedEpisode


def test_group_advantages_normalise_within_each_group():
    adv = group_advantages(torch.tensor([1.0, 0.0, 2.0, 5.0, 3.0, 3.0]), ["a", "a", "a", "b", "c", "c"])
    std = 1.0  # sample std of [1, 0, 2]
    assert adv[:3].tolist() == pytest.approx([0.0, -1.0 / (std + 1e-6), 1.0 / (std + 1e-6)])
    assert adv[3].item() == 0.0  # a group of one
    assert adv[4:].tolist() == [0.0, 0.0]  # equal rewards: no signal
    two = group_advantages(torch.tensor([1.0, 0.0]), [7, 7])
    assert two.tolist() == pytest.approx([0.5 / math.sqrt(0.5), -0.5 / math.sqrt(0.5)], abs=1e-5)


def test_horizon_keeps_the_first_tokens():
    episode = TokenizedEpisode([1, 2, 3, 4], [0, 1, 1, 1], [0, 0, 0, 0], [0, 1, 1, 1], [-1, 1, 1, 1], [(1, 1, 4)], [math.nan] * 4)
    short = horizon(episode, 2)
    assert short.input_ids == [1, 2] and short.mask == [0, 1] and short.agent_spans == [(1, 1, 2)] and short.truncated


def test_select_by_likelihood_keeps_the_most_likely_continuations():
    scores = [-3.0, -0.5, float("-inf"), -1.0, -2.0]
    assert select_by_likelihood(scores, count=2) == [1, 3]
    assert select_by_likelihood(scores, fraction=0.4) == [1, 3]
    assert select_by_likelihood(scores, fraction=0.01) == [1]
    assert select_by_likelihood(scores, count=10) == [0, 1, 3, 4]  # -inf (nothing past the prefix) never selected


def _three_turns() -> TokenizedEpisode:
    """10 tokens: prompt 0-1, turn 1 at 2-3, its result 4, turn 2 at 5-6, result 7, turn 3 at 8-9."""
    mask = [0, 0, 1, 1, 0, 1, 1, 0, 1, 1]
    steps = [-1, 0, 1, 1, 1, 2, 2, 2, 3, 3]
    return TokenizedEpisode(
        list(range(10)), mask, [0] * 10, [float(m) for m in mask], steps, [(1, 2, 4), (2, 5, 7), (3, 8, 10)], [math.nan] * 10
    )


def test_turns_end_cuts_after_the_last_token_of_the_nth_agent_turn():
    episode = _three_turns()
    assert [turns_end(episode, n) for n in (1, 2, 3, 4)] == [4, 7, 10, 10]
    short = horizon(episode, turns_end(episode, 2))
    assert short.mask == [0, 0, 1, 1, 0, 1, 1] and short.agent_spans == [(1, 2, 4), (2, 5, 7)]
    split = TokenizedEpisode(*[list(x) for x in ([0] * 6, [1, 0, 1, 1, 0, 1], [0] * 6, [1.0] * 6, [1, 1, 1, 2, 2, 2], [], [math.nan] * 6)])
    split.agent_spans = [(1, 0, 1), (1, 2, 3), (2, 3, 4), (2, 5, 6)]  # a turn's body in two spans (its tool calls)
    assert turns_end(split, 1) == 3 and turns_end(split, 2) == 6


def test_continuation_logprob_scores_only_the_trained_tokens_past_each_episodes_own_prefix(monkeypatch):
    import training.modeling

    # log p of token t is -t/10 for every row: position t-1 predicts token t
    fixed = lambda model, ids, attention: -torch.arange(1, ids.shape[1], dtype=torch.float32).repeat(ids.shape[0], 1) / 10  # noqa: E731
    monkeypatch.setattr(training.modeling, "token_logprobs", fixed)
    model = torch.nn.Linear(1, 1)  # only its device is read
    a, b = _three_turns(), _three_turns()
    scores = continuation_logprob(model, [a, b, a], [4, 7, 10], pad_id=0, batch_size=2)
    assert scores[0] == pytest.approx(-(5 + 6 + 8 + 9) / 40)  # turns 2 and 3
    assert scores[1] == pytest.approx(-(8 + 9) / 20)  # turn 3 only
    assert scores[2] == float("-inf")  # nothing past the prefix
    assert continuation_logprob(model, [a], 7, pad_id=0) == [pytest.approx(-0.85)]


def test_refinement_rules_pick_the_likely_the_unlikely_or_a_seeded_random_draw():
    scores = [-3.0, -0.5, float("-inf"), -1.0, -2.0, -4.0]
    assert select_for_refinement(scores, rule="likely", count=2) == [1, 3]
    assert select_for_refinement(scores, rule="unlikely", count=2) == [0, 5]  # the later turns it gets most wrong
    assert select_for_refinement(scores, rule="unlikely", fraction=0.5) == [0, 4, 5]
    assert select_for_refinement(scores, rule="unlikely", count=9) == [0, 1, 3, 4, 5]  # -inf never, in any rule
    drawn = select_for_refinement(scores, rule="random", count=3, seed=7)
    assert len(drawn) == 3 and 2 not in drawn and drawn == sorted(drawn)
    assert drawn == select_for_refinement(scores, rule="random", count=3, seed=7)
    assert {tuple(select_for_refinement(scores, rule="random", count=3, seed=s)) for s in range(20)} != {tuple(drawn)}
    with pytest.raises(AssertionError, match="rule must be one of"):
        select_for_refinement(scores, rule="hardest", count=1)
