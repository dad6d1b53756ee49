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
        project=project_a,
        name="acme trio",
        mode="fedavg",
        base_model="tiny",
        status="running",
        progress=0.5,
        participants=[{"project": project_a.pk, "slug": "acme", "task": "fedgym/a"}],
        results=[{"round": 0, "mode": "fedavg", "utility acme": 0.25, "canaries found": 1.0, "bytes exchanged": 98514.0}],
    )
    ArtifactExport.objects.create(
        federation=federation,
        round=0,
        project=project_a,
        kind="stats",
        sha256="0" * 64,
        bytes=10,
        refused=True,
        gate={"refused": {"message": "canary 'catalogue.ref' appears in the stats export"}},
    )
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


@pytest.fixture
def exchange(project_a: Any, role_users: dict[str, Any]) -> dict[str, Any]:
    from lab.federation.exchange import received_path
    from lab.federation.models import OutgoingTransfer, ReceivedArtifact

    transfer = OutgoingTransfer.objects.create(
        project=project_a,
        peer_name="bravo",
        endpoint="bravo-lab",
        target="bravo",
        kind="skills",
        sha256="b" * 64,
        bytes=321,
        status="failed",
        response_status=404,
        error="not_found: project: no project 'bravo' here receives from 'acme-lab'",
    )
    received = ReceivedArtifact.objects.create(
        project=project_a, sender="bravo-lab", kind="skills", sha256="c" * 64, bytes=12, manifest={"source": "bravo", "round": 2}
    )
    received_path(received).parent.mkdir(parents=True, exist_ok=True)
    received_path(received).write_bytes(b'{"skills": []}')
    return {"transfer": transfer, "received": received}


def test_the_page_shows_pushes_and_the_inbox_with_buttons_for_owners_only(login: Any, role_users: dict[str, Any], exchange: Any) -> None:
    received = exchange["received"]
    html = login(role_users["viewer"]).get("/federation/").content.decode()
    assert "bravo (bravo-lab) / bravo" in html and "404" in html and "no project &#x27;bravo&#x27; here receives" in html
    assert f'id="received-{received.pk}"' in html and "bravo-lab (bravo, round 2)" in html and "pending" in html
    assert f"/federation/received/{received.pk}/accept" not in html  # a viewer decides nothing
    html = login(role_users["owner"]).get("/federation/").content.decode()
    assert f'action="/federation/received/{received.pk}/accept"' in html and f'action="/federation/received/{received.pk}/reject"' in html


def test_an_owner_accepts_from_the_page_and_a_researcher_may_not(login: Any, role_users: dict[str, Any], exchange: Any) -> None:
    received = exchange["received"]
    refused = login(role_users["researcher"]).post(f"/federation/received/{received.pk}/accept")
    assert refused.status_code == 403
    fragment = login(role_users["owner"]).post(f"/federation/received/{received.pk}/accept", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200 and "accepted by owner-user" in fragment.content.decode() and "<h1>" not in fragment.content.decode()
    received.refresh_from_db()
    assert received.status == "accepted" and received.decided_by == role_users["owner"]
    again = login(role_users["owner"]).post(f"/federation/received/{received.pk}/reject")
    assert again.status_code == 409
