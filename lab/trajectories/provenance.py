"""What an untrusted header may and may not name: the agent it is filed under, and the claims kept aside.

An upload or external report is the sender's word. It is filed under an `external` agent of its policy's name,
unless that name or kind belongs to the server's own recorders (a scripted anchor, a human player); what it
claims beyond that goes to meta (header_claims) to be shown, never acted on.
"""

from __future__ import annotations

from typing import Any

from environments import registry
from environments.policies import policy_names
from environments.records import Header
from lab.projects.models import Project
from lab.trajectories.models import AgentConfig, AgentKind

# Agents whose results only the server may produce: an upload naming one is not attached to it.
_SERVER_ONLY_AGENT_KINDS = frozenset({AgentKind.SCRIPTED, AgentKind.HUMAN})


def _reserved_agent_name(name: str) -> bool:
    """Names the server's recorders give their agents: a human player's, or a scripted policy's (the anchors).
    An upload making an `external` agent of that name first would take it from them."""
    if name.startswith("human:"):
        return True
    return any(name in policy_names(env) for env in {task.env for task in registry.list_tasks()})


def agent_resolve_external(*, project: Project, policy: dict[str, Any], trusted: bool = False) -> AgentConfig | None:
    """Uploaded episodes name their policy in the header; keep one AgentConfig per name for filtering.

    Untrusted (uploads, external): only an `external` agent is found or made; a name or kind that points at a
    scripted anchor or a human gives None (the caller keeps the claim), so no upload joins their rows.
    """
    name = str(policy.get("name") or policy.get("model") or "").strip()[:128]
    if not name:
        return None
    kind = str(policy["kind"]) if policy.get("kind") in AgentKind.values else AgentKind.EXTERNAL.value
    if not trusted:
        if kind in _SERVER_ONLY_AGENT_KINDS or _reserved_agent_name(name):
            return None
        kind = AgentKind.EXTERNAL.value
    agent, _ = AgentConfig.objects.get_or_create(
        project=project, name=name, defaults={"kind": kind, "model": str(policy.get("model", ""))[:500]}
    )
    if not trusted and agent.kind != AgentKind.EXTERNAL:
        return None
    return agent


def header_claims(header: Header, agent: AgentConfig | None) -> dict[str, Any]:
    """What an untrusted header claims that the server does not grant, for meta: shown, never acted on."""
    claims: dict[str, Any] = {}
    if header.get("source", "upload") != "upload":
        claims["claimed_source"] = header["source"]
    if (header.get("parent") or {}).get("episode_id") is not None:
        claims["claimed_parent"] = header["parent"]
    policy = header.get("policy") or {}
    if agent is None and (policy.get("name") or policy.get("model")):
        claims["claimed_agent"] = str(policy.get("name") or policy.get("model"))[:128]
    return claims
