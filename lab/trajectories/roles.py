"""Per-role accounting and each role's own training view, read from stored episodes.

    episode_role_stats(episode)            # {"critic": {"turns": 3, "tokens": 120, "cost": 0.0}, ...}
    role_stats(episodes)                   # the same summed over episodes, with "episodes" counted per role
    role_examples(record, role="critic")   # one training example per turn of that role (plain dicts)

The runner writes the per-role accounting into the record header ("roles"); records without it (uploads, older
rollouts) are counted from their steps: turns and sampled tokens, no cost. The role views:
- every role: the history the role saw (the steps before its turn), its turn (message, reasoning, tool calls,
  token ids, logprobs) and the episode's outcome (composite, passed, reward);
- critic: `advice`, whether the actor asked for it (`asked`), and how the actor's next steps went (`followup`:
  its steps up to the next critic turn, how many failed, and `succeeded` when some ran and none failed);
- consultant: the actor's `question` (its consult call) and `actor_step`, the `suggestion` (the runner's
  meta.suggested_calls), whether the actor `followed` it (its next environment call is the first suggested one,
  same name and arguments) and the consultation's `cost` (meta.cost, else the team's setting).
A model user's private notes (the reasoning of its steps) appear only in the user's own view.
Both read the runner's step meta (trigger, advises_step, asked_at, question, suggested_calls, cost) and fall back
on the steps themselves for records that lack it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from environments.records import Header, Record, ToolCallDict, header_score
from environments.records import Step as RecordStep
from environments.roles import ACTOR, ASK_CRITIC, CONSULT, CONSULTANT, CRITIC, RUNNER_TOOLS, step_role, without_private_notes
from lab.trajectories.models import Episode, Step
from lab.trajectories.shared import episode_header

_SUMMED = ("turns", "tokens", "cost")


def episode_role_stats(episode: Episode) -> dict[str, dict[str, float]]:
    """Per-role turns, tokens and cost of one episode: the header's accounting, else counted from the steps."""
    header_roles = episode_header(episode).get("roles")
    if isinstance(header_roles, dict) and header_roles:
        return {
            str(role): {key: _number(values.get(key)) for key in _SUMMED}
            for role, values in header_roles.items()
            if isinstance(values, dict)
        }
    stats: dict[str, dict[str, float]] = {}
    for source, role, token_ids in Step.objects.filter(episode=episode).values_list("source", "role", "token_ids"):
        name = step_role({"source": source, "role": role})
        if name == "env":
            continue
        entry = stats.setdefault(name, {"turns": 0, "tokens": 0, "cost": 0.0})
        entry["turns"] += 1
        entry["tokens"] += len(token_ids or [])
    return stats


def role_stats(episodes: Iterable[Episode]) -> dict[str, dict[str, float]]:
    """episode_role_stats summed over episodes; "episodes" counts those in which the role took a turn."""
    totals: dict[str, dict[str, float]] = {}
    for episode in episodes:
        for role, values in episode_role_stats(episode).items():
            entry = totals.setdefault(role, {"episodes": 0, "turns": 0, "tokens": 0, "cost": 0.0})
            entry["episodes"] += 1 if values.get("turns") else 0
            for key in _SUMMED:
                entry[key] += values.get(key, 0)
    return totals


def episodes_with_role(episodes: Any, role: str) -> Any:
    """The episodes (a queryset) with at least one turn of `role`."""
    return episodes.filter(pk__in=Step.objects.filter(role=role).values("episode_id"))


def _number(value: Any) -> float:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _outcome(header: Header) -> dict[str, Any]:
    score = header_score(header)
    return {"composite": score.get("composite"), "passed": score.get("passed"), "reward": header.get("reward")}


def _env_calls(step: RecordStep) -> list[ToolCallDict]:
    return [call for call in step.get("tool_calls") or [] if call.get("name") not in RUNNER_TOOLS]


def _calls_named(step: RecordStep, name: str) -> list[ToolCallDict]:
    return [call for call in step.get("tool_calls") or [] if call.get("name") == name]


def role_examples(record: Record, *, role: str) -> list[dict[str, Any]]:
    """One example per turn of `role` in a record (see the module docstring)."""
    steps, header = record["steps"], record["header"]
    examples = []
    for position, step in enumerate(steps):
        if step_role(step) != role:
            continue
        meta = step.get("meta") or {}
        # What the role saw: a turn answering the actor's call saw the steps before that actor step (the runner's
        # meta says which); any other turn saw everything before it.
        seen = meta.get("asked_at") if role == CONSULTANT else meta.get("advises_step") if meta.get("trigger") == "request" else None
        seen = seen if isinstance(seen, int) and 0 <= seen <= position else position
        example: dict[str, Any] = {
            "role": role,
            "step_index": step["index"],
            "history": without_private_notes(steps[:seen], role),
            "message": step.get("message"),
            "reasoning": step.get("reasoning"),
            "tool_calls": step.get("tool_calls") or [],
            "token_ids": step.get("token_ids"),
            "logprobs": step.get("logprobs"),
            "outcome": _outcome(header),
        }
        if role == CRITIC:
            example.update(_critic_view(steps, position))
        elif role == CONSULTANT:
            example.update(_consultant_view(steps, position, header))
        examples.append(example)
    return examples


def _previous_actor_step(steps: list[RecordStep], position: int) -> RecordStep | None:
    return next((s for s in reversed(steps[:position]) if step_role(s) == ACTOR), None)


def _critic_view(steps: list[RecordStep], position: int) -> dict[str, Any]:
    meta = steps[position].get("meta") or {}
    before = _previous_actor_step(steps, position)
    followup = []
    for later in steps[position + 1 :]:
        if step_role(later) == CRITIC:
            break
        if step_role(later) == ACTOR and _env_calls(later):
            followup.append(later)
    failed = sum(1 for s in followup if any(r.get("is_error") for r in s.get("results") or []))
    asked = meta["trigger"] == "request" if "trigger" in meta else bool(before and _calls_named(before, ASK_CRITIC))
    return {
        "advice": steps[position].get("message"),
        "asked": asked,
        "trigger": meta.get("trigger"),
        "followup": {"steps": len(followup), "failed": failed, "succeeded": bool(followup) and failed == 0},
    }


def _consultant_view(steps: list[RecordStep], position: int, header: Header) -> dict[str, Any]:
    turn = steps[position]
    meta = turn.get("meta") or {}
    asked_at = meta.get("asked_at")
    asking = (
        next((s for s in steps if s["index"] == asked_at), None) if isinstance(asked_at, int) else _previous_actor_step(steps, position)
    )
    call = _calls_named(asking, CONSULT)[:1] if asking else []
    question = meta["question"] if "question" in meta else (call[0].get("arguments") if call else None)
    # The runner keeps the suggestion in meta (its step makes no calls); older records put it in the step's calls.
    in_meta = meta.get("suggested_calls")
    suggested: Sequence[Mapping[str, Any]] = in_meta if isinstance(in_meta, list) else _env_calls(turn)
    taken = next((_env_calls(s)[0] for s in steps[position + 1 :] if step_role(s) == ACTOR and _env_calls(s)), None)
    first = suggested[0] if suggested and isinstance(suggested[0], dict) else None
    followed = bool(first and taken) and (first.get("name"), first.get("arguments")) == (taken.get("name"), taken.get("arguments"))  # type: ignore[union-attr]
    cost = meta.get("cost")
    return {
        "question": question,
        "actor_step": asking["index"] if asking else None,
        "suggestion": {"calls": suggested, "message": turn.get("message"), "reasoning": turn.get("reasoning")},
        "followed": followed,
        "cost": float(cost) if isinstance(cost, int | float) else _consultation_cost(header),
    }


def _consultation_cost(header: Header) -> float | None:
    """One consultation's cost: the team's setting, else the header's total over its consultations."""
    team = header.get("team") or {}
    setting = (team.get(CONSULTANT) or {}).get("cost") if isinstance(team, dict) else None
    if isinstance(setting, int | float):
        return float(setting)
    spent = ((header.get("roles") or {}).get(CONSULTANT) or {}) if isinstance(header.get("roles"), dict) else {}
    turns, cost = spent.get("turns"), spent.get("cost")
    return float(cost) / turns if isinstance(cost, int | float) and isinstance(turns, int) and turns else None
