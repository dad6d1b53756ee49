"""Idea critics at work on environments/improve: screening under a fixed verification budget, and a reward model that
pays for verification only where the critic is unsure.

    result = screened_search(env, verifications=2, order="critic", critic=heuristic_critic)   # -> {"composite", ...}
    routed = routed_rewards(scores, verify, threshold=0.5, band=0.1)                            # -> Routed

Screening: the episode proposes the same SCREEN_PROPOSALS random configs the environment's screened searches
propose for its seed (anchors.ScreenedSearch's stream), chooses `verifications` of them to verify, through the
environment's own `verify` tool, on a budget of exactly verifications x verify_cost, adopts the best verified one
when it beats the baseline, and finishes; the environment's score (held-out test R^2, normalised) is the solution
quality. The orders:
- critic: the critic's highest-scoring candidates (ideas.select; ties in proposal order);
- random: drawn at random (ideas.random_select, seeded by `pick_seed`);
- in_order: no screening, the candidates verified in the order they were proposed.

Reward-model mode (policy training with a critic for a reward): a proposal whose critic score s lies within
`band` of `threshold` (|s - threshold| <= band) is uncertain and is verified for real, its reward the verified
label (1 when it reaches the label threshold's share of the attainable gain, else 0); any other proposal is
rewarded with s itself, unverified. Both rewards estimate the same thing, P(the proposal pays off), so they mix
on one scale. band = 0 verifies (almost) nothing, band >= max(threshold, 1 - threshold) everything;
`verifications` counts what was paid.
"""

from __future__ import annotations

import copy
import dataclasses
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from environments.core import Env, ToolCall
from environments.improve.anchors import SCREEN_PROPOSALS, random_config
from environments.improve.ideas import IdeaCritic, random_select, select
from environments.improve.model import evaluate
from training.recipes.ideacritic import label_of, normalised_gain

ORDERS = ("critic", "random", "in_order")


def screening_changes(n_features: int, seed: int) -> list[dict[str, Any]]:
    """The proposals of anchors.ScreenedSearch for this seed: every screening order sees the same ones (paired)."""
    rng = random.Random(f"improve/screen/{seed}")
    return [random_config(rng, n_features) for _ in range(SCREEN_PROPOSALS)]


def choose(ids: Sequence[str], scores: Sequence[float] | None, k: int, order: str, rng: random.Random) -> list[str]:
    """The k candidates to verify, in the order they are verified."""
    if order == "critic":
        assert scores is not None, "critic screening needs the critic's scores"
        return select(ids, scores, budget=float(k), cost=1.0)
    if order == "random":
        return random_select(ids, float(k), 1.0, rng)
    assert order == "in_order", f"order must be one of {ORDERS}, got {order!r}"
    return list(ids[:k])


def _call(env: Env, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = env.step(ToolCall(name, arguments, f"{name}-{env.world.calls}"))  # type: ignore[attr-defined]
    assert not result.is_error, f"{name}({arguments}) was refused: {result.content}"
    return dict(result.content)


def screened_search(env: Env, *, verifications: int, order: str, critic: IdeaCritic | None = None, pick_seed: int = 0) -> dict[str, Any]:
    """One screened episode on a copy of `env` (module docstring) whose budget pays for exactly `verifications`:
    {"composite", "verifications" (as the environment counted them), "chosen", "adopted"}. `env` itself is untouched
    (its dataset's verification cache is shared, so repeated configs are not retrained)."""
    assert verifications >= 1, f"verifications must be at least 1, got {verifications}"
    cost = float(env.task.spec["verify_cost"])
    budgeted = copy.copy(env)  # reset() below gives the copy its own world; data and reference stay shared
    budgeted.task = dataclasses.replace(env.task, spec={**env.task.spec, "budget": verifications * cost})
    budgeted.reset()
    proposed: dict[str, dict[str, Any]] = {}
    for change in screening_changes(budgeted.n_features, env.seed):  # type: ignore[attr-defined]
        content = _call(budgeted, "propose", change)
        proposed.setdefault(content["candidate"], content["config"])  # a repeated config keeps its first id
    ids = list(proposed)
    scores = critic([proposed[i] for i in ids]) if order == "critic" and critic is not None else None
    chosen = choose(ids, scores, verifications, order, random.Random(f"ideacritic/pick/{env.seed}/{pick_seed}"))
    best: tuple[float, str] | None = None
    for candidate in chosen:
        score = _call(budgeted, "verify", {"candidate": candidate})["score"]
        if best is None or score > best[0]:
            best = (score, candidate)
    if best is not None and best[0] > budgeted.world.adopted_score:  # type: ignore[attr-defined]
        _call(budgeted, "adopt", {"candidate": best[1]})
    _call(budgeted, "finish", {})
    final = budgeted.score()
    return {
        "composite": final.composite,
        "verifications": final.details["verifications"],
        "chosen": chosen,
        "adopted": final.details["adopted"],
    }


@dataclass(frozen=True)
class Routed:
    rewards: list[float]
    verified: list[bool]  # True where the reward came from a real verification

    @property
    def verifications(self) -> int:
        return sum(self.verified)


def uncertain(scores: Sequence[float], *, threshold: float, band: float) -> list[bool]:
    """True where the critic's score is within `band` of `threshold` (inclusive): those go to real verification."""
    assert band >= 0, f"band must not be negative, got {band}"
    return [abs(s - threshold) <= band + 1e-12 for s in scores]


def routed_rewards(scores: Sequence[float], verify: Callable[[int], float], *, threshold: float, band: float) -> Routed:
    """Reward per proposal: verify(i) (the real outcome, 0 or 1) where uncertain, else the critic's score."""
    route = uncertain(scores, threshold=threshold, band=band)
    return Routed([verify(i) if r else float(s) for i, (s, r) in enumerate(zip(scores, route, strict=True))], route)


class CriticReward:
    """The reward model of a policy that proposes improve configs: the critic's score, or a real verification for the
    uncertain ones (module docstring). `verifications` counts the verifications paid over the object's life.

        reward = CriticReward(critic, threshold=0.5, band=0.1, label_threshold=0.5)
        rewards = reward(env, configs)          # configs: Config.to_json() dicts proposed on env's task and seed
    """

    def __init__(self, critic: IdeaCritic, *, threshold: float, band: float, label_threshold: float) -> None:
        self.critic, self.threshold, self.band, self.label_threshold = critic, threshold, band, label_threshold
        self.verifications = 0

    def __call__(self, env: Env, configs: list[dict[str, Any]]) -> Routed:
        data, baseline = env.data, env.baseline  # type: ignore[attr-defined]
        base, reference = evaluate(data, baseline, "val"), evaluate(data, env.reference, "val")  # type: ignore[attr-defined]

        def verify(i: int) -> float:
            score = evaluate(data, baseline.changed(configs[i]), "val")  # what the environment's verify tool computes
            return float(label_of(normalised_gain(score, base, reference), self.label_threshold))

        routed = routed_rewards(self.critic(configs), verify, threshold=self.threshold, band=self.band)
        self.verifications += routed.verifications
        return routed
