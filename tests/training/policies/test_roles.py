"""Other roles' steps in the actor's prompt, and LLM policies in the critic and consultant roles."""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import ToolSpec
from environments.registry import make
from environments.trajectory import make_step
from training.policies import build_messages, policy_from_config
from training.policies.harness import Completion, HarnessConfig, LLMPolicy
from training.policies.roles import CRITIC_INSTRUCTION, CRITIC_REQUEST, critic_messages


def test_other_roles_enter_the_actors_prompt_as_marked_user_messages_never_as_its_turns(team_record: dict[str, Any]) -> None:
    messages = build_messages(team_record["steps"], system_prompt="SYS", window_turns=8)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user", "assistant", "tool", "user", "assistant"]
    assert messages[4] == {"role": "user", "content": "Critic: Answer with the color you found."}
    # the consultant's answer is the result of the actor's consult call; its own step is not shown twice
    assert messages[6] == {"role": "tool", "tool_call_id": "c1", "content": '{"suggestion":"answer(color=red)"}'}
    assert messages[7] == {"role": "user", "content": "Harness: Verify before finishing: is the answer supported?"}
    assistant = [m["content"] for m in messages if m["role"] == "assistant"]
    assert assistant == ["", "", "The lamp is red."]


def test_a_consultant_step_no_consult_result_carries_is_shown_marked_with_its_suggestion() -> None:
    history = [
        make_step(index=0, source="env", message="Find the color of the lamp."),
        make_step(
            index=1,
            source="agent",
            role="consultant",
            reasoning="look first",
            tool_calls=[{"id": "k", "name": "lookup", "arguments": {"item": "lamp"}}],
        ),
    ]
    messages = build_messages(history, system_prompt="SYS", window_turns=4)
    assert messages[-1] == {"role": "user", "content": 'Consultant: suggested lookup({"item":"lamp"}) because look first'}


def test_advice_already_returned_to_ask_critic_is_not_repeated() -> None:
    history = [
        make_step(index=0, source="env", message="go"),
        make_step(
            index=1,
            tool_calls=[{"id": "a", "name": "ask_critic", "arguments": {}}],
            results=[{"call_id": "a", "content": "Check the stock first.", "is_error": False}],
        ),
        make_step(index=2, role="critic", message="Check the stock first."),
    ]
    messages = build_messages(history, system_prompt="SYS", window_turns=4)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]


def test_the_critic_prompt_is_the_transcript_and_a_request_for_advice(team_record: dict[str, Any]) -> None:
    messages = critic_messages(team_record["steps"][:2], system_prompt="Task: lamps.", window_turns=8)
    assert messages[0] == {"role": "system", "content": f"Task: lamps.\n\n{CRITIC_INSTRUCTION}"}
    assert messages[1]["content"] == (
        "The trajectory so far:\nEnvironment: Find the color of the lamp.\n"
        'Actor calls lookup({"item":"lamp"})\nTool result: {"color":"red"}\n\n' + CRITIC_REQUEST
    )
    windowed = critic_messages(team_record["steps"], system_prompt="", window_turns=2, summary="Day 1")
    assert (
        "[4 earlier steps are omitted.] Current state: Day 1\nHarness: Verify before finishing: is the answer supported?\nActor: The lamp is red.\n\n"
        in windowed[1]["content"]
    )
    assert windowed[0]["content"] == CRITIC_INSTRUCTION


class _Scripted(LLMPolicy):
    kind = "hf"

    def __init__(self, output: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.output = output
        self.calls: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]] = []

    def count_prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        return sum(len(str(m.get("content") or "")) for m in messages)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int) -> Completion:
        self.calls.append((messages, tools))
        return Completion(text=self.output, token_ids=[5, 6, 7], logprobs=[-0.1, -0.2, -0.3], prompt_token_ids=[1])


def _tools(env: Any) -> list[ToolSpec]:
    return [*env.tools(), ToolSpec(name="consult", description="Ask the consultant.", parameters={"type": "object", "properties": {}})]


def test_a_critic_answers_advice_with_its_tokens_and_sees_no_tools(team_record: dict[str, Any]) -> None:
    env = make("toolgym/lookup", seed=0)
    critic = _Scripted(" Answer now. ", env=env, seed=0, name="bob", model="m", role="critic", harness=HarnessConfig(system_prompt="T"))
    action = critic.act(team_record["steps"][:2], _tools(env))
    assert (action.message, action.tool_calls, action.error) == ("Answer now.", [], None)
    assert (action.token_ids, action.logprobs, action.prompt_token_ids) == ([5, 6, 7], [-0.1, -0.2, -0.3], [1])
    messages, tools = critic.calls[0]
    assert tools == [] and messages[0]["content"] == f"T\n\n{CRITIC_INSTRUCTION}" and messages[1]["content"].endswith(CRITIC_REQUEST)
    assert critic.describe()["role"] == "critic"


def test_a_consultant_suggests_an_action_and_is_never_offered_the_runners_tools(team_record: dict[str, Any]) -> None:
    env = make("toolgym/lookup", seed=0)
    output = '<tool_call>{"name": "answer", "arguments": {"color": "red"}}</tool_call>'
    carol = _Scripted(output, env=env, seed=0, name="carol", model="m", role="consultant")
    action = carol.act(team_record["steps"][:4], _tools(env))
    assert [(c.name, c.arguments) for c in action.tool_calls] == [("answer", {"color": "red"})]
    messages, tools = carol.calls[0]
    assert "consult" not in [t["function"]["name"] for t in tools] and "lookup" in [t["function"]["name"] for t in tools]
    assert messages[0]["content"].endswith("the actor sees them and decides.")


def test_policy_from_config_refuses_a_role_an_llm_cannot_take(tiny_path: Any) -> None:
    env = make("toolgym/lookup", seed=0)
    with pytest.raises(ValueError, match="role: 'judge' is not a role"):
        policy_from_config({"kind": "hf", "model": str(tiny_path), "role": "judge"}, env, 0)


def test_the_tiny_model_as_critic_writes_advice_with_token_ids_and_logprobs(
    tiny_path: Any, tokenizer: Any, team_record: dict[str, Any]
) -> None:
    env = make("toolgym/lookup", seed=0)
    config = {
        "kind": "hf",
        "name": "bob",
        "model": str(tiny_path),
        "role": "critic",
        "sampling": {"device": "cpu"},
        "harness": {"max_new_tokens": 12},
    }
    critic = policy_from_config(config, env, 0)
    action = critic.act(team_record["steps"][:2], env.tools())
    assert action.tool_calls == [] and action.error is None
    assert action.token_ids and 1 <= len(action.token_ids) <= 12 and len(action.logprobs or []) == len(action.token_ids)
    assert all(lp <= 0.0 for lp in action.logprobs or [])
    prompt = tokenizer.decode(action.prompt_token_ids)
    assert prompt.startswith("<|im_start|>system\nYou are an agent acting in the toolgym environment")
    assert CRITIC_INSTRUCTION in prompt and "<tools>" not in prompt and prompt.endswith("<|im_start|>assistant\n")
    text = tokenizer.decode(action.token_ids).removesuffix("<|im_end|>").strip()
    assert action.message == (text or None)
