"""The federation page: rounds with their metrics for members, nothing of other projects, a fragment for htmx."""

from __future__ import annotations

from typing import Any

import pytest

from lab.federation.models import ArtifactExport, FederationRound
from lab.federation.services import sharing_policy_set

pytestmark = pytest.mark.django_db


@pytest.fixture
def federation(project_a: Any, role_users: dict[str, Any]) -> FederationRound:
    sharing_policy_set(
        project=project_a, kinds=["adapter", "stats"], canaries={"catalogue.ref": "cnry-hidden-42"}, user=role_users["owner"]
    )
    federation = FederationRound.objects.create(
        project=project_a, name="acme trio", mode="fedavg", base_model="tiny", status="running", progress=0.5,
        participants=[{"project": project_a.pk, "slug": "acme", "task": "fedgym/a"}],
        results=[{"round": 0, "mode": "fedavg", "utility acme": 0.25, "canaries found": 1.0, "bytes exchanged": 98514.0}],
    )  # fmt: skip
    ArtifactExport.objects.create(federation=federation, round=0, project=project_a, kind="stats", sha256="0" * 64, bytes=10, refused=True,
                                  gate={"refused": {"message": "canary 'catalogue.ref' appears in the stats export"}})  # fmt: skip
    return federation


def test_members_see_each_round_with_its_metrics_and_refusals(login: Any, role_users: dict[str, Any], federation: FederationRound) -> None:
    html = login(role_users["viewer"]).get("/federation/").content.decode()
    assert "acme trio" in html and "utility acme" in html and "0.250" in html and "98514.000" in html
    assert "1 refused by the gate" in html and "canary &#x27;catalogue.ref&#x27; appears in the stats export" in html
    assert "adapter, stats" in html and "cnry-hidden-42" not in html  # the policy shows, its canary values never
    assert 'hx-trigger="every 5s"' in html  # a running federation is polled
    fragment = login(role_users["viewer"]).get("/federation/", HTTP_HX_REQUEST="true").content.decode()
    assert "acme trio" in fragment and "<h1>" not in fragment


def test_another_projects_member_sees_none_of_it(login: Any, make_user: Any, project_b: Any, federation: FederationRound) -> None:
    from lab.projects.services import membership_set

    mallory = make_user("mallory-b")
    membership_set(project=project_b, user=mallory, role="owner")
    html = login(mallory).get("/federation/").content.decode()
    assert "acme trio" not in html and "No federations yet" in html and "acme" not in html
