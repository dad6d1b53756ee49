"""Multi-turn GRPO: groups of rollouts of one task and seed, rewards from the environment's score.

Each step: sample `tasks_per_step` seeds, play `group_size` episodes of each with the current policy (whole
multi-turn episodes; every agent turn's sampled tokens are trained, tool results are masked), score them with
the environment, turn scores into group-relative advantages, and take one clipped-surrogate step with the
sequence's advantage on each of its agent tokens. `old_logp` is the policy's own log-probability before the
update (recomputed, so the ratio starts at exactly 1); the gap to the sampler's logprobs is logged as a check.
With kl_coef > 0 a frozen copy of the starting model is the k3 reference.

TJPO (diversity_coef > 0): after the group normalisation, each rollout that PASSED (the environment's own
`score.passed`) gets diversity_coef × its mean behavioural distance to the other members of its group added to
its advantage; failed rollouts get nothing, so a different way to fail is never rewarded. The behaviour is
represented (`diversity_representation`) by the policy itself, as the paper learns its representation: "policy"
embeds each rollout as the mean of the current policy's final hidden states over the agent's own tokens, so the
representation is learnt with the policy and two rollouts differ by what the model makes of them (cosine distance,
`descriptors.embedding_distance`); "descriptors" is the lab's earlier fixed rule (tools, sub-goals, sources,
reasoning length: training/descriptors.py). Added after normalisation so the bonus keeps its stated scale (coef × a distance in [0, 1] beside
unit-scale advantages) and still acts in an all-pass group, whose normalised advantages are all 0; added before,
it would be divided by the group's reward std (~eps when every member passed with the same reward) and blown up.
entropy_coef > 0 adds −entropy_coef × the policy's next-token entropy at the agent's tokens to the loss (the
entropy is logged either way). Both default to 0, which is plain GRPO.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from environments.records import Record, header_components, record_passed
from training.config_fields import AggregationFields, ClipFields, ReferenceKLFields
from training.credit import group_advantages
from training.data import record_reward
from training.descriptors import describe, distance, diversity_bonus, embedding_distance, grouped_diversity
from training.engine import Hooks, RunResult, Trainer
from training.losses import Logits, entropy_bonus, entropy_term, grpo_loss
from training.modeling import AdapterDisabled, forward_logits, gather_logprobs, load_model, logprobs_and_entropy, token_logprobs
from training.onpolicy import (
    OnPolicyConfig,
    evaluate,
    micro_batches,
    rollouts,
    should_evaluate,
    staleness_stats,
    to_device,
    tokenized,
)
from training.sampling import episode_stats

REPRESENTATIONS = ("policy", "descriptors")


@dataclass
class GRPOConfig(AggregationFields, ReferenceKLFields, ClipFields, OnPolicyConfig):
    MIN_GROUP_SIZE: ClassVar[int] = 2

    diversity_coef: float = 0.0
    """TJPO: a passed rollout's advantage gains this × its mean behavioural distance to its group (0: GRPO)."""
    diversity_representation: str = "policy"
    """TJPO's behaviour representation: policy (the policy's own hidden states over the agent's tokens: learnt, the
    paper's) | descriptors (the fixed rule of training/descriptors.py). The bonus and `behaviour_diversity` use it."""
    entropy_coef: float = 0.0
    """Weight of the entropy bonus on the agent tokens' next-token distribution (0: none; entropy is logged)."""
    reward_component: str = ""
    """A score component to train on instead of the composite ("" keeps data.record_reward), e.g. "rubric" on graphcert."""
    step_rewards: bool = False
    """Train on the sum of the rollout's step rewards instead of its score: with StoreBench's env_options
    {"reward": "daily"}, the running composite through the last day the agent ended, so an episode the turn cap
    truncates (whose composite is 0) still earns the days it played."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.diversity_representation not in REPRESENTATIONS:
            out.append(f"diversity_representation={self.diversity_representation!r}: must be one of {', '.join(REPRESENTATIONS)}")
        for name in ("diversity_coef", "entropy_coef"):
            if getattr(self, name) < 0:
                out.append(f"{name}={getattr(self, name)!r}: must not be negative")
        if self.step_rewards and self.reward_component:
            out.append(
                f"step_rewards=True: trains on step rewards, so reward_component={self.reward_component!r} would be ignored; set one"
            )
        if self.reward_component and not self.reward_component.replace("_", "").isalnum():
            out.append(f"reward_component={self.reward_component!r}: must be a score component's name, like 'rubric'")
        return out


def run(config: GRPOConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="grpo", hooks=hooks)
    model, tokenizer = trainer.model, trainer.tokenizer
    reference = reference_policy(trainer, config) if config.kl_coef > 0 else None
    if trainer.step == 0:
        trainer.log(evaluate(model, tokenizer, config))

    while trainer.step < config.max_steps and not trainer.stopping():
        records = rollouts(trainer, config)
        rewards = torch.tensor([training_reward(r, config.reward_component, steps=config.step_rewards) for r in records])
        episodes = tokenized(records, tokenizer)
        embeddings = policy_embeddings(trainer, episodes, len(records), config.grad_accum) if config.diversity_coef > 0 else None
        advantages, diversity_metrics = grpo_advantages(records, rewards, config, embeddings)
        items = [(episode, float(advantages[index])) for index, episode in episodes]
        prepared = scored_batches(trainer, items, config.grad_accum, reference)
        metrics = trainer.optimize(prepared, clipped_loss(model, config, entropy=True))
        metrics.update(episode_stats(records))
        metrics.update(diversity_metrics)
        metrics["reward_std"] = float(rewards.std())
        metrics["sampler_logp_gap"] = sampler_gap(prepared)
        metrics.update(staleness_stats(records))
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(model, tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()


def reference_policy(trainer: Any, config: Any) -> Any:
    """The frozen starting policy for the KL term: with LoRA the trainer's own model with its adapter disabled (no
    second copy of the weights; the adapter starts at zero, so that is the starting model, resumed or not), else a
    frozen copy loaded from config.model."""
    if hasattr(trainer.model, "disable_adapter"):
        return AdapterDisabled(trainer.model)
    return load_model(config.model, device=trainer.device, trainable=False)[0]


def training_reward(record: Record, component: str, *, steps: bool = False) -> float | None:
    """The rollout's reward: with `steps`, the sum of its agent steps' rewards (GRPOConfig.step_rewards); else the named
    score component, or without one data.record_reward (the composite, less consultation costs in a team). A component
    the score lacks is a configuration error, raised with what it has."""
    if steps:
        return float(sum(float(s.get("reward") or 0.0) for s in record["steps"] if s.get("source") == "agent"))
    if not component:
        return record_reward(record)
    components = header_components(record["header"])
    if component not in components:
        raise ValueError(f"reward_component={component!r}: the score of {record['header'].get('task')} has only {sorted(components)}")
    return float(components[component])


def grpo_advantages(
    records: list[Record], rewards: torch.Tensor, config: GRPOConfig, embeddings: list[torch.Tensor] | None = None
) -> tuple[torch.Tensor, dict[str, float]]:
    """Group-relative advantages (N,) plus, with diversity_coef > 0, the TJPO bonus of passed rollouts (module
    docstring; `embeddings`, one per record, are the policy representation's, needed when it is "policy");
    metrics descriptor_diversity (mean within-group pairwise descriptor distance, whatever the representation, so
    runs compare), behaviour_diversity (the same in the representation the bonus uses) and diversity_bonus_mean
    (the mean term added, over all rollouts)."""
    groups = [i // config.group_size for i in range(len(records))]
    advantages = group_advantages(rewards, groups)
    descriptors = [describe(r) for r in records]
    metrics = {"descriptor_diversity": grouped_diversity(descriptors, groups), "diversity_bonus_mean": 0.0}
    if config.diversity_coef > 0:
        if config.diversity_representation == "policy":
            assert embeddings is not None and len(embeddings) == len(records), "the policy representation needs one embedding per record"
            items, dist = list(embeddings), embedding_distance
        else:
            items, dist = descriptors, distance
        passed = [bool(record_passed(r)) for r in records]
        bonus = config.diversity_coef * diversity_bonus(items, passed, groups, dist)
        advantages = advantages + bonus
        metrics["diversity_bonus_mean"] = float(bonus.mean())
        metrics["behaviour_diversity"] = grouped_diversity(items, groups, dist)
    return advantages, metrics


@torch.no_grad()
def policy_embeddings(trainer: Any, episodes: list[tuple[int, Any]], count: int, grad_accum: int) -> list[torch.Tensor]:
    """One vector per record (`count` of them): the current policy's final hidden states averaged over the record's
    agent tokens (every sequence of it: a trimmed context gives several), in fp32 on the CPU. A record with no agent
    token (nothing tokenized) gets a zero vector, at distance 0.5 from every other."""
    sums: dict[int, torch.Tensor] = {}
    tokens: dict[int, float] = {}
    for chunk in micro_batches(episodes, grad_accum):
        batch = to_device([e for _, e in chunk], trainer.tokenizer.pad_token_id, trainer.device)
        hidden = trainer.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True, use_cache=False
        ).hidden_states[-1]
        mask = batch["mask"].to(hidden.dtype).unsqueeze(-1)
        for row, (index, _) in enumerate(chunk):
            total = (hidden[row] * mask[row]).sum(0).float().cpu()
            sums[index] = sums.get(index, 0) + total
            tokens[index] = tokens.get(index, 0.0) + float(mask[row].sum())
    width = next(iter(sums.values())).shape[0] if sums else 1
    return [sums[i] / max(tokens[i], 1.0) if i in sums else torch.zeros(width) for i in range(count)]


def scored_batches(trainer: Any, items: list[tuple[Any, float]], grad_accum: int, reference: Any) -> list[dict[str, Any]]:
    """(tokenized episode, advantage) items as micro-batches holding the policy's log-probs before this update
    (`old_logp`) and the reference's (`ref_logp`, when there is one), each scored once."""
    prepared = []
    with torch.no_grad():
        for chunk in micro_batches(items, grad_accum):
            batch = to_device([e for e, _ in chunk], trainer.tokenizer.pad_token_id, trainer.device)
            batch["advantages"] = torch.tensor([a for _, a in chunk], device=trainer.device)
            batch["old_logp"] = token_logprobs(trainer.model, batch["input_ids"], batch["attention_mask"])
            if reference is not None:
                batch["ref_logp"] = token_logprobs(reference, batch["input_ids"], batch["attention_mask"])
            prepared.append(batch)
    return prepared


def clipped_loss(model: Any, config: Any, *, entropy: bool) -> Callable[[dict[str, Any]], tuple[torch.Tensor, dict[str, float]]]:
    """The clipped-surrogate loss of a `scored_batches` batch under `config`'s clip, KL and aggregation fields; with
    `entropy`, GRPO's entropy term too (config.entropy_coef; the entropy is logged either way)."""

    def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
        mask = batch["mask"][:, 1:]
        chunked = logprobs_and_entropy(model, batch["input_ids"], batch["attention_mask"])
        if chunked is not None:  # never the (B, T-1, V) logits: 8 x 1.5k x 49k fp32 is 2.4 GB a copy on SmolLM2
            logp, token_entropy = chunked
            loss, metrics = clipped_surrogate(logp, batch, mask, config)
            if not entropy:
                return loss, metrics
            bonus, entropy_metrics = entropy_term(
                token_entropy if config.entropy_coef > 0 else token_entropy.detach(), mask, config.aggregation
            )
            if config.entropy_coef > 0:
                loss = loss + config.entropy_coef * bonus
                return loss, {**metrics, **entropy_metrics, "loss": float(loss.detach())}
            return loss, {**metrics, **entropy_metrics}
        logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])[:, :-1]  # (B, T-1, V)
        loss, metrics = clipped_surrogate(gather_logprobs(logits, batch["input_ids"][:, 1:]), batch, mask, config)
        return with_entropy(loss, metrics, logits, mask, config) if entropy else (loss, metrics)

    return loss_fn


def clipped_surrogate(
    logp: torch.Tensor, batch: dict[str, Any], mask: torch.Tensor, config: GRPOConfig
) -> tuple[torch.Tensor, dict[str, float]]:
    """GRPO's clipped surrogate (losses.grpo_loss) of logp (B, T-1) against the batch's old logprobs, advantages and
    reference, with the config's clip range, KL coefficient and aggregation."""
    return grpo_loss(
        logp,
        batch["old_logp"],
        batch["advantages"],
        mask,
        clip_low=config.clip_low,
        clip_high=config.clip_high,
        ref_logp=batch.get("ref_logp"),
        kl_coef=config.kl_coef,
        aggregation=config.aggregation,
    )


def with_entropy(
    loss: torch.Tensor, metrics: dict[str, float], logits: Logits, mask: torch.Tensor, config: GRPOConfig
) -> tuple[torch.Tensor, dict[str, float]]:
    """loss + entropy_coef × (−entropy) at the masked positions of logits (B, T, V); the entropy is logged either way
    (without a graph when the coefficient is 0, so the loss and its gradient are exactly GRPO's)."""
    if config.entropy_coef > 0:
        bonus, entropy_metrics = entropy_bonus(logits, mask, config.aggregation)
        loss = loss + config.entropy_coef * bonus
        metrics = {**metrics, **entropy_metrics, "loss": float(loss.detach())}
    else:
        with torch.no_grad():
            metrics = {**metrics, **entropy_bonus(logits.detach(), mask, config.aggregation)[1]}
    return loss, metrics


def sampler_gap(batches: list[dict[str, Any]]) -> float:
    """Mean |sampler logprob − recomputed logprob| over sampled tokens: ~0 when sampling and training agree."""
    total, count = 0.0, 0
    for batch in batches:
        sampled = batch["sampled_logprobs"][:, 1:]
        known = ~torch.isnan(sampled) & (batch["mask"][:, 1:] > 0)
        total += float((sampled[known] - batch["old_logp"][known]).abs().sum())
        count += int(known.sum())
    return total / count if count else math.nan
