"""Simulator and real world, and the players that act in them.

    sim = sim_world("servicedesk/train")                         # the frozen, cheaper stand-in (adapters.py, per env)
    real = real_world("servicedesk/train", user_model=path)      # the real one (sim_world, real_world: adapters.py)
    records = player.play(jobs, seeds=[7, 7], world=sim, greedy=False)

The co-evolution trains in the simulator and every checkpoint is evaluated in both, so the sim-to-real gap is a
number. A world says how an episode is built: which engine version (`version`; None: the current one), who fills
the role slots (`slots`; None: the environment's defaults) and whether it runs the benign guidance (`guidance`).

    service desk   sim: its seeded `RuleUser` (the `user` slot's default); real: a language model in that slot
                   (training.policies: `{"kind": "hf", "role": "user"}`, told the goal card)
    StoreBench     sim: the frozen engine 1.0.0 (batch-settled days, kept by its version-aware replay) with the
                   planted content it accepts opt-in; real: the current engine 2.0.0 (the intraday clock). A run of
                   a full scenario is weeks of simulated days: the short family (storebench-short, 2-3 days) is the
                   one sized for CPU co-evolution (training/README.md, "AdvSim2Real")

A player is the agent: `ModelPlayer` samples the model under training with the sampler (training.sampling), one
batched generate per sampling seed (sample j of the clean side and sample j of the injected side are both seeded
s_j, so they draw from the same random stream); `ScriptedPlayer` runs a scripted policy per episode through the
runner (its seed is the sampling seed), for tests and anchors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from environments.core import Env, Policy
from environments.registry import make
from environments.roles import Team

Job = tuple[str, int, dict[str, Any]]  # (task id, environment seed, options)
SlotFactory = Callable[[Env, int], dict[str, Policy]]


@dataclass(frozen=True)
class World:
    name: str  # "sim" | "real"
    slots: SlotFactory | None = None  # None: the environment's default slot players (the rule-based caller)
    describe: dict[str, Any] = field(default_factory=dict)
    version: str | None = None  # the engine version episodes are built with (None: the current engine)
    guidance: bool = True  # whether this world runs the benign guidance (when the config asks for it)


def model_caller(user_model: str, *, device: str, max_new_tokens: int, temperature: float = 0.0) -> SlotFactory:
    """Slots with `user_model` as the conversation's `user` (the service desk's caller)."""
    assert user_model, "the real world's caller needs a model (real_user_model, or the agent's start model)"
    from training.policies import policy_from_config

    config = {
        "kind": "hf",
        "name": "advsim-user",
        "model": user_model,
        "sampling": {"device": device, "temperature": temperature},
        "harness": {"max_new_tokens": max_new_tokens},
    }

    def slots(env: Env, seed: int) -> dict[str, Policy]:
        return {"user": policy_from_config({**config, "role": "user"}, env, seed)}

    return slots


class Player(Protocol):
    def play(self, jobs: list[Job], *, seeds: list[int], world: World, greedy: bool) -> list[dict[str, Any]]: ...


@dataclass
class ModelPlayer:
    """The model under training, through the sampler (the records carry the sampled token ids GRPO trains on)."""

    model: Any
    tokenizer: Any
    config: Any  # an OnPolicyConfig: max_turns, max_new_tokens, temperature, prompt_style, max_prompt_tokens

    def play(self, jobs: list[Job], *, seeds: list[int], world: World, greedy: bool) -> list[dict[str, Any]]:
        from training.sampling import rollout_episodes

        assert len(jobs) == len(seeds), f"{len(jobs)} jobs, {len(seeds)} sampling seeds"
        out: list[dict[str, Any] | None] = [None] * len(jobs)
        was_training = self.model.training
        self.model.eval()
        for seed in sorted(set(seeds)):
            batch = [i for i, s in enumerate(seeds) if s == seed]
            torch.manual_seed(seed)
            records = rollout_episodes(
                self.model,
                self.tokenizer,
                [(jobs[i][0], jobs[i][1]) for i in batch],
                env_options=[jobs[i][2] for i in batch],
                slots=world.slots,
                env_version=world.version,
                max_turns=self.config.max_turns,
                max_new_tokens=self.config.max_new_tokens,
                temperature=0.0 if greedy else self.config.temperature,
                style=self.config.prompt_style,
                max_prompt_tokens=self.config.max_prompt_tokens,
            )
            for i, record in zip(batch, records, strict=True):
                out[i] = record
        self.model.train(was_training)
        return [r for r in out if r is not None]


@dataclass
class ScriptedPlayer:
    """A scripted policy as the agent: `factory(env, sampling_seed)` builds it for each episode."""

    factory: Callable[[Env, int], Policy]
    max_turns: int = 40

    def play(self, jobs: list[Job], *, seeds: list[int], world: World, greedy: bool) -> list[dict[str, Any]]:
        from environments.runner import run_episode

        records = []
        for (task, seed, options), sampling_seed in zip(jobs, seeds, strict=True):
            env = make(task, seed, options=options or None, version=world.version)
            slots = world.slots(env, seed) if world.slots is not None else {}
            records.append(run_episode(env, Team(actor=self.factory(env, sampling_seed), slots=slots), max_steps=self.max_turns))
        return records
