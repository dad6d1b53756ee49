"""Scripted improve-rounds policies: do-nothing, first-try (one draft, then stop), improver (every draft in
turn, or coordinate search when tuning), chain (the verified, strictly improving chain synthesis exports),
final-only (the chain's last solution alone) and oracle (the reference solution).

chain and final-only read the verifier offline (`improvement_chain`): they are data generators, not fair agents.
"""

from __future__ import annotations

from typing import Any

from environments.core import Action, Policy, ToolCall, ToolSpec
from environments.improve.model import evaluate
from environments.improve.problems import CalcProblem, TuneProblem
from environments.records import Step

# Coordinate moves for tuning, in the order the improve env's greedy anchor tries them; feature drops follow.
TUNE_MOVES: tuple[dict[str, Any], ...] = (
    {"epochs": 100},
    {"lr": 0.03},
    {"lr": 0.1},
    {"lr": 0.3},
    {"degree": 2},
    {"reg": 0.01},
    {"reg": 0.0},
)


def _submitted(history: list[Step]) -> dict[str, Any] | None:
    """The last step's round result, when the last step was a successful submit."""
    results = history[-1].get("results") or [] if history else []
    return next((r["content"] for r in results if not r.get("is_error") and "round" in (r.get("content") or {})), None)


def improvement_chain(problem: CalcProblem | TuneProblem, budget: int) -> list[dict[str, Any]]:
    """Solutions, each scored strictly better by the verifier than the one before, at most `budget` of them.
    Calc: the problem's drafts that beat every earlier one. Tune: the configs coordinate search adopts (each
    move, then each feature drop, kept when validation R^2 rises), as whole configs."""
    chain: list[dict[str, Any]] = []
    if isinstance(problem, CalcProblem):
        best = problem.start_score
        for draft in problem.drafts:
            score = problem.check(draft)[0]
            if score > best:
                chain.append(draft)
                best = score
        return chain[-budget:]  # a long ladder keeps its strongest drafts
    config, best = problem.baseline, problem.start_score
    moves = [*TUNE_MOVES, *({"drop": f} for f in range(problem.n_features))]
    for move in moves:
        if "drop" in move:
            kept = tuple(f for f in config.features if f != move["drop"])
            if not kept or len(kept) == len(config.features):
                continue
            candidate = config.changed({"features": kept})
        else:
            candidate = config.changed(move)
        score = evaluate(problem.data, candidate, "val")
        if score > best:
            chain.append(candidate.to_json())
            config, best = candidate, score
    return chain[:budget]


class RoundsPolicy(Policy):
    """Submit the solutions of a plan one round each, while the budget lasts, then finish. With `search` (tuning),
    the plan is coordinate search: after TUNE_MOVES it drops the best config's features one at a time."""

    def __init__(self, env: Any, plan: list[dict[str, Any]], *, name: str, search: bool = False) -> None:
        self.name = name
        self.plan, self.search = list(plan), search
        self.budget = env.budget
        self.best_score = env.problem.start_score
        self.features: list[int] = list(env.problem.baseline.features) if search else []
        self.n_features, self.drop = len(self.features), 0

    def next_solution(self) -> dict[str, Any] | None:
        if self.plan:
            return self.plan.pop(0)
        while self.search and self.drop < self.n_features:  # drop each feature of the best config in turn
            feature, self.drop = self.drop, self.drop + 1
            kept = [f for f in self.features if f != feature]
            if kept and len(kept) < len(self.features):
                return {"features": kept}
        return None

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        if (done := _submitted(history)) is not None:
            self.budget = done["budget_left"]
            if done["score"] > self.best_score:
                self.best_score = done["score"]
                if self.search:
                    self.features = list(done["solution"]["features"])
        solution = self.next_solution() if self.budget > 0 else None
        call_id = f"c{len(history)}"
        if solution is None:
            return Action(tool_calls=[ToolCall("finish", {}, call_id)], stop=True)
        return Action(tool_calls=[ToolCall("submit", solution, call_id)])


def do_nothing(env: Any, seed: int) -> Policy:
    return RoundsPolicy(env, [], name="rounds-do-nothing")


def first_try(env: Any, seed: int) -> Policy:
    first = TUNE_MOVES[0] if env.problem.kind == "tune" else env.problem.drafts[0]
    return RoundsPolicy(env, [first], name="rounds-first-try")


def improver(env: Any, seed: int) -> Policy:
    if env.problem.kind == "tune":
        return RoundsPolicy(env, list(TUNE_MOVES), name="rounds-improver", search=True)
    return RoundsPolicy(env, env.problem.drafts, name="rounds-improver")


def chain(env: Any, seed: int) -> Policy:
    return RoundsPolicy(env, improvement_chain(env.problem, env.budget), name="rounds-chain")


def final_only(env: Any, seed: int) -> Policy:
    return RoundsPolicy(env, improvement_chain(env.problem, env.budget)[-1:], name="rounds-final-only")


def oracle(env: Any, seed: int) -> Policy:
    return RoundsPolicy(env, [env.problem.reference], name="rounds-oracle")


ANCHORS = {
    "do-nothing": do_nothing,
    "first-try": first_try,
    "improver": improver,
    "chain": chain,
    "final-only": final_only,
    "oracle": oracle,
}
