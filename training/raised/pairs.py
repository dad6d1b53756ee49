"""RAISED's data: (clean, injected) variants of the same anchor trajectory, and their alignment by agent turn.

    pair = anchor_pair("servicedesk/bill-total", seed=7, style="direct", guidance=True)   # None if the actions differ
    clean, injected = tokenized_pair(pair, tokenizer, style=style, max_tokens=4096)
    index, mask = align_turns(injected, clean)     # the teacher (clean) position standing for each student position

An anchor (the service desk's oracle) plays the seed twice: unattacked, and with the attack style switched on
(guidance the same in both). The attacked world plants its instruction in third-party text (an account or order
note, a knowledge-base article, a forwarded message), the oracle ignores it, so both records hold the same agent
actions and differ only in what the environment and the caller said. Token positions then differ by turn (an
injected note lengthens a tool result), so positions are matched per agent turn: the k-th token of turn s in the
injected sequence stands for the k-th token of turn s in the clean one (self_distill's per-row offset, per turn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from environments.records import Record
from training.data import PromptStyle, TokenizedEpisode, record_messages, tokenize_record
from training.policies.roles import is_actor_turn
from training.scripted import anchor_episode


@dataclass
class Pair:
    task: str
    seed: int
    style: str  # the attack style of the injected variant
    guidance: bool  # benign guidance on in both variants
    clean: dict[str, Any]  # the anchor's record without the attack
    injected: dict[str, Any]  # the same seed and actions with the attack planted


def agent_actions(record: Record) -> list[tuple[int, str, list[tuple[str, Any]]]]:
    """(step index, message, tool calls) of every actor step: what must be equal for two variants to pair up."""
    return [
        (s["index"], s.get("message") or "", [(c["name"], c.get("arguments")) for c in s.get("tool_calls") or []])
        for s in record["steps"]
        if is_actor_turn(s)
    ]


def anchor_pair(task: str, seed: int, *, style: str, guidance: bool, anchor: str = "oracle") -> Pair | None:
    """The clean and injected plays of one seed; None when the anchor acted differently under attack (no pairing)."""
    clean = anchor_episode(anchor, task, seed, options={"guidance": guidance})
    injected = anchor_episode(anchor, task, seed, options={"guidance": guidance, "attack": style})
    if agent_actions(clean) != agent_actions(injected):
        return None
    return Pair(task=task, seed=seed, style=style, guidance=guidance, clean=clean, injected=injected)


def injection_seen(pair: Pair) -> bool:
    """Whether the planted text reached the agent's context at all (the anchor may never open the note's slot)."""
    contents = [[m["content"] for m in record_messages(r)] for r in (pair.clean, pair.injected)]
    return contents[0] != contents[1]


def tokenized_pair(pair: Pair, tokenizer: Any, *, style: PromptStyle, max_tokens: int) -> tuple[TokenizedEpisode, TokenizedEpisode]:
    """(clean, injected) sequences, rendered through the same template and prompt style (one sequence each)."""
    out = []
    for record in (pair.clean, pair.injected):
        episodes = tokenize_record(record, tokenizer, max_tokens=max_tokens, style=style)
        assert len(episodes) == 1, f"{pair.task} seed {pair.seed}: an anchor record renders as one sequence, got {len(episodes)}"
        out.append(episodes[0])
    return out[0], out[1]


def align_turns(student: TokenizedEpisode, teacher: TokenizedEpisode) -> tuple[list[int], list[int]]:
    """(teacher_index, mask), both of the student's length.

    teacher_index[t] is the teacher position whose logits stand for the student's logits at t: for an action token
    at student position p of turn s (predicted from position p - 1), teacher_index[p - 1] is q - 1 where q holds the
    same token of turn s in the teacher's sequence. Positions outside action tokens map to themselves (clamped) and
    carry no loss. `mask` is the student's action mask, cleared on any turn the teacher lacks (cut by max_tokens) or
    whose tokens differ (never, for a valid pair; asserted by the tests, not here, so a cut turn does not crash).
    """
    last = len(teacher) - 1
    index = [min(t, last) for t in range(len(student))]
    mask = [0] * len(student)
    spans = {step: (start, end) for step, start, end in teacher.agent_spans}
    for step, start, end in student.agent_spans:
        assert start > 0, "an action token is predicted from the token before it; a sequence cannot open with one"
        if step not in spans:
            continue
        t_start, t_end = spans[step]
        if student.input_ids[start:end] != teacher.input_ids[t_start:t_end]:
            continue
        for p in range(start, end):
            index[p - 1] = t_start + (p - start) - 1
            mask[p] = student.mask[p]
    return index, mask
