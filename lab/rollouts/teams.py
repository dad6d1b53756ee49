"""Team agent configs in the lab: an AgentConfig's `team` checked at the edge and resolved at launch.

    team_validate(project=p, team={...}, agent_name="my-team")   # the team as stored, or DomainError (path: team.critic.every)
    agent_config_dict(agent)                                      # the factory's config, with "team" roles resolved
    role_connection("critic", config)                             # what a role's policy may call (issue 12's rules)

A role's "agent" is an inline config or the name of another agent of the SAME project (a name of another
project is simply not found). A role is never a team itself: not inline, not by name, and an agent that some
team names as a role cannot be given a team, so teams cannot nest or form cycles.
"""

from __future__ import annotations

from typing import Any

from lab.errors import DomainError
from lab.projects.models import Project
from lab.runs.paths import PATH_AGENT_KINDS, agent_config_check, agent_model_path, model_path_confine
from lab.trajectories.endpoints import agent_connection, endpoint_connection
from lab.trajectories.models import AgentConfig
from training.policies import POLICY_KINDS
from training.policies.netguard import Connection
from training.policies.team import TeamConfigError, team_check

SECRET_KEYS = ("api_key", "apikey", "key", "token", "secret", "password", "authorization")
_INLINE_KEYS = ("kind", "name", "model", "endpoint", "sampling", "harness")


def _invalid(field: str, message: str) -> DomainError:
    return DomainError("invalid_team", f"{field}: {message}", path=field)


# Sampling settings read as numbers by the policies (hf, openai, vllm); the others are passed through as given.
NUMERIC_SAMPLING = (
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "max_tokens",
    "seed",
    "timeout_s",
    "max_retries",
    "frequency_penalty",
    "presence_penalty",
    "repetition_penalty",
    "n",
)


def agent_settings_check(values: dict[str, Any], *, prefix: str = "") -> None:
    """`sampling` and `harness` as the agent's first run will read them, refused now (400 naming the field): each an
    object; sampling values scalars or lists of them, the numeric ones finite numbers; harness accepted by HarnessConfig."""
    import math

    from training.policies import harness_for

    sampling, harness = values.get("sampling"), values.get("harness")
    if sampling is not None and not isinstance(sampling, dict):
        raise _invalid(f"{prefix}sampling", f"an object of settings (temperature, top_p, max_tokens, ...), got {type(sampling).__name__}")
    for key, value in (sampling or {}).items():
        scalar = value is None or isinstance(value, str | int | float | bool)
        if not scalar and not (isinstance(value, list) and all(isinstance(v, str | int | float) for v in value)):
            raise _invalid(f"{prefix}sampling", f"{key!r}: a number, text, true/false or a list of them, got {type(value).__name__}")
        if key in NUMERIC_SAMPLING and (isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)):
            raise _invalid(f"{prefix}sampling", f"{key!r} must be a finite number, got {value!r}"[:200])
    if harness is not None and not isinstance(harness, dict):
        raise _invalid(f"{prefix}harness", f"an object of harness settings, got {type(harness).__name__}")
    try:
        harness_for({"harness": harness})
    except (ValueError, TypeError) as exc:
        raise _invalid(f"{prefix}harness", str(exc).removeprefix("harness: ")[:300]) from None


def secrets_check(values: dict[str, Any], *, prefix: str = "") -> None:
    """Keys belong in the environment or settings, never in a stored config that exports would carry."""
    for field in ("sampling", "harness"):
        for key in values.get(field) or {}:
            if str(key).lower() in SECRET_KEYS:
                raise _invalid(f"{prefix}{field}", f"{key!r} looks like a secret; set it in the environment instead")


def team_validate(*, project: Project, team: Any, agent_name: str | None) -> dict[str, Any]:
    """`team` as it may be stored on the agent `agent_name` of `project`: its shape (training.policies.team), each
    named role agent found in the project and not a team, each inline one runnable under the endpoint and path rules."""
    try:
        roles = team_check(team, names=True)
    except TeamConfigError as exc:
        raise _invalid(exc.field, str(exc).removeprefix(f"{exc.field}: ")) from None
    if not roles and not team:
        return {}
    if agent_name:
        users = [a.name for a in AgentConfig.objects.filter(project=project).exclude(team={}) if agent_name in team_role_names(a.team)]
        if users:
            raise _invalid("team", f"agent {agent_name!r} is a role of the team {users[0]!r}; a role cannot itself be a team")
    for _, field, agent in roles:
        if isinstance(agent, str):
            _named_role(project=project, name=agent, field=field, agent_name=agent_name)
        else:
            _inline_role(project=project, config=agent, field=field)
    return dict(team)


def team_kinds(*, project: Project, team: Any) -> set[str]:
    """The kinds of a stored team's role agents (a rollout with an hf role goes to the GPU queue)."""
    kinds = set()
    for _, _, agent in team_check(team, names=True):
        if isinstance(agent, dict):
            kinds.add(str(agent.get("kind")))
        else:
            kinds.update(AgentConfig.objects.filter(project=project, name=agent).values_list("kind", flat=True))
    return kinds


def team_role_names(team: Any) -> set[str]:
    """The agent names a stored team refers to."""
    try:
        return {agent for _, _, agent in team_check(team, names=True) if isinstance(agent, str)}
    except TeamConfigError:
        return set()


def _named_role(*, project: Project, name: str, field: str, agent_name: str | None) -> AgentConfig:
    if name == agent_name:
        raise _invalid(field, f"{name!r} is this team's own agent; a role cannot be the team itself")
    agent = AgentConfig.objects.filter(project=project, name=name).first()
    if agent is None:
        raise _invalid(field, f"no agent {name!r} in project {project.slug}")
    if agent.team:
        raise _invalid(field, f"agent {name!r} is a team; a role cannot itself be a team")
    if agent.kind not in POLICY_KINDS:
        raise _invalid(field, f"agent {name!r} is {agent.kind}; a role must be one of {', '.join(POLICY_KINDS)}")
    try:
        agent_connection(agent=agent)
    except DomainError as exc:
        raise _invalid(field, exc.message) from None
    return agent


def _inline_role(*, project: Project, config: dict[str, Any], field: str) -> None:
    unknown = sorted(set(config) - set(_INLINE_KEYS), key=str)
    if unknown:
        raise _invalid(f"{field}.{unknown[0]}", f"unknown field; a role's agent has {', '.join(_INLINE_KEYS)}")
    if config.get("kind") not in POLICY_KINDS:
        raise _invalid(f"{field}.kind", f"{config.get('kind')!r} is not one of {', '.join(POLICY_KINDS)}")
    for key, kind in (("name", str), ("model", str), ("endpoint", str), ("sampling", dict), ("harness", dict)):
        if key in config and not isinstance(config[key], kind):
            raise _invalid(f"{field}.{key}", f"must be {'text' if kind is str else 'an object'}, got {config[key]!r}")
    agent_settings_check(config, prefix=f"{field}.")
    secrets_check(config, prefix=f"{field}.")
    try:
        endpoint_connection(kind=config["kind"], endpoint=config.get("endpoint", ""), sampling=config.get("sampling", {}))
        agent_config_check(project=project, values={"kind": config["kind"], "model": config.get("model", "")})
    except DomainError as exc:
        raise _invalid(f"{field}.{exc.details.get('path') or 'model'}", exc.message) from None


def agent_config_dict(agent: AgentConfig) -> dict[str, Any]:
    """What the policy factory gets; an hf/vllm model path is confined and resolved now, right before loading.
    A team's roles are resolved too: a name becomes that agent's config (checked again: it may have changed)."""
    config = _plain_config(agent)
    if agent.team:
        team = team_validate(project=agent.project, team=agent.team, agent_name=None)
        for role, field, ref in team_check(team, names=True):
            if isinstance(ref, str):
                resolved = _plain_config(_named_role(project=agent.project, name=ref, field=field, agent_name=agent.name))
            else:
                resolved = {"name": f"{agent.name}/{role}", **ref}
                if resolved["kind"] in PATH_AGENT_KINDS and resolved.get("model"):
                    resolved["model"] = model_path_confine(project=agent.project, value=resolved["model"], field=f"{field}.model")
            _place(team, role, resolved)
        config["team"] = team
    return config


def _plain_config(agent: AgentConfig) -> dict[str, Any]:
    return {
        "kind": agent.kind,
        "name": agent.name,
        "model": agent_model_path(agent=agent),
        "endpoint": agent.endpoint,
        "sampling": agent.sampling or {},
        "harness": agent.harness or {},
    }


def _place(team: dict[str, Any], role: str, config: dict[str, Any]) -> None:
    if role in ("critic", "consultant"):
        team[role] = {**team[role], "agent": config}
    else:
        team["slots"] = {**team["slots"], role: config}


def role_connection(role: str, config: dict[str, Any]) -> Connection | None:
    """A role's connection under today's endpoint settings (issue 12), as the actor's is checked at launch."""
    try:
        return endpoint_connection(
            kind=str(config.get("kind")), endpoint=str(config.get("endpoint") or ""), sampling=config.get("sampling")
        )
    except DomainError as exc:
        raise DomainError(exc.code, f"the {role} may not run: {exc.message}", path="agent") from None
