"""ImproveEnv: tune a seeded model's configuration under a verification budget (see README.md).

Proposing a change is free; verifying a candidate trains and evaluates it on the validation split and costs
`verify_cost` from the episode's budget; only a verified candidate can be adopted. The score is the adopted
config's held-out test R^2, normalised between the baseline config (0) and the hidden reference optimum (1).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from environments.budgeted import CallLedger, WorldEnv
from environments.core import Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec
from environments.improve.model import SPACE, Config, Dataset, baseline_config, evaluate, make_dataset, reference_config
from environments.meta import ScoreComponent

MAX_CANDIDATES = 40
# What the viewer says of the score's one component, the composite itself (the module docstring).
COMPONENTS = {
    "improvement": ScoreComponent(
        "the adopted configuration's held-out test R², scaled between the baseline configuration (0) and the hidden "
        "reference optimum (1), clipped to [0, 1]; the composite itself, 0 until the episode is finished",
        moved_by=("verify", "adopt"),
    )
}


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}


_CANDIDATE = {"candidate": {"type": "string", "pattern": "c[0-9]{1,3}", "maxLength": 4}}


def _tools(n_features: int) -> list[ToolSpec]:
    kinds = {"lr": "number", "reg": "number", "epochs": "integer", "degree": "integer"}  # a type refuses true for 1
    change: dict[str, Any] = {name: {"type": kinds[name], "enum": list(values)} for name, values in SPACE.items()}
    change["features"] = {
        "type": "array",
        "items": {"type": "integer", "minimum": 0, "maximum": n_features - 1},
        "minItems": 1,
        "maxItems": n_features,
    }
    return [
        ToolSpec(
            "inspect",
            "The adopted config, its validation score, the budget left, the search space and every candidate so far.",
            _closed({}),
            op_cost=0,
        ),
        ToolSpec(
            "propose",
            "Propose a change to the adopted config (any of lr, reg, epochs, degree, features). Free; returns a candidate id.",
            _closed(change),
            op_cost=0,
        ),
        ToolSpec(
            "verify",
            "Train and evaluate a candidate on the validation split. Costs verify_cost from the budget; returns its score.",
            _closed(_CANDIDATE, ("candidate",)),
        ),
        ToolSpec("adopt", "Make a verified candidate the adopted config.", _closed(_CANDIDATE, ("candidate",)), op_cost=0),
        ToolSpec("finish", "End the episode; the adopted config is scored on the held-out test split.", _closed({}), op_cost=0),
    ]


@dataclass
class World(CallLedger):
    adopted: Config
    adopted_id: str  # "baseline" or a candidate id
    adopted_score: float  # its validation score
    budget_left: float
    candidates: list[dict[str, Any]] = field(default_factory=list)  # {"id", "config", "score": float | None}
    verifications: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "adopted": self.adopted.to_json(),
            "adopted_id": self.adopted_id,
            "adopted_score": self.adopted_score,
            "budget_left": round(self.budget_left, 9),
            "verifications": self.verifications,
            "calls": self.calls,
            "finished": self.finished,
            "reason": self.reason,
            "candidates": [{**c, "config": c["config"].to_json()} for c in self.candidates],
        }


class ImproveEnv(WorldEnv):
    name = "improve"
    version = "1"
    world: World

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        spec = task.spec
        self.n_features = int(spec["n_features"])
        self.verify_cost = float(spec["verify_cost"])
        self.max_calls = int(spec["max_calls"])
        self.data: Dataset = make_dataset(task.key, spec, seed)
        self.baseline = baseline_config(self.n_features)
        self.reference = reference_config(self.data)  # the hidden optimum: the oracle anchor reads it, the score's 1
        self._tools = _tools(self.n_features)
        self.world = self._new_world()

    def _new_world(self) -> World:
        score = evaluate(self.data, self.baseline, "val")
        return World(adopted=self.baseline, adopted_id="baseline", adopted_score=score, budget_left=float(self.task.spec["budget"]))

    def reset(self) -> Observation:
        self.world = self._new_world()
        text = (
            f"Improve the model's configuration. Its validation R^2 is {self.world.adopted_score}. Proposals are free; each "
            f"verification costs {self.verify_cost} of a budget of {self.world.budget_left}. Adopt the best verified candidate, then finish."
        )
        return Observation(text=text, data={"task": self.task.key, "budget": self.world.budget_left, "verify_cost": self.verify_cost})

    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    def _run(self, call: ToolCall) -> StepResult:
        world, args = self.world, call.arguments
        if call.name == "inspect":
            return StepResult(content=self._inspect())
        if call.name == "finish":
            world.end("agent_stop")
            return StepResult(content={"ok": True, "adopted": world.adopted_id})
        if call.name == "propose":
            return self._propose(args)
        candidate = next((c for c in world.candidates if c["id"] == args["candidate"]), None)
        if candidate is None:
            return StepResult(content={"error": f"candidate: no candidate {args['candidate']!r}; propose one first"}, is_error=True)
        if call.name == "verify":
            return self._verify(candidate)
        if candidate["score"] is None:
            return StepResult(
                content={"error": f"candidate: {candidate['id']} is not verified; verify it before adopting it"}, is_error=True
            )
        world.adopted, world.adopted_id, world.adopted_score = candidate["config"], candidate["id"], candidate["score"]
        return StepResult(content={"adopted": candidate["id"], "config": candidate["config"].to_json(), "score": candidate["score"]})

    def _inspect(self) -> dict[str, Any]:
        world = self.world
        return {
            "config": world.adopted.to_json(),
            "adopted": world.adopted_id,
            "score": world.adopted_score,
            "budget_left": world.budget_left,
            "verify_cost": self.verify_cost,
            "n_features": self.n_features,
            "space": {k: list(v) for k, v in SPACE.items()},
            "candidates": [{"id": c["id"], "config": c["config"].to_json(), "score": c["score"]} for c in world.candidates],
        }

    def _propose(self, changes: dict[str, Any]) -> StepResult:
        world = self.world
        if not changes:
            return StepResult(content={"error": "arguments: name at least one of lr, reg, epochs, degree, features"}, is_error=True)
        config = world.adopted.changed(changes)
        existing = next((c for c in world.candidates if c["config"] == config), None)
        if existing is not None:  # the same config proposed twice keeps its id (and its verification)
            return StepResult(content={"candidate": existing["id"], "config": config.to_json(), "score": existing["score"]})
        if len(world.candidates) >= MAX_CANDIDATES:
            return StepResult(content={"error": f"at most {MAX_CANDIDATES} candidates per episode"}, is_error=True)
        candidate = {"id": f"c{len(world.candidates) + 1}", "config": config, "score": None}
        world.candidates.append(candidate)
        return StepResult(content={"candidate": candidate["id"], "config": config.to_json(), "score": None})

    def _verify(self, candidate: dict[str, Any]) -> StepResult:
        world = self.world
        if candidate["score"] is not None:  # already paid for
            return StepResult(content={"candidate": candidate["id"], "score": candidate["score"], "budget_left": world.budget_left})
        if world.budget_left + 1e-9 < self.verify_cost:
            return StepResult(
                content={"error": f"budget: {world.budget_left} left, a verification costs {self.verify_cost}"}, is_error=True
            )
        world.budget_left = round(world.budget_left - self.verify_cost, 9)
        world.verifications += 1
        candidate["score"] = evaluate(self.data, candidate["config"], "val")
        return StepResult(content={"candidate": candidate["id"], "score": candidate["score"], "budget_left": world.budget_left})

    def test_scores(self) -> tuple[float, float, float]:
        """(baseline, adopted, reference) test R^2: what the score normalises."""
        return (
            evaluate(self.data, self.baseline, "test"),
            evaluate(self.data, self.world.adopted, "test"),
            evaluate(self.data, self.reference, "test"),
        )

    def score(self) -> Score:
        base, adopted, reference = self.test_scores()
        value = min(1.0, max(0.0, (adopted - base) / max(reference - base, 1e-9))) if self.world.finished else 0.0
        value = round(value, 6)
        return Score(
            composite=value,
            passed=value >= self.task.pass_threshold,
            components={"improvement": value},
            termination_reason=self.world.reason,
            details={
                "test_r2": adopted,
                "baseline_test_r2": base,
                "reference_test_r2": reference,
                "verifications": self.world.verifications,
                "adopted": self.world.adopted_id,
            },
        )

    def state_hash(self) -> str:
        return hashlib.sha256(json.dumps(self.world.to_json(), sort_keys=True).encode()).hexdigest()[:32]

    def status(self) -> dict[str, str]:
        return {
            "budget": f"budget {self.world.budget_left:g}",
            "adopted": f"adopted {self.world.adopted_id} (val {self.world.adopted_score:.3f})",
        }

    def summary(self) -> str:
        return f"adopted {self.world.adopted_id}; {len(self.world.candidates)} candidates; budget left {self.world.budget_left:g}"
