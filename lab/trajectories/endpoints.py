"""Which server an `openai` agent may call, and with which key.

    endpoint_connection(kind="openai", endpoint="openai", sampling={})   # Connection, or DomainError naming the field
    connection = agent_connection(agent=agent)                          # right before a run; None for kinds that call nothing
    changed = agents_review_endpoints()                                 # after the operator changed the endpoint settings

An agent's `endpoint` is the name of an endpoint the operator declared (settings.PRACTICUM_ENDPOINTS; empty
means `openai`), which brings the key the operator attached to that name. A URL equal to a declared base URL
counts as that endpoint. Any other URL is a free URL: refused unless PRACTICUM_ALLOW_FREE_ENDPOINTS, never sent a
key, http(s) only, and its host must resolve to public addresses or to PRACTICUM_ALLOWED_PRIVATE_NETWORKS; the
policy checks the resolved address again when it connects (training/policies/netguard.py).
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from lab.errors import DomainError
from lab.trajectories.models import AgentConfig, AgentKind
from training.policies.netguard import Connection, host_problem

DEFAULT_ENDPOINT = "openai"


def _refused(field: str, message: str) -> DomainError:
    return DomainError("endpoint_refused", f"{field}: {message}", path=field)


def _declared_names() -> str:
    return ", ".join(sorted(settings.PRACTICUM_ENDPOINTS)) or "none (the operator declares them in PRACTICUM_ENDPOINTS)"


def _declared(name: str, spec: dict[str, Any]) -> Connection:
    # The key is read now, from the variable the operator attached to this name, and only travels in the Connection.
    key = os.environ.get(spec["key_env"], "") if spec.get("key_env") else ""
    return Connection(
        base_url=spec["base_url"],
        api_key=key or "EMPTY",
        any_address=True,
        name=name,
        servers=tuple(spec.get("base_urls") or ()),
        max_in_flight=int(spec.get("max_in_flight") or 0),
    )


def endpoint_connection(*, kind: str, endpoint: str, sampling: Any, resolve: bool = True) -> Connection | None:
    """The connection an agent with these values would use (None for kinds that call no server), or a DomainError
    whose `path` is the offending field. `resolve=False` skips the DNS lookup (the connect-time guard still runs)."""
    if isinstance(sampling, dict) and "api_key_env" in sampling:
        raise _refused(
            "sampling",
            f"api_key_env={sampling['api_key_env']!r} is not accepted: an agent no longer picks the variable "
            f"its key comes from; refer to an endpoint the operator declared ({_declared_names()}) and its key comes with it",
        )
    if kind != AgentKind.OPENAI:
        return None
    value = (endpoint or "").strip()
    if "://" not in value and ":" not in value:
        name = value or DEFAULT_ENDPOINT
        spec = settings.PRACTICUM_ENDPOINTS.get(name)
        if spec is None:
            shown = f"{value!r}" if value else f"empty, which means {DEFAULT_ENDPOINT!r}, but that"
            raise _refused("endpoint", f"{shown} is not an endpoint the operator declared; declared: {_declared_names()}")
        return _declared(name, spec)
    for name, spec in settings.PRACTICUM_ENDPOINTS.items():
        if value.rstrip("/") in (spec["base_url"], *(spec.get("base_urls") or ())):
            return _declared(name, spec)
    return _free_connection(value, resolve=resolve)


def _free_connection(url: str, *, resolve: bool) -> Connection:
    try:
        parts = urlsplit(url)
        hostname = parts.hostname
    except ValueError:  # e.g. an unbalanced "[" in the host
        raise _refused("endpoint", f"{url!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https"):
        raise _refused("endpoint", f"{url!r} uses the scheme {parts.scheme!r}; only http and https are allowed")
    if not settings.PRACTICUM_ALLOW_FREE_ENDPOINTS:
        raise _refused(
            "endpoint",
            f"{url!r} is not an endpoint the operator declared ({_declared_names()}), and free URLs are "
            "off (PRACTICUM_ALLOW_FREE_ENDPOINTS)",
        )
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise _refused("endpoint", f"{url!r} has an invalid port") from None
    if not hostname:
        raise _refused("endpoint", f"{url!r} names no host")
    if parts.username or parts.password:
        raise _refused("endpoint", f"{url!r} carries a user or password; free URLs are called without credentials")
    networks = tuple(settings.PRACTICUM_ALLOWED_PRIVATE_NETWORKS)
    if resolve:
        problem = host_problem(hostname, port, networks)
        if problem:
            raise _refused("endpoint", f"{url!r}: {problem}; a private address must be inside PRACTICUM_ALLOWED_PRIVATE_NETWORKS")
    return Connection(base_url=url, api_key="EMPTY", allowed_networks=networks)


def agent_connection(*, agent: AgentConfig) -> Connection | None:
    """What a run of `agent` may call, checked against today's settings; refuses a disabled agent with its reason."""
    if agent.disabled_reason:
        raise DomainError("agent_disabled", f"agent {agent.name!r} is disabled: {agent.disabled_reason}", status=409, path="agent")
    try:
        return endpoint_connection(kind=agent.kind, endpoint=agent.endpoint, sampling=agent.sampling)
    except DomainError as exc:
        raise DomainError(exc.code, f"agent {agent.name!r} may not run: {exc.message}", path="agent") from None


def endpoint_problem(*, kind: str, endpoint: str, sampling: Any, resolve: bool = True) -> str:
    """Why an agent with these values may not run ("" when it may); the disabled reason shown to users."""
    try:
        endpoint_connection(kind=kind, endpoint=endpoint, sampling=sampling, resolve=resolve)
    except DomainError as exc:
        return exc.message
    return ""


def agents_review_endpoints(*, resolve: bool = True) -> list[AgentConfig]:
    """Disable the agents whose endpoint today's settings refuse (with the reason), re-enable those they allow
    again. Nothing is deleted. Returns the agents whose state changed."""
    changed = []
    for agent in AgentConfig.objects.filter(kind=AgentKind.OPENAI) | AgentConfig.objects.filter(sampling__has_key="api_key_env"):
        reason = endpoint_problem(kind=agent.kind, endpoint=agent.endpoint, sampling=agent.sampling, resolve=resolve)
        if reason != agent.disabled_reason:
            agent.disabled_reason = reason
            agent.save(update_fields=["disabled_reason"])
            changed.append(agent)
    return changed
