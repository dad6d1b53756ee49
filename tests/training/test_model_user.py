"""Model-based users: an LLM policy in the user slot, its private note kept in the step and never shown to the agent."""

from __future__ import annotations

import hashlib
import json
import pickle
from typing import Any

import pytest

from environments import registry
from environments.core import Action, Env, Observation, Policy, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.meta import EnvMeta, RoleSlot
from environments.replay import replay_record
from environments.roles import step_role
from environments.runner import run_episode
from lab.ingest.export import export_openai
from lab.trajectories.roles import role_examples
from training.data import tokenize_record
from training.policies import policy_from_config
from training.policies.harness import Completion, LLMPolicy
from training.policies.roles import USER_INSTRUCTION, context_messages, parse_user_turn, transcript_lines, user_messages
from training.policies.team import team_from_config
from training.role_views import tokenize_role

NOTE = "PRIVATE-PLAN keep the birthday quiet"
WORDS = ("amber", "basil", "cedar", "dune")


def _word_tool(name: str, description: str) -> ToolSpec:
    schema = {
        "type": "object",
        "properties": {"word": {"type": "string", "maxLength": 40}},
        "required": ["word"],
        "additionalProperties": False,
    }
    return ToolSpec(name=name, description=description, parameters=schema)


class ChatDesk(Env):
    """Ask the user for the secret word (note your question with `ask`), then `say` it."""

    name = "chatdesk"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.reset()

    @property
    def secret(self) -> str:
        return WORDS[self.seed % len(WORDS)]

    def reset(self) -> Observation:
        self.heard: list[tuple[str, str]] = []
        self.said: str | None = None
        return Observation(text="A user knows a secret word. Ask them for it, then say it.")

    def tools(self) -> list[ToolSpec]:
        return [_word_tool("ask", "Note what you ask the user."), _word_tool("say", "Say the secret word. Ends the episode.")]

    def hear(self, role: str, text: str) -> None:
        self.heard.append((role, text))

    def step(self, call: ToolCall) -> StepResult:
        spec = self.tool(call.name)
        if spec is None or self.said is not None:
            return StepResult(content={"error": "unknown tool or the episode is over"}, is_error=True)
        if problem := validate_arguments(spec.parameters, call.arguments):
            return StepResult(content={"error": problem}, is_error=True)
        if call.name == "ask":
            return StepResult(content={"ok": True})
        self.said = call.arguments["word"]
        return StepResult(content={"ok": True}, done=True, reward=float(self.said == self.secret), termination_reason="agent_stop")

    def score(self) -> Score:
        value = float(self.said == self.secret)
        return Score(composite=value, passed=value == 1.0, components={"secret": value}, termination_reason=self.termination_reason)

    def snapshot(self) -> bytes:
        return pickle.dumps((self.heard, self.said))

    def restore(self, blob: bytes) -> None:
        self.heard, self.said = pickle.loads(blob)

    def state_hash(self) -> str:
        return hashlib.sha256(repr((self.heard, self.said)).encode()).hexdigest()[:16]

    @property
    def done(self) -> bool:
        return self.said is not None

    @property
    def termination_reason(self) -> str | None:
        return "agent_stop" if self.done else None


class Asker(Policy):
    """Asks for the secret, then says the last word the user said."""

    name = "asker"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        said = [s for s in history if step_role(s) == "user" and s.get("message")]
        if not said:
            return Action(message="What is the secret?", tool_calls=[ToolCall("ask", {"word": "secret"})])
        return Action(tool_calls=[ToolCall("say", {"word": said[-1]["message"].split()[-1].rstrip(".")})])


class QuietUser(Policy):
    name = "quiet-user"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(message="Hm.")


def _brief(env: Env) -> str:
    return f"GOAL CARD: you know the secret word {env.secret!r}. Persona: a hurried nurse. Patterns: terse answers, impatience."  # type: ignore[attr-defined]


TASK = TaskSpec(env="chatdesk", key="ask", split="train", description="Ask the user for the secret word, then say it.")
META = EnvMeta(
    env="chatdesk",
    anchors={"asker": lambda env, seed: Asker()},
    roles=(RoleSlot("user", default=lambda env, seed: QuietUser(), description="knows the secret", brief=_brief),),
)


@pytest.fixture
def desk(monkeypatch: pytest.MonkeyPatch) -> str:
    registry.list_tasks()
    monkeypatch.setitem(registry._TASKS, TASK.id, (TASK, ChatDesk))
    monkeypatch.setitem(registry._ENVS, META.env, META)
    return TASK.id


class Canned(LLMPolicy):
    """An LLM policy whose model answers from a script; it keeps every prompt it was given (what the model saw)."""

    kind = "canned"

    def __init__(self, outputs: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.outputs, self.prompts = list(outputs), []  # type: ignore[var-annotated]

    def count_prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        return len(json.dumps(messages)) // 4

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int) -> Completion:
        self.prompts.append(messages)
        return Completion(text=self.outputs.pop(0))


def test_it_parses_the_note_and_what_the_user_says() -> None:
    assert parse_user_turn("NOTE: stay vague\nSAY: It's about my order.") == ("stay vague", "It's about my order.")
    assert parse_user_turn("NOTE: I will not tell yet") == ("I will not tell yet", "")  # never leaks an unfinished note
    assert parse_user_turn("just words") == (None, "just words")


def test_the_user_sees_the_conversation_from_its_side() -> None:
    history = [
        {"index": 0, "source": "env", "message": "Hidden observation for the agent."},
        {
            "index": 1,
            "source": "agent",
            "message": "Hello, how can I help?",
            "tool_calls": [{"id": "c", "name": "ask", "arguments": {}}],
            "results": [{"call_id": "c", "content": "db row"}],
        },
        {"index": 2, "source": "user", "role": "user", "message": "My order.", "reasoning": "be terse"},
        {"index": 3, "source": "agent", "role": "critic", "message": "Ask for the id."},
        {"index": 4, "source": "agent", "message": "Which order?"},
    ]
    messages = user_messages(history, system_prompt="GOAL CARD", window_turns=8)
    assert messages == [
        {"role": "system", "content": f"GOAL CARD\n\n{USER_INSTRUCTION}"},
        {"role": "user", "content": "Hello, how can I help?"},
        {"role": "assistant", "content": "NOTE: be terse\nSAY: My order."},
        {"role": "user", "content": "Which order?"},
    ]
    # The agent's side: the user's message only, in the actor's context and in the critic's transcript.
    assert context_messages(history[1:])[1] == {"role": "user", "content": "My order."}
    silent = {**history[2], "message": ""}
    assert context_messages([silent]) == [None] and "be terse" not in "\n".join(transcript_lines([silent, *history[3:]]))


def test_a_model_user_note_reaches_neither_the_actor_prompts_nor_its_training_data(desk: str, tokenizer: Any) -> None:
    env = registry.make(desk, seed=2)
    user = Canned([f"NOTE: {NOTE}\nSAY: It is cedar."], env=env, seed=0, name="canned-user", model="m", role="user")
    actor = Canned(
        [
            '<tool_call>{"name": "ask", "arguments": {"word": "secret"}}</tool_call>What is the secret?',
            '<tool_call>{"name": "say", "arguments": {"word": "cedar"}}</tool_call>',
        ],
        env=env,
        seed=0,
        name="canned-actor",
        model="m",
    )
    from environments.roles import Team

    record = run_episode(env, Team(actor=actor, slots={"user": user}))
    turn = next(s for s in record["steps"] if step_role(s) == "user")
    assert (turn["source"], turn["message"], turn["reasoning"]) == ("user", "It is cedar.", NOTE)
    assert record["header"]["score"]["passed"] and replay_record(record)["ok"]
    assert user.prompts[0][0]["content"].startswith("GOAL CARD: you know the secret word 'cedar'.")
    assert user.prompts[0][1:] == [{"role": "user", "content": "What is the secret?"}]
    assert env.heard == [("actor", "What is the secret?"), ("user", "It is cedar.")]  # type: ignore[attr-defined]
    # The agent's prompts and its training views and exports never carry the note ...
    assert len(actor.prompts) == 2 and "It is cedar." in json.dumps(actor.prompts[1]) and "PRIVATE" not in json.dumps(actor.prompts)
    actor_text = "".join(tokenizer.decode(e.input_ids) for e in tokenize_record(record, tokenizer))
    assert "It is cedar." in actor_text and "PRIVATE" not in actor_text
    assert "PRIVATE" not in json.dumps(export_openai(record))
    assert "PRIVATE" not in json.dumps(role_examples(record, role="actor"))
    # ... while the user's own view keeps it: it is what the model wrote.
    [example] = tokenize_role(record, tokenizer, role="user", system_prompt="GOAL CARD")
    assert f"NOTE: {NOTE}\nSAY: It is cedar." in tokenizer.decode(example.input_ids)
    assert role_examples(record, role="user")[0]["reasoning"] == NOTE


def test_it_refuses_a_model_user_in_an_environment_without_a_user_slot(tiny_path: Any) -> None:
    env = registry.make("toolgym/lookup", seed=0)
    with pytest.raises(ValueError, match="role: toolgym declares no 'user' role slot"):
        policy_from_config({"kind": "hf", "model": str(tiny_path), "role": "user", "sampling": {"device": "cpu"}}, env, 0)


@pytest.mark.slow
def test_the_runner_plays_the_tiny_model_as_the_user_from_a_team_agent_config(desk: str, tiny_path: Any, tokenizer: Any) -> None:
    user_config = {
        "kind": "hf",
        "name": "tiny-user",
        "model": str(tiny_path),
        "sampling": {"device": "cpu"},
        "harness": {"max_new_tokens": 12},
    }
    config = {"kind": "scripted", "name": "asker", "team": {"slots": {"user": user_config}}}
    env = registry.make(desk, seed=2)
    team = team_from_config(config, env, 0)
    assert isinstance(team.slots["user"], LLMPolicy) and team.slots["user"].role == "user"
    record = run_episode(env, team, max_steps=3)
    turns = [s for s in record["steps"] if step_role(s) == "user"]
    assert turns and all(s["source"] == "user" and s["token_ids"] and len(s["logprobs"]) == len(s["token_ids"]) for s in turns)
    seen = tokenizer.decode(turns[0]["prompt_token_ids"])
    assert "GOAL CARD: you know the secret word 'cedar'" in seen and "What is the secret?" in seen and "A user knows" not in seen
    slot = record["header"]["team"]["slots"]["user"]
    assert slot["default"] is False and slot["policy"]["role"] == "user" and slot["policy"]["kind"] == "hf"
    assert replay_record(record)["ok"]
