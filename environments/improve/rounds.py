"""RoundsEnv: refine one solution against a verifier over many rounds, under a budget of evaluations (README.md).

    env = make("improve-rounds/digits", seed=3)
    env.step(ToolCall("submit", {"program": "return x"}))   # round 1: a verifier score and a counterexample

Every `submit` is a round: the verifier scores the solution (share of check cases, or validation R^2) and the
round is recorded with its solution. The best-scoring round is the episode's answer; its final quality is taken
on what the agent never sees (hidden cases, the test split). `improvement_metrics` summarises the rounds: final
quality, gain per round, and whether the gain kept coming late (the share of it in the last third of rounds).

Tools: inspect (free), submit (one evaluation of the budget), finish.
Rewards: the best round's final quality in [0, 1], on the step that ends the episode; unfinished scores 0.
    Components beside final_quality (the composite): gain_per_round and late_share, figures, not parts of a sum.
Episode End: finish (agent_stop) or max_calls tool calls (max_steps). A spent budget does not end it.
Arguments: seed draws the cases (calc) or the dataset (tune); spec: problem, budget, max_calls.
Version History: 1: first version (calc problems digits, gcd, isqrt; model tuning).
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any

from environments.budgeted import CallLedger, WorldEnv
from environments.core import Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec
from environments.improve.problems import PROBLEMS, CalcProblem, TuneProblem
from environments.meta import ScoreComponent

_FIGURE = "a figure of the rounds (improvement_metrics), not part of the composite"
# What the viewer says of each score component (the module docstring, in a reader's words).
COMPONENTS = {
    "final_quality": ScoreComponent(
        "the best round's solution scored on what the agent never sees (hidden cases, or the test split); the composite "
        "itself, 0 until the episode is finished",
        moved_by=("submit",),
    ),
    "gain_per_round": ScoreComponent(f"(best round score - the starting score) / rounds submitted; {_FIGURE}", moved_by=("submit",)),
    "late_share": ScoreComponent(
        f"the part of that gain made in the last third of the rounds (0 without gain); {_FIGURE}", moved_by=("submit",)
    ),
}


def improvement_metrics(scores: list[float], start: float) -> dict[str, float]:
    """Figures of a run of round scores from a starting score: the best reached (`final`), its `gain` over the
    start, `per_round` (gain / rounds), `improving` (rounds that raised the best), and `late_share`: the part of
    the gain made in the last third of the rounds (ceil(n / 3) of them; 0 without gain)."""
    best, curve = start, []
    for s in scores:
        best = max(best, s)
        curve.append(best)
    n, gain = len(scores), best - start
    early = n - math.ceil(n / 3)  # rounds before the last third
    before_late = curve[early - 1] if early >= 1 else start
    raised = sum(1 for i, b in enumerate(curve) if b > (curve[i - 1] if i else start))
    return {
        "rounds": n,
        "final": round(best, 6),
        "gain": round(gain, 6),
        "per_round": round(gain / n, 6) if n else 0.0,
        "improving": raised,
        "late_share": round((best - before_late) / gain, 6) if gain > 0 else 0.0,
    }


@dataclass
class RoundsWorld(CallLedger):
    budget_left: int
    rounds: list[dict[str, Any]] = field(default_factory=list)  # {"round", "solution", "score"}

    def best(self) -> dict[str, Any] | None:
        """The highest-scoring round (ties: the earliest)."""
        return max(self.rounds, key=lambda r: (r["score"], -r["round"]), default=None)


class RoundsEnv(WorldEnv):
    name = "improve-rounds"
    version = "1"
    world: RoundsWorld

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        spec = task.spec
        key = str(spec["problem"])
        self.problem: CalcProblem | TuneProblem = (
            TuneProblem(task.key, spec, seed) if key == "tune" else CalcProblem(key, PROBLEMS[key], seed)
        )
        self.budget, self.max_calls = int(spec["budget"]), int(spec["max_calls"])
        closed = {"type": "object", "additionalProperties": False}
        self._tools = [
            ToolSpec(
                "inspect",
                "The problem, the budget left and every round so far with its solution and score.",
                {**closed, "properties": {}},
                op_cost=0,
            ),
            ToolSpec(
                "submit",
                "Submit a solution: the verifier scores it (one evaluation of the budget) and returns a round.",
                {**closed, "properties": self.problem.schema(), "required": ["program"] if self.problem.kind == "calc" else []},
            ),
            ToolSpec(
                "finish", "End the episode; the best round's solution is scored on hidden cases.", {**closed, "properties": {}}, op_cost=0
            ),
        ]
        self.world = RoundsWorld(budget_left=self.budget)

    def reset(self) -> Observation:
        self.world = RoundsWorld(budget_left=self.budget)
        text = f"{self.problem.statement} You have {self.budget} evaluations: submit, read the score, improve, then finish."
        return Observation(text=text, data={"task": self.task.key, "budget": self.budget, "kind": self.problem.kind})

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def _run(self, call: ToolCall) -> StepResult:
        world = self.world
        if call.name == "inspect":
            best = world.best()
            return StepResult(
                content={
                    "statement": self.problem.statement,
                    "budget_left": world.budget_left,
                    "best_round": best["round"] if best else None,
                    "rounds": world.rounds,
                }
            )
        if call.name == "finish":
            world.end("agent_stop")
            return StepResult(content={"ok": True, "rounds": len(world.rounds)})
        if refused := self.problem.problem(call.arguments):  # a malformed solution costs nothing
            return StepResult(content={"error": refused}, is_error=True)
        if world.budget_left < 1:
            return StepResult(content={"error": f"budget: all {self.budget} evaluations are spent; finish"}, is_error=True)
        solution = dict(call.arguments)
        if isinstance(self.problem, TuneProblem):  # changes apply to the best config so far; the round keeps the whole config
            best = world.best()
            beaten = best is not None and best["score"] > self.problem.start_score  # else the baseline is still the best
            current = self.problem.config(best["solution"]) if best and beaten else self.problem.baseline
            solution = current.changed(solution).to_json()
        score, feedback = self.problem.check(solution)
        world.budget_left -= 1
        world.rounds.append({"round": len(world.rounds) + 1, "solution": solution, "score": score})
        best_score = max(r["score"] for r in world.rounds)
        return StepResult(
            content={
                "round": len(world.rounds),
                "score": score,
                "best": best_score,
                "budget_left": world.budget_left,
                "solution": solution,
                **feedback,
            }
        )

    def metrics(self) -> dict[str, float]:
        return improvement_metrics([r["score"] for r in self.world.rounds], self.problem.start_score)

    def score(self) -> Score:
        best = self.world.best()
        value = self.problem.quality(best["solution"] if best else None) if self.world.finished else 0.0
        metrics = self.metrics()
        return Score(
            composite=value,
            passed=value >= self.task.pass_threshold,
            components={"final_quality": value, "gain_per_round": metrics["per_round"], "late_share": metrics["late_share"]},
            termination_reason=self.world.reason,
            details={**metrics, "best_round": best["round"] if best else None, "round_scores": [r["score"] for r in self.world.rounds]},
        )

    def state_hash(self) -> str:
        state = {
            "budget_left": self.world.budget_left,
            "rounds": self.world.rounds,
            "calls": self.world.calls,
            "finished": self.world.finished,
            "reason": self.world.reason,
        }
        return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:32]

    def status(self) -> dict[str, str]:
        best = self.world.best()
        return {
            "budget": f"evaluations left {self.world.budget_left}",
            "best": f"best round {best['round']} ({best['score']:.3f})" if best else "no round yet",
        }

    def summary(self) -> str:
        return f"{len(self.world.rounds)} rounds; budget left {self.world.budget_left}"
