"""Where environment packages register their scripted policies, and where everyone finds them.

    register_env(EnvMeta(env="storebench", anchors={"smart-triage": factory}))   # in the env package, at import
    register_policy("*", "my-policy", factory)                 # a policy for every environment
    make_policy("smart-triage", env, seed)                    # anyone: rollouts, lab, the CLI
    make_policy("rule-critic", env, seed)                     # a role stand-in (register_role_policy): not an anchor

A factory takes (env, seed) and returns a fresh Policy. An environment's anchors are those its metadata
declares, plus any registered for it by hand (tests do); both win over generic ones registered under env "*".
Importing the env package (the registry does it) declares its anchors.
"""

from __future__ import annotations

from environments.coaching import RuleCoach
from environments.core import Env, EnvError, Policy
from environments.meta import PolicyFactory
from environments.registry import env_meta, list_tasks
from environments.rule_critic import RuleCritic

__all__ = ["PolicyFactory", "register_policy", "policy_names", "make_policy", "register_role_policy", "role_policy_names"]
_POLICIES: dict[tuple[str, str], PolicyFactory] = {}
_ROLE_POLICIES: dict[str, PolicyFactory] = {}


def register_policy(env_name: str, policy_name: str, factory: PolicyFactory) -> None:
    _POLICIES[(env_name, policy_name)] = factory


def policy_names(env_name: str) -> list[str]:
    list_tasks()  # loads every env package, so their policies are registered
    return sorted({name for (env, name) in _POLICIES if env in (env_name, "*")} | set(env_meta(env_name).anchors))


def make_policy(name: str, env: Env, seed: int) -> Policy:
    """A fresh scripted policy `name` for `env`; raises EnvError naming the choices when unknown."""
    list_tasks()
    factory = (
        _POLICIES.get((env.name, name)) or env_meta(env.name).anchors.get(name) or _POLICIES.get(("*", name)) or _ROLE_POLICIES.get(name)
    )
    if factory is None:
        names = policy_names(env.name)
        choices = f"choose one of {', '.join(names)}" if names else f"{env.name} declares no scripted policies"
        raise EnvError("unknown_policy", f"no policy {name!r} for {env.name}; {choices}")
    return factory(env, seed)


def register_role_policy(policy_name: str, factory: PolicyFactory) -> None:
    """A stand-in for a team role (a critic) in every environment: make_policy finds it, but it is no anchor,
    so anchor lists (evaluations of "all" anchors, pivotal search) never run it as an actor."""
    _ROLE_POLICIES[policy_name] = factory


def role_policy_names() -> list[str]:
    return sorted(_ROLE_POLICIES)


# Generic role stand-ins, for every environment: a team can be run and tested without a model.
register_role_policy("rule-critic", lambda env, seed: RuleCritic())
register_role_policy("rule-coach", lambda env, seed: RuleCoach())  # environments.coaching
