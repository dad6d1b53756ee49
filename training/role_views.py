"""Per-role training views of exported records: each role is trained on its own turns, rewarded by what followed.

    episodes = tokenize_role(record, tokenizer, role="critic")     # one example per critic turn
    rewards = [e.reward for e in episodes]                         # the episode's outcome (or next-k success)
    decisions = consult_decisions(record)                          # each actor step: consulted?, cost, outcome

- **actor**: the record's sequence as data.tokenize_record builds it: other roles' turns are context (marked
  user messages), only the actor's tokens are trained; the reward is data.record_reward (the header's `reward`,
  a team's composite minus its consultation costs, when present; else the composite).
- **critic** (and any role other than the actor): one example per turn of that role; its prompt is what that
  role saw (the sampled `prompt_token_ids` when the step has them, else re-rendered as the policy renders it:
  training/policies/roles.py), its trained tokens are the turn's own (`token_ids` when sampled). The critic is
  trained only on whether the actor then succeeds: each critic turn's reward is the episode's outcome
  (data.record_reward), or with `horizon=k` the share of the actor's next k steps that ran without an error
  (a denser, more local signal; the outcome when no actor step follows).
- **user** (a model user, policies/roles.py): its turns as above, prompted with its goal card and the conversation
  from its side; its trained turn is what it wrote, private note included ("NOTE: ...\nSAY: ..."), which no
  other role's view shows. A re-rendered prompt needs the goal card as `system_prompt` (records do not carry it).
- **consultant**: its turns as above (prompted like the actor, answering the action it suggests), rewarded by
  the outcome; `consult_decisions` gives the actor's choice to consult or not at each step with the outcome and
  the cost, the data for learning when a consultation pays.

A re-rendered critic prompt uses the record's system prompt (header.harness.system_prompt) or the one given;
the policy's own default names the environment's task description, which records do not carry: train critics
from sampled records (they carry their prompt ids) to train on exactly what the critic saw.
"""

from __future__ import annotations

from typing import Any

from environments.records import Record, Step, header_composite
from environments.roles import ACTOR, CONSULT, CONSULTANT, CRITIC, RUNNER_TOOLS, USER, step_role
from training.data import (
    AGENT_SOURCES,
    PromptStyle,
    TokenizedEpisode,
    empty_episode,
    encode_text,
    record_messages,
    record_reward,
    render_chat,
    step_trainable,
    tokenize_record,
)
from training.policies.roles import CONSULTANT_INSTRUCTION, critic_messages, is_actor_turn, user_messages, user_turn_text


def role_steps(record: Record, role: str) -> list[dict[str, Any]]:
    """The turns a role took in the record (the actor's: its agent and human steps)."""
    if role == ACTOR:
        return [s for s in record["steps"] if is_actor_turn(s, AGENT_SOURCES)]
    return [s for s in record["steps"] if step_role(s) == role]


def _step_failed(step: Step) -> bool:
    meta = step.get("meta") or {}
    return bool(meta.get("invalid_action")) or any(r.get("is_error") for r in step.get("results") or [])


def turn_reward(record: Record, index: int, *, horizon: int = 0) -> float | None:
    """A role turn's reward: the episode's outcome, or (horizon=k) the share of the actor's next k steps without an error."""
    assert horizon >= 0, f"horizon must not be negative, got {horizon}"
    if horizon:
        following = [s for s in role_steps(record, ACTOR) if s["index"] > index][:horizon]
        if following:
            return sum(not _step_failed(s) for s in following) / len(following)
    return record_reward(record)


def consult_cost(record: Record) -> float:
    """What one consultation cost in this episode (the team's consultant setting in the header; 0 without one)."""
    consultant = ((record.get("header") or {}).get("team") or {}).get(CONSULTANT) or {}
    cost = consultant.get("cost", 0.0) if isinstance(consultant, dict) else 0.0
    return float(cost) if isinstance(cost, int | float) else 0.0


def consult_decisions(record: Record) -> list[dict[str, Any]]:
    """Each actor step's decision to consult or not, with its cost and the episode's outcome (reward and composite)."""
    cost, reward = consult_cost(record), record_reward(record)
    composite = header_composite(record.get("header") or {})
    out = []
    for step in role_steps(record, ACTOR):
        consulted = sum(1 for c in step.get("tool_calls") or [] if c.get("name") == CONSULT)
        out.append(
            {"step": step["index"], "consulted": bool(consulted), "cost": cost * consulted, "reward": reward, "composite": composite}
        )
    return out


def _prompt_messages(record: Record, step: Step, system_prompt: str, style: PromptStyle, window_turns: int) -> list[dict[str, Any]]:
    """What the role saw before its turn, rendered as its policy renders it."""
    before = [s for s in record["steps"] if s["index"] < step["index"]]
    if step_role(step) == CRITIC:
        return critic_messages(before, system_prompt=system_prompt, window_turns=window_turns, max_result_chars=style.max_result_chars)
    if step_role(step) == USER:
        return user_messages(before, system_prompt=system_prompt, window_turns=window_turns, max_result_chars=style.max_result_chars)
    system = f"{system_prompt}\n\n{CONSULTANT_INSTRUCTION}" if step_role(step) == CONSULTANT else system_prompt
    prefix = {**record, "steps": before}
    return [{k: v for k, v in m.items() if not k.startswith("_")} for m in record_messages(prefix, system_prompt=system, style=style)]


def _turn_message(step: Step) -> dict[str, Any]:
    message = step.get("message")
    text = message if isinstance(message, str) else ("" if message is None else str(message))
    if step_role(step) == CRITIC:
        return {"role": "assistant", "content": text}
    if step_role(step) == USER:  # the user's own view keeps its private note: it is what the model wrote
        return {"role": "assistant", "content": user_turn_text(step)}
    calls = [
        {"type": "function", "id": c.get("id", ""), "function": {"name": c["name"], "arguments": c.get("arguments", {})}}
        for c in step.get("tool_calls") or []
    ]
    return {"role": "assistant", "content": text, "tool_calls": calls}


def _example(record: Record, step: Step, tokenizer: Any, *, system_prompt: str, style: PromptStyle, window_turns: int) -> TokenizedEpisode:
    episode = empty_episode(record)
    sampled, logprobs = step.get("token_ids"), step.get("logprobs")
    logprobs = logprobs if sampled and logprobs is not None and len(logprobs) == len(sampled) else None
    trained = step_trainable(step)
    if sampled and step.get("prompt_token_ids"):  # exactly what the role saw and wrote, never re-tokenized
        episode.append(list(step["prompt_token_ids"]), trained=False, env=False, step=-1)
        episode.append(list(sampled), trained=trained, env=False, step=step["index"], logprobs=logprobs)
        return episode
    prompt = _prompt_messages(record, step, system_prompt, style, window_turns)
    tools = (
        None
        if step_role(step) in (CRITIC, USER)
        else style.template_tools(
            [t for t in (record.get("header") or {}).get("tools") or [] if (t.get("function") or t).get("name") not in RUNNER_TOOLS]
        )
    )
    head = render_chat(tokenizer, prompt, tools, generation_prompt=True)
    full = render_chat(tokenizer, [*prompt, _turn_message(step)], tools)
    assert full.startswith(head), f"step {step['index']}: the chat template does not extend the generation prompt"
    body, eos = full[len(head) :], tokenizer.eos_token
    cut = body.rfind(eos)
    body_text, tail_text = (body[: cut + len(eos)], body[cut + len(eos) :]) if cut >= 0 else (body, "")
    episode.append(encode_text(tokenizer, head), trained=False, env=False, step=-1)
    if sampled:
        episode.append(list(sampled), trained=trained, env=False, step=step["index"], logprobs=logprobs)
    else:
        episode.append(encode_text(tokenizer, body_text), trained=trained, env=False, step=step["index"])
    episode.append(encode_text(tokenizer, tail_text), trained=False, env=False, step=step["index"])
    return episode


def tokenize_role(
    record: Record,
    tokenizer: Any,
    *,
    role: str = ACTOR,
    max_tokens: int | None = None,
    horizon: int = 0,
    system_prompt: str | None = None,
    style: PromptStyle = PromptStyle(),
    window_turns: int = 12,
) -> list[TokenizedEpisode]:
    """A role's training examples from one record (see the module docstring); [] when the role never took a turn."""
    if role == ACTOR:
        return tokenize_record(record, tokenizer, max_tokens=max_tokens, system_prompt=system_prompt, style=style)
    system = (
        system_prompt if system_prompt is not None else str(((record.get("header") or {}).get("harness") or {}).get("system_prompt") or "")
    )
    episodes = []
    for step in role_steps(record, role):
        episode = _example(record, step, tokenizer, system_prompt=system, style=style, window_turns=window_turns)
        episode.reward = turn_reward(record, step["index"], horizon=horizon)
        episode.meta.update(role=role, step=step["index"])
        episodes.append(episode.truncate(max_tokens) if max_tokens is not None else episode)
    return episodes
