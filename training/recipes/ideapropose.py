"""A proposer trained with an idea critic for a reward model: GRPO on improve proposals, verification only where the
critic is unsure (training/idea_screening.py's reward-model mode).

Each step draws `seeds_per_step` (task, seed) pairs of `tasks`; the policy answers `group_size` times to a prompt
that shows the baseline and asks for a config (`proposal_prompt`), as one line `lr=.. reg=.. epochs=.. degree=..`
(values from the task's search space; features stay all). Rewards:

- an answer that does not parse to a config in the space: 0, nothing verified;
- otherwise `CriticReward`: the critic's P(yes) (training/recipes/ideacritic.py) when it is outside
  `route_band` of `route_threshold`, else a real verification whose label (1 when the config reaches
  `label_threshold` of the attainable validation gain) is the reward. Without a critic every parsed proposal is
  verified: the all-verification baseline at full cost.

Group-relative advantages and the clipped surrogate on the answer tokens, as the critic's own GRPO phase. Logged:
`reward_mean`, `parsed`, `verifications` (this step), `verifications_total` (kept across a resume),
`verified_share` (of this step's parsed proposals).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from environments.improve.model import SPACE
from environments.registry import get_task, make
from training.config import TrainConfig
from training.config_fields import ClipFields, SamplingFields, TrainSeedFields
from training.credit import group_advantages
from training.data import collate
from training.engine import Hooks, RunResult, Trainer, batch_indices
from training.idea_screening import CriticReward
from training.losses import grpo_loss
from training.modeling import forward_logits, gather_logprobs, token_logprobs
from training.recipes.ideacritic import ModelCritic, answered, improve_task_problem, prompt_ids
from training.sampling import generate

_VALUE = re.compile(r"\b(lr|reg|epochs|degree)\s*=\s*([0-9.eE+-]+)")


def proposal_prompt(n_features: int) -> str:
    space = "; ".join(f"{name} one of {','.join(f'{v:g}' for v in values)}" for name, values in SPACE.items())
    return (
        f"Propose a better configuration for a linear model over {n_features} features, now lr=0.001 reg=0.1 epochs=5 degree=1. "
        f"Answer in one line: lr=.. reg=.. epochs=.. degree=.. ({space})."
    )


def parse_proposal(text: str) -> dict[str, Any] | None:
    """The change the answer names, every one of lr, reg, epochs, degree given once with a value of the space; else None."""
    found: dict[str, Any] = {}
    for name, raw in _VALUE.findall(text):
        if name in found:
            return None
        try:
            value = float(raw)
        except ValueError:
            return None
        allowed = [v for v in SPACE[name] if abs(v - value) <= 1e-9 * max(1.0, abs(v))]
        if not allowed:
            return None
        found[name] = allowed[0]
    return found if set(found) == set(SPACE) else None


@dataclass
class IdeaProposeConfig(ClipFields, SamplingFields, TrainSeedFields, TrainConfig):
    MIN_GROUP_SIZE: ClassVar[int] = 2  # GRPO's group of answers
    MODEL_PATH_FIELDS: ClassVar[tuple[str, ...]] = ("model", "resume_from", "critic")

    critic: str = ""
    """Checkpoint of a trained idea critic (the ideacritic recipe's output); empty: every parsed proposal is verified."""
    tasks: list[str] = field(default_factory=lambda: ["improve/linear", "improve/quadratic"])
    """improve tasks the proposer is trained on."""
    train_seeds: int = 64
    """Training seeds per task."""
    seeds_per_step: int = 4
    """(task, seed) prompts per micro-batch."""
    group_size: int = 4
    """Answers per prompt (the group of the group-relative advantage)."""
    max_new_tokens: int = 32
    """Token limit of an answer."""
    label_threshold: float = 0.5
    """A verified proposal's reward is 1 when it reaches this share of the attainable validation gain, else 0."""
    route_threshold: float = 0.5
    """The critic's decision point: scores near it are uncertain."""
    route_band: float = 0.1
    """Scores within this distance of route_threshold go to real verification (0: almost none; 1: all)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not self.tasks:
            out.append("tasks=[]: name at least one improve task")
        out += [f"tasks={self.tasks!r}: {why}" for t in self.tasks if (why := improve_task_problem(t))]
        if self.seeds_per_step < 1:
            out.append(f"seeds_per_step={self.seeds_per_step!r}: must be at least 1")
        for name in ("label_threshold", "route_threshold"):
            if not 0.0 < getattr(self, name) <= 1.0:
                out.append(f"{name}={getattr(self, name)!r}: must be in (0, 1]")
        if self.route_band < 0:
            out.append(f"route_band={self.route_band!r}: must not be negative")
        return out


def run(config: IdeaProposeConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="ideapropose", hooks=hooks)
    model, tokenizer = trainer.model, trainer.tokenizer
    jobs = [(t, s) for t in config.tasks for s in range(config.train_seed_start, config.train_seed_start + config.train_seeds)]
    envs: dict[tuple[str, int], Any] = {}
    rewarders: dict[str, CriticReward] = {}
    critic_model = critic_tokenizer = None
    if config.critic:
        from training.modeling import load_model

        critic_model, critic_tokenizer = load_model(config.critic, device=trainer.device, trainable=False)
    for task in config.tasks:
        n_features = int(get_task(task).spec["n_features"])
        critic: Any = (
            ModelCritic(critic_model, critic_tokenizer, n_features=n_features, threshold=config.label_threshold)
            if config.critic
            else (lambda configs: [config.route_threshold] * len(configs))  # every score uncertain: all verified
        )
        rewarders[task] = CriticReward(
            critic, threshold=config.route_threshold, band=config.route_band, label_threshold=config.label_threshold
        )
    state = trainer.state
    state.setdefault("verifications_total", 0)

    def batch_for(draw: int) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
        chosen = [jobs[i] for i in batch_indices(len(jobs), config.seeds_per_step, config.seed, draw)]
        prompts = [prompt_ids(tokenizer, proposal_prompt(int(get_task(t).spec["n_features"]))) for t, _ in chosen]
        repeated = [p for p in prompts for _ in range(config.group_size)]
        samples = generate(model, tokenizer, repeated, max_new_tokens=config.max_new_tokens, temperature=config.temperature)
        rewards = torch.zeros(len(samples))
        parsed = verified = 0
        for k, (task, seed) in enumerate(chosen):
            rows = range(k * config.group_size, (k + 1) * config.group_size)
            changes = {i: parse_proposal(tokenizer.decode(samples[i][0], skip_special_tokens=True)) for i in rows}
            valid = [i for i in rows if changes[i] is not None]
            if not valid:
                continue
            if (task, seed) not in envs:
                envs[(task, seed)] = make(task, seed)
            env = envs[(task, seed)]
            configs = [env.baseline.changed(changes[i]).to_json() for i in valid]
            routed = rewarders[task](env, configs)
            for i, reward in zip(valid, routed.rewards, strict=True):
                rewards[i] = reward
            parsed, verified = parsed + len(valid), verified + routed.verifications
        advantages = group_advantages(rewards, [i // config.group_size for i in range(len(repeated))])
        episodes = [answered(prompt, ids) for prompt, (ids, _) in zip(repeated, samples, strict=True)]
        batch = {k: v.to(trainer.device) for k, v in collate(episodes, pad_id=tokenizer.pad_token_id).items()}
        batch["advantages"] = advantages.to(trainer.device)
        with torch.no_grad():  # the policy before this update: the ratio starts at exactly 1
            batch["old_logp"] = token_logprobs(model, batch["input_ids"], batch["attention_mask"])
        return batch, {
            "reward_mean": float(rewards.mean()),
            "parsed": parsed / len(samples),
            "verifications": float(verified),
            "verified_share": verified / parsed if parsed else 0.0,
        }

    def loss_fn(item: tuple[dict[str, torch.Tensor], dict[str, float]]) -> tuple[torch.Tensor, dict[str, float]]:
        batch, stats = item
        logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])[:, :-1]  # (B, T-1, V)
        loss, metrics = grpo_loss(
            gather_logprobs(logits, batch["input_ids"][:, 1:]),
            batch["old_logp"],
            batch["advantages"],
            batch["mask"][:, 1:],
            clip_low=config.clip_low,
            clip_high=config.clip_high,
        )
        return loss, {**metrics, **stats}

    while trainer.step < config.max_steps and not trainer.stopping():
        model.eval()  # sampling and old_logp without dropout; optimize() switches back to train
        batches = [batch_for(trainer.step * config.grad_accum + accum) for accum in range(config.grad_accum)]
        metrics = trainer.optimize(batches, loss_fn)
        metrics["verifications"] = sum(stats["verifications"] for _, stats in batches)  # a sum over micro-batches, not a mean
        state["verifications_total"] += int(metrics["verifications"])
        metrics["verifications_total"] = float(state["verifications_total"])
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()


__all__ = ["IdeaProposeConfig", "parse_proposal", "proposal_prompt", "run"]
