"""FloWright: workflow co-evolution. Roles of a team are trained together, each on its own tokens, by GRPO-style groups
of its own hierarchical, structure-aware reward.

Each step: draw `tasks_per_step` relay seeds (environments/relay.py: toolgym tasks hardened into one workflow-level
episode of `stages` chained stages) and play `group_size` workflow episodes of each (environments.workflow). The plan
is the relay's reference plan, or with generator="model" the model writes it. One model plays every role through
role-conditioned prompts (training/workflow_play.py); roles in `train_roles` are played by the live model, the others
by a frozen copy of the start model (others="frozen", so an untrained teammate stays what it was) or by the live
model too (others="live": it shares the weights, so it changes, but its tokens are never trained).

Rewards: training/workflow_credit.py turns each record into per-role rewards R_r (the outcome, the role's own nodes,
its nodes' dependents; the generator's plan feasibility), weighted by outcome_weight, node_weight, graph_weight and
plan_weight. Advantages: per role and per group (episodes of one relay seed), A = (R - mean) / (std + eps) over the
group's episodes in which the role took a turn (training/credit.group_advantages); an episode where the role never
acted is out of its group. Every turn of role r in episode i carries A_{r,i} on its sampled tokens, and one clipped
surrogate step (training/losses.grpo_loss; old_logp recomputed, so the ratio starts at 1) trains all trained roles'
turns together: the same network learns each role from that role's own credit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from environments.core import EnvError, Policy
from environments.records import Record, Step, record_score
from environments.registry import get_task
from environments.relay import MAX_STAGES, RELAY_ROLES, relay_env
from environments.roles import step_role
from environments.workflow import GENERATOR
from training.config import TrainConfig
from training.config_fields import AggregationFields, ClipFields, HeldOutEvalFields, PromptStyleFields, SamplingFields
from training.credit import group_advantages
from training.data import TokenizedEpisode
from training.engine import Hooks, RunResult, Trainer, step_generator
from training.losses import grpo_loss
from training.modeling import forward_logits, gather_logprobs, load_model, token_logprobs
from training.onpolicy import micro_batches, to_device
from training.role_views import tokenize_role
from training.workflow_credit import CreditWeights, flowright_rewards
from training.workflow_play import ModelRole, play_relays

ROLES = (GENERATOR, *RELAY_ROLES)
PLAN_SOURCES = ("plan", "model")
OTHERS = ("frozen", "live")


@dataclass
class FlowrightConfig(AggregationFields, ClipFields, SamplingFields, HeldOutEvalFields, TrainConfig, PromptStyleFields):
    onpolicy_check: ClassVar[bool] = True  # the trainer logs onpolicy_logprob_diff / onpolicy_kl every step (training.engine)
    MIN_GROUP_SIZE: ClassVar[int] = 2  # each role's GRPO group

    tasks: list[str] = field(default_factory=lambda: ["toolgym/lookup", "toolgym/chain", "toolgym/echo"])
    """Single-agent tasks the relays are made of (environments/relay.py draws each stage from these)."""
    stages: int = 2
    """Stages chained into one relay: the hardening (each opens when the one before is passed)."""
    train_roles: list[str] = field(default_factory=lambda: ["finder", "reporter"])
    """Roles whose own tokens are trained: any of generator, finder, reporter (generator needs generator="model")."""
    generator: str = "plan"
    """Who writes the plan: plan (the relay's reference plan, scripted) | model (the model, as the generator role)."""
    others: str = "frozen"
    """Who plays the roles not trained: frozen (a frozen copy of the start model) | live (the live model, untrained)."""
    outcome_weight: float = 1.0
    """Credit weight of the episode's composite, shared by every role (training/workflow_credit.py)."""
    node_weight: float = 1.0
    """Credit weight of a role's own nodes (the share of those it ran that finished)."""
    graph_weight: float = 1.0
    """Credit weight of a role's nodes with their dependents (subtree shares; the generator: the whole graph's)."""
    plan_weight: float = 1.0
    """Credit weight of the plan's feasibility in the generator's reward (the share of its nodes that could run)."""
    tasks_per_step: int = 2
    """Relay seeds per optimizer step."""
    group_size: int = 4
    """Workflow episodes per relay seed: each role's GRPO group."""
    max_new_tokens: int = 48
    """Token limit of a team role's turn."""
    plan_max_new_tokens: int = 384
    """Token limit of the generator's turn (a plan in JSON), with generator="model"."""
    max_prompt_tokens: int = 2048
    """A turn whose prompt is longer fails its node."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not self.tasks:
            out.append("tasks=[]: give at least one single-agent task id")
        for task in self.tasks:
            try:
                get_task(task)
            except EnvError:
                out.append(f"tasks={self.tasks!r}: {task!r} is not a registered task")
        if not 1 <= self.stages <= MAX_STAGES:
            out.append(f"stages={self.stages!r}: must be from 1 to {MAX_STAGES}")
        if not self.train_roles or any(r not in ROLES for r in self.train_roles):
            out.append(f"train_roles={self.train_roles!r}: give one or more of {', '.join(ROLES)}")
        if self.generator not in PLAN_SOURCES:
            out.append(f"generator={self.generator!r}: must be one of {', '.join(PLAN_SOURCES)}")
        elif GENERATOR in self.train_roles and self.generator != "model":
            out.append(f"generator={self.generator!r}: training the generator needs generator='model'")
        if self.others not in OTHERS:
            out.append(f"others={self.others!r}: must be one of {', '.join(OTHERS)}")
        try:
            CreditWeights(outcome=self.outcome_weight, node=self.node_weight, graph=self.graph_weight, plan=self.plan_weight)
        except AssertionError as exc:
            out.append(f"outcome_weight/node_weight/graph_weight/plan_weight: {exc}")
        for name in ("tasks_per_step", "plan_max_new_tokens"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        return out

    @property
    def credit_weights(self) -> CreditWeights:
        return CreditWeights(outcome=self.outcome_weight, node=self.node_weight, graph=self.graph_weight, plan=self.plan_weight)


def role_advantages(rewards: list[dict[str, float | None]], groups: list[int], roles: list[str]) -> dict[str, list[float | None]]:
    """Per role, each record's group-relative advantage over the records of its group in which the role has a reward
    (None where it has none: it took no turn there)."""
    out: dict[str, list[float | None]] = {}
    for role in roles:
        members = [i for i, r in enumerate(rewards) if r.get(role) is not None]
        column: list[float | None] = [None] * len(rewards)
        if members:
            values = torch.tensor([float(rewards[i][role]) for i in members])  # type: ignore[arg-type]
            for i, a in zip(members, group_advantages(values, [groups[i] for i in members]).tolist(), strict=True):
                column[i] = a
        out[role] = column
    return out


def role_items(records: list[Record], advantages: dict[str, list[float | None]], tokenizer: Any) -> list[tuple[TokenizedEpisode, float]]:
    """(one role turn's sequence, its advantage) for every sampled turn of every trained role with an advantage. The
    plan's instruction steps carry the role of their node but are not its turns, and a turn without sampled ids
    (a scripted player) is not on-policy: neither is trained."""
    items = []
    for role, column in advantages.items():
        for record, advantage in zip(records, column, strict=True):
            if advantage is None:
                continue
            turns = {**record, "steps": [s for s in record["steps"] if step_role(s) != role or _sampled_turn(s)]}
            items += [(e, advantage) for e in tokenize_role(turns, tokenizer, role=role) if sum(e.mask)]
    return items


def _sampled_turn(step: Step) -> bool:
    return step["source"] == "agent" and bool(step.get("token_ids")) and bool(step.get("prompt_token_ids"))


def relay_players(
    config: FlowrightConfig, live: Any, frozen: Any, tokenizer: Any, *, temperature: float
) -> tuple[dict[str, Policy], Policy | None]:
    """The team (finder, reporter) and the generator (None: the reference plan) for one batch of episodes."""
    description = relay_env(config.tasks, 0, stages=config.stages).task.description

    def player(role: str) -> ModelRole:
        model = live if role in config.train_roles or config.others == "live" else frozen
        limit = config.plan_max_new_tokens if role == GENERATOR else config.max_new_tokens
        return ModelRole(
            model,
            tokenizer,
            role=role,
            env_name="relay",
            description=description,
            style=config.prompt_style,
            max_new_tokens=limit,
            temperature=temperature,
            max_prompt_tokens=config.max_prompt_tokens,
        )

    return {role: player(role) for role in RELAY_ROLES}, player(GENERATOR) if config.generator == "model" else None


def workflow_stats(records: list[Record], weights: CreditWeights, prefix: str = "") -> dict[str, float]:
    """workflow_success (every stage passed), reward_mean (composite), plan_valid, nodes_done (share of all plan nodes)
    and reward_<role> (the mean FloWright reward where the role took a turn) over the records."""
    n = max(len(records), 1)
    nodes = [node for r in records for node in (r["header"].get("workflow") or {}).get("nodes") or []]
    out = {
        "workflow_success": sum(bool(record_score(r)["passed"]) for r in records) / n,
        "reward_mean": sum(float(record_score(r)["composite"]) for r in records) / n,
        "plan_valid": sum(bool((r["header"].get("workflow") or {}).get("graph")) for r in records) / n,
        "nodes_done": sum(node["status"] == "done" for node in nodes) / max(len(nodes), 1),
    }
    rewards = [flowright_rewards(r, weights) for r in records]
    for role in ROLES:
        values = [float(v) for r in rewards if (v := r.get(role)) is not None]
        if values:  # a role that never took a turn has no reward to report
            out[f"reward_{role}"] = sum(values) / len(values)
    return {f"{prefix}{k}": v for k, v in out.items()}


def evaluate(config: FlowrightConfig, live: Any, frozen: Any, tokenizer: Any) -> dict[str, float]:
    """Greedy play of the held-out relays: workflow_stats with the eval_ prefix."""
    if not config.eval_episodes:
        return {}
    live.eval()
    team, generator = relay_players(config, live, frozen, tokenizer, temperature=0.0)
    seeds = [config.eval_seed_start + i for i in range(config.eval_episodes)]
    records = play_relays(seeds, players=team, generator=generator, tasks=config.tasks, stages=config.stages)
    live.train()
    return workflow_stats(records, config.credit_weights, prefix="eval_")


def pick_relays(config: FlowrightConfig, step: int) -> list[int]:
    """Relay seeds of a step, each repeated group_size times; a pure function of (seed, step)."""
    draws = torch.randint(config.train_seeds, (config.tasks_per_step,), generator=step_generator(config.seed, step)).tolist()
    return [config.train_seed_start + d for d in draws for _ in range(config.group_size)]


def run(config: FlowrightConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="flowright", hooks=hooks)
    model, tokenizer, pad_id, device = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id, trainer.device
    untrained = [r for r in (*RELAY_ROLES, *([GENERATOR] if config.generator == "model" else [])) if r not in config.train_roles]
    frozen = load_model(config.model, device=device, trainable=False)[0] if untrained and config.others == "frozen" else model
    if trainer.step == 0:
        trainer.log(evaluate(config, model, frozen, tokenizer))

    while trainer.step < config.max_steps and not trainer.stopping():
        torch.manual_seed(config.seed * 1_000_003 + trainer.step)  # sampling depends only on (seed, step)
        model.eval()
        team, generator = relay_players(config, model, frozen, tokenizer, temperature=config.temperature)
        jobs = pick_relays(config, trainer.step)
        records = play_relays(jobs, players=team, generator=generator, tasks=config.tasks, stages=config.stages)
        model.train()
        rewards = [flowright_rewards(r, config.credit_weights) for r in records]
        advantages = role_advantages(rewards, [i // config.group_size for i in range(len(records))], list(config.train_roles))
        items = role_items(records, advantages, tokenizer)
        stats = workflow_stats(records, config.credit_weights)
        stats.update({f"turns_{role}": float(sum(e.meta.get("role") == role for e, _ in items)) for role in config.train_roles})
        if not items:  # no trained role took a turn (an invalid plan everywhere): nothing to train on
            metrics = trainer.skip_step()
        else:
            prepared = []
            with torch.no_grad():  # the policy before this update, scored once
                for chunk in micro_batches(items, config.grad_accum):
                    batch = to_device([e for e, _ in chunk], pad_id, device)
                    batch["advantages"] = torch.tensor([a for _, a in chunk], device=device)
                    batch["old_logp"] = token_logprobs(model, batch["input_ids"], batch["attention_mask"])
                    prepared.append(batch)

            def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
                logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])[:, :-1]  # (B, T-1, V)
                logp = gather_logprobs(logits, batch["input_ids"][:, 1:])  # (B, T-1)
                return grpo_loss(
                    logp,
                    batch["old_logp"],
                    batch["advantages"],
                    batch["mask"][:, 1:],
                    clip_low=config.clip_low,
                    clip_high=config.clip_high,
                    aggregation=config.aggregation,
                )

            metrics = trainer.optimize(prepared, loss_fn)
        metrics.update(stats)
        if trainer.step == config.max_steps or (config.eval_every and trainer.step % config.eval_every == 0):
            metrics.update(evaluate(config, model, frozen, tokenizer))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()


__all__ = ["FlowrightConfig", "role_advantages", "role_items", "run", "workflow_stats"]
