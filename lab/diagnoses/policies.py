"""Which policy acts in a branch or answers as a diagnoser: built from an AgentConfig or a recorded header.

    factory = policy_factory_for_episode(episode)        # the episode's own policy, for verification branches
    factory = policy_factory_for_agent(agent_config)     # any agent config, e.g. a model diagnoser
    policy = factory(env, seed)

LLM kinds go through training.policies.policy_from_config (the rollouts' factory); scripted ones through the
environments' policy registry, so a lab without the training extras still verifies anchor episodes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from environments.core import Env, EnvError, Policy
from environments.policies import make_policy
from lab.errors import DomainError
from lab.rollouts.teams import agent_config_dict
from lab.trajectories.models import AgentConfig, AgentKind, Episode
from lab.trajectories.shared import episode_header

PolicyFactory = Callable[[Env, int], Policy]
MODEL_KINDS = (AgentKind.HF, AgentKind.VLLM, AgentKind.OPENAI)


def _from_config(config: dict[str, Any], agent: AgentConfig) -> PolicyFactory:
    if config.get("kind") == "scripted":
        name = str(config.get("model") or config.get("name") or "")
        return lambda env, seed: make_policy(name, env, seed)
    try:
        from training.policies import policy_from_config
    except ImportError as exc:
        raise DomainError("policy_unavailable", f"a {config.get('kind')} agent needs the training package ({exc})") from exc
    from lab.trajectories.endpoints import agent_connection

    connection = agent_connection(agent=agent)  # the same endpoint checks as a rollout's
    return lambda env, seed: policy_from_config(config, env, seed, connection=connection)


def runs_a_model(agent: AgentConfig | None) -> bool:
    """Whether building `agent`'s policy makes the server run a model (anything but a scripted anchor): that
    needs the role that starts rollouts."""
    return agent is not None and agent.kind in MODEL_KINDS


def policy_factory_for_agent(agent: AgentConfig) -> PolicyFactory:
    factory = _from_config(agent_config_dict(agent), agent)

    def build(env: Env, seed: int) -> Policy:
        try:
            return factory(env, seed)
        except (EnvError, ValueError) as exc:
            raise DomainError("policy_unavailable", f"agent {agent.name!r} cannot act in {env.name}: {exc}", path="agent") from exc

    return build


def policy_factory_for_episode(episode: Episode) -> PolicyFactory:
    """The policy that played `episode`: its agent config when it has one, else the header's scripted policy."""
    if episode.agent is not None and episode.agent.kind != "external":
        return policy_factory_for_agent(episode.agent)
    policy = episode_header(episode).get("policy") or {}
    if policy.get("kind") == "scripted" and policy.get("name"):
        return policy_factory_for_agent(AgentConfig(name=str(policy["name"]), kind="scripted", model=str(policy["name"])))
    raise DomainError(
        "policy_unavailable",
        f"episode {episode.pk} was played by {policy.get('name') or 'an unknown policy'}, which cannot be rebuilt to continue a branch; "
        "pass an agent to continue with",
    )


def continuation_seed_for(episode: Episode) -> int:
    """The seed the continuation policy is built with: the recorded policy seed, else the episode's seed."""
    policy = episode_header(episode).get("policy") or {}
    seed = policy.get("seed", episode.seed)
    return int(seed) if isinstance(seed, int) and not isinstance(seed, bool) else 0
