"""Local sampling and multi-turn episodes for the on-policy recipes (HF generate; CPU or one GPU).

    records = rollout_episodes(model, tokenizer, [("toolgym/lookup", 3)] * 8, max_turns=4, temperature=1.0)
    branches = continue_episodes(teacher, tokenizer, [(records[0], 3)], turns=2, max_turns=4)  # from steps [0, 3)

Episodes run side by side: each turn, every unfinished episode's prompt ids go through one batched
`generate`; the output is parsed (training.toolcall_parse), each call goes to the environment's `step`, and the
next prompt is built by concatenating ids (prompt + completion + the tokenized tool-result turn), so the ids a
record carries are exactly the ids the model saw and sampled. Output without a valid call is an invalid
action: its error goes back to the model as the tool result (the step's `meta.invalid_action`, so replay skips
its calls), and the episode goes on until `max_turns`. `continue_episodes` rebuilds an episode from a record's
prefix by re-applying its sampled ids, and lets another model play on with the very prompt ids the sampler would
have built.

Conversational environments (the service desk) declare role slots (EnvMeta.roles): there a message without a
call is a valid turn, spoken to the user. As in the runner (environments.team.slot_turns), every non-empty actor
message is heard by the environment and, after a turn that spoke, each slot's default policy (the service desk's
seeded RuleUser) answers once; its step is recorded with role "user" and its message enters the next prompt as a
user turn, rendered as training.data renders it (training.policies.roles.context_messages).

`harness_level` (environments.roles.HARNESS_LEVELS) plays every episode under that harness: after each agent turn
the runner's own Crew (environments.team) takes its decisions (tracker, hint, verification, stop check), recorded
as steps of role "harness" and shown in the next prompt as the runner's records render them ("Harness: ..."), and
its end decisions end the episode as they would in the runner. Only for environments without role slots.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from environments.core import Action, Env, Policy, StepResult, ToolSpec
from environments.registry import make
from environments.replay import heard_by
from environments.roles import ACTOR, Team, step_role
from environments.runner import env_end_reason
from environments.team import Crew, slot_policies, slot_turns
from environments.trajectory import make_step, new_record
from training.data import PromptStyle, cut_text
from training.policies.roles import context_messages
from training.toolcall_parse import parse_tool_calls


def system_prompt_for(env: Env) -> str:
    return f"You are an agent in {env.name}. {env.task.description}"


@dataclass
class _Live:
    env: Env
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    prompt_ids: list[int]
    record: dict[str, Any]
    max_turns: int = 4  # the turn at which this episode stops (a continuation may stop early)
    turns: int = 0
    valid_calls: int = 0
    invalid_calls: int = 0
    finished: bool = False
    style: PromptStyle = PromptStyle()
    slots: dict[str, Policy] = field(default_factory=dict)  # the environment's role slots (the user), each with its default policy
    extra: dict[str, Any] = field(default_factory=dict)
    crew: Crew | None = None  # the harness's decisions when a harness level other than tools-only is played
    reason: str | None = None  # the harness's end decision (the stop check), when it ended the episode


def _render(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=generation_prompt)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


@torch.no_grad()
def generate(
    model: Any, tokenizer: Any, prompts: list[list[int]], *, max_new_tokens: int, temperature: float
) -> list[tuple[list[int], list[float]]]:
    """Sample one completion per prompt: (token ids up to and including the end-of-turn token, their logprobs).

    temperature 0 is greedy. Logprobs are of the sampling distribution (logits / temperature; raw when greedy).
    """
    device = next(model.parameters()).device
    pad_id, eos_id = tokenizer.pad_token_id, tokenizer.eos_token_id
    width = max(len(p) for p in prompts)
    input_ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts], device=device)  # left padded
    attention = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=device)
    sampling = temperature > 0
    out = model.generate(
        input_ids=input_ids,
        attention_mask=attention,
        max_new_tokens=max_new_tokens,
        do_sample=sampling,
        temperature=temperature if sampling else None,
        top_k=0 if sampling else None,
        top_p=1.0 if sampling else None,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        output_logits=True,
        return_dict_in_generate=True,
    )
    new = out.sequences[:, width:]  # (B, N)
    logits = torch.stack(out.logits, dim=1).float()  # (B, N, V)
    logp = torch.log_softmax(logits / (temperature if sampling else 1.0), dim=-1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
    results = []
    for row, row_logp in zip(new.tolist(), logp.tolist(), strict=True):
        end = row.index(eos_id) + 1 if eos_id in row else len(row)
        results.append((row[:end], row_logp[:end]))
    return results


class _Sampled(Policy):
    """The model the sampler plays, as the Crew's team names it (the sampler, not the Crew, asks it to act)."""

    name = "sampled"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        raise AssertionError("the sampler generates the actor's turns itself")


def _start(task_id: str, seed: int, tokenizer: Any, system_prompt: str | None, style: PromptStyle, max_turns: int,
           harness_level: str = "tools-only") -> _Live:  # fmt: skip
    env = make(task_id, seed)
    observation = env.reset()
    schemas = [t.openai_schema() for t in env.tools()]
    system = system_prompt if system_prompt is not None else system_prompt_for(env)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": style.system(system, schemas)},
        {"role": "user", "content": observation.text},
    ]
    harness = {
        "system_prompt": system,
        "kind": "training.sampling",
        "compact_tools": style.compact_tools,
        "max_result_chars": style.max_result_chars,
        "max_steps": max_turns,  # the turn cap: a takeover from a prefix of this record gets the turns left
    }
    header = {**env.header(), "source": "rollout", "tools": schemas, "harness": harness}
    slots = slot_policies(env)
    crew = None
    if harness_level != "tools-only":
        assert not slots, f"{env.name} has role slots ({', '.join(slots)}): the sampler plays harness levels only without them"
        crew = Crew(env, Team(actor=_Sampled(), harness_level=harness_level), emit=lambda step: None)
        header["team"] = {"harness_level": harness_level}  # where the runner's records say it (header.team.harness_level)
    record = new_record(header=header, steps=[make_step(index=0, source="env", message=observation.text)])
    tools = style.template_tools(schemas) or []
    prompt_ids = _encode(tokenizer, _render(tokenizer, messages, tools, True))
    return _Live(
        env=env,
        messages=messages,
        tools=tools,
        prompt_ids=prompt_ids,
        record=record,
        style=style,
        slots=slots,
        max_turns=max_turns,
        crew=crew,
    )


def _continue_ids(tokenizer: Any, live: _Live, assistant: dict[str, Any], tool_messages: list[dict[str, Any]]) -> list[int]:
    """Ids of the template glue after the assistant's end-of-turn, the tool turns, and the next generation prompt."""
    closed = _render(tokenizer, live.messages + [assistant], live.tools, False)
    glue = closed[closed.rfind(tokenizer.eos_token) + len(tokenizer.eos_token) :]
    following = _render(tokenizer, live.messages + [assistant] + tool_messages, live.tools, True)[len(closed) :]
    return _encode(tokenizer, glue) + _encode(tokenizer, following)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def _apply(live: _Live, tokenizer: Any, completion: list[int], logprobs: list[float]) -> None:
    text = tokenizer.decode(completion, skip_special_tokens=False).removesuffix(tokenizer.eos_token)
    parsed = parse_tool_calls(text)
    index = len(live.record["steps"])
    calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in parsed.tool_calls]
    results: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    reward = 0.0
    meta: dict[str, Any] = {}
    speaks = bool(parsed.message) and not parsed.error
    if parsed.error or not (parsed.tool_calls or (speaks and live.slots)):
        live.invalid_calls += 1
        error = parsed.error or "no tool call found; call a tool as <tool_call>{...}</tool_call>"
        results.append({"call_id": calls[0]["id"] if calls else "invalid", "content": {"error": error}, "is_error": True})
        meta["invalid_action"] = error  # nothing reached the environment: replay must not run the calls that did parse
    for call in parsed.tool_calls if not parsed.error else []:
        outcome: StepResult = live.env.step(call)
        results.append({"call_id": call.id, "content": outcome.content, "is_error": outcome.is_error})
        events.extend(e.as_json() for e in outcome.events)  # the state changes graph credit reads
        live.valid_calls += 0 if outcome.is_error else 1
        live.invalid_calls += 1 if outcome.is_error else 0
        reward += outcome.reward
        if live.env.done:
            break
    extra: dict[str, Any] = {"meta": meta} if meta else {}
    step = make_step(index=index, source="agent", message=parsed.message, tool_calls=calls, results=results, events=events, **extra)
    step.update(token_ids=list(completion), logprobs=list(logprobs), prompt_token_ids=list(live.prompt_ids), reward=reward)
    live.record["steps"].append(step)
    live.turns += 1
    live.valid_calls += 1 if speaks and live.slots and not parsed.tool_calls else 0  # a turn spoken to the user is a valid action
    assistant = {"role": "assistant", "content": text}
    tool_messages = [{"role": "tool", "content": cut_text(_text(r["content"]), live.style.max_result_chars)} for r in results]
    tool_messages += _user_turns(live, parsed.message) if speaks else []
    tool_messages += _harness_turns(live, parsed.message, failed=any(r["is_error"] for r in results))
    closing = [] if completion and completion[-1] == tokenizer.eos_token_id else [tokenizer.eos_token_id]
    live.prompt_ids = live.prompt_ids + list(completion) + closing + _continue_ids(tokenizer, live, assistant, tool_messages)
    live.messages += [assistant, *tool_messages]
    # under a harness its decision ends the episode, as in the runner (a verification may hold back the env's own end)
    ended = live.reason is not None if live.crew is not None else live.env.done
    if ended or live.turns >= live.max_turns:
        live.finished = True


def _harness_turns(live: _Live, message: str | None, *, failed: bool) -> list[dict[str, Any]]:
    """The harness's decisions after the actor step just recorded (appended to the record); returns them as the
    chat messages the actor sees next. Sets `live.reason` when the episode ends (the env's end or a stop decision)."""
    if live.crew is None:
        return []
    steps = live.record["steps"]
    first = len(steps)
    _, live.reason = live.crew.after_actor_step(steps, "", action=Action(message=message), failed=failed,
                                                reason=env_end_reason(live.env), limit=live.max_turns)  # fmt: skip
    for step in steps[first:]:
        step["state_hash"] = None  # sampled records keep no state-hash chain (see the agent steps)
    return [m for m in context_messages(steps[first:], live.style.max_result_chars) if m is not None]


def _user_turns(live: _Live, message: str) -> list[dict[str, Any]]:
    """The actor's message reaches the environment; each role slot answers once (steps appended to the record).
    Returns the slots' turns as the chat messages the actor sees next."""
    if live.env.done or not heard_by(live.env, ACTOR, message):
        return []
    live.env.hear(ACTOR, message)
    steps = live.record["steps"]
    first = len(steps)
    if live.slots and not live.env.done:
        slot_turns(live.env, live.slots, steps, "", emit=lambda step: None)
    for step in steps[first:]:
        step["state_hash"] = None  # sampled records keep no state-hash chain (see the agent steps)
    return [m for m in context_messages(steps[first:], live.style.max_result_chars) if m is not None]


def rollout_episodes(
    model: Any,
    tokenizer: Any,
    jobs: list[tuple[str, int]],
    *,
    max_turns: int = 4,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    system_prompt: str | None = None,
    max_prompt_tokens: int = 4096,
    style: PromptStyle = PromptStyle(),
    harness_level: str | Sequence[str] = "tools-only",
) -> list[dict[str, Any]]:
    """Play one episode per (task id, seed) job with the model; returns canonical records with token ids.

    `style` must match the one the model was trained with (compact tool listing, cut tool results); `harness_level`
    plays the episodes under that harness (module docstring): one level for every job, or one per job (so episodes
    under several levels share each batched generate)."""
    levels = [harness_level] * len(jobs) if isinstance(harness_level, str) else list(harness_level)
    assert len(levels) == len(jobs), f"harness_level: {len(levels)} levels for {len(jobs)} jobs"
    lives = [
        _start(task, seed, tokenizer, system_prompt, style, max_turns, level) for (task, seed), level in zip(jobs, levels, strict=True)
    ]
    _play(model, tokenizer, lives, max_new_tokens=max_new_tokens, temperature=temperature, max_prompt_tokens=max_prompt_tokens)
    return [_close(live, max_turns) for live in lives]


def continue_episodes(
    model: Any,
    tokenizer: Any,
    prefixes: list[tuple[dict[str, Any], int]],
    *,
    turns: int | None = None,
    max_turns: int = 4,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    max_prompt_tokens: int = 4096,
) -> list[dict[str, Any]]:
    """For each (record, prefix_length), rebuild the episode after the record's steps [0, prefix_length) and let
    `model` play up to `turns` more agent turns (None: to the end), never past `max_turns` in all.

    The record must come from this sampler (its agent steps carry `token_ids`): each prefix step's ids are
    re-applied as if just sampled, so the environment, the messages and the prompt ids are exactly those
    `rollout_episodes` had at that point, and the new steps' `prompt_token_ids` extend the prefix's ids. The
    system prompt and prompt style come from the record's harness header. A returned record holds the prefix
    steps and the new ones; its header says `source="branch"` and `parent.branch_step = prefix_length`. An
    episode already over after the prefix comes back with no new steps."""
    lives = [_resume(record, prefix_length, tokenizer, max_turns) for record, prefix_length in prefixes]
    for live in lives:
        live.max_turns = min(max_turns, live.turns + turns) if turns is not None else max_turns
        live.finished = live.finished or live.turns >= live.max_turns
    _play(model, tokenizer, lives, max_new_tokens=max_new_tokens, temperature=temperature, max_prompt_tokens=max_prompt_tokens)
    out = []
    for live, (_, prefix_length) in zip(lives, prefixes, strict=True):
        record = _close(live, max_turns)
        record["header"].update(source="branch", parent={"episode_id": None, "branch_step": prefix_length})
        out.append(record)
    return out


def _resume(record: dict[str, Any], prefix_length: int, tokenizer: Any, max_turns: int) -> _Live:
    header = record["header"]
    harness = header.get("harness") or {}
    style = PromptStyle(compact_tools=bool(harness.get("compact_tools")), max_result_chars=int(harness.get("max_result_chars") or 0))
    level = (header.get("team") or {}).get("harness_level", "tools-only")
    live = _start(
        f"{header['env']}/{header['task']}", int(header["seed"]), tokenizer, harness.get("system_prompt"), style, max_turns, level
    )
    for step in record["steps"][1:prefix_length]:
        if step_role(step) != ACTOR:
            continue  # a slot's answer (the user) or a harness decision: re-applying the actor's turn before it makes it again
        assert step.get("source") == "agent" and step.get("token_ids"), (
            f"step {step.get('index')} carries no sampled token ids: only this sampler's records can be continued"
        )
        recorded = step.get("prompt_token_ids")
        assert recorded is None or recorded == live.prompt_ids, (
            f"step {step['index']}: the rebuilt prompt differs from the recorded one (another tokenizer or prompt style?)"
        )
        _apply(live, tokenizer, list(step["token_ids"]), list(step.get("logprobs") or [0.0] * len(step["token_ids"])))
    return live


def _play(model: Any, tokenizer: Any, lives: list[_Live], *, max_new_tokens: int, temperature: float, max_prompt_tokens: int) -> None:
    """Turn by turn, one batched generate over the unfinished episodes, until each ends or outgrows the prompt budget."""
    while True:
        active = [live for live in lives if not live.finished and len(live.prompt_ids) < max_prompt_tokens]
        if not active:
            return
        outputs = generate(model, tokenizer, [live.prompt_ids for live in active], max_new_tokens=max_new_tokens, temperature=temperature)
        for live, (completion, logprobs) in zip(active, outputs, strict=True):
            _apply(live, tokenizer, completion, logprobs)


def _close(live: _Live, max_turns: int) -> dict[str, Any]:
    score = live.env.score()
    if live.reason is not None:
        reason = live.reason  # the harness ended it (its stop check), or the environment's end it let stand
    elif score.termination_reason:
        reason = score.termination_reason
    elif live.turns >= min(max_turns, live.max_turns):
        reason = "max_steps"  # the harness's cap, or a continuation's own turn cap
    else:
        reason = "context_window_exceeded"
    live.record["header"].update(
        termination_reason=reason,
        score={"composite": score.composite, "passed": score.passed, "components": score.components},
        metrics={"turns": live.turns, "valid_calls": live.valid_calls, "invalid_calls": live.invalid_calls},
    )
    return live.record


def episode_stats(records: list[dict[str, Any]]) -> dict[str, float]:
    """Mean reward, pass rate and the share of agent turns that made a valid tool call (parsed and accepted) or, where
    the environment has a user, spoke to it."""
    n = max(len(records), 1)
    valid = sum(r["header"]["metrics"]["valid_calls"] for r in records)
    attempts = valid + sum(r["header"]["metrics"]["invalid_calls"] for r in records)
    return {
        "reward_mean": sum(r["header"]["score"]["composite"] for r in records) / n,
        "pass_rate": sum(1.0 for r in records if r["header"]["score"]["passed"]) / n,
        "valid_call_rate": valid / max(attempts, 1),
        "turns_mean": sum(r["header"]["metrics"]["turns"] for r in records) / n,
    }
