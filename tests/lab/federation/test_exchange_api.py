"""Pushes and received artifacts over the API and the CLI: owners push and decide, everyone else is refused, strangers
see 404. (test_exchange.py pushes over real HTTP; here nothing leaves the process: every refusal comes first.)"""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from lab.federation.exchange import received_path
from lab.federation.models import OutgoingTransfer, ReceivedArtifact
from lab.federation.services import peer_create, sharing_policy_set
from tests.lab.federation.exports import SKILL, make_export

TRANSFERS, RECEIVED = "/api/v1/federation/transfers/", "/api/v1/federation/received/"


@pytest.fixture
def declared(settings: Any, project_a: Any, role_users: dict[str, Any]) -> Any:
    settings.PRACTICUM_FEDERATION_NAME = "acme-lab"
    settings.PRACTICUM_FEDERATION_PEERS = {"bravo-lab": {"base_url": "http://bravo-lab.invalid", "key_env": ""}}
    sharing_policy_set(project=project_a, kinds=["skills"], user=role_users["owner"])
    return peer_create(project=project_a, name="bravo", endpoint="bravo-lab", user=role_users["owner"])


@pytest.fixture
def pending(project_a: Any) -> ReceivedArtifact:
    """What bravo-lab pushed to acme, waiting for acme's owner."""
    payload = json.dumps({"skills": [SKILL]}).encode()
    manifest = {"kind": "skills", "bytes": len(payload), "sha256": "a" * 64, "source": "bravo", "round": 0, "skills": 1}
    received = ReceivedArtifact.objects.create(
        project=project_a, sender="bravo-lab", kind="skills", manifest=manifest, sha256="a" * 64, bytes=len(payload)
    )
    received_path(received).parent.mkdir(parents=True, exist_ok=True)
    received_path(received).write_bytes(payload)
    return received


@pytest.mark.parametrize("role", ["researcher", "expert", "viewer"])
def test_only_an_owner_pushes(role: str, role_users: dict[str, Any], api: Any, project_a: Any, declared: Any) -> None:
    export = make_export(project_a, [SKILL])
    answer = api(role_users[role], project_a).post(
        TRANSFERS, {"project": "acme", "export": export.pk, "peer": "bravo", "target": "bravo"}, format="json"
    )
    assert answer.status_code == 403 and f"A {role} may not push artifacts" in answer.json()["error"]["message"]
    assert not OutgoingTransfer.objects.exists()


def test_an_owner_push_is_refused_and_recorded_without_a_key(
    role_users: dict[str, Any], api: Any, project_a: Any, declared: Any, project_b: Any
) -> None:
    owner = api(role_users["owner"], project_a)
    theirs = make_export(project_b, [SKILL])
    answer = owner.post(TRANSFERS, {"project": "acme", "export": theirs.pk, "peer": "bravo", "target": "bravo"}, format="json")
    assert answer.status_code == 404 and answer.json()["error"]["fields"] == ["export"]  # another project's export
    export = make_export(project_a, [SKILL])
    answer = owner.post(TRANSFERS, {"project": "acme", "export": export.pk, "peer": "bravo", "target": "bravo"}, format="json")
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "no_key"
    (listed,) = api(role_users["viewer"], project_a).get(TRANSFERS).json()
    assert (listed["status"], listed["peer_name"], listed["target"], listed["export"], listed["pushed_by"]) == (
        "refused",
        "bravo",
        "bravo",
        export.pk,
        "owner-user",
    )
    assert "has no key" in listed["error"]


def test_owners_accept_or_reject_once_and_others_may_not(role_users: dict[str, Any], api: Any, project_a: Any, pending: Any) -> None:
    viewer = api(role_users["viewer"], project_a)
    (listed,) = viewer.get(RECEIVED).json()
    assert (listed["id"], listed["sender"], listed["status"], listed["kind"]) == (pending.pk, "bravo-lab", "pending", "skills")
    assert viewer.post(f"{RECEIVED}{pending.pk}/accept/").status_code == 403
    assert api(role_users["researcher"], project_a).post(f"{RECEIVED}{pending.pk}/reject/").status_code == 403
    owner = api(role_users["owner"], project_a)
    answer = owner.post(f"{RECEIVED}{pending.pk}/reject/")
    assert answer.status_code == 200 and answer.json()["status"] == "rejected" and answer.json()["decided_by"] == "owner-user"
    assert not received_path(pending).exists()  # what was refused is not kept
    again = owner.post(f"{RECEIVED}{pending.pk}/accept/")
    assert again.status_code == 409 and again.json()["error"]["code"] == "already_decided"


def test_a_stranger_sees_404_for_received_and_nothing_listed(make_user: Any, api: Any, project_b: Any, pending: Any) -> None:
    from lab.projects.services import membership_set

    mallory = make_user("mallory-b")
    membership_set(project=project_b, user=mallory, role="owner")
    client = api(mallory, project_b)
    assert client.get(RECEIVED).json() == [] and client.get(TRANSFERS).json() == []
    assert client.post(f"{RECEIVED}{pending.pk}/accept/").status_code == 404
    assert ReceivedArtifact.objects.get(pk=pending.pk).status == "pending"


def test_a_round_takes_only_accepted_received_artifacts_of_its_kind(
    three_projects: Any, alice: Any, tiny_model: str, fed_participants: Any
) -> None:
    from lab.errors import DomainError
    from lab.federation.exchange import received_decide
    from lab.federation.services import federation_create

    project_a = three_projects["projects"]["a"]
    skills = ReceivedArtifact.objects.create(project=project_a, sender="bravo-lab", kind="skills", manifest={}, sha256="a" * 64)
    received_decide(received=skills, accept=True, user=alice)
    launch = dict(project=project_a, name="", base_model=tiny_model, participants=fed_participants, user=alice, enqueue=False)
    with pytest.raises(DomainError, match=r"config.received\[0\]: received artifact \d+ is skills; a fedavg federation aggregates adapter"):
        federation_create(**launch, mode="fedavg", config={"received": [skills.pk]})
    with pytest.raises(DomainError, match=r"config.received\[0\]: acme received no artifact 999999"):
        federation_create(**launch, mode="skills", config={"received": [999999]})
    with pytest.raises(DomainError, match=r"config.received\[1\]: True is not an id"):
        federation_create(**launch, mode="skills", config={"received": [skills.pk, True]})
    federation = federation_create(**launch, mode="skills", config={"received": [skills.pk]})
    assert federation.config["received"] == [skills.pk]


def _federate(*args: str) -> str:
    out = StringIO()
    call_command("federate", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_cli_push_inbox_and_accept(role_users: dict[str, Any], project_a: Any, declared: Any, pending: Any) -> None:
    export = make_export(project_a, [SKILL])
    with pytest.raises(CommandError, match="a researcher of acme may not push artifacts"):
        _federate("push", "acme", "--user", "researcher-user", "--export", str(export.pk), "--peer", "bravo", "--target", "bravo")
    with pytest.raises(CommandError, match=r"peer: bravo \(bravo-lab\) has no key"):
        _federate("push", "acme", "--user", "owner-user", "--export", str(export.pk), "--peer", "bravo", "--target", "bravo")
    assert "skills -> bravo/bravo refused - peer: bravo (bravo-lab) has no key" in _federate("transfers", "acme")
    assert f"#{pending.pk}" in _federate("inbox", "acme") and "skills from bravo-lab (bravo, round 0)" in _federate("inbox", "acme")
    with pytest.raises(CommandError, match="a viewer of acme may not decide"):
        _federate("accept", str(pending.pk), "--user", "viewer-user")
    assert (
        _federate("accept", str(pending.pk), "--user", "owner-user").strip()
        == f"received artifact {pending.pk} (skills from bravo-lab): accepted"
    )
    with pytest.raises(CommandError, match="was accepted already"):
        _federate("reject", str(pending.pk), "--user", "owner-user")
