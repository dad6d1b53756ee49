"""AdvSim2Real: an injection adversary, a task curriculum and the agent co-evolve in a simulator; every evaluated
checkpoint is also played in the real world.

Each round: the curriculum proposes `tasks_per_step` task variants from the environment's generator (the service
desk: a template of the task set x a caller profile; StoreBench's short family: a scenario x its horizon;
training/advsim/adapters.py) with an environment seed from the training range, the adversary composes an injection
for each (goal, framing, placement, style: training/advsim/roles.py), and the agent plays every proposal
`group_size` (= k) times clean and k times injected in the simulator (the service desk's rule-based caller,
StoreBench's frozen engine 1.0.0), sample j of both sides with the same sampling seed.
Rewards: the adversary's is 1 only on a success flip (clean judged a success, injected a failure, on success rates:
training/advsim/rewards.py), the curriculum's is 1 - 2|p - 0.5| for the clean success rate p, the agent's is the
environment's score (GRPO: one group per side of each proposal, clipped surrogate as in grpo.py). `schedule` joint
updates all three every round; alternating updates one role per `alternate_every` rounds (agent, adversary,
curriculum in turn; the others are frozen, and a round without an agent update still counts as a step).

Evaluation (on a saved checkpoint every `eval_every` rounds, and at the end): greedy play of the held-out seeds in
the simulator and in the real world (the service desk with a model as the caller, `real_user_model`; StoreBench's
current engine 2.0.0), clean, under (a) the co-trained
adversary's most likely injection, (b) the attack axis' own styles (never planted in training) and, at the end,
(c) an adversary trained for `final_adversary_rounds` rounds against the final agent; benign utility and guidance
compliance beside them, and `gap_*` = simulator minus real (training/advsim/evaluate.py).

Metrics are prefixed by role: agent_*, adversary_*, curriculum_*, and eval_* for the evaluations. Files: the per-round
state (training/advsim/store.py). A rerun with the same output_dir resumes from its latest checkpoint.

`adversary="fixed"` with `curriculum="uniform"` is the baseline "adversarial training on fixed injections": the same
loop with both proposers frozen at uniform. `adversary="llm"` has a language model (`adversary_model`, lazily
loaded; the GPU configuration) write the text of each injection the categorical role frames (training/advsim/writer.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from environments.records import Record
from training.advsim.adapters import adapter_for, env_of, real_world, sim_world, world_problem
from training.advsim.evaluate import eval_jobs, evaluate_sim_real
from training.advsim.play import PairResult, Proposal, play_pairs
from training.advsim.roles import CategoricalRole
from training.advsim.store import RoundStore, latest_checkpoint
from training.advsim.worlds import ModelPlayer, Player, World
from training.engine import Hooks, RunResult, Trainer, step_generator
from training.modeling import pick_device
from training.onpolicy import tokenized
from training.recipes.grpo import GRPOConfig, clipped_loss, grpo_advantages, reference_policy, scored_batches, training_reward

SCHEDULES = ("joint", "alternating")
ROLES = ("agent", "adversary", "curriculum")
ADVERSARIES = ("learned", "fixed", "llm")
CURRICULA = ("learned", "uniform")


@dataclass
class AdvSimConfig(GRPOConfig):
    MODEL_PATH_FIELDS: ClassVar[tuple[str, ...]] = (*GRPOConfig.MODEL_PATH_FIELDS, "real_user_model", "adversary_model")
    EVAL_OPTIONAL: ClassVar[bool] = True  # eval_episodes=0 switches the evaluation off here (the on-policy recipes always evaluate)

    task: str = "servicedesk/train"
    """Task set the curriculum draws variants from: the service desk's (simulator: the rule-based caller) or StoreBench's
    (simulator: the frozen engine 1.0.0; "storebench-short/train", the 2-3 day family, is sized for CPU)."""
    tasks_per_step: int = 4
    """Proposals per round: task variants from the curriculum, each with the adversary's injection."""
    group_size: int = 2
    """k: samples per side (clean and injected) of each proposal; the flip is judged on the two success rates."""
    max_turns: int = 12
    """Agent turns per episode before the harness stops it."""
    max_new_tokens: int = 96
    """Token limit of one agent turn."""
    compact_tools: bool = True
    """Prompt style: tools as one `name(args)` line each (the service desk's schemas alone fill a small context)."""
    eval_episodes: int = 4
    """Held-out seeds per evaluation, each played in both worlds clean and under every attack condition (0: none)."""
    eval_every: int = 0
    """Evaluate every N rounds, on the checkpoint saved then (0: only the final checkpoint)."""
    save_every: int = 1
    """Save the agent's checkpoint (with the roles' state) every N rounds; a rerun resumes from the latest."""
    eval_task_set: str = "servicedesk/dev"
    """Task set of the held-out evaluation (templates or scenarios never trained on), of the same environment as `task`."""
    schedule: str = "joint"
    """joint (all three roles update every round) | alternating (agent, adversary, curriculum in turn)."""
    alternate_every: int = 1
    """Rounds per phase of the alternating schedule."""
    adversary: str = "learned"
    """learned (templated components, REINFORCE on flips) | fixed (uniform, never updated) | llm (free text by adversary_model)."""
    adversary_model: str = ""
    """from_pretrained folder of the language model that writes injections when adversary="llm" (loaded only then)."""
    adversary_lr: float = 0.5
    """Step size of the adversary's logits (and of the LLM writer's AdamW)."""
    curriculum: str = "learned"
    """learned (REINFORCE on 1 - 2|p - 0.5|) | uniform (never updated)."""
    curriculum_lr: float = 0.5
    """Step size of the curriculum's logits."""
    profiles: list[str] = field(default_factory=list)
    """Caller behaviour profiles the service desk's curriculum may pick (its difficulty knob; empty: all of them)."""
    role_entropy_coef: float = 0.01
    """Entropy bonus of the adversary's and the curriculum's updates."""
    flip_threshold: float = 0.5
    """A side is judged a success when its success rate reaches this."""
    guidance: bool = True
    """Benign guidance (a billing reference to quote) on in every episode, so compliance is measured."""
    real_user_model: str = ""
    """from_pretrained folder of the model that plays the caller in the real world ("": the agent's start model)."""
    real_user_max_new_tokens: int = 32
    """Token limit of one turn of the real world's model caller."""
    unseen_styles: list[str] = field(default_factory=list)
    """The fixed attack set of the evaluation: the attack axis' own styles, never planted in training (empty: all)."""
    final_adversary_rounds: int = 2
    """Rounds of the adversary trained separately against the final agent (evaluation (c); 0: skip it)."""

    def problems(self) -> list[str]:
        out = super().problems()
        worlds_ok = True
        for name in ("task", "eval_task_set"):
            if problem := world_problem(getattr(self, name)):
                out.append(f"{name}={getattr(self, name)!r}: {problem}")
                worlds_ok = False
        if worlds_ok:
            out += self.environment_problems()
        choices = {"schedule": SCHEDULES, "adversary": ADVERSARIES, "curriculum": CURRICULA}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                out.append(f"{name}={getattr(self, name)!r}: must be one of {', '.join(allowed)}")
        if self.adversary == "llm" and not self.adversary_model:
            out.append("adversary_model='': adversary='llm' needs the writer model's from_pretrained folder")
        for name in ("alternate_every", "real_user_max_new_tokens"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        for name in ("adversary_lr", "curriculum_lr", "role_entropy_coef", "final_adversary_rounds"):
            if getattr(self, name) < 0:
                out.append(f"{name}={getattr(self, name)!r}: must not be negative")
        if not 0 < self.flip_threshold <= 1:
            out.append(f"flip_threshold={self.flip_threshold!r}: must be in (0, 1]")
        if self.generation != "local":
            out.append(f"generation={self.generation!r}: advsim samples with the trainer's model only (local)")
        return out

    def environment_problems(self) -> list[str]:
        """What the environment's adapter refuses: the evaluation in another environment, unknown styles or profiles."""
        if env_of(self.task) != env_of(self.eval_task_set):
            return [
                f"eval_task_set={self.eval_task_set!r}: evaluate in the training environment ({env_of(self.task)}), not {env_of(self.eval_task_set)}"
            ]
        adapter = adapter_for(self.task)
        out = adapter.problems(self)
        if bad := [s for s in self.unseen_styles if s not in adapter.axis_styles]:
            out.append(
                f"unseen_styles={self.unseen_styles!r}: {bad} are not attack styles of {adapter.env}; choose from {list(adapter.axis_styles)}"
            )
        return out

    def styles(self) -> list[str]:
        """The evaluation's unseen attack styles: those given, or every style of the environment's attack axis."""
        return list(self.unseen_styles or adapter_for(self.task).axis_styles)


def phase(config: AdvSimConfig, round_: int) -> tuple[str, ...]:
    """The roles that update in this round (1-based)."""
    if config.schedule == "joint":
        return ROLES
    return (ROLES[((round_ - 1) // config.alternate_every) % len(ROLES)],)


def new_roles(config: AdvSimConfig, name: str = "adversary") -> tuple[CategoricalRole, CategoricalRole]:
    adapter = adapter_for(config.task)
    return CategoricalRole(name, adapter.adversary_heads), CategoricalRole("curriculum", adapter.curriculum_heads(config.task, config))


def propose(
    config: AdvSimConfig, curriculum: CategoricalRole, adversary: CategoricalRole, generator: torch.Generator, writer: Any = None
) -> list[Proposal]:
    """The round's proposals: task variants, environment seeds and injections, a pure function of the generator."""
    adapter = adapter_for(config.task)
    n = config.tasks_per_step
    tasks, attacks = curriculum.sample(n, generator), adversary.sample(n, generator)
    seeds = torch.randint(config.train_seeds, (n,), generator=generator).tolist()
    injections = [adapter.injection(a) for a in attacks]
    if writer is not None:
        injections = writer.write(attacks, injections)
    proposals = []
    for t, a, s, inj in zip(tasks, attacks, seeds, injections, strict=True):
        task, options = adapter.variant(t)
        proposals.append(
            Proposal(task=task, seed=config.train_seed_start + s, options=options, injection=inj, curriculum_choice=t, adversary_choice=a)
        )
    return proposals


def seed_base(config: AdvSimConfig, round_: int, salt: int = 0) -> int:
    return (config.seed * 1_000_003 + round_ * 1_009 + salt) % (2**31)


def pair_metrics(pairs: list[PairResult], prefix: str = "") -> dict[str, float]:
    n = max(len(pairs), 1)
    return {
        f"{prefix}adversary_flip_rate": sum(p.flip for p in pairs) / n,
        f"{prefix}curriculum_reward_mean": sum(p.curriculum for p in pairs) / n,
        f"{prefix}agent_clean_success": sum(p.clean_rate for p in pairs) / n,
        f"{prefix}agent_injected_success": sum(p.injected_rate for p in pairs) / n,
    }


def train_fresh_adversary(
    player: Player, config: AdvSimConfig, world: World, curriculum: CategoricalRole, *, rounds: int, store: RoundStore | None = None
) -> tuple[CategoricalRole, dict[str, float]]:
    """Evaluation (c): a new adversary trained for `rounds` rounds against the frozen agent (the curriculum frozen too)."""
    fresh = CategoricalRole("fresh_adversary", adapter_for(config.task).adversary_heads)
    metrics: dict[str, float] = {}
    for r in range(1, rounds + 1):
        generator = step_generator(config.seed + 7_919, r)
        proposals = propose(config, curriculum, fresh, generator)
        pairs, records = play_pairs(
            player,
            proposals,
            k=config.group_size,
            seed_base=seed_base(config, r, salt=7_919),
            world=world,
            threshold=config.flip_threshold,
            guidance=config.guidance,
            tag=f"fresh{r:04d}",
        )
        metrics = fresh.update(
            [p.adversary_choice for p in proposals], [p.flip for p in pairs], lr=config.adversary_lr, entropy_coef=config.role_entropy_coef
        )
        metrics["fresh_adversary_flip_rate"] = sum(p.flip for p in pairs) / len(pairs)
        if store is not None:
            store.write_eval(f"fresh-round-{r:04d}", metrics, records, {"pairs": [p.to_dict() for p in pairs], "role": fresh.state()})
    return fresh, metrics


def worlds_for(config: AdvSimConfig, device: str) -> list[World]:
    """[simulator, real world] of the task's environment (the service desk's real caller: real_user_model or the start model)."""
    user = config.real_user_model or config.model
    return [sim_world(config.task), real_world(config.task, user_model=user, device=device, max_new_tokens=config.real_user_max_new_tokens)]


def coadversary(config: AdvSimConfig, role: CategoricalRole) -> dict[str, Any]:
    """A trained adversary's most likely injection: its greedy play in the evaluation."""
    return adapter_for(config.task).injection(role.mode())


def evaluate_checkpoint(
    player: Player, config: AdvSimConfig, worlds: list[World], adversaries: dict[str, dict[str, Any]], seeds: list[int] | None = None
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    seeds = seeds if seeds is not None else list(range(config.eval_seed_start, config.eval_seed_start + config.eval_episodes))
    jobs = eval_jobs(config.eval_task_set, seeds)
    return evaluate_sim_real(player, worlds, jobs, adversaries=adversaries, styles=config.styles(), guidance=config.guidance)


def resumed(config: AdvSimConfig) -> AdvSimConfig:
    """The config with resume_from set to output_dir's latest advsim checkpoint, when it has one and none was given."""
    if config.resume_from:
        return config
    latest = latest_checkpoint(config.output_dir, "advsim")
    return dataclasses.replace(config, resume_from=latest) if latest else config


def agent_update(trainer: Trainer, config: AdvSimConfig, records: list[Record], reference: Any) -> dict[str, float]:
    """One GRPO step on the round's rollouts (groups of k: each side of each proposal); metrics prefixed agent_."""
    rewards = torch.tensor([training_reward(r, config.reward_component) for r in records])
    advantages, _ = grpo_advantages(records, rewards, config)
    items = [(episode, float(advantages[index])) for index, episode in tokenized(records, trainer.tokenizer)]
    if not items:
        return {f"agent_{k}": v for k, v in trainer.skip_step().items()}
    prepared = scored_batches(trainer, items, config.grad_accum, reference)
    metrics = trainer.optimize(prepared, clipped_loss(trainer.model, config, entropy=True))
    metrics["reward_mean"] = float(rewards.mean())
    return {f"agent_{k}": v for k, v in metrics.items()}


def run(config: AdvSimConfig, hooks: Hooks | None = None) -> RunResult:
    config = resumed(config)
    trainer = Trainer(config, recipe="advsim", hooks=hooks)
    store = RoundStore(config.output_dir)
    reference = reference_policy(trainer, config) if config.kl_coef > 0 else None
    adversary, curriculum = new_roles(config)
    if saved := trainer.state.get("advsim"):
        adversary, curriculum = CategoricalRole.from_state(saved["adversary"]), CategoricalRole.from_state(saved["curriculum"])
    writer = None
    if config.adversary == "llm":
        from training.advsim.writer import LLMWriter

        writer = LLMWriter(
            config.adversary_model, adapter_for(config.task), device=str(trainer.device), lr=config.adversary_lr, seed=config.seed
        )
    player = ModelPlayer(trainer.model, trainer.tokenizer, config)
    worlds = worlds_for(config, str(pick_device(config.device)))

    while trainer.step < config.max_steps and not trainer.stopping():
        round_ = trainer.step + 1
        proposals = propose(config, curriculum, adversary, step_generator(config.seed, round_), writer)
        pairs, records = play_pairs(
            player,
            proposals,
            k=config.group_size,
            seed_base=seed_base(config, round_),
            world=worlds[0],
            threshold=config.flip_threshold,
            guidance=config.guidance,
            tag=f"r{round_:06d}",
        )
        updating = phase(config, round_)
        metrics = pair_metrics(pairs)
        if "agent" in updating:
            metrics.update(agent_update(trainer, config, records, reference))
        else:
            metrics.update({f"agent_{k}": v for k, v in trainer.skip_step().items()})
        choices, flips = [p.adversary_choice for p in proposals], [p.flip for p in pairs]
        if "adversary" in updating and config.adversary != "fixed":
            metrics.update(adversary.update(choices, flips, lr=config.adversary_lr, entropy_coef=config.role_entropy_coef))
            if writer is not None:
                metrics.update(writer.update([p.injection["text"] for p in proposals], flips))
        if "curriculum" in updating and config.curriculum == "learned":
            metrics.update(
                curriculum.update(
                    [p.curriculum_choice for p in proposals],
                    [p.curriculum for p in pairs],
                    lr=config.curriculum_lr,
                    entropy_coef=config.role_entropy_coef,
                )
            )
        trainer.state["advsim"] = {"adversary": adversary.state(), "curriculum": curriculum.state()}
        store.write_round(
            round_,
            {
                "phase": list(updating),
                "proposals": [dataclasses.asdict(p) for p in proposals],
                "pairs": [p.to_dict() for p in pairs],
                "metrics": metrics,
                "roles": trainer.state["advsim"],
            },
            records,
        )
        last = trainer.step == config.max_steps
        due = config.eval_episodes and config.eval_every and trainer.step % config.eval_every == 0 and not last
        if due:
            trainer.save()
            figures, eval_records = evaluate_checkpoint(player, config, worlds, {"coadv": coadversary(config, adversary)})
            store.write_eval(f"step-{trainer.step:06d}", figures, eval_records)
            metrics.update({f"eval_{k}": v for k, v in figures.items()})
        else:
            trainer.maybe_save()
        trainer.log(metrics)

    if trainer.step == config.max_steps and config.eval_episodes and store.eval("final") is None:
        trainer.log(final_evaluation(player, config, worlds, adversary, curriculum, store))
    return trainer.finish()


def evaluation_adversaries(
    player: Player,
    config: AdvSimConfig,
    sim: World,
    curriculum: CategoricalRole,
    coadv: CategoricalRole | None = None,
    store: RoundStore | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, float]]:
    """The injections an evaluation plays besides the unseen styles, and the fresh adversary's training metrics:
    (a) `coadv`'s most likely one when a co-trained adversary is given, (c) one trained for final_adversary_rounds
    rounds against the frozen `player` in the simulator (none when that is 0)."""
    adversaries = {"coadv": coadversary(config, coadv)} if coadv is not None else {}
    fresh_metrics: dict[str, float] = {}
    if config.final_adversary_rounds:
        fresh, fresh_metrics = train_fresh_adversary(player, config, sim, curriculum, rounds=config.final_adversary_rounds, store=store)
        adversaries["fresh"] = coadversary(config, fresh)
    return adversaries, fresh_metrics


def final_evaluation(
    player: Player, config: AdvSimConfig, worlds: list[World], adversary: CategoricalRole, curriculum: CategoricalRole, store: RoundStore
) -> dict[str, float]:
    """(a), (b) and (c) on the final agent, in both worlds; written as evals/final.json and returned as eval_* metrics."""
    adversaries, fresh_metrics = evaluation_adversaries(player, config, worlds[0], curriculum, adversary, store=store)
    figures, records = evaluate_checkpoint(player, config, worlds, adversaries)
    store.write_eval("final", figures, records, {"adversaries": adversaries, "fresh_training": fresh_metrics})
    return {f"eval_{k}": v for k, v in figures.items()}


__all__ = [
    "AdvSimConfig",
    "run",
    "phase",
    "propose",
    "train_fresh_adversary",
    "evaluation_adversaries",
    "evaluate_checkpoint",
    "final_evaluation",
]
