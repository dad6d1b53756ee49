"""Role slots: an environment's own party (a user), filled with its default or the team's policy, replayed exactly."""

from __future__ import annotations

import hashlib
import pickle
from typing import Any

import pytest

from environments import registry
from environments.contract import check_task
from environments.core import (
    Action,
    Env,
    EnvError,
    Observation,
    Policy,
    Score,
    StepResult,
    TaskSpec,
    ToolCall,
    ToolSpec,
    validate_arguments,
)
from environments.meta import EnvMeta, RoleSlot, ScoreComponent
from environments.replay import replay_record
from environments.roles import RoleSpec, Team, step_role
from environments.runner import run_episode

WORDS = ("amber", "basil", "cedar", "dune")


def _tool(name: str, description: str) -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "maxLength": 20}},
        "required": ["word"],
        "additionalProperties": False,
    }
    return ToolSpec(name=name, description=description, parameters=schema)


class SecretDesk(Env):
    """Ask the user for the secret word, then say it. The user tells it with `tell` (a call the env records)."""

    name = "secretdesk"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.reset()

    @property
    def secret(self) -> str:
        return WORDS[self.seed % len(WORDS)]

    def reset(self) -> Observation:
        self.told: list[str] = []
        self.said: str | None = None
        return Observation(text="A user knows a secret word. Ask them for it, then say it.")

    def tools(self) -> list[ToolSpec]:
        return [_tool("say", "Say the secret word. Ends the episode."), _tool("tell", "(the user) Tell a word.")]

    def step(self, call: ToolCall) -> StepResult:
        spec = self.tool(call.name)
        if spec is None or self.said is not None:
            return StepResult(content={"error": "unknown tool or the episode is over"}, is_error=True)
        if problem := validate_arguments(spec.parameters, call.arguments):
            return StepResult(content={"error": problem}, is_error=True)
        if call.name == "tell":
            self.told.append(call.arguments["word"])
            return StepResult(content={"ok": True})
        self.said = call.arguments["word"]
        return StepResult(content={"ok": True}, done=True, reward=float(self.said == self.secret), termination_reason="agent_stop")

    def score(self) -> Score:
        value = float(self.said == self.secret)
        return Score(composite=value, passed=value == 1.0, components={"secret": value}, termination_reason=self.termination_reason)

    def snapshot(self) -> bytes:
        return pickle.dumps((self.told, self.said))

    def restore(self, blob: bytes) -> None:
        self.told, self.said = pickle.loads(blob)

    def state_hash(self) -> str:
        return hashlib.sha256(repr((self.told, self.said)).encode()).hexdigest()[:16]

    @property
    def done(self) -> bool:
        return self.said is not None

    @property
    def termination_reason(self) -> str | None:
        return "agent_stop" if self.done else None


class ScriptedUser(Policy):
    """The environment's default user: tells the secret when asked for it."""

    name = "scripted-user"

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        asked = "secret" in str(history[-1].get("message") or "")
        if not asked:
            return Action(message="I only know a secret.")
        return Action(message=f"It is {self.secret}.", tool_calls=[ToolCall("tell", {"word": self.secret})])


class Liar(ScriptedUser):
    name = "liar"

    def __init__(self) -> None:
        super().__init__("wrong")


class Asker(Policy):
    """Asks for the secret, then says the last word the user said."""

    name = "asker"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        said = [s for s in history if step_role(s) == "user"]
        if not said:
            return Action(message="What is the secret?")
        return Action(tool_calls=[ToolCall("say", {"word": said[-1]["message"].removeprefix("It is ").rstrip(".")})])


TASK = TaskSpec(env="secretdesk", key="ask", split="train", description="Ask the user for the secret word, then say it.")
META = EnvMeta(
    env="secretdesk",
    roles=(RoleSlot("user", default=lambda env, seed: ScriptedUser(env.secret), description="knows the secret"),),
    score_components={"secret": ScoreComponent("1 when the word said is the secret", moved_by=("say",))},
)


@pytest.fixture
def desk(monkeypatch: pytest.MonkeyPatch) -> str:
    registry.list_tasks()  # load the real environments first, so ours is added and removed cleanly
    monkeypatch.setitem(registry._TASKS, TASK.id, (TASK, SecretDesk))
    monkeypatch.setitem(registry._ENVS, META.env, META)
    return TASK.id


def test_the_default_user_takes_a_turn_after_each_actor_message_and_replay_reexecutes_it(desk: str) -> None:
    env = registry.make(desk, seed=2)
    record = run_episode(env, Asker())
    assert [step_role(s) for s in record["steps"]] == ["env", "actor", "user", "actor"]
    user = record["steps"][2]
    assert user["source"] == "user" and user["message"] == "It is cedar." and user["tool_calls"][0]["name"] == "tell"
    header = record["header"]
    assert header["score"]["composite"] == 1.0 and env.told == ["cedar"]
    assert header["team"]["slots"] == {"user": {"policy": {"name": "scripted-user", "kind": "scripted"}, "default": True}}
    assert header["roles"]["user"] == {"turns": 1, "tokens": 0, "cost": 0.0, "calls": 0}
    assert replay_record(record)["ok"]
    tampered = {**record, "steps": [*record["steps"][:2], {**user, "tool_calls": []}, record["steps"][3]]}
    assert replay_record(tampered)["divergence"]["step"] == 2  # the user's call is part of the chain


def test_a_team_fills_the_slot_with_its_own_policy(desk: str) -> None:
    record = run_episode(registry.make(desk, seed=2), Team(actor=Asker(), slots={"user": Liar()}))
    assert record["header"]["team"]["slots"]["user"] == {"policy": {"name": "liar", "kind": "scripted"}, "default": False}
    assert record["header"]["score"]["composite"] == 0.0 and replay_record(record)["ok"]


def test_it_refuses_a_slot_the_environment_does_not_declare(desk: str) -> None:
    with pytest.raises(EnvError, match="secretdesk declares no role slot 'critic2'; its slots: \\['user'\\]"):
        run_episode(registry.make(desk, seed=2), Team(actor=Asker(), slots={"critic2": Liar()}))


def test_the_contract_check_builds_each_slot_default(desk: str) -> None:
    assert check_task(desk) == []
    broken = EnvMeta(env="secretdesk", roles=(RoleSlot("user", default=lambda env, seed: "not a policy"),))  # type: ignore[arg-type,return-value]
    assert broken.problems(registry.make(desk, seed=2)) == ["role slot 'user': its default builds str, not a Policy"]
    with pytest.raises(AssertionError, match="that role belongs to the team"):
        RoleSlot("critic", default=META.roles[0].default)


class ListeningDesk(SecretDesk):
    """SecretDesk that keeps the conversation it hears (Env.hear) in its state, as a service desk would."""

    def reset(self) -> Observation:
        self.heard: list[tuple[str, str]] = []
        return super().reset()

    def hear(self, role: str, text: str) -> None:
        self.heard.append((role, text))

    def state_hash(self) -> str:
        return hashlib.sha256(repr((self.told, self.said, self.heard)).encode()).hexdigest()[:16]


class Critic(Policy):
    name = "critic"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(message="Advice the environment must not hear.")


def test_the_actor_and_the_slots_are_heard_by_the_environment_and_replay_hears_them_again(
    desk: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(registry._TASKS, TASK.id, (TASK, ListeningDesk))
    env = registry.make(desk, seed=2)
    record = run_episode(env, Team(actor=Asker(), critic=RoleSpec(policy=Critic(), every=1)))
    assert isinstance(env, ListeningDesk)
    assert env.heard == [("actor", "What is the secret?"), ("user", "It is cedar.")]  # the critic's advice is not heard
    assert "critic" in [step_role(s) for s in record["steps"]]
    assert replay_record(record)["ok"]
    silent = {**record, "steps": [{**s, "message": None} if step_role(s) == "user" else s for s in record["steps"]]}
    assert replay_record(silent)["divergence"]["step"] == 2  # what the user said is part of the chain
