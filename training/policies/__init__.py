"""LLM policies behind one interface, and the factory that builds any agent from its config.

    policy = policy_from_config({"kind": "hf", "name": "tiny", "model": "/models/tiny", "sampling": {...}, "harness": {...}}, env, seed)

Kinds: `scripted` (an environment's anchor, named by `model` or `name`), `hf` (local transformers), `openai`
(any OpenAI-compatible endpoint), `vllm` (in-process engine on a GPU worker; imported only when used).
`harness_for(config)` gives the validated harness settings the runner needs (turn cap, error limit, pace).
`config["role"]` (actor by default; critic, consultant, user) puts an LLM policy in that role's mode (policies/roles.py;
a user is the model that plays the environment's user slot from the slot's goal card);
a scripted policy is the anchor it names whatever the role (an anchor consultant answers with its own action).
"""

from __future__ import annotations

from typing import Any

from environments.core import Env, Policy
from environments.policies import make_policy
from environments.roles import ACTOR
from training.policies.harness import HarnessConfig, HarnessStop, LLMPolicy, build_messages
from training.policies.netguard import Connection
from training.policies.roles import LLM_ROLES

__all__ = ["Connection", "HarnessConfig", "HarnessStop", "LLMPolicy", "build_messages", "harness_for", "policy_from_config", "POLICY_KINDS"]

POLICY_KINDS = ("scripted", "hf", "openai", "vllm")


def harness_for(config: dict[str, Any]) -> HarnessConfig:
    return HarnessConfig.from_dict(config.get("harness"))


def policy_from_config(config: dict[str, Any], env: Env, seed: int, *, connection: Connection | None = None) -> Policy:
    """A fresh policy for one episode. Raises ValueError naming the field when the config is unusable.

    An `openai` policy calls `connection` (its URL, key and address policy). Without one it calls the config's
    `endpoint` with no key and public addresses only: a key or a private server must be granted by the caller."""
    kind = config.get("kind")
    name = str(config.get("name") or config.get("model") or kind)
    if kind == "scripted":
        return make_policy(str(config.get("model") or config.get("name")), env, seed)
    role = config.get("role") or ACTOR
    if role not in LLM_ROLES:
        raise ValueError(f"role: {role!r} is not a role a policy can take here; use one of {', '.join(LLM_ROLES)}")
    if kind not in POLICY_KINDS:
        raise ValueError(f"kind: {kind!r} cannot act in an environment here; use one of {', '.join(POLICY_KINDS)}")
    model = str(config.get("model") or "")
    if not model:
        raise ValueError(f"model: a {kind} agent needs a model (a from_pretrained path or a served model name)")
    common: dict[str, Any] = {
        "env": env,
        "seed": seed,
        "name": name,
        "model": model,
        "sampling": config.get("sampling") or {},
        "harness": harness_for(config),
        "role": role,
    }
    if kind == "hf":
        from training.policies.hf import HFPolicy

        return HFPolicy(**common)
    if kind == "openai":
        from training.policies.openai_compat import OpenAIPolicy

        if connection is None:
            connection = Connection(base_url=str(config.get("endpoint") or ""))
        return OpenAIPolicy(connection=connection, **common)
    from training.policies.vllm import VLLMPolicy

    return VLLMPolicy(**common)
