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

A model critic (`critic=CriticTurns(model, every=1)`) takes its turns inside the same batched loop, as the runner's
Crew does (environments/team.py): after an actor turn that failed (`on_error`) or after every `every`-th actor turn,
while the episode goes on, it reads the transcript (training.policies.roles.critic_messages), one batched generate
writes every due critic's advice, each is recorded as a step of role "critic" with its own prompt and sampled ids,
and the advice enters the actor's next prompt ids as a "Critic: ..." user turn, exactly as record_messages shows it.
`continue_episodes` rebuilds actor turns only, so records with critic turns cannot be continued.

Consultation (`consultation=Consultation(...)`): the actor may call the runner's `consult` tool, answered as the
runner's crew answers it (environments.team): the episode's consultant suggests calls, they come back as the call's
result (never sent to the environment), a consultant step follows the actor's, and the header's `reward` is the
composite minus `cost` per consultation (its `team` names the consultant and the cost, as a runner record does).
A `router` may force an actor turn's text instead of sampling it (a scripted consultation, or following the advice):
such a step is applied exactly like a sampled one and marked `meta.routed`; its logprobs are nan.

`harness_level` (environments.roles.HARNESS_LEVELS) plays every episode under that harness: after each agent turn
the runner's own Crew (environments.team) takes its decisions (tracker, hint, verification, stop check), recorded
as steps of role "harness" and shown in the next prompt as the runner's records render them ("Harness: ..."), and
its end decisions end the episode as they would in the runner. Only for environments without role slots.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from environments.attacks import REPORT_KEY
from environments.core import Action, Env, Policy, Score, StepResult, ToolCall, ToolSpec, validate_arguments
from environments.records import Header, Record, ScoreDict, Step, ToolCallDict, ToolResultDict, record_score
from environments.registry import make
from environments.replay import heard_by
from environments.roles import ACTOR, CONSULT, CONSULTANT, CRITIC, Team, step_role
from environments.runner import env_end_reason
from environments.team import CONSULT_TOOL, Crew, slot_policies, slot_turns
from environments.trajectory import make_step, new_record
from training.context import truncate_messages
from training.data import PromptStyle, cut_text
from training.decode import DecodeEngine, Session, engine_for
from training.policies.roles import context_messages, critic_messages
from training.toolcall_parse import parse_tool_calls

Router = Callable[[Record], str | None]
SlotFactory = Callable[[Env, int], dict[str, Policy]]
"""(env, seed) -> policies for some of the environment's role slots (a model user), the others keep their default."""
"""(the episode's record so far) -> the text forced as the actor's next turn, or None to sample it."""


@dataclass(frozen=True)
class Consultation:
    """The actor's `consult` tool in sampled episodes: who answers, what a call costs, whether the actor sees it."""

    consultant: Callable[[Env, int], Policy]
    """The episode's consultant from its environment and seed (an anchor, or a teacher's LLM policy)."""
    cost: float = 0.0
    """What one consultation costs; the header's reward is the composite minus cost x consultations."""
    offered: bool = True
    """Whether the actor's prompt lists the consult tool (False: only a router's forced turns consult)."""


def system_prompt_for(env: Env) -> str:
    return f"You are an agent in {env.name}. {env.task.description}"


@dataclass
class _Live:
    env: Env
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    prompt_ids: list[int]
    record: Record
    max_turns: int = 4  # the turn at which this episode stops (a continuation may stop early)
    turns: int = 0
    valid_calls: int = 0
    invalid_calls: int = 0
    finished: bool = False
    style: PromptStyle = PromptStyle()
    slots: dict[str, Policy] = field(default_factory=dict)  # the environment's role slots (the user), each with its default policy
    extra: dict[str, Any] = field(default_factory=dict)
    consultation: Consultation | None = None
    consultant: Policy | None = None  # this episode's consultant (made from consultation.consultant)
    consultations: int = 0
    crew: Crew | None = None  # the harness's decisions when a harness level other than tools-only is played
    reason: str | None = None  # the harness's end decision (the stop check), when it ended the episode
    context: dict[str, Any] | None = None  # what the next prompt omitted to fit (_fit_context), recorded on the next step


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
    A `model` with `sample_completions` is a generation server's client (training.generation_pool.ServerSampler).
    """
    if hasattr(model, "sample_completions"):
        return model.sample_completions(prompts, max_new_tokens=max_new_tokens, temperature=temperature, eos_id=tokenizer.eos_token_id)
    engine = engine_for(model, tokenizer)
    if engine is not None:
        sessions = _group_sessions(engine, prompts)
        return engine.generate(sessions, prompts, max_new_tokens=max_new_tokens, temperature=temperature)
    return hf_generate(model, tokenizer, prompts, max_new_tokens=max_new_tokens, temperature=temperature)


def _group_sessions(engine: DecodeEngine, prompts: list[list[int]]) -> list[Session]:
    """A session per prompt; prompts that are the same ids (a GRPO group, pass@k) share one prefill, forked."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, prompt in enumerate(prompts):
        groups.setdefault(tuple(prompt), []).append(i)
    sessions: list[Any] = [None] * len(prompts)
    for key, members in groups.items():
        if len(members) == 1:
            sessions[members[0]] = engine.session()
            continue
        parent = engine.session()
        engine.prefill(parent, list(key[:-1]))  # the last prompt token is fed by each turn: its logits start the sample
        for i, child in zip(members, engine.fork(parent, len(members)), strict=True):
            sessions[i] = child
        parent.release()
    return sessions


@torch.no_grad()
def hf_generate(
    model: Any, tokenizer: Any, prompts: list[list[int]], *, max_new_tokens: int, temperature: float
) -> list[tuple[list[int], list[float]]]:
    """`generate` through HF `generate` (left-padded batch, no cache kept): models the engine does not run, and the
    reference the engine's tests and benchmark compare against."""
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

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        raise AssertionError("the sampler generates the actor's turns itself")


def _start(
    task_id: str,
    seed: int,
    tokenizer: Any,
    system_prompt: str | None,
    style: PromptStyle,
    max_turns: int,
    *,
    consultation: Consultation | None = None,
    harness_level: str = "tools-only",
    env_options: dict[str, Any] | None = None,
    slots: SlotFactory | None = None,
    env_version: str | None = None,
) -> _Live:
    env = make(task_id, seed, options=env_options or None, version=env_version)
    observation = env.reset()
    offered = [CONSULT_TOOL] if consultation is not None and consultation.offered else []
    schemas = [t.openai_schema() for t in [*env.tools(), *offered]]
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
    header: Header = {**env.header(), "source": "rollout", "tools": schemas, "harness": harness}
    overrides = slots(env, seed) if slots is not None else {}
    slot_map = slot_policies(env, overrides)
    crew = None
    if harness_level != "tools-only":
        assert not slot_map, f"{env.name} has role slots ({', '.join(slot_map)}): the sampler plays harness levels only without them"
        crew = Crew(env, Team(actor=_Sampled(), harness_level=harness_level), emit=lambda step: None)
        header["team"] = {"harness_level": harness_level}  # where the runner's records say it (header.team.harness_level)
    if overrides:  # as the runner's records name a team's slot players
        header["team"] = {"slots": {name: {"policy": p.describe(), "default": False} for name, p in overrides.items()}}
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
        slots=slot_map,
        max_turns=max_turns,
        consultation=consultation,
        consultant=consultation.consultant(env, seed) if consultation is not None else None,
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


def _consult(live: _Live, call: ToolCall) -> tuple[Any, bool, Step | None]:
    """A consult call's result, whether it is an error, and the consultant's step to append after the actor's (None
    when refused for bad arguments: no turn, no cost), as environments.team answers it."""
    assert live.consultant is not None and live.consultation is not None, "a consult call is answered only with a consultation"
    if problem := validate_arguments(CONSULT_TOOL.parameters, call.arguments):
        return {"error": problem}, True, None
    action = live.consultant.act(live.record["steps"], live.env.tools())
    suggested = [{"name": c.name, "arguments": c.arguments} for c in action.tool_calls]
    reasoning = action.reasoning or action.message or ""
    asked_at = len(live.record["steps"])
    meta = {**action.meta, "suggested_calls": suggested, "cost": live.consultation.cost, "asked_at": asked_at, "answers_call": call.id}
    step = make_step(index=asked_at + 1, source="agent", message=action.message, reasoning=action.reasoning, meta=meta, role=CONSULTANT)
    live.consultations += 1
    return {"suggested_calls": suggested, "reasoning": reasoning}, False, step


def _apply(live: _Live, tokenizer: Any, completion: list[int], logprobs: list[float], *, routed: bool = False) -> None:
    text = tokenizer.decode(completion, skip_special_tokens=False).removesuffix(tokenizer.eos_token)
    parsed = parse_tool_calls(text)
    index = len(live.record["steps"])
    calls: list[ToolCallDict] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in parsed.tool_calls]
    results: list[ToolResultDict] = []
    events: list[dict[str, Any]] = []
    reward = 0.0
    meta: dict[str, Any] = {"routed": True} if routed else {}
    if live.context is not None:  # this turn's prompt was cut to fit: the step says so, as the harness's steps do
        meta["context"], live.context = live.context, None
    consultant_steps: list[Step] = []
    speaks = bool(parsed.message) and not parsed.error
    if parsed.error or not (parsed.tool_calls or (speaks and live.slots)):
        live.invalid_calls += 1
        error = parsed.error or "no tool call found; call a tool as <tool_call>{...}</tool_call>"
        results.append({"call_id": calls[0]["id"] if calls else "invalid", "content": {"error": error}, "is_error": True})
        meta["invalid_action"] = error  # nothing reached the environment: replay must not run the calls that did parse
    for call in parsed.tool_calls if not parsed.error else []:
        if call.name == CONSULT and live.consultation is not None:  # the runner's tool: answered here, never sent to the env
            content, is_error, answer = _consult(live, call)
            results.append({"call_id": call.id, "content": content, "is_error": is_error})
            live.valid_calls += 0 if is_error else 1
            live.invalid_calls += 1 if is_error else 0
            consultant_steps += [answer] if answer is not None else []
            continue
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
    step.update({"token_ids": list(completion), "logprobs": list(logprobs), "prompt_token_ids": list(live.prompt_ids), "reward": reward})
    live.record["steps"].append(step)
    for answer in consultant_steps:  # after the actor step that asked, as the runner's crew appends them
        live.record["steps"].append({**answer, "index": len(live.record["steps"])})
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
    _, live.reason = live.crew.after_actor_step(
        steps, "", action=Action(message=message), failed=failed, reason=env_end_reason(live.env), limit=live.max_turns
    )
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
    consultation: Consultation | None = None,
    router: Router | None = None,
    critic: CriticTurns | None = None,
    harness_level: str | Sequence[str] = "tools-only",
    env_options: dict[str, Any] | Sequence[dict[str, Any] | None] | None = None,
    slots: SlotFactory | None = None,
    env_version: str | None = None,
) -> list[Record]:
    """Play one episode per (task id, seed) job with the model; returns canonical records with token ids.

    `slots` fills role slots with other policies than their defaults (a model user in the service desk's `user` slot);
    `env_version` builds every episode on that engine version (StoreBench's frozen "1.0.0"; None: the current one).

    `style` must match the one the model was trained with (compact tool listing, cut tool results). `consultation`
    gives the actor the consult tool; `router` may force turns; with `critic`, a model critic advises the actor (it
    must share the actor's tokenizer); `harness_level` plays the episodes under that harness: one level for every
    job, or one per job (so episodes under several levels share each batched generate). `env_options` are the
    episodes' environment options (Env.options_schema): one dict for every job (StoreBench's reward="daily"), or one
    per job (an attack, a user profile; None: the defaults). The header records them, so replay and continuations
    rebuild the same environment. See the module docstring."""
    levels = [harness_level] * len(jobs) if isinstance(harness_level, str) else list(harness_level)
    assert len(levels) == len(jobs), f"harness_level: {len(levels)} levels for {len(jobs)} jobs"
    per_job = list(env_options) if isinstance(env_options, Sequence) else [env_options] * len(jobs)
    assert len(per_job) == len(jobs), f"env_options: {len(per_job)} for {len(jobs)} jobs"
    lives = [
        _start(
            task,
            seed,
            tokenizer,
            system_prompt,
            style,
            max_turns,
            consultation=consultation,
            harness_level=level,
            env_options=job_options,
            slots=slots,
            env_version=env_version,
        )
        for (task, seed), level, job_options in zip(jobs, levels, per_job, strict=True)
    ]
    if critic is not None:
        for live in lives:
            team = live.record["header"].setdefault("team", {})
            team[CRITIC] = {"every": critic.every, "on_request": False, "on_error": critic.on_error}
    _play(
        model,
        tokenizer,
        lives,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        max_prompt_tokens=max_prompt_tokens,
        router=router,
        critic=critic,
    )
    return [_close(live, max_turns) for live in lives]


def continue_episodes(
    model: Any,
    tokenizer: Any,
    prefixes: list[tuple[Record, int]],
    *,
    turns: int | None = None,
    max_turns: int = 4,
    max_new_tokens: int = 64,
    temperature: float = 1.0,
    max_prompt_tokens: int = 4096,
    consultation: Consultation | None = None,
    router: Router | None = None,
) -> list[Record]:
    """For each (record, prefix_length), rebuild the episode after the record's steps [0, prefix_length) and let
    `model` play up to `turns` more agent turns (None: to the end), never past `max_turns` in all.

    The record must come from this sampler (its agent steps carry `token_ids`): each prefix step's ids are
    re-applied as if just sampled, so the environment, the messages and the prompt ids are exactly those
    `rollout_episodes` had at that point, and the new steps' `prompt_token_ids` extend the prefix's ids. The
    system prompt and prompt style come from the record's harness header. A returned record holds the prefix
    steps and the new ones; its header says `source="branch"` and `parent.branch_step = prefix_length`. An
    episode already over after the prefix comes back with no new steps."""
    lives = [_resume(record, prefix_length, tokenizer, max_turns, consultation) for record, prefix_length in prefixes]
    for live in lives:
        live.max_turns = min(max_turns, live.turns + turns) if turns is not None else max_turns
        live.finished = live.finished or live.turns >= live.max_turns
    _play(
        model, tokenizer, lives, max_new_tokens=max_new_tokens, temperature=temperature, max_prompt_tokens=max_prompt_tokens, router=router
    )
    out = []
    for live, (_, prefix_length) in zip(lives, prefixes, strict=True):
        record = _close(live, max_turns)
        record["header"].update({"source": "branch", "parent": {"episode_id": None, "branch_step": prefix_length}})
        out.append(record)
    return out


def _resume(record: Record, prefix_length: int, tokenizer: Any, max_turns: int, consultation: Consultation | None = None) -> _Live:
    header = record["header"]
    harness = header.get("harness") or {}
    style = PromptStyle(compact_tools=bool(harness.get("compact_tools")), max_result_chars=int(harness.get("max_result_chars") or 0))
    level = (header.get("team") or {}).get("harness_level", "tools-only")
    seed = header["seed"]
    assert seed is not None, "only a seeded episode can be continued"
    live = _start(
        f"{header['env']}/{header['task']}",
        int(seed),
        tokenizer,
        harness.get("system_prompt"),
        style,
        max_turns,
        consultation=consultation,
        harness_level=level,
        env_options=header.get("options"),
    )
    for step in record["steps"][1:prefix_length]:
        if step_role(step) != ACTOR:
            continue  # a slot's answer (the user) or a harness decision: re-applying the actor's turn before it makes it again
        token_ids = step.get("token_ids")
        assert step.get("source") == "agent" and token_ids, (
            f"step {step.get('index')} carries no sampled token ids: only this sampler's records can be continued"
        )
        cut = (step.get("meta") or {}).get("context")
        if cut:  # the sampler cut this turn's prompt to fit its budget then: cut it the same way again
            _fit_context(live, tokenizer, int(cut["budget"]))
        recorded = step.get("prompt_token_ids")
        assert recorded is None or recorded == live.prompt_ids, (
            f"step {step['index']}: the rebuilt prompt differs from the recorded one (another tokenizer or prompt style?)"
        )
        routed = bool((step.get("meta") or {}).get("routed"))
        _apply(live, tokenizer, list(token_ids), list(step.get("logprobs") or [0.0] * len(token_ids)), routed=routed)
    return live


def _play(
    model: Any,
    tokenizer: Any,
    lives: list[_Live],
    *,
    max_new_tokens: int,
    temperature: float,
    max_prompt_tokens: int,
    router: Router | None = None,
    critic: CriticTurns | None = None,
) -> None:
    """Turn by turn, one batched generate over the unfinished episodes, until each ends or outgrows the prompt budget;
    a turn the router forces is applied from its text instead (the model is not called when every turn is forced);
    with a critic, its due turns after each actor turn (one more batched generate).

    A model the decode engine runs (training.decode) plays continuously instead: each episode keeps its KV cache
    across turns, episodes with the same opening prompt share one prefill, and an episode whose turn ended goes to
    its environment and back into the batch while the others decode (`_play_engine`)."""
    engine = engine_for(model, tokenizer)
    if engine is not None:
        _play_engine(
            engine,
            tokenizer,
            lives,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            max_prompt_tokens=max_prompt_tokens,
            router=router,
            critic=critic,
        )
        return
    while True:
        for live in lives:
            _fit_context(live, tokenizer, max_prompt_tokens)
        active = [live for live in lives if not live.finished and len(live.prompt_ids) < max_prompt_tokens]
        if not active:
            return
        forced = [router(live.record) if router is not None else None for live in active]
        sampled = [live for live, text in zip(active, forced, strict=True) if text is None]
        prompts = [live.prompt_ids for live in sampled]
        outputs = generate(model, tokenizer, prompts, max_new_tokens=max_new_tokens, temperature=temperature) if sampled else []
        for live, (completion, logprobs) in zip(sampled, outputs, strict=True):
            _apply_guarded(live, tokenizer, completion, logprobs)
        for live, text in zip(active, forced, strict=True):
            if text is not None:
                ids = _encode(tokenizer, text) + [tokenizer.eos_token_id]
                _apply_guarded(live, tokenizer, ids, [math.nan] * len(ids), routed=True)
        if critic is not None:
            _critic_turns(critic, tokenizer, active, max_prompt_tokens)


def _fit_context(live: _Live, tokenizer: Any, max_prompt_tokens: int) -> list[int]:
    """The episode's next prompt ids, cut to fit `max_prompt_tokens` by the one truncation rule (training.context: the
    oldest turns go, whole, behind a marker note; never the system prompt or the task) when they have outgrown it.
    The cut prompt starts a new sequence (the engine keeps the shared prefix's cache; training.data starts a new
    training sequence where a prompt stops extending the last) and the next step records `meta.context`. When the
    newest turn alone does not fit, nothing changes and the episode ends (context_window_exceeded)."""
    if live.finished or len(live.prompt_ids) < max_prompt_tokens:
        return live.prompt_ids

    def ids(messages: list[dict[str, Any]]) -> list[int]:
        return _encode(tokenizer, _render(tokenizer, messages, live.tools, True))

    messages, omitted = truncate_messages(live.messages, fits=lambda m: len(ids(m)) < max_prompt_tokens, summary=live.env.summary())
    cut = ids(messages)
    if omitted and len(cut) < max_prompt_tokens:
        live.messages, live.prompt_ids = messages, cut
        live.context = {"omitted_turns": omitted, "prompt_tokens": len(cut), "budget": max_prompt_tokens}
    return live.prompt_ids


def _apply_guarded(live: _Live, tokenizer: Any, completion: list[int], logprobs: list[float], *, routed: bool = False) -> bool:
    """`_apply`, except that an environment raising ends that episode as failed ("env_error", the cause in the
    header) instead of the whole rollout. Whether the episode goes on."""
    try:
        _apply(live, tokenizer, completion, logprobs, routed=routed)
    except AssertionError:
        raise  # the sampler's own invariants are bugs to see, not an environment's failure
    except Exception as exc:  # an environment's bug ends its own episode, never the group's
        live.finished = True
        live.reason = "env_error"
        live.record["header"]["termination_cause"] = {"type": type(exc).__name__, "message": str(exc)[:500]}
    return not live.finished


def _play_engine(
    engine: DecodeEngine,
    tokenizer: Any,
    lives: list[_Live],
    *,
    max_new_tokens: int,
    temperature: float,
    max_prompt_tokens: int,
    router: Router | None = None,
    critic: CriticTurns | None = None,
) -> None:
    """`_play` with continuous batching: each episode is submitted as soon as its previous turn has been applied."""
    sessions = dict(zip(map(id, lives), _group_sessions(engine, [live.prompt_ids for live in lives]), strict=True))

    def next_turn(live: _Live) -> None:
        while not live.finished and len(_fit_context(live, tokenizer, max_prompt_tokens)) < max_prompt_tokens:
            text = router(live.record) if router is not None else None
            if text is None:
                engine.submit(sessions[id(live)], live.prompt_ids, max_new_tokens=max_new_tokens, temperature=temperature, tag=live)
                return
            ids = _encode(tokenizer, text) + [tokenizer.eos_token_id]
            if _apply_guarded(live, tokenizer, ids, [math.nan] * len(ids), routed=True) and critic is not None:
                _critic_turns(critic, tokenizer, [live], max_prompt_tokens)
        sessions.pop(id(live)).release()  # the episode is over (or outgrew the prompt budget): its cache goes

    for live in lives:
        next_turn(live)
    while engine.busy():
        for done in engine.step():
            live = done.tag
            if _apply_guarded(live, tokenizer, done.ids, done.logprobs) and critic is not None:
                _critic_turns(critic, tokenizer, [live], max_prompt_tokens)
            next_turn(live)


@dataclass(frozen=True)
class CriticTurns:
    """A model critic inside sampled episodes (module docstring): when it speaks and how it samples."""

    model: Any
    every: int = 1  # advise after every `every`-th actor turn (0: never on a schedule)
    on_error: bool = False  # advise after an actor turn that was an invalid action or whose call failed
    max_new_tokens: int = 48
    temperature: float = 1.0  # 0: greedy
    window_turns: int = 12  # steps of the transcript the critic reads verbatim (critic_messages)

    def __post_init__(self) -> None:
        assert self.every >= 0 and (self.every or self.on_error), (
            f"a critic that never speaks: every={self.every}, on_error={self.on_error}"
        )
        assert self.max_new_tokens >= 1 and self.temperature >= 0 and self.window_turns >= 1, (
            f"critic sampling: max_new_tokens={self.max_new_tokens}, temperature={self.temperature}, window_turns={self.window_turns}"
        )


def critic_trigger(critic: CriticTurns, steps: list[Step]) -> str | None:
    """Why the critic speaks after the last actor turn of `steps` ("error" before "schedule", as the runner's Crew
    decides), or None."""
    actor = [s for s in steps if s.get("source") == "agent" and step_role(s) == ACTOR]
    if not actor:
        return None
    last = actor[-1]
    failed = bool((last.get("meta") or {}).get("invalid_action")) or any(r.get("is_error") for r in last.get("results") or [])
    if critic.on_error and failed:
        return "error"
    return "schedule" if critic.every and len(actor) % critic.every == 0 else None


def _critic_turns(critic: CriticTurns, tokenizer: Any, lives: list[_Live], max_prompt_tokens: int) -> None:
    """The due critics of `lives` (episodes still running), one batched generate; each advice is recorded and shown."""
    due = []
    for live in lives:
        trigger = None if live.finished else critic_trigger(critic, live.record["steps"])
        if trigger is None:
            continue
        system = str(live.record["header"]["harness"]["system_prompt"])
        messages = critic_messages(
            live.record["steps"], system_prompt=system, window_turns=critic.window_turns, max_result_chars=live.style.max_result_chars
        )
        prompt = _encode(tokenizer, _render(tokenizer, messages, [], True))
        if len(prompt) < max_prompt_tokens:  # a critic whose transcript outgrew the budget stays silent
            due.append((live, trigger, prompt))
    if not due:
        return
    outputs = generate(
        critic.model, tokenizer, [p for _, _, p in due], max_new_tokens=critic.max_new_tokens, temperature=critic.temperature
    )
    for (live, trigger, prompt), (completion, logprobs) in zip(due, outputs, strict=True):
        advice = tokenizer.decode(completion, skip_special_tokens=False).removesuffix(tokenizer.eos_token).strip()
        steps = live.record["steps"]
        advised = [s["index"] for s in steps if s.get("source") == "agent" and step_role(s) == ACTOR][-1]
        step = make_step(index=len(steps), source="agent", message=advice, role=CRITIC, meta={"trigger": trigger, "advises_step": advised})
        step.update({"token_ids": list(completion), "logprobs": list(logprobs), "prompt_token_ids": prompt, "state_hash": None})
        steps.append(step)
        [shown] = context_messages([step], live.style.max_result_chars)  # as record_messages will show it
        if shown is not None:  # an empty advice is recorded (and trained) but not shown
            _insert_turn(live, tokenizer, shown)


def _insert_turn(live: _Live, tokenizer: Any, message: dict[str, Any]) -> None:
    """Put a context turn between the last turn and the actor's next generation prompt (ids concatenated, so the
    actor's prompt ids stay a prefix-extension of its earlier ones)."""
    closed = _render(tokenizer, live.messages, live.tools, False)
    generation = _encode(tokenizer, _render(tokenizer, live.messages, live.tools, True)[len(closed) :])
    assert live.prompt_ids[len(live.prompt_ids) - len(generation) :] == generation, "the prompt ids do not end with the generation prompt"
    turn = _render(tokenizer, live.messages + [message], live.tools, False)[len(closed) :]
    live.prompt_ids = live.prompt_ids[: len(live.prompt_ids) - len(generation)] + _encode(tokenizer, turn) + generation
    live.messages.append(message)


def _close(live: _Live, max_turns: int) -> Record:
    try:
        score = live.env.score()
    except Exception:  # an environment that raised mid-turn may not score either: the episode failed
        assert live.reason == "env_error", "an environment that ran cleanly must score"
        score = Score(composite=0.0, passed=False, components={}, termination_reason="env_error")
    if live.reason is not None:
        reason = live.reason  # the harness ended it (its stop check), or the environment's end it let stand
    elif score.termination_reason:
        reason = score.termination_reason
    elif live.turns >= min(max_turns, live.max_turns):
        reason = "max_steps"  # the harness's cap, or a continuation's own turn cap
    else:
        reason = "context_window_exceeded"
    kept: ScoreDict = {"details": {REPORT_KEY: score.details[REPORT_KEY]}} if REPORT_KEY in (score.details or {}) else {}
    live.record["header"].update(
        {
            "termination_reason": reason,  # the attack report, where there is one, is read from the score (environments.attacks)
            "score": {"composite": score.composite, "passed": score.passed, "components": score.components, **kept},
            "metrics": {"turns": live.turns, "valid_calls": live.valid_calls, "invalid_calls": live.invalid_calls},
        }
    )
    if live.consultation is not None and live.consultant is not None:  # priced like a runner record (environments.runner)
        cost = live.consultation.cost
        live.record["header"].setdefault("team", {})[CONSULTANT] = {"policy": live.consultant.describe(), "cost": cost}
        live.record["header"]["metrics"]["consultations"] = live.consultations
        live.record["header"]["reward"] = round(score.composite - cost * live.consultations, 9)
    return live.record


def episode_stats(records: list[Record]) -> dict[str, float]:
    """Mean reward, pass rate and the share of agent turns that made a valid tool call (parsed and accepted) or, where
    the environment has a user, spoke to it."""
    n = max(len(records), 1)
    valid = sum(r["header"]["metrics"]["valid_calls"] for r in records)
    attempts = valid + sum(r["header"]["metrics"]["invalid_calls"] for r in records)
    return {
        "reward_mean": sum(record_score(r)["composite"] for r in records) / n,
        "pass_rate": sum(1.0 for r in records if record_score(r)["passed"]) / n,
        "valid_call_rate": valid / max(attempts, 1),
        "turns_mean": sum(r["header"]["metrics"]["turns"] for r in records) / n,
    }
