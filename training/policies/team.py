"""A team from an agent config: the actor's policy and a policy per role (environments.roles).

    team_check(config["team"], names=True)      # [(role, field, agent)]; TeamConfigError naming the field
    team = team_from_config(config, env, seed, connection_for=lambda role, cfg: None)

`config` is an agent config dict whose optional "team" object follows the contract: {"critic": {"agent": {...},
"every": 5, "on_request": true, "on_error": true}, "consultant": {"agent": {...}, "cost": 0.02},
"harness_level": "guided", "slots": {"user": {...}}}. A role's "agent" is a config dict; the lab also allows the
name of another agent of the project and resolves it before it calls team_from_config (lab.rollouts.teams).
A config without "team" gives Team(actor=...). Each role's policy is built by policy_from_config with the
role's config plus {"role": <role>}, so an LLM policy can present itself as that role.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from environments.core import Env, Policy
from environments.roles import ACTOR, CONSULTANT, CRITIC, HARNESS, HARNESS_LEVELS, ROLE_NAME, RoleSpec, Team
from training.policies.netguard import Connection

ConnectionFor = Callable[[str, dict[str, Any]], Connection | None]
"""(role, that role's agent config) -> the connection its policy may call (None: kinds that call nothing)."""

ROLE_SETTINGS = {CRITIC: ("agent", "every", "on_request", "on_error"), CONSULTANT: ("agent", "cost")}
TEAM_KEYS = (CRITIC, CONSULTANT, "harness_level", "slots")


class TeamConfigError(ValueError):
    """A team config the contract refuses; `field` is where (team.critic.every, ...)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def team_check(team: Any, *, names: bool = False) -> list[tuple[str, str, Any]]:
    """Check a "team" object's shape; return its roles as (role, field of its agent, agent). `names`: an agent
    may be a name (the lab's); otherwise each must be a config dict. Nothing is resolved or built here."""
    if team is None or team == {}:
        return []
    if not isinstance(team, dict):
        raise TeamConfigError("team", f"must be an object with any of {', '.join(TEAM_KEYS)}, got {team!r}")
    unknown = sorted(set(team) - set(TEAM_KEYS), key=str)
    if unknown:
        raise TeamConfigError(f"team.{unknown[0]}", f"unknown role or setting; a team has {', '.join(TEAM_KEYS)}")
    level = team.get("harness_level", "tools-only")
    if level not in HARNESS_LEVELS:
        raise TeamConfigError("team.harness_level", f"{level!r} is not one of {', '.join(HARNESS_LEVELS)}")
    roles: list[tuple[str, str, Any]] = []
    for role, keys in ROLE_SETTINGS.items():
        spec = team.get(role)
        if spec is None:
            continue
        if not isinstance(spec, dict):
            raise TeamConfigError(f"team.{role}", f"must be an object with {', '.join(keys)}, got {spec!r}")
        unknown = sorted(set(spec) - set(keys), key=str)
        if unknown:
            raise TeamConfigError(f"team.{role}.{unknown[0]}", f"unknown setting; a {role} takes {', '.join(keys)}")
        for key in ("every",) if role == CRITIC else ():
            value = spec.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TeamConfigError(f"team.{role}.{key}", f"must be an integer >= 0, got {value!r}")
        for key in ("on_request", "on_error") if role == CRITIC else ():
            if not isinstance(spec.get(key, False), bool):
                raise TeamConfigError(f"team.{role}.{key}", f"must be true or false, got {spec[key]!r}")
        cost = spec.get("cost", 0.0)
        if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0.0 <= cost <= 1.0:
            raise TeamConfigError(f"team.{role}.cost", f"must be a number within [0, 1] (a share of the composite), got {cost!r}")
        if "agent" not in spec:
            raise TeamConfigError(f"team.{role}.agent", "required: an agent config" + (" or an agent's name" if names else ""))
        roles.append((role, f"team.{role}.agent", spec["agent"]))
    slots = team.get("slots", {})
    if not isinstance(slots, dict):
        raise TeamConfigError("team.slots", f"must be an object of slot name -> agent, got {slots!r}")
    for name, agent in slots.items():
        if not ROLE_NAME.fullmatch(str(name)) or name in (ACTOR, CRITIC, CONSULTANT, HARNESS):
            raise TeamConfigError(f"team.slots.{name}", f"{name!r} is not a slot name (an environment's role, e.g. user)")
        roles.append((str(name), f"team.slots.{name}", agent))
    for _, field, agent in roles:
        if isinstance(agent, dict):
            if agent.get("team"):
                raise TeamConfigError(field, "a role cannot itself be a team")
        elif not (names and isinstance(agent, str) and agent):
            raise TeamConfigError(field, f"must be an agent config object{' or an agent name' if names else ''}, got {agent!r}")
    return roles


def team_from_config(config: dict[str, Any], env: Env, seed: int, *, connection_for: ConnectionFor | None = None) -> Team:
    """The Team an agent config describes. Raises TeamConfigError (a ValueError) naming the field when unusable."""
    from training.policies import policy_from_config

    def build(role: str, role_config: dict[str, Any]) -> Policy:
        full = {**role_config, "role": role}
        return policy_from_config(full, env, seed, connection=connection_for(role, full) if connection_for else None)

    team = config.get("team") or {}
    policies = {role: build(role, agent) for role, _, agent in team_check(team)}
    actor = build(ACTOR, {k: v for k, v in config.items() if k != "team"})
    critic = consultant = None
    if CRITIC in policies:
        spec = team[CRITIC]
        critic = RoleSpec(
            policy=policies[CRITIC],
            every=spec.get("every", 0),
            on_request=spec.get("on_request", False),
            on_error=spec.get("on_error", False),
        )
    if CONSULTANT in policies:  # the actor always gets the consult tool when there is a consultant
        consultant = RoleSpec(policy=policies[CONSULTANT], on_request=True, cost=float(team[CONSULTANT].get("cost", 0.0)))
    slots = {name: policies[name] for name in team.get("slots", {})}
    return Team(actor=actor, critic=critic, consultant=consultant, harness_level=team.get("harness_level", "tools-only"), slots=slots)
