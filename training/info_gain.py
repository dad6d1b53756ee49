"""PG-SFT's per-turn supervision strength: how much the privileged context changes the start model's prediction
of each agent turn.

    gains = turn_info_gains(model, tokenizer, pairs, style=style)          # [{step index: mean gain}] per episode
    episode = reweighted(episode, gain_weights(gains, lengths, temperature=1.0, floor=0.2))

The information gain of a turn is the mean, over the turn's trained tokens x_t, of

    g_t = log p(x_t | note + context) - log p(x_t | context)

under the START model, teacher-forced on the demonstration. The note is the outcome self-teacher's hindsight
(training/self_teacher.py, context "outcome": the score, passed or not, and every environment response, so the
final answer too), appended to the system prompt; after the first prompt both sequences hold the same tokens.
The pointwise log-ratio of the demonstrated token, not the KL between the two predictive distributions: a
demonstration is a given action, and what PG-SFT weighs is how much the outcome explains that action (its
pointwise mutual information with the outcome, given the context); a KL would also count changes on tokens the
demonstration never took. Computed once before training, not per batch: under the start model the gain is a
property of the data (every arm and step sees the same weights, the cost is one pair of forward passes per
episode), whereas the live model's gain would shrink as the model fits the very turns it up-weights.

Weights (gain_weights): a softmax over the episode's turns with a temperature, made a token-weighted mean of 1
and mixed with a floor, w_i = floor + (1 - floor) * N exp(g_i / tau) / sum_j n_j exp(g_j / tau) (n_i the turn's
trained tokens, N = sum n_i), so sum_i n_i w_i = N: an episode's total supervision, and so the loss scale that
the learning rate meets, is SFT's; PG-SFT only moves it between the episode's turns.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from training.data import PromptStyle, TokenizedEpisode, collate
from training.modeling import token_logprobs
from training.self_teacher import first_prompt_ids, teacher_sequence

Pair = tuple[dict[str, Any], TokenizedEpisode]


def token_gains(student_logp: torch.Tensor, teacher_logp: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-token gain g (B, T), 0 where `mask` is 0 and at t = 0.

    student_logp (B, T-1): log p(x_{t+1} | student prefix); teacher_logp (B, Tt-1) the same over the teacher's
    sequence; positions (B, T): the teacher index of student token t (self_teacher.teacher_sequence). Student token
    t sits at teacher index positions[t], so the teacher predicts it from index positions[t] - 1.
    """
    index = (positions[:, 1:] - 1).clamp(min=0)  # (B, T-1)
    teacher_of_student = teacher_logp.gather(1, index.clamp(max=teacher_logp.shape[1] - 1))
    gains = torch.zeros(mask.shape, dtype=torch.float32, device=student_logp.device)
    gains[:, 1:] = (teacher_of_student - student_logp).float() * mask[:, 1:].float()
    return gains


def span_means(gains: Sequence[float], episode: TokenizedEpisode) -> dict[int, float]:
    """{step index: mean gain over the step's trained tokens} (a turn split over several spans counts once)."""
    total: dict[int, float] = {}
    count: dict[int, int] = {}
    for step, start, end in episode.agent_spans:
        total[step] = total.get(step, 0.0) + float(sum(gains[start:end]))
        count[step] = count.get(step, 0) + end - start
    return {step: total[step] / count[step] for step in total if count[step]}


@torch.no_grad()
def turn_info_gains(
    model: Any, tokenizer: Any, pairs: Sequence[Pair], *, style: PromptStyle | None = None, batch_size: int = 8
) -> list[dict[int, float]]:
    """Each episode's {step index: information gain} under `model` (module docstring), in `pairs` order."""
    device = next(model.parameters()).device
    pad = tokenizer.pad_token_id
    was_training = model.training
    model.eval()
    out: list[dict[int, float]] = []
    for start in range(0, len(pairs), batch_size):
        chunk = pairs[start : start + batch_size]
        students = collate([e for _, e in chunk], pad_id=pad)
        sequences = [teacher_sequence(record, episode, tokenizer, context="outcome", style=style) for record, episode in chunk]
        width, teacher_width = students["input_ids"].shape[1], max(len(ids) for ids, _ in sequences)
        teacher_ids = torch.tensor([ids + [pad] * (teacher_width - len(ids)) for ids, _ in sequences], device=device)
        teacher_att = torch.tensor([[1] * len(ids) + [0] * (teacher_width - len(ids)) for ids, _ in sequences], device=device)
        positions = torch.tensor([pos + [0] * (width - len(pos)) for _, pos in sequences], device=device)
        student_logp = token_logprobs(model, students["input_ids"].to(device), students["attention_mask"].to(device))
        teacher_logp = token_logprobs(model, teacher_ids, teacher_att)
        gains = token_gains(student_logp, teacher_logp, positions, students["mask"].to(device)).cpu()
        out += [span_means(gains[b].tolist(), episode) for b, (_, episode) in enumerate(chunk)]
    model.train(was_training)
    return out


def gain_weights(gains: Sequence[float], lengths: Sequence[int], *, temperature: float, floor: float) -> list[float]:
    """Per-turn weights from per-turn gains (module docstring): token-weighted mean 1, each at least `floor`."""
    assert len(gains) == len(lengths) and temperature > 0 and 0.0 <= floor <= 1.0, (gains, lengths, temperature, floor)
    if not gains:
        return []
    top = max(gains)
    scores = [math.exp((g - top) / temperature) for g in gains]  # shifted by the max: no overflow
    total_tokens = float(sum(lengths))
    norm = sum(n * s for n, s in zip(lengths, scores, strict=True))
    return [floor + (1.0 - floor) * total_tokens * s / norm for s in scores]


def turn_lengths(episode: TokenizedEpisode) -> dict[int, int]:
    lengths: dict[int, int] = {}
    for step, start, end in episode.agent_spans:
        lengths[step] = lengths.get(step, 0) + end - start
    return lengths


def reweighted(episode: TokenizedEpisode, weights: dict[int, float]) -> TokenizedEpisode:
    """The episode with each turn's trained tokens' weights multiplied by that turn's weight (others unchanged)."""
    new = list(episode.weights)
    for step, start, end in episode.agent_spans:
        for t in range(start, end):
            new[t] *= weights.get(step, 1.0)
    return dataclasses.replace(episode, weights=new)


def weigh_by_info_gain(
    model: Any, tokenizer: Any, pairs: Sequence[Pair], *, style: PromptStyle, temperature: float, floor: float, batch_size: int = 8
) -> tuple[list[TokenizedEpisode], dict[str, float]]:
    """The pairs' episodes reweighted by turn information gain, and the distribution as metrics. An episode that is
    not its record's whole sequence from the first prompt on (a trimmed context's later part) keeps its weights."""
    whole = [
        i
        for i, (record, episode) in enumerate(pairs)
        if episode.input_ids[: len(first_prompt_ids(record, episode))] == first_prompt_ids(record, episode)
    ]
    gains = turn_info_gains(model, tokenizer, [pairs[i] for i in whole], style=style, batch_size=batch_size)
    episodes = [episode for _, episode in pairs]
    all_gains: list[float] = []
    all_weights: list[float] = []
    for i, turn_gain in zip(whole, gains, strict=True):
        steps = sorted(turn_gain)
        lengths = turn_lengths(episodes[i])
        weights = gain_weights([turn_gain[s] for s in steps], [lengths[s] for s in steps], temperature=temperature, floor=floor)
        episodes[i] = reweighted(episodes[i], dict(zip(steps, weights, strict=True)))
        all_gains += [turn_gain[s] for s in steps]
        all_weights += weights
    assert all_weights, "no episode to weigh by information gain"
    metrics = {
        "info_gain_mean": sum(all_gains) / len(all_gains),
        "info_gain_min": min(all_gains),
        "info_gain_max": max(all_gains),
        "turn_weight_mean": sum(all_weights) / len(all_weights),
        "turn_weight_min": min(all_weights),
        "turn_weight_max": max(all_weights),
        "info_gain_unweighted_episodes": float(len(pairs) - len(whole)),
    }
    return episodes, metrics
