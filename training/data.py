"""From canonical trajectory records (environments/trajectory.py) to token ids with exact per-token masks.

    episodes = tokenize_record(record, tokenizer, max_tokens=2048)   # usually one; more if context was trimmed
    batch = collate(episodes, pad_id=tokenizer.pad_token_id)         # dict of (B, T) tensors

Only the agent's own tokens are trained (`mask`); system, user, environment and tool-result tokens are masked
and marked in `env_mask` instead (the target of feedback modeling). The agent is the actor: steps of other roles
(critic advice, harness decisions, a consultant's answer) are context in the actor's sequence, shown as marked
user messages exactly as the policies show them (training/policies/roles.py), and never trained here; each role's
own turns are its training view (training/role_views.py). Two paths, one contract:

- sampled ids: when every agent step carries `prompt_token_ids` and `token_ids` (an on-policy rollout), the
  sequence is built from those ids alone, never re-tokenized. Where a step's prompt does not extend the
  sequence so far (the harness trimmed its context), a new sequence starts.
- rendered: otherwise the chat template renders the messages one at a time; each message's text is the
  difference between consecutive renders (the template must be prefix-preserving, and this is asserted), and
  agent steps that carry `token_ids` still use them as their body.

Assistant bodies are trained up to and including the end-of-turn token; the template glue after it is not.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from environments.records import Record, Step, header_composite
from environments.roles import ACTOR, step_role
from training.context import compact_tool_listing
from training.policies.roles import context_messages, is_actor_turn

AGENT_SOURCES = ("agent", "human")  # a human expert's actions are demonstrations like an agent's


@dataclass
class TokenizedEpisode:
    input_ids: list[int]
    mask: list[int]  # 1 on the agent's own tokens, the only ones trained
    env_mask: list[int]  # 1 on environment/user/tool-result tokens: the feedback-modeling target
    weights: list[float]  # per-token weight; 0 wherever mask is 0
    turn_of_token: list[int]  # record step index each token belongs to; -1 for system/template tokens
    agent_spans: list[tuple[int, int, int]]  # (step index, start, end) of each trained agent span
    sampled_logprobs: list[float]  # the sampler's logprob where the record has one, else nan
    truncated: bool = False
    reward: float | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.input_ids)

    def append(
        self, ids: Sequence[int], *, trained: bool, env: bool, step: int, weight: float = 1.0, logprobs: Sequence[float] | None = None
    ) -> None:
        start = len(self.input_ids)
        self.input_ids.extend(ids)
        self.mask.extend([int(trained)] * len(ids))
        self.env_mask.extend([int(env)] * len(ids))
        self.weights.extend([weight if trained else 0.0] * len(ids))
        self.turn_of_token.extend([step] * len(ids))
        self.sampled_logprobs.extend(list(logprobs) if logprobs is not None else [math.nan] * len(ids))
        if trained and ids:
            self.agent_spans.append((step, start, start + len(ids)))

    def truncate(self, max_tokens: int) -> TokenizedEpisode:
        """The first `max_tokens` tokens with every per-token field cut alike (a supervision horizon too)."""
        if len(self) <= max_tokens:
            return self
        spans = [(s, a, min(b, max_tokens)) for s, a, b in self.agent_spans if a < max_tokens]
        return TokenizedEpisode(
            input_ids=self.input_ids[:max_tokens],
            mask=self.mask[:max_tokens],
            env_mask=self.env_mask[:max_tokens],
            weights=self.weights[:max_tokens],
            turn_of_token=self.turn_of_token[:max_tokens],
            agent_spans=spans,
            sampled_logprobs=self.sampled_logprobs[:max_tokens],
            truncated=True,
            reward=self.reward,
            meta=dict(self.meta),
        )


def record_reward(record: Record) -> float | None:
    """The actor's training reward: the header's `reward` (a team's composite minus its consultation costs) when
    the record has one, else the score's composite. The score itself is never changed."""
    header = record.get("header", {})
    reward = header.get("reward")
    if isinstance(reward, int | float):
        return float(reward)
    composite = header_composite(header)
    return None if composite is None else float(composite)


def empty_episode(record: Record) -> TokenizedEpisode:
    header = record.get("header", {})
    meta = {"task": header.get("task"), "seed": header.get("seed"), "env": header.get("env")}
    return TokenizedEpisode([], [], [], [], [], [], [], reward=record_reward(record), meta=meta)


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def cut_text(text: str, max_chars: int) -> str:
    """A tool result cut to max_chars (0: whole) with a note, as the harness cuts results before they reach the prompt."""
    return text if not max_chars or len(text) <= max_chars else text[:max_chars] + f"...[cut {len(text) - max_chars} chars]"


@dataclass(frozen=True)
class PromptStyle:
    """How a record's context is shown to a small model; the same style must be used to train and to sample."""

    compact_tools: bool = False  # tool names and argument names in the system prompt instead of JSON schemas
    max_result_chars: int = 0  # tool results cut to this many characters (0: whole)

    def system(self, base: str | None, tools: list[dict[str, Any]] | None) -> str | None:
        if not self.compact_tools or not tools:
            return base
        return f"{base}\n{compact_tool_listing(tools)}" if base else compact_tool_listing(tools)

    def template_tools(self, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        return None if self.compact_tools else tools


def record_messages(record: Record, *, system_prompt: str | None = None, style: PromptStyle = PromptStyle()) -> list[dict[str, Any]]:
    """Chat messages for a record as its actor saw them; each carries `_step` (its step index) and `_source`.

    The actor's steps become an assistant message followed by one tool message per result; another role's step
    becomes a marked user message ("Critic: ...", `_source` = the role) or nothing (policies/roles.py).
    """
    header = record.get("header", {})
    system = system_prompt if system_prompt is not None else (header.get("harness") or {}).get("system_prompt")
    system = style.system(system, header.get("tools"))
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system, "_step": -1, "_source": "system"})
    shown = context_messages(record["steps"], style.max_result_chars, AGENT_SOURCES)
    for step, role_message in zip(record["steps"], shown, strict=True):
        index, source, role = step["index"], step["source"], step_role(step)
        if role not in ("env", ACTOR):
            if role_message is not None:
                messages.append({**role_message, "_step": index, "_source": role})
        elif source in AGENT_SOURCES:
            calls = [
                {"type": "function", "id": c.get("id", ""), "function": {"name": c["name"], "arguments": c.get("arguments", {})}}
                for c in step.get("tool_calls") or []
            ]
            text = _content_text(step.get("message"))
            messages.append({"role": "assistant", "content": text, "tool_calls": calls, "_step": index, "_source": source})
            for result in step.get("results") or []:
                text = cut_text(_content_text(result.get("content")), style.max_result_chars)
                messages.append({"role": "tool", "content": text, "_step": index, "_source": "tool"})
        else:
            role = "system" if source == "system" else "user"
            messages.append({"role": role, "content": _content_text(step.get("message")), "_step": index, "_source": source})
    return messages


def tokenize_record(
    record: Record,
    tokenizer: Any,
    *,
    max_tokens: int | None = None,
    system_prompt: str | None = None,
    step_weight: Callable[[Step], float] | None = None,
    graph_credit: float | None = None,
    style: PromptStyle = PromptStyle(),
) -> list[TokenizedEpisode]:
    """Token ids and masks for one record (see the module docstring). `step_weight(step)` weights its tokens;
    `graph_credit=f` weights them by step-dependency credit, training only the record's top fraction f of steps
    (training/graph_credit.py). `style` (compact tool listing, cut results) applies to re-rendered records only.
    A recovery view's agent turns before its mark (`train_from_step`) stay in the sequence untrained."""
    if graph_credit is not None:
        assert step_weight is None, "give step_weight or graph_credit, not both"
        from training.graph_credit import graph_step_weight  # imported here: it pulls in environments.diagnosis

        step_weight = graph_step_weight(record, top_fraction=graph_credit)
    agent_steps = [s for s in record["steps"] if is_actor_turn(s, AGENT_SOURCES)]
    weight_of = {s["index"]: (step_weight(s) if step_weight else 1.0) for s in agent_steps}
    mark = train_from_step(record)
    untrained = {s["index"] for s in agent_steps if s["index"] < mark or not step_trainable(s)}  # context only
    sampled = bool(agent_steps) and all(s.get("token_ids") and s.get("prompt_token_ids") for s in agent_steps)
    episodes = (
        _from_sampled_ids(record, agent_steps, weight_of, untrained)
        if sampled
        else [_from_rendered(record, tokenizer, weight_of, untrained, system_prompt, style, max_tokens)]
    )
    if max_tokens is not None:
        episodes = [e.truncate(max_tokens) for e in episodes]
    return episodes


def train_from_step(record: Record) -> int:
    """The first step index whose agent turns are trained: a recovery view's mark (header.meta.recovery.train_from_step,
    written by environments.diagnosis.exports.recovery_example: the corrected step), else 0 (every turn). The steps
    before the mark are the failing episode's prefix: context, never demonstrations."""
    recovery = ((record.get("header") or {}).get("meta") or {}).get("recovery")
    mark = recovery.get("train_from_step") if isinstance(recovery, dict) else None
    assert mark is None or (isinstance(mark, int) and not isinstance(mark, bool) and mark >= 0), (
        f"header.meta.recovery.train_from_step must be a step index, got {mark!r}"
    )
    return mark or 0


def step_trainable(step: Step) -> bool:
    """False for a step marked `meta.training_unusable` (the lab marks a step it redacted, whose sampled ids it had to
    drop): its tokens stay in the sequence as context but are never trained, so no `[REDACTED:...]` placeholder is
    learnt as if the model had written it."""
    meta = step.get("meta")
    return not (isinstance(meta, dict) and meta.get("training_unusable"))


def _from_sampled_ids(record: Record, agent_steps: list[Step], weight_of: dict[int, float], untrained: set[int]) -> list[TokenizedEpisode]:
    episodes: list[TokenizedEpisode] = []
    current: TokenizedEpisode | None = None
    for step in agent_steps:
        prompt, completion = list(step["prompt_token_ids"] or []), list(step["token_ids"] or [])  # both given (the caller checked)
        logprobs = step.get("logprobs")
        if logprobs is not None and len(logprobs) != len(completion):
            logprobs = None  # a producer that logged a different span: keep the ids, drop the mismatched numbers
        if current is not None and prompt[: len(current)] == current.input_ids:
            current.append(prompt[len(current) :], trained=False, env=True, step=current.turn_of_token[-1])
        else:
            current = empty_episode(record)
            episodes.append(current)
            current.append(prompt, trained=False, env=False, step=-1)
        current.append(
            completion,
            trained=step["index"] not in untrained,
            env=False,
            step=step["index"],
            weight=weight_of[step["index"]],
            logprobs=logprobs,
        )
    return episodes


def render_chat(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation_prompt: bool = False) -> str:
    clean = [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]
    return tokenizer.apply_chat_template(clean, tools=tools or None, tokenize=False, add_generation_prompt=generation_prompt)


def encode_text(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def _from_rendered(
    record: Record,
    tokenizer: Any,
    weight_of: dict[int, float],
    untrained: set[int],
    system_prompt: str | None,
    style: PromptStyle,
    max_tokens: int | None = None,
) -> TokenizedEpisode:
    messages = record_messages(record, system_prompt=system_prompt, style=style)
    tools = style.template_tools((record.get("header") or {}).get("tools"))
    steps = {s["index"]: s for s in record["steps"]}
    eos_text, eos_id = tokenizer.eos_token, tokenizer.eos_token_id
    episode = empty_episode(record)
    previous = ""
    for k, message in enumerate(messages):
        text = render_chat(tokenizer, messages[: k + 1], tools)
        assert text.startswith(previous), f"chat template is not prefix-preserving at message {k} ({message['role']})"
        segment, step_index = text[len(previous) :], message["_step"]
        if message["role"] != "assistant":
            # another role's message is context, not the environment's feedback
            episode.append(
                encode_text(tokenizer, segment), trained=False, env=message["_source"] in ("env", "user", "tool"), step=step_index
            )
            previous = text
            continue
        header = render_chat(tokenizer, messages[:k], tools, generation_prompt=True)[len(previous) :]
        assert segment.startswith(header), f"assistant turn {k} does not start with the generation prompt {header!r}"
        body = segment[len(header) :]
        cut = body.rfind(eos_text)
        trained_text, tail_text = (body[: cut + len(eos_text)], body[cut + len(eos_text) :]) if cut >= 0 else (body, "")
        episode.append(encode_text(tokenizer, header), trained=False, env=False, step=step_index)
        sampled = steps[step_index].get("token_ids")
        trained = step_index not in untrained
        if sampled:
            tail = ([] if sampled[-1] == eos_id else [eos_id]) + encode_text(tokenizer, tail_text)
            logprobs = steps[step_index].get("logprobs")
            logprobs = logprobs if logprobs is not None and len(logprobs) == len(sampled) else None
            episode.append(list(sampled), trained=trained, env=False, step=step_index, weight=weight_of[step_index], logprobs=logprobs)
        else:
            tail = encode_text(tokenizer, tail_text)
            episode.append(encode_text(tokenizer, trained_text), trained=trained, env=False, step=step_index, weight=weight_of[step_index])
        episode.append(tail, trained=False, env=False, step=step_index)
        previous = text
        if max_tokens is not None and len(episode) >= max_tokens:
            break  # the rest would be truncated away; rendering it is O(messages²) on long episodes
    return episode


def collate(episodes: Sequence[TokenizedEpisode], *, pad_id: int) -> dict[str, torch.Tensor]:
    """Right-padded (B, T) tensors: input_ids, attention_mask, mask, env_mask, weights, sampled_logprobs (nan = unknown)."""
    assert episodes, "collate needs at least one episode"
    width = max(len(e) for e in episodes)

    def pad(rows: list[list[Any]], value: Any, dtype: torch.dtype) -> torch.Tensor:
        return torch.tensor([row + [value] * (width - len(row)) for row in rows], dtype=dtype)

    return {
        "input_ids": pad([e.input_ids for e in episodes], pad_id, torch.long),
        "attention_mask": pad([[1] * len(e) for e in episodes], 0, torch.long),
        "mask": pad([e.mask for e in episodes], 0, torch.float32),
        "env_mask": pad([e.env_mask for e in episodes], 0, torch.float32),
        "weights": pad([e.weights for e in episodes], 0.0, torch.float32),
        "sampled_logprobs": pad([e.sampled_logprobs for e in episodes], math.nan, torch.float32),
    }


def collate_packed(episodes: Sequence[TokenizedEpisode], *, pad_id: int) -> dict[str, torch.Tensor]:
    """Episodes packed end to end into as few rows as fit the longest one (first fit, longest first): input_ids,
    position_ids (restarting at 0 with every episode: the model attends within an episode only), mask, weights.

    The rows read the same tokens as `collate` without most of its padding (a batch of a 1,500-token StoreBench
    demonstration and three 300-token toolgym ones is 2 rows of 1,500, not 4). The first token of every episode is
    never trained: it is predicted from the previous episode's last token. The tail of a row is padding in a segment
    of its own, untrained."""
    assert episodes, "collate_packed needs at least one episode"
    width = max(len(e) for e in episodes)
    rows: list[list[TokenizedEpisode]] = []
    for episode in sorted(episodes, key=len, reverse=True):
        row = next((r for r in rows if sum(len(e) for e in r) + len(episode) <= width), None)
        if row is None:
            rows.append([episode])
        else:
            row.append(episode)
    ids, positions, mask, weights = [], [], [], []
    for row in rows:
        tail = width - sum(len(e) for e in row)
        ids.append([t for e in row for t in e.input_ids] + [pad_id] * tail)
        positions.append([i for e in row for i in range(len(e))] + list(range(tail)))
        mask.append([m if i else 0 for e in row for i, m in enumerate(e.mask)] + [0] * tail)
        weights.append([w if i else 0.0 for e in row for i, w in enumerate(e.weights)] + [0.0] * tail)
    return {
        "input_ids": torch.tensor(ids, dtype=torch.long),
        "position_ids": torch.tensor(positions, dtype=torch.long),
        "mask": torch.tensor(mask, dtype=torch.float32),
        "weights": torch.tensor(weights, dtype=torch.float32),
    }


def read_records(path: str) -> list[dict[str, Any]]:
    """Records from a JSONL file (one record a line, as `python -m environments run --out` writes) or a JSON list."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    stripped = text.lstrip()
    if stripped.startswith("["):
        return list(json.loads(stripped))
    return [json.loads(line) for line in text.splitlines() if line.strip()]
