"""The viewer's role lanes: which roles an episode has, each step's lane, and the links between a role's turn
and the actor steps it influenced (environments.roles).

    lanes = episode_lanes(episode)            # ["actor", "critic", "harness"]; [] for a plain episode
    steps = steps_link(episode, steps, lanes)  # each step gains role, lane, influence, influenced_by, consulted

- a critic step carries meta.advises_step (the actor step it read); its advice enters the context of the next
  actor step, which it links to: "advice on #12 -> #14".
- the actor's `consult` call is answered in that actor step's results; the consultant's own step follows it
  (meta.answers_call = the call's id) and links to the next actor step as well.

The role of a stored step is its Step.role column ("" when the record named none: an agent step of the actor).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from environments.roles import ACTOR, BUILTIN_ROLES, CONSULT, CONSULTANT, CRITIC, step_role
from lab.trajectories.models import Episode, Step

ROLE_FIELD = "role"
# Lanes beyond this share the last one (CSS offers eight); a workflow with more roles is still readable by tag.
MAX_LANES = 8
ENV_LANE = "env"


def lane_order(roles: set[str]) -> list[str]:
    """The built-in roles in their order (actor first), then the environment's steps, then workflow roles by name."""
    builtin = [r for r in BUILTIN_ROLES if r in roles]
    return builtin + ([ENV_LANE] if ENV_LANE in roles else []) + sorted(roles - set(BUILTIN_ROLES) - {ENV_LANE})


def episode_lanes(episode: Episode) -> list[str]:
    """The roles present in the episode, in lane order; [] when only the actor (and the environment) took turns,
    so a plain episode renders as it always did."""
    found = Step.objects.filter(episode=episode).values_list(ROLE_FIELD, "source").distinct()
    roles = {step_role({"role": role, "source": source}) for role, source in found}
    if roles <= {ACTOR, ENV_LANE}:
        return []
    return lane_order(roles | {ACTOR})


def _is_actor_step(step: dict[str, Any]) -> bool:
    return step_role(step) == ACTOR


def _next_actor_index(episode: Episode, after: int, steps: list[dict[str, Any]]) -> int | None:
    """The first actor step after `after`: from the page when it holds one, else one indexed query."""
    for step in steps:
        if step["index"] > after and _is_actor_step(step):
            return int(step["index"])
    last = max((s["index"] for s in steps), default=after)
    actor = Q(**{ROLE_FIELD: ""}) | Q(**{ROLE_FIELD: ACTOR})
    found = Step.objects.filter(episode=episode, index__gt=max(after, last), source="agent").filter(actor).order_by("index")
    return found.values_list("index", flat=True).first()


def steps_link(episode: Episode, steps: list[dict[str, Any]], lanes: list[str]) -> list[dict[str, Any]]:
    """Each step dict gains `role`, `lane` (its column, 0 without lanes), `influence` (a critic's or consultant's
    turn: {"kind", "on", "to"}), `influenced_by` (an actor step: the turns that shaped it, on this page) and
    `consulted` (an actor step's consult calls: the consultant step that answered, when it is on this page)."""
    answers = {}
    for step in steps:
        step["role"] = step_role(step)
        step["lane"] = min(lanes.index(step["role"]), MAX_LANES - 1) if step["role"] in lanes else 0
        step["influence"], step["influenced_by"], step["consulted"] = None, [], []
        meta = step.get("meta") or {}
        if step["role"] == CONSULTANT and meta.get("answers_call"):
            answers[meta["answers_call"]] = step["index"]
    by_index = {s["index"]: s for s in steps}
    for step in steps:
        meta = step.get("meta") or {}
        if step["role"] in (CRITIC, CONSULTANT):
            kind = "advice" if step["role"] == CRITIC else "consultation"
            on = meta.get("advises_step")
            to = _next_actor_index(episode, step["index"], steps)
            step["influence"] = {"kind": kind, "on": on if isinstance(on, int) else None, "to": to, "trigger": meta.get("trigger")}
            if to in by_index:
                by_index[to]["influenced_by"].append({"kind": kind, "from": step["index"], "role": step["role"]})
        if _is_actor_step(step):
            for call in step.get("tool_calls") or []:
                if call.get("name") == CONSULT:
                    step["consulted"].append({"call": call.get("id"), "answer": answers.get(call.get("id"))})
    return steps
