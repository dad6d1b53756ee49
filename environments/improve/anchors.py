"""Scripted improve policies: do-nothing, random-valid (random proposals), greedy (coordinate search), oracle
(reads the hidden optimum), and the screened searches: critic-guided (an idea critic picks what to verify)
and random-select (the same proposals, verified at random), which the README compares at equal budget.

Each policy is built for one env and seed (`factory(env, seed)`) and keeps its own plan; what it learns from
the environment it reads from the last step's results.
"""

from __future__ import annotations

import json
import random
from abc import abstractmethod
from typing import Any

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.improve.ideas import IdeaCritic, OracleCritic, heuristic_critic, random_select, select
from environments.improve.model import SPACE
from environments.records import Step
from environments.roles import CRITIC

SCREEN_PROPOSALS = 12  # how many candidates a screened search proposes before choosing what to verify


def _last_content(history: list[Step]) -> list[dict[str, Any]]:
    results = history[-1].get("results") or [] if history else []
    return [r["content"] for r in results if isinstance(r.get("content"), dict) and not r.get("is_error")]


def _call(name: str, arguments: dict[str, Any], history: list[Step], i: int = 0) -> ToolCall:
    return ToolCall(name, arguments, f"c{len(history)}_{i}")


def random_change(rng: random.Random, n_features: int) -> dict[str, Any]:
    """One or two hyperparameters set to random values, sometimes a random feature subset."""
    names = rng.sample(sorted(SPACE), rng.choice((1, 2)))
    change: dict[str, Any] = {name: rng.choice(SPACE[name]) for name in names}
    if rng.random() < 0.3:
        change["features"] = sorted(rng.sample(range(n_features), rng.randint(max(1, n_features // 2), n_features)))
    return change


def random_config(rng: random.Random, n_features: int) -> dict[str, Any]:
    """Every hyperparameter drawn at random (a bold idea rather than a small step), sometimes a feature subset."""
    change = {name: rng.choice(SPACE[name]) for name in sorted(SPACE)}
    if rng.random() < 0.3:
        change["features"] = sorted(rng.sample(range(n_features), rng.randint(max(1, n_features // 2), n_features)))
    return change


class DoNothing(Policy):
    name = "improve-do-nothing"

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        return Action(tool_calls=[_call("finish", {}, history)], stop=True)


class _Sequential(Policy):
    """Propose a change, verify it, adopt it when it beats the adopted score; until the budget is spent."""

    def __init__(self, env: Any, seed: int) -> None:
        self.n_features = env.n_features
        self.budget, self.cost = float(env.task.spec["budget"]), float(env.task.spec["verify_cost"])
        self.best = env.world.adopted_score
        self.adopted_features = list(env.world.adopted.features)
        self.rng = random.Random(f"improve/anchor/{self.name}/{seed}")

    @abstractmethod
    def next_change(self) -> dict[str, Any] | None:
        """The next change to propose, or None when this anchor has nothing left to try."""

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        for content in _last_content(history):
            if "budget_left" in content:
                self.budget = content["budget_left"]
            if "candidate" in content and content.get("score") is None and self.budget + 1e-9 >= self.cost:
                return Action(tool_calls=[_call("verify", {"candidate": content["candidate"]}, history)])
            if "candidate" in content and content.get("score") is not None and content["score"] > self.best:
                self.best = content["score"]
                return Action(tool_calls=[_call("adopt", {"candidate": content["candidate"]}, history)])
            if "adopted" in content and "config" in content:
                self.adopted_features = content["config"]["features"]
        change = self.next_change() if self.budget + 1e-9 >= self.cost else None
        if change is None:
            return Action(tool_calls=[_call("finish", {}, history)], stop=True)
        return Action(tool_calls=[_call("propose", change, history)])


class RandomValid(_Sequential):
    """Random proposals, each verified, the better ones adopted: the floor a search has to beat."""

    name = "improve-random-valid"

    def next_change(self) -> dict[str, Any] | None:
        return random_change(self.rng, self.n_features)


class Greedy(_Sequential):
    """Coordinate search from the baseline: train longer, raise the learning rate, add squares, lower the
    penalty, then drop features one at a time; each move kept only when its validation score improves."""

    name = "improve-greedy"

    def __init__(self, env: Any, seed: int) -> None:
        super().__init__(env, seed)
        self.plan: list[dict[str, Any]] = [
            {"epochs": 100},
            {"lr": 0.03},
            {"lr": 0.1},
            {"lr": 0.3},
            {"degree": 2},
            {"reg": 0.01},
            {"reg": 0.0},
        ]
        self.drop = 0

    def next_change(self) -> dict[str, Any] | None:
        if self.plan:
            return self.plan.pop(0)
        while self.drop < self.n_features:
            feature, self.drop = self.drop, self.drop + 1
            kept = [f for f in self.adopted_features if f != feature]
            if kept and len(kept) < len(self.adopted_features):
                return {"features": kept}
        return None


class Oracle(Policy):
    """Reads the environment's hidden optimum, verifies and adopts it: the score's 1 by construction."""

    name = "improve-oracle"

    def __init__(self, env: Any, seed: int) -> None:
        self.change = env.reference.to_json()
        self.steps = iter(("propose", "verify", "adopt", "finish"))

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        name = next(self.steps, "finish")
        candidate = next((c["candidate"] for c in _last_content(history) if "candidate" in c), "c1")
        arguments = {"propose": self.change, "verify": {"candidate": candidate}, "adopt": {"candidate": candidate}}.get(name, {})
        return Action(tool_calls=[_call(name, arguments, history)], stop=name == "finish")


class ScreenedSearch(Policy):
    """Propose SCREEN_PROPOSALS random configs at once, choose which to verify (with an idea critic, or at random),
    verify those, adopt the best, finish. With a critic, its scoring is a step of role "critic" (no env call)
    whose message is {"scores": {candidate: score}, "selected": [...]}."""

    def __init__(self, env: Any, seed: int, *, critic: IdeaCritic | None, name: str) -> None:
        self.name = name
        self.critic = critic
        self.budget, self.cost = float(env.task.spec["budget"]), float(env.task.spec["verify_cost"])
        rng = random.Random(f"improve/screen/{seed}")  # one stream for every selector: equal proposals, a paired comparison
        self.changes = [random_config(rng, env.n_features) for _ in range(SCREEN_PROPOSALS)]
        self.pick_rng = random.Random(f"improve/screen-pick/{seed}")
        self.queue: list[str] | None = None
        self.best: tuple[float, str] | None = None
        self.phase = "propose"

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        contents = _last_content(history)
        if self.phase == "propose":
            self.phase = "screen"
            return Action(tool_calls=[_call("propose", change, history, i) for i, change in enumerate(self.changes)])
        if self.phase == "screen":
            proposed = {c["candidate"]: c["config"] for c in contents if "candidate" in c}
            ids = list(proposed)  # duplicates collapse onto one id
            self.phase = "verify"
            if self.critic is None:
                self.queue = random_select(ids, self.budget, self.cost, self.pick_rng)
            else:
                scores = self.critic([proposed[i] for i in ids])
                self.queue = select(ids, scores, self.budget, self.cost)
                message = json.dumps({"scores": dict(zip(ids, scores, strict=True)), "selected": self.queue})
                return Action(message=message, meta={"role": CRITIC})
        for c in contents:
            if c.get("score") is not None and "candidate" in c and (self.best is None or c["score"] > self.best[0]):
                self.best = (c["score"], c["candidate"])
        if self.queue:
            return Action(tool_calls=[_call("verify", {"candidate": self.queue.pop(0)}, history)])
        if self.phase == "verify" and self.best is not None:
            self.phase = "adopt"
            return Action(tool_calls=[_call("adopt", {"candidate": self.best[1]}, history)])
        return Action(tool_calls=[_call("finish", {}, history)], stop=True)


def critic_guided(env: Any, seed: int) -> Policy:
    return ScreenedSearch(env, seed, critic=heuristic_critic, name="improve-critic-guided")


def random_select_anchor(env: Any, seed: int) -> Policy:
    return ScreenedSearch(env, seed, critic=None, name="improve-random-select")


def oracle_critic_guided(env: Any, seed: int) -> Policy:
    return ScreenedSearch(env, seed, critic=OracleCritic(env), name="improve-oracle-critic")


class Explorer(Policy):
    """A workflow builder stand-in: proposes random changes and verifies each until the budget is spent, then
    stops its node; it never adopts or finishes (that is the executor's node)."""

    name = "improve-explorer"

    def __init__(self, env: Any, seed: int) -> None:
        self.n_features, self.cost = env.n_features, float(env.task.spec["verify_cost"])
        self.budget = float(env.task.spec["budget"])
        self.rng = random.Random(f"improve/explorer/{seed}")

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        for content in _last_content(history):
            self.budget = content.get("budget_left", self.budget)
            if "candidate" in content and content.get("score") is None and self.budget + 1e-9 >= self.cost:
                return Action(tool_calls=[_call("verify", {"candidate": content["candidate"]}, history)])
        if self.budget + 1e-9 < self.cost:
            return Action(message="budget spent", stop=True)
        return Action(tool_calls=[_call("propose", random_config(self.rng, self.n_features), history)])


class AdoptBest(Policy):
    """A workflow executor stand-in: inspects, adopts the best verified candidate if it beats the adopted config, finishes."""

    name = "improve-adopt-best"

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        inspected = next((c for c in _last_content(history) if "candidates" in c), None)
        if inspected is None:
            return Action(tool_calls=[_call("inspect", {}, history)])
        verified = [c for c in inspected["candidates"] if c["score"] is not None and c["score"] > inspected["score"]]
        if verified and inspected["adopted"] != (best := max(verified, key=lambda c: c["score"]))["id"]:
            return Action(tool_calls=[_call("adopt", {"candidate": best["id"]}, history)])
        return Action(tool_calls=[_call("finish", {}, history)], stop=True)
