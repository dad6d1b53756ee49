"""Fixtures: failed ledger episodes stored in project A, and scripted diagnosers (a good one, a bad one)."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.policies import register_policy
from tests.environments.diagnosis.conftest import play


class FixedDiagnoser(Policy):
    """A 'model' that always submits the same diagnosis, as an agent config of kind scripted can."""

    kind = "scripted"

    def __init__(self, name: str, arguments: dict[str, Any]) -> None:
        self.name = name
        self.arguments = arguments

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(tool_calls=[ToolCall("submit_diagnosis", self.arguments)])


GOOD_ANSWER = {
    "step_index": 1,
    "category": "wrong_arguments",
    "explanation": "It added the target to b; a stayed 0.",
    "correction": {"name": "add", "arguments": {"key": "a", "amount": 3}},
    "evidence_steps": [3],
    "confidence": 0.9,
}


def _register() -> None:
    def good(env: Env, seed: int) -> Policy:
        return FixedDiagnoser("ledger-diagnoser-good", GOOD_ANSWER)

    def past_end(env: Env, seed: int) -> Policy:
        return FixedDiagnoser("ledger-diagnoser-past-end", {**GOOD_ANSWER, "step_index": 40})

    register_policy("ledger", "ledger-diagnoser-good", good)
    register_policy("ledger", "ledger-diagnoser-past-end", past_end)


_register()


@pytest.fixture
def store(project_a: Any) -> Any:
    """store(task, policy) -> the stored Episode of that run in project A."""
    from lab.trajectories.services import episodes_ingest

    def save(task: str = "ledger/tight", policy: str = "ledger-stubborn") -> Any:
        return episodes_ingest(project=project_a, records=[play(task, policy)])[0].episode

    return save


@pytest.fixture
def tight_episode(store: Any) -> Any:
    return store("ledger/tight")


@pytest.fixture
def diagnoser(project_a: Any) -> Any:
    from lab.trajectories.models import AgentConfig

    def make(name: str) -> Any:
        return AgentConfig.objects.create(project=project_a, name=name, kind="scripted", model=name)

    return make


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    from training.tiny import tiny_model_path

    return AutoTokenizer.from_pretrained(tiny_model_path(0))
