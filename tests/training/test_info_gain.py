from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from training.data import PromptStyle, TokenizedEpisode, tokenize_record
from training.info_gain import gain_weights, reweighted, span_means, token_gains, turn_info_gains, weigh_by_info_gain
from training.self_teacher import hindsight_text, teacher_sequence

BOOST = 5.0


def test_a_token_gain_is_the_teachers_logprob_at_the_aligned_position_minus_the_students():
    student_logp = torch.tensor([[-1.0, -2.0, -3.0, -4.0]])  # log p of student tokens 1..4
    teacher_logp = torch.tensor([[-9.0, -9.0, -9.0, -9.0, -0.5, -1.5, -9.0]])  # tokens 1..7 of an 8-token teacher
    positions = torch.tensor([[0, 1, 2, 5, 6]])  # student tokens 3, 4 sit at teacher indices 5, 6
    mask = torch.tensor([[0.0, 0.0, 0.0, 1.0, 1.0]])
    gains = token_gains(student_logp, teacher_logp, positions, mask)
    # token 3: the teacher predicts it from index 4 (-0.5), the student from index 2 (-3.0); token 4: -1.5 vs -4.0
    assert gains.tolist() == [[0.0, 0.0, 0.0, 2.5, 2.5]]


def test_span_means_average_each_turns_trained_tokens():
    episode = TokenizedEpisode(list(range(9)), [0] * 9, [0] * 9, [1.0] * 9, [0] * 9, [(1, 2, 4), (2, 6, 9)], [math.nan] * 9)
    gains = [9.0, 9.0, 1.0, 3.0, 9.0, 9.0, 0.0, 0.0, 3.0]
    assert span_means(gains, episode) == {1: 2.0, 2: 1.0}


def test_weights_are_a_floored_softmax_with_a_token_weighted_mean_of_one():
    # scores exp(g / tau) = 1 and 3; n = 1 and 3 tokens: N = 4, norm = 1 + 9 = 10, raw weights 0.4 and 1.2
    assert gain_weights([0.0, math.log(3)], [1, 3], temperature=1.0, floor=0.0) == pytest.approx([0.4, 1.2])
    assert gain_weights([0.0, math.log(3)], [1, 3], temperature=1.0, floor=0.5) == pytest.approx([0.7, 1.1])
    assert gain_weights([0.0, 2 * math.log(3)], [1, 3], temperature=2.0, floor=0.0) == pytest.approx([0.4, 1.2])
    weights = gain_weights([0.3, -1.0, 2.0], [5, 7, 2], temperature=0.7, floor=0.1)
    assert sum(n * w for n, w in zip([5, 7, 2], weights, strict=True)) == pytest.approx(14.0)
    assert weights[2] > weights[0] > weights[1] >= 0.1
    assert gain_weights([0.3, -1.0], [5, 7], temperature=0.7, floor=1.0) == [1.0, 1.0]  # floor 1 is uniform, exactly
    assert gain_weights([5.0, 5.0], [2, 9], temperature=0.01, floor=0.0) == pytest.approx([1.0, 1.0])
    assert gain_weights([1000.0, 0.0], [1, 1], temperature=0.001, floor=0.0) == pytest.approx([2.0, 0.0])  # no overflow


def test_reweighting_multiplies_each_turns_tokens_only():
    episode = TokenizedEpisode(
        list(range(6)), [0, 1, 1, 0, 1, 0], [0] * 6, [0.0, 1.0, 0.5, 0.0, 1.0, 0.0], [0] * 6, [(1, 1, 3), (2, 4, 5)], [math.nan] * 6
    )
    assert reweighted(episode, {1: 2.0, 2: 0.25}).weights == [0.0, 2.0, 1.0, 0.0, 0.25, 0.0]
    assert episode.weights == [0.0, 1.0, 0.5, 0.0, 1.0, 0.0]


class NoteBigram(torch.nn.Module):
    """A model that sees the privileged note: logits 0 everywhere, except BOOST on y after x (for each (x, y) of
    `boosts`) once the `marker` token has appeared in the prefix."""

    def __init__(self, vocab: int, marker: int, boosts: dict[int, int]):
        super().__init__()
        self.vocab, self.marker, self.boosts = vocab, marker, boosts
        self.anchor = torch.nn.Parameter(torch.zeros(1))  # gives the model a device

    def forward(self, input_ids, attention_mask=None, use_cache=False):
        seen = (input_ids == self.marker).cumsum(1) > 0  # (B, T)
        logits = torch.zeros(*input_ids.shape, self.vocab)
        for x, y in self.boosts.items():
            logits[..., y] += BOOST * ((input_ids == x) & seen).float()
        return SimpleNamespace(logits=logits)

    def logp(self, x: int, y: int, noted: bool) -> float:
        row = torch.zeros(self.vocab)
        if noted and x in self.boosts:
            row[self.boosts[x]] += BOOST
        return torch.log_softmax(row, -1)[y].item()


def test_the_note_raises_the_gain_of_the_turn_it_explains_and_leaves_the_other_at_zero(alice_record, tokenizer):
    (student,) = tokenize_record(alice_record, tokenizer)
    ids, _ = teacher_sequence(alice_record, student, tokenizer, context="outcome")
    assert "Hindsight: this episode scored 1.00 (passed)." in tokenizer.decode(ids) and hindsight_text(alice_record) in tokenizer.decode(
        ids
    )
    marker = next(i for i in ids if i not in set(student.input_ids))  # a token only the note has
    (first, a1, b1), (second, a2, b2) = student.agent_spans
    sources_of_first = {student.input_ids[t - 1] for t in range(a1, b1)}
    boosts = {}  # bigrams predicting the second turn's tokens from tokens that never predict the first turn's
    for t in range(a2, b2):
        x, y = student.input_ids[t - 1], student.input_ids[t]
        if x not in sources_of_first and x not in boosts:
            boosts[x] = y
    assert boosts, "the second turn needs a token to boost"
    model = NoteBigram(len(tokenizer), marker, boosts)

    (gains,) = turn_info_gains(model, tokenizer, [(alice_record, student)])

    def expected(a, b):  # the gain by hand: the note is present for the teacher, absent for the student
        xs = [(student.input_ids[t - 1], student.input_ids[t]) for t in range(a, b)]
        return sum(model.logp(x, y, True) - model.logp(x, y, False) for x, y in xs) / len(xs)

    assert gains[first] == 0.0
    assert gains[second] == pytest.approx(expected(a2, b2), abs=1e-5) and gains[second] > 0.1
    episodes, metrics = weigh_by_info_gain(model, tokenizer, [(alice_record, student)], style=PromptStyle(), temperature=0.1, floor=0.2)
    weights = episodes[0].weights
    assert weights[a2] > 1.0 > weights[a1] >= 0.2
    assert sum(w for w, m in zip(weights, student.mask, strict=True) if m) == pytest.approx(sum(student.mask))  # SFT's total
    assert metrics["turn_weight_min"] == pytest.approx(weights[a1]) and metrics["turn_weight_max"] == pytest.approx(weights[a2])
    assert metrics["info_gain_max"] == pytest.approx(gains[second]) and metrics["info_gain_unweighted_episodes"] == 0.0
