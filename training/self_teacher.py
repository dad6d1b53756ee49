"""The self-teacher's sequence for self-distillation: the student's own tokens under a privileged context.

    ids, positions = teacher_sequence(record, student, tokenizer, context="feedback")
    # ids: the teacher's token ids; positions[t]: where student token t sits in them (student len)

The teacher is the student network shown what the student could not know when it acted. `context` says what:

- outcome: the episode's score (passed or not) and every environment response (tool results, the user's
  replies), appended to the system prompt of the first prompt. The hindsight of SDPO-style self-distillation.
- feedback: the environment's responses only, no score ("feedback-conditioned", as SELF's teacher): the
  teacher learns what the actions led to, never whether the episode was judged a success.
- coach: the coach's notes (environments/coaching.py), each inserted as a user message "Coach: <note>" just
  before the generation prompt of the actor turn it anticipates, so the teacher re-scores that turn (and the
  later ones) knowing how it could have anticipated the user, while the earlier turns keep the student's exact
  context. Not the system prompt: there every turn, also the ones before the note's turn, would be conditioned
  on what the user said later ("the user will say yes" before anything was asked), which is a different and
  leakier teacher than the one the coaching contract describes (`anticipates_step`: the turn a teacher redoes).
  The marked user message is how advice from another role enters an actor's context everywhere else
  (training/policies/roles.py: "Critic: ...").

After its own first prompt (outcome, feedback) the teacher reads exactly the student's tokens, with the notes'
tokens spliced in (coach, whose first prompt is the student's), so every student token t after the first prompt
is the teacher's token positions[t], and the teacher's token after positions[t] is the student's token t + 1
wherever that is an agent token: the logits the reverse KL compares predict the same token.
"""

from __future__ import annotations

import json
from typing import Any

from environments.coaching import notes_by_actor_step
from environments.records import Record, record_score
from environments.roles import USER, step_role
from training.data import PromptStyle, TokenizedEpisode

TEACHER_CONTEXTS = ("outcome", "feedback", "coach")
COACH_LABEL = "Coach"


def record_style(record: Record) -> PromptStyle:
    """The prompt style a sampled record was played with (training.sampling writes it into the harness header)."""
    harness = record["header"].get("harness") or {}
    return PromptStyle(compact_tools=bool(harness.get("compact_tools")), max_result_chars=int(harness.get("max_result_chars") or 0))


def feedback_lines(record: Record) -> list[str]:
    """Every response of the environment to the agent's actions: tool results and the user's replies, by turn."""
    lines = []
    for step in record["steps"][1:]:
        if step_role(step) == USER:
            lines.append(f"Turn {step['index']}: the user said {json.dumps(step.get('message') or '', ensure_ascii=False)}")
        for result in step.get("results") or []:
            error = "error " if result.get("is_error") else ""
            lines.append(f"Turn {step['index']}: {error}{json.dumps(result.get('content'), ensure_ascii=False)}")
    return lines


def hindsight_text(record: Record, *, outcome: bool = True) -> str:
    """The privileged context of the outcome (outcome=True) and feedback (outcome=False) teachers."""
    lines = []
    if outcome:
        score = record_score(record)
        passed = "passed" if score.get("passed") else "not passed"
        lines.append(f"Hindsight: this episode scored {score.get('composite', 0.0):.2f} ({passed}).")
    else:
        lines.append("Hindsight: what the environment answered in this episode.")
    return "\n".join(lines + (feedback_lines(record) or ["(no responses)"]))


def _render(tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=generation_prompt)


def _encode(tokenizer: Any, text: str) -> list[int]:
    return list(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else []


def teacher_prompt_ids(record: Record, tokenizer: Any, hindsight: str, style: PromptStyle | None = None) -> list[int]:
    """The record's first prompt, rendered in `style` (default: its own), with `hindsight` appended to the system prompt."""
    header, style = record["header"], style or record_style(record)
    system = f"{(header.get('harness') or {}).get('system_prompt', '')}\n\n{hindsight}"
    tools = header.get("tools") or None
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": style.system(system, tools)},
        {"role": "user", "content": str(record["steps"][0].get("message") or "")},
    ]
    return _encode(tokenizer, _render(tokenizer, messages, style.template_tools(tools), True))


def generation_prompt_ids(tokenizer: Any) -> list[int]:
    """The template's generation prompt (`<|im_start|>assistant\\n`): the tail of every sampled prompt."""
    messages = [{"role": "user", "content": "x"}]
    closed = _render(tokenizer, messages, None, False)
    return _encode(tokenizer, _render(tokenizer, messages, None, True)[len(closed) :])


def note_ids(tokenizer: Any, note: str) -> list[int]:
    """One user message `Coach: <note>` as template tokens (the difference of two renders)."""
    base = [{"role": "user", "content": "x"}]
    closed = _render(tokenizer, base, None, False)
    return _encode(
        tokenizer, _render(tokenizer, [*base, {"role": "user", "content": f"{COACH_LABEL}: {note}"}], None, False)[len(closed) :]
    )


def note_insertions(record: Record, student: TokenizedEpisode, tokenizer: Any) -> dict[int, list[int]]:
    """{student position: note tokens to insert before it}: before the generation prompt of each noted actor turn."""
    notes = notes_by_actor_step(record)
    if not notes:
        return {}
    tail = generation_prompt_ids(tokenizer)
    out = {}
    for step in record["steps"]:
        if step["index"] not in notes or not step.get("prompt_token_ids"):
            continue
        prompt = list(step["prompt_token_ids"])
        assert prompt[-len(tail) :] == tail and student.input_ids[: len(prompt)] == prompt, (
            f"step {step['index']}: its prompt must end with the generation prompt and extend the episode's sequence"
        )
        out[len(prompt) - len(tail)] = note_ids(tokenizer, notes[step["index"]])
    return out


def first_prompt_ids(record: Record, student: TokenizedEpisode) -> list[int]:
    """The student's first prompt: the first agent step's sampled prompt ids, or, for a record without them (a
    scripted demonstration, rendered by training.data), the episode up to its first trained token: the system
    prompt, the first user message and the generation prompt."""
    sampled = next((s["prompt_token_ids"] for s in record["steps"] if s.get("prompt_token_ids")), None)
    if sampled is not None:
        return list(sampled)
    assert student.agent_spans, "a rendered episode without trained tokens has no first prompt to replace"
    return student.input_ids[: student.agent_spans[0][1]]


def teacher_sequence(
    record: Record, student: TokenizedEpisode, tokenizer: Any, *, context: str, style: PromptStyle | None = None
) -> tuple[list[int], list[int]]:
    """(teacher ids, positions): positions[t] is the teacher index of student token t (see the module docstring).
    For outcome and feedback, positions inside the first prompt, which the teacher replaces, map to the same
    distance from its end (floored at 0); only the last one, which predicts the first agent token, is compared.
    `style` renders the teacher's first prompt (default: the record's own; a rendered record: the style it was
    tokenized in)."""
    assert context in TEACHER_CONTEXTS, f"context={context!r}: one of {TEACHER_CONTEXTS}"
    first_prompt = first_prompt_ids(record, student)
    assert student.input_ids[: len(first_prompt)] == first_prompt, "self-distillation needs untrimmed episodes (one sequence each)"
    if context == "coach":  # the student's own prompt; notes go in wherever they belong, the first turn's too
        ids, positions, start, inserts = [], [], 0, note_insertions(record, student, tokenizer)
    else:
        ids = teacher_prompt_ids(record, tokenizer, hindsight_text(record, outcome=context == "outcome"), style)
        shift = len(ids) - len(first_prompt)
        positions, start, inserts = [max(0, t + shift) for t in range(len(first_prompt))], len(first_prompt), {}
    for t in range(start, len(student)):
        ids.extend(inserts.get(t, ()))
        positions.append(len(ids))
        ids.append(student.input_ids[t])
    return ids, positions
