"""What an improve-rounds task asks for: algorithmic problems solved in calc, and tuning the seeded model.

    problem = CalcProblem(PROBLEMS["digits"], seed=3)      # 16 check cases the verifier scores, 48 hidden ones
    problem.check({"program": "return x"})                   # -> (share of check cases right, feedback)
    problem.quality({"program": "return x"})                 # the hidden cases' share: the episode's score

A problem turns one submitted solution into a verifier score (what a round reports) and a final quality (what
the episode is scored on, from cases or data the agent never sees). Each problem also carries the drafts a
scripted improver would write, weakest first, the last being a reference solution: anchors.py plays them and
synth.py keeps the chain of drafts the verifier scores strictly better, round after round.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from math import gcd, isqrt
from typing import Any

from environments.improve.calc import CalcError, parse, run
from environments.improve.model import SPACE, Config, Dataset, baseline_config, evaluate, make_dataset, reference_config

MAX_OPS = 3000  # operations one program may spend on one case: slow algorithms lose the large cases
CHECK_CASES, HIDDEN_CASES = 16, 48


@dataclass(frozen=True)
class CalcSpec:
    statement: str
    inputs: tuple[str, ...]
    draw: Callable[[random.Random], dict[str, int]]
    answer: Callable[[dict[str, int]], int]
    drafts: tuple[str, ...]  # a scripted improver's programs, weakest first; the last is the reference


def _digits_case(rng: random.Random) -> dict[str, int]:
    n = rng.randint(1, 6)  # as many 1-digit numbers as 6-digit ones, so each digit handled is worth a sixth
    return {"x": rng.randrange(10 ** (n - 1) if n > 1 else 0, 10**n)}


def _gcd_case(rng: random.Random) -> dict[str, int]:
    g = rng.choice((1, 1, 1, 2, 3, 4, 6, 12))
    return {"a": g * rng.randint(1, 400), "b": g * rng.randint(1, 400)}


def _isqrt_case(rng: random.Random) -> dict[str, int]:
    r = rng.randint(0, 5000)
    return {"x": r * r + rng.randint(0, 2 * r)}


PROBLEMS: dict[str, CalcSpec] = {
    "digits": CalcSpec(
        "Return the sum of the decimal digits of x (0 <= x < 1000000).",
        ("x",),
        _digits_case,
        lambda v: sum(int(c) for c in str(v["x"])),
        (
            "return x",
            "return x % 10 + x // 10",
            "return x % 10 + x // 10 % 10 + x // 100",
            "s = 0\ni = 0\nwhile i < 4 { s = s + x % 10; x = x // 10; i = i + 1 }\nreturn s",
            "s = 0\nwhile x > 0 { s = s + x % 10; x = x // 10 }\nreturn s",
        ),
    ),
    "gcd": CalcSpec(
        "Return the greatest common divisor of a and b (1 <= a, b <= 4800).",
        ("a", "b"),
        _gcd_case,
        lambda v: gcd(v["a"], v["b"]),
        (
            "return 1",
            "if a % b == 0 { return b }\nif b % a == 0 { return a }\nreturn 1",
            "while a != b { if a > b { a = a - b } else { b = b - a } }\nreturn a",
            "while b > 0 { t = a % b; a = b; b = t }\nreturn a",
        ),
    ),
    "isqrt": CalcSpec(
        "Return the integer square root of x: the largest r with r * r <= x (0 <= x <= 25010000).",
        ("x",),
        _isqrt_case,
        lambda v: isqrt(v["x"]),
        (
            "return 1",
            "r = 0\nwhile (r + 1) * (r + 1) <= x { r = r + 1 }\nreturn r",
            "r = 0\nwhile (r + 10) * (r + 10) <= x { r = r + 10 }\nwhile (r + 1) * (r + 1) <= x { r = r + 1 }\nreturn r",
            "r = 0\nstep = 4096\nwhile step > 0 { if (r + step) * (r + step) <= x { r = r + step }\nstep = step // 2 }\nreturn r",
        ),
    ),
}


class CalcProblem:
    """Solutions are {"program": calc source}; a round scores the share of check cases answered right."""

    kind = "calc"

    def __init__(self, key: str, spec: CalcSpec, seed: int) -> None:
        self.spec = spec
        rng = random.Random(f"improve-rounds/{key}/{seed}")
        self.cases = {"check": [spec.draw(rng) for _ in range(CHECK_CASES)], "hidden": [spec.draw(rng) for _ in range(HIDDEN_CASES)]}
        self.statement = f"{spec.statement} Inputs: {', '.join(spec.inputs)}. At most {MAX_OPS} operations per case."
        self.start_score = 0.0  # no program yet
        self.drafts: list[dict[str, Any]] = [{"program": d} for d in spec.drafts]
        self.reference = self.drafts[-1]

    def schema(self) -> dict[str, Any]:
        return {"program": {"type": "string", "minLength": 1, "maxLength": 2000, "description": "calc source (see the statement)"}}

    def problem(self, solution: dict[str, Any]) -> str | None:
        """Why the solution is refused before it is verified (no budget spent), or None."""
        try:
            parse(solution["program"])
        except CalcError as exc:
            return exc.message
        return None

    def _results(self, solution: dict[str, Any], split: str) -> list[tuple[dict[str, int], int, int | str]]:
        program = parse(solution["program"])
        out: list[tuple[dict[str, int], int, int | str]] = []
        for case in self.cases[split]:
            try:
                got: int | str = run(program, case, max_ops=MAX_OPS)
            except CalcError as exc:
                got = f"error: {exc.message}"
            out.append((case, self.spec.answer(case), got))
        return out

    def check(self, solution: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        results = self._results(solution, "check")
        wrong = [(case, want, got) for case, want, got in results if got != want]
        feedback: dict[str, Any] = {"passed": len(results) - len(wrong), "cases": len(results)}
        if wrong:  # one counterexample: what a unit test runner shows
            case, want, got = wrong[0]
            feedback["failing"] = {"inputs": case, "expected": want, "got": got}
        return round(1 - len(wrong) / len(results), 6), feedback

    def quality(self, solution: dict[str, Any] | None) -> float:
        if solution is None:
            return 0.0
        results = self._results(solution, "hidden")
        return round(sum(got == want for _, want, got in results) / len(results), 6)


@lru_cache(maxsize=32)
def _tune_data(key: str, spec_json: str, seed: int) -> tuple[Dataset, Config]:
    """The dataset and its hidden reference, memoised: ~1 s to find the reference, and a replay or every anchor
    on the same (task, seed) would pay it again. Both are pure functions of the arguments."""
    data = make_dataset(key, json.loads(spec_json), seed)
    return data, reference_config(data)


class TuneProblem:
    """Solutions are config changes applied to the best config so far (the baseline until a round beats its
    validation score; model.py's space); a round scores the
    validation R^2; the final quality is the test R^2 normalised between the baseline (0) and the reference (1)."""

    kind = "tune"

    def __init__(self, key: str, spec: dict[str, Any], seed: int) -> None:
        self.n_features = int(spec["n_features"])
        self.data, self.reference_config = _tune_data(key, json.dumps(spec, sort_keys=True), seed)
        self.baseline = baseline_config(self.n_features)
        self.start_score = evaluate(self.data, self.baseline, "val")
        self.statement = (
            f"Raise the validation R^2 of a linear model trained by gradient descent on {self.n_features} features "
            f"(now {self.start_score}). Each submission changes the best config so far."
        )
        self.reference = self.reference_config.to_json()

    def schema(self) -> dict[str, Any]:
        kinds = {"lr": "number", "reg": "number", "epochs": "integer", "degree": "integer"}
        out: dict[str, Any] = {name: {"type": kinds[name], "enum": list(values)} for name, values in SPACE.items()}
        out["features"] = {
            "type": "array",
            "items": {"type": "integer", "minimum": 0, "maximum": self.n_features - 1},
            "minItems": 1,
            "maxItems": self.n_features,
        }
        return out

    def problem(self, solution: dict[str, Any]) -> str | None:
        return None if solution else "arguments: name at least one of lr, reg, epochs, degree, features"

    def config(self, solution: dict[str, Any]) -> Config:
        """A solution as stored in a round: the full config (the env resolves changes before it stores them)."""
        return Config(solution["lr"], solution["reg"], solution["epochs"], solution["degree"], tuple(solution["features"]))

    def check(self, solution: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        return evaluate(self.data, self.config(solution), "val"), {}

    def quality(self, solution: dict[str, Any] | None) -> float:
        config = self.baseline if solution is None else self.config(solution)
        base, reference = evaluate(self.data, self.baseline, "test"), evaluate(self.data, self.reference_config, "test")
        return round(min(1.0, max(0.0, (evaluate(self.data, config, "test") - base) / max(reference - base, 1e-9))), 6)
