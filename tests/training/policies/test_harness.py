"""Prompt building, the rolling context window, turn limits and parsing shared by every LLM policy."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from environments.core import Action
from environments.registry import make
from environments.runner import run_episode
from environments.trajectory import make_step
from training.policies import HarnessConfig, HarnessStop, LLMPolicy, build_messages, policy_from_config
from training.policies.harness import Completion, step_seed


def _history(turns: int) -> list[dict[str, Any]]:
    steps = [make_step(index=0, source="env", message="Day 0. Run the store.")]
    for i in range(1, turns + 1):
        steps.append(
            make_step(
                index=i,
                message=f"turn {i}",
                tool_calls=[{"id": f"c{i}", "name": "get_finance", "arguments": {}}],
                results=[{"call_id": f"c{i}", "content": {"cash": i}, "is_error": False}],
            )
        )
    return steps


def test_messages_keep_system_opening_and_the_last_turns_with_a_state_summary() -> None:
    messages = build_messages(_history(5), system_prompt="SYS", window_turns=2, summary="Day 4/30; cash $5")
    assert [m["role"] for m in messages] == ["system", "user", "user", "assistant", "tool", "assistant", "tool"]
    assert messages[2]["content"] == "[3 earlier turns are omitted to fit the context window.] Current state: Day 4/30; cash $5"
    assert messages[3]["content"] == "turn 4"
    assert messages[3]["tool_calls"] == [{"id": "c4", "type": "function", "function": {"name": "get_finance", "arguments": "{}"}}]
    assert messages[4] == {"role": "tool", "tool_call_id": "c4", "content": '{"cash":4}'}


def test_nothing_is_dropped_when_the_episode_fits_the_window() -> None:
    messages = build_messages(_history(2), system_prompt="SYS", window_turns=8, summary="ignored")
    assert len(messages) == 2 + 2 * 2 and not any("omitted" in str(m["content"]) for m in messages)


def test_an_invalid_action_is_shown_as_written_followed_by_its_error() -> None:
    history = _history(0) + [
        make_step(
            index=1,
            message="hm",
            results=[{"call_id": "invalid", "content": {"error": "bad"}, "is_error": True}],
            meta={"invalid_action": "tool call is not valid JSON", "raw_output": "hm <tool_call>{oops</tool_call>"},
        )
    ]
    messages = build_messages(history, system_prompt="SYS", window_turns=4)
    assert messages[-2:] == [
        {"role": "assistant", "content": "hm <tool_call>{oops</tool_call>"},
        {"role": "user", "content": "Error: tool call is not valid JSON"},
    ]


def test_the_environments_status_line_comes_last_and_only_when_there_is_one() -> None:
    history = [{"index": 0, "source": "env", "message": "hello"}]
    messages = build_messages(history, system_prompt="SYS", window_turns=4, status="Day 2 of 35 · 12 of 40 operations left")
    assert messages[-1] == {"role": "user", "content": "Status: Day 2 of 35 · 12 of 40 operations left"}
    assert build_messages(history, system_prompt="SYS", window_turns=4)[-1] == {"role": "user", "content": "hello"}


def test_long_tool_results_are_cut_with_a_note() -> None:
    history = _history(0) + [
        make_step(
            index=1,
            tool_calls=[{"id": "c", "name": "x", "arguments": {}}],
            results=[{"call_id": "c", "content": "z" * 50, "is_error": False}],
        )
    ]
    messages = build_messages(history, system_prompt="SYS", window_turns=4, max_result_chars=10)
    assert messages[-1]["content"] == "z" * 10 + "... [cut: 40 more characters]"


def test_config_refuses_unknown_and_out_of_range_settings_by_name() -> None:
    with pytest.raises(ValueError, match="unknown setting.*contex_window"):
        HarnessConfig.from_dict({"contex_window": 10})
    with pytest.raises(ValueError, match="window_turns must be at least 1, got 0"):
        HarnessConfig(window_turns=0)
    with pytest.raises(ValueError, match="on_text_only must be 'error' or 'stop'"):
        HarnessConfig(on_text_only="ignore")


class _Scripted(LLMPolicy):
    """Completions given in advance; prompt size = characters, so the window logic is exact to check."""

    kind = "hf"

    def __init__(self, outputs: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.outputs = outputs
        self.prompts: list[list[dict[str, Any]]] = []
        self.seeds: list[int] = []

    def count_prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        return sum(len(str(m.get("content") or "")) for m in messages)

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int) -> Completion:
        self.prompts.append(messages)
        self.seeds.append(seed)
        return Completion(text=self.outputs.pop(0), token_ids=[1, 2], logprobs=[-0.5, -0.25], prompt_token_ids=[9])


def test_the_window_shrinks_to_fit_the_context_and_stops_when_one_turn_is_too_big() -> None:
    env = make("toolgym/lookup", seed=0)
    env.summary = lambda: "Day 9"  # type: ignore[method-assign]
    policy = _Scripted(
        ['<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call>'],
        env=env,
        seed=0,
        name="s",
        model="m",
        harness=HarnessConfig(system_prompt="S", window_turns=8, max_context_tokens=150, max_new_tokens=10),
    )
    # base 1 + 21 characters; a turn 16 (i < 10) or 18; the note 56 or 57, + 21 for the state. Window 4: 169, 2: 136 <= 140.
    history = _history(12)
    action = policy.act(history, env.tools())
    kept = [m for m in policy.prompts[0] if m["role"] == "assistant"]
    assert [m["content"] for m in kept] == ["turn 11", "turn 12"]
    assert policy.prompts[0][2]["content"] == "[10 earlier turns are omitted to fit the context window.] Current state: Day 9"
    assert [(c.name, c.arguments, c.id) for c in action.tool_calls] == [("lookup", {"item": "lamp"}, "call_13_0")]
    tight = _Scripted(
        [], env=env, seed=0, name="s", model="m", harness=HarnessConfig(system_prompt="S" * 60, max_context_tokens=150, max_new_tokens=10)
    )
    with pytest.raises(HarnessStop) as raised:
        tight.act(history, env.tools())
    assert raised.value.termination_reason == "context_window_exceeded"


def test_text_without_a_tool_call_is_an_invalid_action_or_a_stop_as_configured() -> None:
    env = make("toolgym/lookup", seed=0)
    remind = _Scripted(["just chatting"], env=env, seed=0, name="s", model="m")
    action = remind.act(_history(0), env.tools())
    assert action.error == "no tool call found; act by calling one of the tools" and action.meta["raw_output"] == "just chatting"
    assert (action.token_ids, action.logprobs, action.prompt_token_ids) == ([1, 2], [-0.5, -0.25], [9])
    stop = _Scripted(["done for today"], env=env, seed=0, name="s", model="m", harness=HarnessConfig(on_text_only="stop"))
    assert stop.act(_history(0), env.tools()) == Action(
        message="done for today", stop=True, token_ids=[1, 2], logprobs=[-0.5, -0.25], prompt_token_ids=[9]
    )


def test_sampling_seeds_depend_only_on_the_episode_seed_and_the_step_index() -> None:
    env = make("toolgym/lookup", seed=0)
    policy = _Scripted(["x", "x"], env=env, seed=5, name="s", model="m")
    policy.act(_history(2), env.tools())
    policy.act(_history(2), env.tools())
    assert policy.seeds == [step_seed(5, 3)] * 2 and step_seed(5, 3) != step_seed(5, 4) != step_seed(6, 4)


def test_the_runner_records_an_unparseable_turn_and_the_episode_goes_on() -> None:
    env = make("toolgym/lookup", seed=2)
    outputs = [
        '<tool_call>{"name": "lookup", "arguments": {"item": "lamp"</tool_call>',
        '<tool_call>{"name": "answer", "arguments": {"color": "red"}}</tool_call>',
    ]
    record = run_episode(env, _Scripted(outputs, env=env, seed=2, name="s", model="m"))
    bad, good = record["steps"][1], record["steps"][2]
    assert bad["meta"]["invalid_action"].startswith("tool call is not valid JSON") and bad["tool_calls"] == []
    assert good["tool_calls"][0]["name"] == "answer" and good["token_ids"] == [1, 2] and good["logprobs"] == [-0.5, -0.25]
    assert record["header"]["policy"] == {"name": "s", "kind": "hf", "model": "m", "sampling": {}, "seed": 2}


def test_the_factory_builds_anchors_and_refuses_bad_configs_by_field() -> None:
    env = make("storebench/payment-outage", seed=0)
    assert policy_from_config({"kind": "scripted", "name": "do-nothing"}, env, 0).name == "do-nothing"
    with pytest.raises(ValueError, match="kind: 'human' cannot act"):
        policy_from_config({"kind": "human", "name": "h"}, env, 0)
    with pytest.raises(ValueError, match="model: a hf agent needs a model"):
        policy_from_config({"kind": "hf", "name": "x"}, env, 0)


def test_vllm_is_imported_only_when_a_vllm_agent_is_built() -> None:
    import training.policies  # noqa: F401

    assert "vllm" not in sys.modules
    if "vllm" in sys.modules or _has_vllm():
        pytest.skip("vllm is installed here; the missing-extra message cannot be checked")
    from training.policies.vllm import VLLMUnavailable

    with pytest.raises(VLLMUnavailable, match="gpu` extra"):
        policy_from_config({"kind": "vllm", "name": "v", "model": "some/model"}, make("toolgym/lookup", seed=0), 0)


def _has_vllm() -> bool:
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def test_a_storebench_model_gets_the_status_line_with_each_prompt_and_no_free_state() -> None:
    """Parity with a human player: the status line (day, clock, budget) is free, the world's state is not. After
    end_window the cash has changed; with the turns that showed anything dropped, no prompt may carry it."""
    env = make("storebench/cash-crunch", seed=0)
    calls = [
        '<tool_call>{"name": "end_window", "arguments": {}}</tool_call>',
        '<tool_call>{"name": "read_news", "arguments": {}}</tool_call>',
    ]
    policy = _Scripted(
        [*calls, "done"],
        env=env,
        seed=0,
        name="s",
        model="m",
        harness=HarnessConfig(system_prompt="S", window_turns=1, on_text_only="stop"),
    )
    run_episode(env, policy, max_steps=3)
    cash = f"{env.world.cash:,.2f}"  # type: ignore[attr-defined]
    last = policy.prompts[-1]
    assert last[-1] == {"role": "user", "content": f"Status: {env.status_line()}"} and "Day 1 of 35" in last[-1]["content"]
    assert [m["content"] for m in last if "omitted" in str(m["content"])] == ["[1 earlier turns are omitted to fit the context window.]"]
    assert not any(cash in str(m["content"]) or cash.replace(",", "") in str(m["content"]) for m in last)


def test_compact_tools_lists_the_tools_in_the_system_prompt_and_hands_the_template_none() -> None:
    env = make("toolgym/lookup", seed=0)
    seen: list[list[dict[str, Any]]] = []

    class Compact(_Scripted):
        def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int) -> Completion:
            seen.append(tools)
            return super().complete(messages, tools, seed=seed)

    policy = Compact(["x"], env=env, seed=0, name="s", model="m", harness=HarnessConfig(system_prompt="S", compact_tools=True))
    policy.act(_history(1), env.tools())
    system = policy.prompts[0][0]["content"]
    assert system.startswith("S\nTools (call one as <tool_call>") and system.endswith("lookup(item)\nanswer(color)")
    assert seen == [[]] and policy.system_prompt == "S"  # the listing is per prompt, never kept


def test_a_truncated_prompt_is_recorded_on_the_step() -> None:
    env = make("toolgym/lookup", seed=0)
    env.summary = lambda: "Day 9"  # type: ignore[method-assign]
    policy = _Scripted(
        ['<tool_call>{"name": "lookup", "arguments": {"item": "lamp"}}</tool_call>'],
        env=env,
        seed=0,
        name="s",
        model="m",
        harness=HarnessConfig(system_prompt="S", window_turns=8, max_context_tokens=150, max_new_tokens=10),
    )
    action = policy.act(_history(12), env.tools())
    assert action.meta["context"] == {
        "omitted_turns": 10,
        "prompt_tokens": policy.count_prompt_tokens(policy.prompts[0], []),
        "budget": 140,
    }
