"""EVOKE: goal-conditioned action ranking. At states of expert trajectories, the same candidate actions are ranked
under the true goal and under alternative goals, so the policy learns which action serves which goal.

Each micro-batch draws `batch_size` demonstrations (as the SFT recipe does) and, from each, one agent turn: the
state before it is shown under its own goal and `alternatives` others (training/goal_swap.py), and the candidates
are the expert's actions under each goal. With G = alternatives + 1 goals every state gives a G x G table of
scores s[g, c]: the length-normalised log-probability (mean over the action's tokens) of candidate c's action
given the state stated with goal g. Row g's right answer is column g. Every row is trained, not only the true
goal's: each action is then the positive of one row and a negative of the others, so raising an action's
probability regardless of the goal gains nothing; only reading the goal does.

    loss = SFT cross-entropy on the demonstrations (every agent turn, as the sft recipe) + rank_coef x rank loss

Rank loss (`rank_loss`), per row, averaged over rows:
- hinge (default): mean over c != g of max(0, margin - (s[g, g] - s[g, c])): zero once the row's own action
  leads every other by `margin` nats per token, so it stops pushing where the ranking is already right.
- listwise: softmax cross-entropy over the row's candidates with `margin` taken off the right one's score
  (an additive-margin softmax); never exactly zero.

With rank_coef = 0 the loss is the SFT recipe's on the same batches (tested); the ranking is still scored under
no_grad, so both arms log `rank_accuracy` (share of rows whose own action ranks strictly first),
`rank_accuracy_true` (the recorded goal's rows only), `rank_loss` and `rank_gap` (own score minus the best other).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from environments.records import Record, record_passed
from training.config import ConfigError, TrainConfig
from training.config_fields import EpisodeDataFields, PromptStyleFields, TrainSeedFields
from training.data import PromptStyle, TokenizedEpisode, collate, read_records, tokenize_record
from training.engine import Hooks, RunResult, Trainer, batch_indices
from training.goal_swap import GoalSwap, agent_step_indices, goal_swap, record_task, swappable
from training.losses import sft_loss
from training.modeling import forward_logits, gather_logprobs

RANK_LOSSES = ("hinge", "listwise")


@dataclass
class EvokeConfig(EpisodeDataFields, TrainSeedFields, TrainConfig, PromptStyleFields):
    DATA_REQUIRED: ClassVar[bool] = False  # or tasks, whose demonstrations are generated

    data: str = ""
    """JSONL (or JSON list) of expert records of swappable tasks (toolgym but guess, Phantom, service desk); or leave empty
    and give tasks."""
    tasks: list[str] = field(default_factory=list)
    """Tasks whose expert demonstrations are generated (toolgym's expert, Phantom's oracle), when data is empty."""
    train_seed_start: int = 0
    """First seed of the generated demonstrations."""
    train_seeds: int = 64
    """Generated demonstrations per task (seeds train_seed_start, +1, ...); failed ones are dropped."""
    demo_turns: int = 12
    """Agent turns of a generated demonstration."""
    alternatives: int = 2
    """K: alternative goals per state (each state is scored as a (K+1) x (K+1) table of goals x candidate actions)."""
    rank_coef: float = 1.0
    """Weight of the ranking loss beside the SFT cross-entropy (0: plain SFT, the ranking only measured)."""
    rank_loss: str = "hinge"
    """hinge (pairwise, zero once the own action leads by margin) | listwise (softmax cross-entropy with margin)."""
    margin: float = 0.1
    """Margin in nats per token between the own action's length-normalised log-probability and each other's."""
    batch_size: int = 4
    """Demonstrations per micro-batch; each also gives one ranking state."""
    max_tokens: int = 1024
    """Sequences are cut to this many tokens (a state whose candidate would be cut is left out of the ranking)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if bool(self.data) == bool(self.tasks):
            out.append(f"data={self.data!r}: give either data (a JSONL of records) or tasks (to generate demonstrations), not both")
        bad = {t: why for t in self.tasks if (why := swappable(t))}
        if bad:
            out.append(f"tasks={self.tasks!r}: cannot swap goals in " + "; ".join(f"{t} ({why})" for t, why in bad.items()))
        for name in ("demo_turns", "alternatives"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if self.rank_coef < 0:
            out.append(f"rank_coef={self.rank_coef!r}: must not be negative")
        if self.margin < 0:
            out.append(f"margin={self.margin!r}: must not be negative")
        if self.rank_loss not in RANK_LOSSES:
            out.append(f"rank_loss={self.rank_loss!r}: must be one of {', '.join(RANK_LOSSES)}")
        return out


def rank_loss(scores: torch.Tensor, target: torch.Tensor, *, margin: float, kind: str = "hinge") -> tuple[torch.Tensor, dict[str, float]]:
    """Ranking loss over rows of candidate scores (module docstring). scores: (N, C); target: (N,) the right column."""
    assert scores.dim() == 2 and scores.shape[1] >= 2, f"scores must be (rows, >= 2 candidates), got {tuple(scores.shape)}"
    own = scores.gather(1, target.unsqueeze(1))  # (N, 1)
    other = F.one_hot(target, scores.shape[1]).float() == 0  # (N, C) True off the right column
    if kind == "hinge":
        per_pair = torch.relu(margin - (own - scores)) * other  # (N, C)
        loss = (per_pair.sum(1) / other.sum(1)).mean()
    elif kind == "listwise":
        shifted = scores - margin * (~other).float()
        loss = F.cross_entropy(shifted, target)
    else:
        raise ValueError(f"kind must be one of {RANK_LOSSES}, got {kind!r}")
    best_other = scores.masked_fill(~other, float("-inf")).max(1).values  # (N,)
    gap = own.squeeze(1) - best_other
    return loss, {"rank_loss": loss.item(), "rank_accuracy": (gap > 0).float().mean().item(), "rank_gap": gap.mean().item()}


def candidate_episode(
    swap: GoalSwap, goal: int, action: int, tokenizer: Any, *, style: PromptStyle, max_tokens: int
) -> TokenizedEpisode | None:
    """The state under `goal` followed by candidate `action`, with only that action's tokens in the mask (None when cut)."""
    (episode,) = tokenize_record(swap.candidate(goal, action), tokenizer, max_tokens=max_tokens, style=style)
    span = [(a, b) for step, a, b in episode.agent_spans if step == swap.step]
    if not span or episode.truncated:
        return None
    start, end = span[-1]
    episode.mask = [int(start <= t < end) for t in range(len(episode))]
    episode.weights = [float(m) for m in episode.mask]
    return episode


def swap_episodes(swap: GoalSwap, tokenizer: Any, *, style: PromptStyle, max_tokens: int) -> list[TokenizedEpisode] | None:
    """The G x G candidate sequences of one state, row-major (goal, then action); None when any would be cut."""
    size = len(swap.goals)
    episodes = [candidate_episode(swap, g, c, tokenizer, style=style, max_tokens=max_tokens) for g in range(size) for c in range(size)]
    return None if any(e is None for e in episodes) else episodes  # type: ignore[return-value]


def sequence_scores(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B,): mean log-probability of each row's masked tokens (the candidate action) under the model."""
    logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])
    logp = gather_logprobs(logits[:, :-1], batch["input_ids"][:, 1:])  # (B, T-1)
    mask = batch["mask"][:, 1:]
    return (logp * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)


def rank_rows(scores: torch.Tensor, goals: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Flat (S·G·G,) scores of S states -> rows (S·G, G) and their targets (each row g's right column is g)."""
    rows = scores.view(-1, goals)
    return rows, torch.arange(goals, device=scores.device).repeat(rows.shape[0] // goals)


def evoke_step_loss(
    model: Any,
    sft_batch: dict[str, torch.Tensor],
    rank_batch: dict[str, torch.Tensor] | None,
    *,
    goals: int,
    rank_coef: float,
    margin: float,
    kind: str,
) -> tuple[torch.Tensor, dict[str, float]]:
    """SFT cross-entropy on `sft_batch` + rank_coef x rank loss over `rank_batch` (S states x G x G candidates, row-major).
    With rank_coef = 0 the ranking is scored without gradient and the loss is the SFT loss alone."""
    logits = forward_logits(model, sft_batch["input_ids"], sft_batch["attention_mask"])
    loss, metrics = sft_loss(logits[:, :-1], sft_batch["input_ids"][:, 1:], sft_batch["mask"][:, 1:], sft_batch["weights"][:, 1:])
    metrics = {**metrics, "sft_loss": metrics["loss"]}
    if rank_batch is not None:
        with torch.set_grad_enabled(rank_coef > 0 and torch.is_grad_enabled()):
            rows, target = rank_rows(sequence_scores(model, rank_batch), goals)
            ranked, rank_metrics = rank_loss(rows, target, margin=margin, kind=kind)
        true_rows = rows[::goals]  # the recorded goal's row of every state
        rank_metrics["rank_accuracy_true"] = (true_rows[:, 0] > true_rows[:, 1:].max(1).values).float().mean().item()
        rank_metrics["rank_states"] = float(rows.shape[0] // goals)
        metrics.update(rank_metrics)
        if rank_coef > 0:
            loss = loss + rank_coef * ranked
    metrics["loss"] = float(loss.detach())
    return loss, metrics


def demonstrations(config: EvokeConfig) -> list[dict[str, Any]]:
    """The records to train on: `data`, or the experts' passed episodes of `tasks` on the training seeds."""
    if config.data:
        return read_records(config.data)
    from training.scripted import anchor_episode, scripted_episode
    from training.zoo.corpus import demo_policy

    def demonstration(task: str, seed: int) -> dict[str, Any]:
        if task.startswith("servicedesk/"):  # through the runner, so the rule caller speaks its turns
            return anchor_episode("oracle", task, seed)
        return scripted_episode(demo_policy(task, seed), task, seed, max_turns=config.demo_turns)

    seeds = range(config.train_seed_start, config.train_seed_start + config.train_seeds)
    records = [demonstration(t, s) for t in config.tasks for s in seeds]
    return [r for r in records if record_passed(r)]


def state_of(record: Record, config: EvokeConfig, draw: int) -> GoalSwap | None:
    """One goal swap of `record` at an agent turn chosen by `draw` (the next turns in order when one has too few
    alternatives); deterministic in (config.seed, draw)."""
    steps = agent_step_indices(record)
    first = random.Random(f"evoke/{config.seed}/{draw}").randrange(len(steps))
    for k in range(len(steps)):
        swap = goal_swap(record, step=steps[(first + k) % len(steps)], alternatives=config.alternatives, salt=config.seed)
        if swap is not None:
            return swap
    return None


def run(config: EvokeConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="evoke", hooks=hooks)
    tokenizer, pad_id, device = trainer.tokenizer, trainer.tokenizer.pad_token_id, trainer.device
    records = [r for r in demonstrations(config) if agent_step_indices(r)]
    assert records, f"no demonstrations with an agent turn (data={config.data!r}, tasks={config.tasks})"
    unswappable = {task: why for task, _ in map(record_task, records) if (why := swappable(task))}
    if unswappable:
        raise ConfigError(
            f"data={config.data!r}: cannot swap goals in " + "; ".join(f"{t} ({w})" for t, w in unswappable.items()), ["data"]
        )
    goals = config.alternatives + 1

    def micro(draw: int) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None, float]:
        chosen = [records[i] for i in batch_indices(len(records), config.batch_size, config.seed, draw)]
        sft = [e for r in chosen for e in tokenize_record(r, tokenizer, max_tokens=config.max_tokens, style=config.prompt_style)]
        candidates: list[TokenizedEpisode] = []
        dropped = 0.0
        for k, record in enumerate(chosen):
            swap = state_of(record, config, draw * config.batch_size + k)
            episodes = swap_episodes(swap, tokenizer, style=config.prompt_style, max_tokens=config.max_tokens) if swap else None
            if episodes is None:
                dropped += 1
                continue
            candidates += episodes
        rank = {k: v.to(device) for k, v in collate(candidates, pad_id=pad_id).items()} if candidates else None
        return {k: v.to(device) for k, v in collate(sft, pad_id=pad_id).items()}, rank, dropped

    def loss_fn(item: tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None, float]) -> tuple[torch.Tensor, dict[str, float]]:
        sft_batch, rank_batch, dropped = item
        loss, metrics = evoke_step_loss(
            trainer.model, sft_batch, rank_batch, goals=goals, rank_coef=config.rank_coef, margin=config.margin, kind=config.rank_loss
        )
        return loss, {**metrics, "states_dropped": dropped}

    while trainer.step < config.max_steps and not trainer.stopping():
        batches = [micro(trainer.step * config.grad_accum + accum) for accum in range(config.grad_accum)]
        metrics = trainer.optimize(batches, loss_fn)
        metrics["demonstrations"] = float(len(records))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()


@torch.no_grad()
def rank_accuracy(
    model: Any, tokenizer: Any, swaps: list[GoalSwap], *, style: PromptStyle, max_tokens: int = 2048, states_per_batch: int = 2
) -> dict[str, float]:
    """Ranking figures of `model` over `swaps` (all with the same number of goals): rank_accuracy (every row),
    rank_accuracy_true (the recorded goal's rows), rank_gap, and how many states were scored."""
    model.eval()
    rows_all: list[torch.Tensor] = []
    goals = len(swaps[0].goals) if swaps else 0
    device = next(model.parameters()).device
    for start in range(0, len(swaps), states_per_batch):
        episodes = [swap_episodes(s, tokenizer, style=style, max_tokens=max_tokens) for s in swaps[start : start + states_per_batch]]
        flat = [e for group in episodes if group is not None for e in group]
        if flat:
            batch = {k: v.to(device) for k, v in collate(flat, pad_id=tokenizer.pad_token_id).items()}
            rows_all.append(rank_rows(sequence_scores(model, batch), goals)[0].float().cpu())
    if not rows_all:
        return {"rank_accuracy": float("nan"), "rank_accuracy_true": float("nan"), "rank_gap": float("nan"), "rank_states": 0.0}
    rows = torch.cat(rows_all)
    target = torch.arange(goals).repeat(rows.shape[0] // goals)
    _, metrics = rank_loss(rows, target, margin=0.0)
    true_rows = rows[::goals]
    metrics["rank_accuracy_true"] = (true_rows[:, 0] > true_rows[:, 1:].max(1).values).float().mean().item()
    metrics["rank_states"] = float(rows.shape[0] // goals)
    return {k: v for k, v in metrics.items() if k != "rank_loss"}


__all__ = ["EvokeConfig", "evoke_step_loss", "rank_accuracy", "rank_loss", "run", "sequence_scores", "swap_episodes"]
