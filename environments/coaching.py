"""Coaching notes for coached self-distillation: a coach reads what the user privately thought and said next,
and writes how the agent could have anticipated it at its previous turn.

    coached = coach_episode(record, make_policy("rule-coach", env, 0))   # a new record; the input is unchanged
    notes = coach_notes(coached)          # [{"step": 4, "anticipates_step": 3, "note": "...", "coach": {...}}, ...]
    plain = without_coach_notes(coached)  # what the actor's views and exports carry

Where a note lives: in the meta of the user's step it is about, as meta["coach_note"] = {"note", "coach",
"anticipates_step"} (the actor step before it, the turn a teacher conditioned on the note would redo). A
separate step of role "coach" was the alternative; it would shift every later index and enter the state-hash
chain and every role view by default, whereas a meta entry is privileged by construction: the actor's prompt
(training.policies, training.data) renders messages, calls and results, never step meta, and the lab's exports
drop it (view=episode) and give it only in view=coach.

The coach is any Policy. It is asked once per user turn that answers an actor step, with the trajectory up to
that user turn (what the agent saw) plus one last step of role "coach" (source "system") whose message states the
user's private reasoning (the step's `reasoning`; a human user has none) and next utterance and asks for the note,
and whose meta holds the same as {"user_reasoning", "user_utterance", "anticipates_step"} for scripted coaches. The
note is the coach's message, stripped and cut to MAX_NOTE_CHARS; a coach that raises or says nothing leaves no note.
"""

from __future__ import annotations

import copy
from typing import Any

from environments.core import Action, Policy, ToolSpec
from environments.records import Record, Step
from environments.roles import ACTOR, USER, step_role

COACH = "coach"
NOTE_KEY = "coach_note"
MAX_NOTE_CHARS = 600
INSTRUCTION = (
    "You coach a service agent. Below is the conversation so far, then what the user privately thought and will "
    "say next. In one or two sentences, say how the agent, at its last turn, could have anticipated what the user "
    "needs (a question to ask, information to offer, a step to take) so the user would not have to say it."
)


def coach_brief(record: Record, user_step: Step, anticipates: int) -> Step:
    """The privileged last step a coach reads for one user turn."""
    reasoning = user_step.get("reasoning")
    utterance = user_step.get("message") if isinstance(user_step.get("message"), str) else ""
    text = (
        f"{INSTRUCTION}\n\nThe user privately thought: {reasoning or '(not recorded)'}\n"
        f"The user will say next: {utterance or '(nothing)'}\nThe agent's turn to improve is step {anticipates}."
    )
    meta = {"user_reasoning": reasoning or "", "user_utterance": utterance, "anticipates_step": anticipates}
    return {"index": user_step["index"], "source": "system", "role": COACH, "message": text, "meta": meta}


def coachable_turns(record: Record, *, slot: str = USER) -> list[tuple[Step, int]]:
    """(user step, the actor step it answers) for every turn of `slot` that follows an actor step."""
    out: list[tuple[Step, int]] = []
    last_actor = None
    for step in record["steps"]:
        role = step_role(step)
        if role == ACTOR:
            last_actor = step["index"]
        elif role == slot and last_actor is not None:
            out.append((step, last_actor))
            last_actor = None
    return out


def coach_episode(record: Record, coach: Policy, *, slot: str = USER) -> Record:
    """A copy of `record` with a coaching note on each coachable user turn (an earlier note is replaced)."""
    coached = copy.deepcopy(record)
    by_index = {s["index"]: s for s in coached["steps"]}
    for user_step, anticipates in coachable_turns(record, slot=slot):
        history = _steps_without_coach_notes([s for s in record["steps"] if s["index"] < user_step["index"]])
        try:
            action = coach.act([*history, coach_brief(record, user_step, anticipates)], [])
        except Exception:  # a failing coach leaves that turn without a note; the others are still coached
            continue
        target = by_index[user_step["index"]].setdefault("meta", {})
        target.pop(NOTE_KEY, None)
        note = (action.message or "").strip()[:MAX_NOTE_CHARS]
        if note:
            target[NOTE_KEY] = {"note": note, "coach": coach.describe(), "anticipates_step": anticipates}
    return coached


def coach_notes(record: Record) -> list[dict[str, Any]]:
    """Every note in the record, by user step."""
    out = []
    for step in record["steps"]:
        note = (step.get("meta") or {}).get(NOTE_KEY)
        if isinstance(note, dict):
            out.append({"step": step["index"], **note})
    return out


def without_coach_notes(record: Record) -> Record:
    """The record as the actor may see it: the same, minus every coaching note (a shallow copy per touched step)."""
    return {**record, "steps": _steps_without_coach_notes(record["steps"])}


def _steps_without_coach_notes(steps: list[Step]) -> list[Step]:
    out = []
    for step in steps:
        meta = step.get("meta") or {}
        if NOTE_KEY in meta:
            step = {**step, "meta": {k: v for k, v in meta.items() if k != NOTE_KEY}}
        out.append(step)
    return out


class RuleCoach(Policy):
    """A scripted coach for tests and CPU-only labs: names what the user was about to say and why."""

    name = "rule-coach"

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        brief = history[-1].get("meta") or {}
        utterance, reasoning = str(brief.get("user_utterance") or ""), str(brief.get("user_reasoning") or "")
        if not utterance and not reasoning:
            return Action(message="")
        why = f" (they were thinking: {reasoning})" if reasoning else ""
        return Action(
            message=f"The user was about to say \u201c{utterance}\u201d{why}. Ask for or offer that before they have to bring it up."
        )


def notes_by_actor_step(record: Record) -> dict[int, str]:
    """{actor step index: the note on how it could have anticipated the user}: what a teacher is conditioned on
    when it re-scores or rewrites that actor turn (coached self-distillation)."""
    return {int(n["anticipates_step"]): str(n["note"]) for n in coach_notes(record)}
