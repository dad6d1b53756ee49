"""Teacher trajectories under each harness level, and the harness-decision tokens HAT supervises.

    records = harness_episodes("toolgym/chain", range(64), levels=HARNESS_LEVELS, max_turns=3)  # the task's demonstrator
    records = teacher_harness_episodes(model, tokenizer, "toolgym/chain", range(64), levels=..., max_turns=3)  # a model
    path = harness_demonstrations_file("toolgym/chain", range(20_000, 20_064), max_turns=3)     # cached JSONL under var/
    record_level(record)                                   # header.team.harness_level; "tools-only" for a plain episode
    episodes = tokenize_with_decisions(record, tokenizer, weight=0.5, max_tokens=1024)

A harness level (environments.roles.HARNESS_LEVELS) decides things for the actor: a tracker of unused tools and
failing calls, a hint of what to investigate next, a verification before finishing, a stop check. The runner
records each decision as a step of role "harness" (source "system", meta.decision), and the actor sees it as a
marked user message "Harness: <text>" (training/policies/roles.py), never as one of its own turns.

A scripted demonstrator ignores those messages: its actions are the same at every level and only the harness steps
between them differ, so the levels' records show the same behaviour with and without the harness's help. A model
teacher (teacher_harness_episodes, through the sampler's harness_level) may act differently under each level.

Decision supervision: in the actor's sequence the text of each harness message after its "Harness:" label, up to and
including the message's end-of-turn token, is trained with `weight` (the label and the template glue are not), so
the student learns to predict what the harness would decide at that point. The records are tokenized through the
rendered path (data.py; sampled agent bodies are kept), where each message's tokens carry its own step index.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from environments.records import Record, record_score
from environments.roles import HARNESS, HARNESS_LEVELS, Team, step_role
from training.data import PromptStyle, TokenizedEpisode, tokenize_record
from training.policies.roles import role_label

LABEL = f"{role_label(HARNESS)}:"  # how a harness decision is marked in the actor's context ("Harness: ...")


def record_level(record: Record) -> str:
    """The harness level a record was played under: header.team.harness_level ("tools-only" without a team)."""
    level = ((record.get("header") or {}).get("team") or {}).get("harness_level", "tools-only")
    assert level in HARNESS_LEVELS, f"record harness level {level!r} is not one of {HARNESS_LEVELS}"
    return str(level)


def harness_episodes(task_id: str, seeds: Sequence[int], *, levels: Sequence[str] = HARNESS_LEVELS, max_turns: int) -> list[dict[str, Any]]:
    """The task's scripted demonstrator (training.zoo.corpus.demo_policy) on each seed under each level, through the
    runner (environments.runner: the harness's decisions recorded as its steps), with the sampler's system prompt.
    `max_turns` is the harness's step cap: its "one step is left" verification comes before the last step."""
    from environments.registry import make
    from environments.runner import run_episode
    from training.sampling import system_prompt_for
    from training.zoo.corpus import demo_policy

    records = []
    for level in levels:
        for seed in seeds:
            env = make(task_id, seed)
            team = Team(actor=demo_policy(task_id, seed), harness_level=level)
            records.append(run_episode(env, team, max_steps=max_turns, harness={"system_prompt": system_prompt_for(env)}))
    return records


def teacher_harness_episodes(
    model: Any,
    tokenizer: Any,
    task_id: str,
    seeds: Sequence[int],
    *,
    levels: Sequence[str] = HARNESS_LEVELS,
    max_turns: int,
    max_new_tokens: int = 64,
    style: PromptStyle = PromptStyle(),
) -> list[dict[str, Any]]:
    """A model teacher's greedy episodes on each seed under each level (training.sampling with harness_level)."""
    import torch

    from training.sampling import rollout_episodes

    records = []
    with torch.no_grad():
        for level in levels:
            records += rollout_episodes(
                model,
                tokenizer,
                [(task_id, s) for s in seeds],
                max_turns=max_turns,
                max_new_tokens=max_new_tokens,
                temperature=0.0,
                style=style,
                harness_level=level,
            )
    return records


def harness_demonstrations_file(task_id: str, seeds: range, *, max_turns: int, levels: Sequence[str] = HARNESS_LEVELS) -> str:
    """harness_episodes' passed records, written once as JSONL under var/experiments/data/ (deterministic, so the
    name is the content); returns the path."""
    from training.zoo.build import var_root

    name = f"{task_id.replace('/', '-')}-harness-{'+'.join(levels)}-{seeds.start}-{seeds.stop}-turns{max_turns}.jsonl"
    path = var_root() / "experiments" / "data" / name
    if not path.exists():
        records = [r for r in harness_episodes(task_id, seeds, levels=levels, max_turns=max_turns) if record_score(r)["passed"]]
        missing = sorted(set(levels) - {record_level(r) for r in records})
        assert not missing, f"the {task_id} demonstrator passed no episode under {missing} on seeds {seeds.start}-{seeds.stop - 1}"
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(f"{path}.tmp")
        partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        partial.rename(path)  # a file under this name is always complete
    return str(path)


def decision_span(ids: Sequence[int], tokenizer: Any) -> tuple[int, int]:
    """[start, end) within one harness message's tokens that HAT trains: after the "Harness:" label, up to and
    including the end-of-turn token (to the end when truncation cut it). A token that straddles the label is not
    trained. (-1, -1) when the label is not there (a message cut before it)."""
    text = tokenizer.decode(list(ids), skip_special_tokens=False)
    at = text.find(LABEL)
    if at < 0:
        return -1, -1
    label_end = at + len(LABEL)
    start = next(k for k in range(len(ids) + 1) if len(tokenizer.decode(list(ids[:k]), skip_special_tokens=False)) >= label_end)
    eos = [k for k, token in enumerate(ids) if token == tokenizer.eos_token_id and k >= start]
    return start, (eos[0] + 1 if eos else len(ids))


def supervise_decisions(episode: TokenizedEpisode, record: Record, tokenizer: Any, *, weight: float) -> TokenizedEpisode:
    """A copy of a rendered episode whose harness messages' decision tokens (decision_span) are trained with `weight`;
    `meta["harness_mask"]` marks them (1) for the loss's metrics. weight 0 trains nothing more."""
    harness = {s["index"] for s in record["steps"] if step_role(s) == HARNESS}
    out = dataclasses.replace(
        episode, mask=list(episode.mask), weights=list(episode.weights), agent_spans=list(episode.agent_spans), meta=dict(episode.meta)
    )
    flags = [0] * len(episode)
    if weight > 0:
        for index in sorted(harness):
            positions = [k for k, step in enumerate(episode.turn_of_token) if step == index]
            if not positions:
                continue  # truncated away
            first, last = positions[0], positions[-1] + 1
            assert positions == list(range(first, last)), f"harness step {index}: its tokens are not contiguous"
            start, end = decision_span(episode.input_ids[first:last], tokenizer)
            if start < 0 or start >= end:
                continue
            for k in range(first + start, first + end):
                out.mask[k], out.weights[k], flags[k] = 1, weight, 1
            out.agent_spans.append((index, first + start, first + end))
        out.agent_spans.sort(key=lambda span: span[1])
    out.meta["harness_mask"] = flags
    return out


def tokenize_with_decisions(
    record: Record, tokenizer: Any, *, weight: float, max_tokens: int | None = None, style: PromptStyle = PromptStyle()
) -> list[TokenizedEpisode]:
    """The actor's view of a record (its own turns trained, as data.py tokenizes it) plus its harness decisions
    trained with `weight`. Prompt ids are dropped so the rendered path gives each message its step index."""
    rendered = {**record, "steps": [{k: v for k, v in s.items() if k != "prompt_token_ids"} for s in record["steps"]]}
    return [
        supervise_decisions(e, record, tokenizer, weight=weight)
        for e in tokenize_record(rendered, tokenizer, max_tokens=max_tokens, style=style)
    ]
