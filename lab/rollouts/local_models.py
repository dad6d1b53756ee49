"""The packaged real models as agents: every project has one "<model> (local)" agent per model installed in the store.

    local_agents_ensure(projects=visible_projects(request))   # before listing or launching agents; idempotent
    local_agent_names()                                        # ["SmolLM2-135M-Instruct (local)"] when installed

The agent runs the model in the worker on CPU (or its GPU), in-process with the embedded worker as every rollout
does, in the prompt style its manifest names (tools listed compactly in the system prompt, results cut), greedy.
A model missing from the store (a test's empty store, an operator who removed it) gives no agent: nothing here ever
downloads. The rows are created on first listing rather than with the project so the projects app keeps importing
nothing of rollouts (the apps' one-way rule, tests/test_architecture.py), as the anchors' agents are made on first use.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from django.conf import settings

from lab.projects.models import Project
from lab.trajectories.models import AgentConfig, AgentKind
from training.model_store import PACKAGED, ModelStoreError, PackagedModel, installed_path, read_manifest

MAX_NEW_TOKENS = 160  # a tool call with its arguments fits; a runaway answer costs at most this per turn
MAX_TURNS = 24  # a 2-day store or a service call in a few minutes on two cores; edit the agent for longer episodes


def _installed() -> list[tuple[PackagedModel, dict[str, Any]]]:
    store = Path(settings.PRACTICUM_MODEL_STORE)
    out = []
    for model in PACKAGED.values():
        try:
            out.append((model, read_manifest(installed_path(model.name, store=store))))
        except ModelStoreError:
            continue
    return out


def local_agent_name(model: PackagedModel) -> str:
    return f"{model.display_name} (local)"


def local_agent_names() -> list[str]:
    return [local_agent_name(model) for model, _ in _installed()]


def local_agent_config(model: PackagedModel, manifest: dict[str, Any]) -> dict[str, Any]:
    style = manifest.get("prompt_style") or model.prompt_style
    harness = {
        "compact_tools": bool(style.get("compact_tools", True)),
        "max_result_chars": int(style.get("max_result_chars") or 1200),
        "max_context_tokens": int(manifest.get("context_length") or 8192),
        "max_new_tokens": MAX_NEW_TOKENS,
        "max_turns": MAX_TURNS,
    }
    return {"kind": AgentKind.HF, "model": model.name, "sampling": {"temperature": 0.0}, "harness": harness}


def local_agents_ensure(*, projects: Iterable[Project]) -> None:
    """Create each installed packaged model's agent in the projects that lack it (one query when none does)."""
    installed = _installed()
    projects = list(projects)
    if not installed or not projects:
        return
    for model, manifest in installed:
        name = local_agent_name(model)
        have = set(AgentConfig.objects.filter(project__in=projects, name=name).values_list("project_id", flat=True))
        missing = [p for p in projects if p.pk not in have]
        if missing:
            config = local_agent_config(model, manifest)
            AgentConfig.objects.bulk_create([AgentConfig(project=p, name=name, **config) for p in missing], ignore_conflicts=True)
