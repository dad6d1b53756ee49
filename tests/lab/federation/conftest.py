"""Fixtures for federation: three projects of one installation (acme, bravo, charlie), each with expert episodes of
its own private fedgym catalogue, the tiny model in the model store, and alice able to federate all three."""

from __future__ import annotations

from typing import Any

import pytest

from environments.fedgym import private_catalogue


@pytest.fixture(scope="session")
def tiny_model(model_store: Any) -> str:
    from training.tiny import build_tiny_model

    return str(build_tiny_model(model_store / "tiny", seed=0))


@pytest.fixture
def project_c(db: Any) -> Any:
    from lab.projects.services import project_create

    return project_create(name="Charlie", slug="charlie")


@pytest.fixture
def three_projects(project_a: Any, project_b: Any, project_c: Any, alice: Any, bob: Any, make_user: Any) -> dict[str, Any]:
    """acme (alice owns), bravo (bob owns), charlie (carol owns); alice is a researcher in bravo and charlie. Each
    holds 5 expert episodes of its organisation's fedgym task, and each owner shared adapters, skills and stats with
    its catalogue's canary declared."""
    from environments.toolgym.anchors import ExpertPolicy
    from lab.federation.services import sharing_policy_set
    from lab.projects.services import membership_set
    from lab.trajectories.services import episodes_ingest
    from training.scripted import scripted_episodes

    carol = make_user("carol")
    membership_set(project=project_c, user=carol, role="owner")
    membership_set(project=project_b, user=alice, role="researcher")
    membership_set(project=project_c, user=alice, role="researcher")
    owners = {"a": alice, "b": bob, "c": carol}
    projects = {"a": project_a, "b": project_b, "c": project_c}
    for org, project in projects.items():
        episodes_ingest(project=project, records=scripted_episodes(ExpertPolicy(), f"fedgym/{org}", range(5)))
        sharing_policy_set(
            project=project, kinds=["adapter", "skills", "stats"], canaries=dict(private_catalogue(org).canaries), user=owners[org]
        )
    return {"projects": projects, "owners": owners}


@pytest.fixture
def fed_participants() -> list[dict[str, str]]:
    return [{"project": slug, "task": f"fedgym/{org}"} for slug, org in (("acme", "a"), ("bravo", "b"), ("charlie", "c"))]


@pytest.fixture
def tiny_config() -> dict[str, int]:
    """One round, one step, one utility episode: the smallest federation that still trains, exports and adapts."""
    return {
        "rounds": 1,
        "local_steps": 1,
        "lora_r": 2,
        "batch_size": 2,
        "utility_episodes": 1,
        "max_turns": 1,
        "max_new_tokens": 8,
        "probe_records": 2,
    }
