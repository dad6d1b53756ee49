"""Caddie: a critic trained with RL on whether the frozen actor succeeds after its advice.

    python -m training caddie --set model=PATH --set task=toolgym/chain    # the actor is `model` too unless actor=PATH

The actor is frozen (`actor`, by default the critic's own start model); the critic is a copy of the base (`model`)
and the only thing trained. Each step: sample `tasks_per_step` seeds and play `group_size` episodes of each, the
actor acting and the critic advising after every `critic_every`-th actor turn (and after a failed turn with
`critic_on_error`), through the batched sampler (training.sampling.CriticTurns): the advice enters the actor's
next prompt as a "Critic: ..." user turn. The reward of an episode is the actor's outcome (data.record_reward, the
composite); group-relative advantages over the group's episodes (training.credit.group_advantages) put every
critic turn of an episode at its episode's advantage, and one clipped-surrogate step (losses.grpo_loss) trains
the critic's own sampled tokens only: each example is one critic turn (training.role_views.tokenize_role: the
critic's prompt ids, masked, then its advice, trained), so no actor token is ever in a trained position.

With the actor greedy (`actor_temperature` 0, the default) every episode of a group is the same up to the critic's
first turn, so the group is G critic samples at one state and the outcome differences are the advice's doing; a
later turn's advice is credited with the whole episode's outcome (the usual multi-turn GRPO simplification).
Groups whose episodes all ended alike carry no signal; when no critic turn has a non-zero advantage (and there is
no KL term) the step is counted without an update. Live metrics: the actor's reward and pass rate with the
sampled critic, the share of groups with signal, critic turns and advice length, the loss terms; evaluation plays
the held-out seeds greedily with the critic (eval_*) and, at the start, without it (eval_no_critic_*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from environments.records import Record
from environments.roles import CRITIC
from training.config_fields import AggregationFields, ClipFields, ReferenceKLFields
from training.credit import group_advantages
from training.data import TokenizedEpisode, record_reward
from training.engine import Hooks, RunResult, Trainer
from training.modeling import check_same_vocabulary, load_model
from training.onpolicy import OnPolicyConfig, pick_jobs, should_evaluate
from training.recipes.grpo import clipped_loss, reference_policy, sampler_gap, scored_batches
from training.role_views import role_steps, tokenize_role
from training.sampling import CriticTurns, episode_stats, rollout_episodes


@dataclass
class CaddieConfig(AggregationFields, ReferenceKLFields, ClipFields, OnPolicyConfig):
    MIN_GROUP_SIZE: ClassVar[int] = 2
    MODEL_PATH_FIELDS: ClassVar[tuple[str, ...]] = (*OnPolicyConfig.MODEL_PATH_FIELDS, "actor")

    actor: str = ""
    """The frozen actor the critic advises (a from_pretrained path sharing the critic's tokenizer); "" = `model`."""
    actor_temperature: float = 0.0
    """The actor's sampling temperature in training episodes (0: greedy, so a group differs by its advice alone)."""
    critic_every: int = 1
    """The critic advises after every N-th actor turn (0: only on errors, with critic_on_error)."""
    critic_on_error: bool = False
    """The critic also advises after an actor turn that was an invalid action or whose call failed."""
    critic_max_new_tokens: int = 48
    """Token limit of one piece of advice."""
    critic_window_turns: int = 12
    """Steps of the transcript the critic reads verbatim (older ones are replaced by a note)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.actor_temperature < 0:
            out.append(f"actor_temperature={self.actor_temperature!r}: must not be negative (0 is greedy)")
        if self.critic_every < 0:
            out.append(f"critic_every={self.critic_every!r}: must not be negative")
        if self.critic_every == 0 and not self.critic_on_error:
            out.append("critic_every=0: the critic would never speak; give a cadence or set critic_on_error")
        for name in ("critic_max_new_tokens", "critic_window_turns"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        return out

    def critic_turns(self, critic: Any, *, temperature: float) -> CriticTurns:
        return CriticTurns(
            critic,
            every=self.critic_every,
            on_error=self.critic_on_error,
            max_new_tokens=self.critic_max_new_tokens,
            temperature=temperature,
            window_turns=self.critic_window_turns,
        )


def critic_items(records: list[Record], advantages: torch.Tensor, tokenizer: Any) -> list[tuple[TokenizedEpisode, float]]:
    """(example, advantage) per critic turn of every record: the critic's view of its own turn (its prompt masked,
    its advice trained) at its episode's advantage. Actor turns yield nothing."""
    assert len(records) == advantages.numel(), f"{len(records)} records for {advantages.numel()} advantages"
    items = []
    for record, advantage in zip(records, advantages.tolist(), strict=True):
        items += [(e, float(advantage)) for e in tokenize_role(record, tokenizer, role=CRITIC) if sum(e.mask)]
    return items


def play(
    actor: Any, tokenizer: Any, jobs: list[tuple[str, int]], config: CaddieConfig, *, critic: CriticTurns | None, temperature: float
) -> list[dict[str, Any]]:
    """Episodes of the frozen actor at `temperature`, advised by `critic` (None: alone)."""
    return rollout_episodes(
        actor,
        tokenizer,
        jobs,
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=temperature,
        style=config.prompt_style,
        max_prompt_tokens=config.max_prompt_tokens,
        critic=critic,
    )


def evaluate(actor: Any, critic: Any, tokenizer: Any, config: CaddieConfig, *, alone: bool) -> dict[str, float]:
    """Greedy actor and greedy critic on the held-out seeds (eval_*); with `alone`, the actor without it too."""
    jobs = [(config.task, config.eval_seed_start + i) for i in range(config.eval_episodes)]
    critic.eval()
    with torch.no_grad():
        advised = play(actor, tokenizer, jobs, config, critic=config.critic_turns(critic, temperature=0.0), temperature=0.0)
        out = {f"eval_{k}": v for k, v in episode_stats(advised).items()}
        if alone:
            plain = play(actor, tokenizer, jobs, config, critic=None, temperature=0.0)
            out.update({f"eval_no_critic_{k}": v for k, v in episode_stats(plain).items()})
    critic.train()
    return out


def run(config: CaddieConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="caddie", hooks=hooks)
    critic, tokenizer = trainer.model, trainer.tokenizer
    actor, actor_tokenizer = load_model(config.actor or config.model, device=trainer.device, trainable=False)  # a copy: never trained
    check_same_vocabulary(tokenizer, actor_tokenizer)
    reference = reference_policy(trainer, config) if config.kl_coef > 0 else None
    if trainer.step == 0:
        trainer.log(evaluate(actor, critic, tokenizer, config, alone=True))

    while trainer.step < config.max_steps and not trainer.stopping():
        torch.manual_seed(config.seed * 1_000_003 + trainer.step)  # sampling depends only on (seed, step): resumes replay it
        critic.eval()
        with torch.no_grad():
            records = play(
                actor,
                tokenizer,
                pick_jobs(config, trainer.step),
                config,
                critic=config.critic_turns(critic, temperature=config.temperature),
                temperature=config.actor_temperature,
            )
        critic.train()
        rewards = torch.tensor([record_reward(r) or 0.0 for r in records])  # the actor's outcome after the advice
        groups = [i // config.group_size for i in range(len(records))]
        advantages = group_advantages(rewards, groups)
        items = critic_items(records, advantages, tokenizer)
        metrics = step_metrics(records, rewards, groups)
        if not items or (config.kl_coef == 0 and all(a == 0 for _, a in items)):
            metrics.update(trainer.skip_step())  # no critic turn, or none whose outcome differed from its group's
        else:
            prepared = scored_batches(trainer, items, config.grad_accum, reference)  # trainer.model is the critic

            metrics.update(trainer.optimize(prepared, clipped_loss(critic, config, entropy=False)))
            metrics["sampler_logp_gap"] = sampler_gap(prepared)
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(actor, critic, tokenizer, config, alone=False))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()


def step_metrics(records: list[Record], rewards: torch.Tensor, groups: list[int]) -> dict[str, float]:
    """The actor's results with the sampled critic, the share of groups whose outcomes differ (the only ones that
    teach the critic anything), critic turns per episode and characters per advice."""
    advice = [step for record in records for step in role_steps(record, CRITIC)]
    spread = [float(rewards[[i for i, g in enumerate(groups) if g == key]].std()) for key in dict.fromkeys(groups)]
    return {
        **episode_stats(records),
        "reward_std": float(rewards.std()),
        "groups_with_signal": sum(1.0 for s in spread if s > 0) / len(spread),
        "critic_turns": len(advice) / len(records),
        "advice_chars": sum(len(s.get("message") or "") for s in advice) / max(len(advice), 1),
    }
