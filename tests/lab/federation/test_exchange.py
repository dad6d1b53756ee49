"""Exchange between installations over real HTTP: acme's installation ("acme-lab") pushes to bravo's ("bravo-lab").

Both installations are this process and its test database; the receiving one is pytest-django's live_server, which
the sender reaches over HTTP like any peer. acme-lab declares bravo-lab at live_server's URL, bravo-lab declares
acme-lab, and each holds the same secret for the other (in one settings object, as two installations would).
"""

from __future__ import annotations

import base64
import json
import socket
from typing import Any

import pytest

from environments.toolgym.anchors import ExpertPolicy
from lab.errors import DomainError
from lab.federation.exchange import artifact_push, received_decide, received_path
from lab.federation.models import ArtifactExport, FederationNonce, OutgoingTransfer, ReceivedArtifact
from lab.federation.services import federation_create, federation_execute, federation_folder, peer_create, sharing_policy_set
from lab.federation.transport import INBOX_PATH, RECIPIENT, SENDER, SIGNATURE, post_signed, signed_headers
from tests.lab.federation.exports import SKILL, make_export
from training.federation.artifacts import Artifact

SECRET = "a-secret-acme-and-bravo-share-0123456789"
CANARY = "cnry-acme-ledger-7f3a9c"


@pytest.fixture
def installations(
    settings: Any, monkeypatch: pytest.MonkeyPatch, live_server: Any, project_a: Any, project_b: Any, alice: Any, bob: Any
) -> dict[str, Any]:
    """acme (alice) on acme-lab peers with bravo-lab; bravo (bob) on bravo-lab consents to receive from acme-lab."""
    monkeypatch.setenv("FED_KEY_BRAVO", SECRET)  # acme-lab's key for bravo-lab
    monkeypatch.setenv("FED_KEY_ACME", SECRET)  # bravo-lab's key for acme-lab: the same secret
    settings.PRACTICUM_FEDERATION_NAME = "acme-lab"
    settings.PRACTICUM_FEDERATION_PEERS = {
        "bravo-lab": {"base_url": live_server.url, "key_env": "FED_KEY_BRAVO"},
        "acme-lab": {"base_url": "http://acme-lab.invalid", "key_env": "FED_KEY_ACME"},
    }
    # One process plays both installations: its inbox answers as bravo-lab, the recipient acme-lab's pushes name.
    monkeypatch.setattr("lab.federation.exchange.inbox_name", lambda: "bravo-lab")
    sharing_policy_set(project=project_a, kinds=["skills", "stats"], canaries={"ledger.ref": CANARY}, user=alice)
    return {
        "peer": peer_create(project=project_a, name="bravo", endpoint="bravo-lab", user=alice),
        "consent": peer_create(project=project_b, name="acme", endpoint="acme-lab", user=bob),
        "url": live_server.url,
    }


def _push(project: Any, export: ArtifactExport, user: Any, target: str = "bravo", peer: str = "bravo") -> OutgoingTransfer:
    return artifact_push(project=project, export_id=export.pk, peer_name=peer, target=target, user=user)


def _body(project: str = "bravo", skills: tuple[str, ...] = (SKILL,), **manifest_changes: Any) -> bytes:
    artifact = Artifact("skills", json.dumps({"skills": list(skills)}).encode(), "acme", 0, {"skills": len(skills), "redactions": 0})
    manifest = {**artifact.manifest, **manifest_changes}
    return json.dumps({"project": project, "manifest": manifest, "payload": base64.b64encode(artifact.payload).decode()}).encode()


def _send(
    url: str,
    body: bytes,
    *,
    key: str = SECRET,
    sender: str = "acme-lab",
    signed_body: bytes | None = None,
    now: float | None = None,
    nonce: str | None = None,
    path: str = INBOX_PATH,
    tamper: dict[str, str] | None = None,
    recipient: str = "bravo-lab",
) -> tuple[int, Any]:
    """POST to the inbox as a sender would, with what is signed (and which headers are then changed) under the test's control."""
    headers = signed_headers(
        key=key,
        method="POST",
        path=path,
        sender=sender,
        body=body if signed_body is None else signed_body,
        now=now,
        nonce=nonce,
        recipient=recipient,
    )
    return post_signed(
        base_url=url, key=key, sender=sender, body=body, timeout=10.0, headers={**headers, **(tamper or {})}, recipient=recipient
    )


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_good_push_lands_pending_in_the_consenting_project(installations: Any, project_a: Any, project_b: Any, alice: Any) -> None:
    export = make_export(project_a, [SKILL], canaries={"ledger.ref": CANARY})
    transfer = _push(project_a, export, alice)
    received = ReceivedArtifact.objects.get()
    assert (transfer.status, transfer.response_status, transfer.remote_id) == ("delivered", 201, received.pk)
    assert transfer.sha256 == export.sha256 and transfer.bytes > export.bytes and transfer.pushed_by == alice and transfer.kind == "skills"
    assert (received.project, received.sender, received.status, received.peer) == (
        project_b,
        "acme-lab",
        "pending",
        installations["consent"],
    )
    assert received.sha256 == export.sha256 and received.manifest == export.manifest
    assert json.loads(received_path(received).read_bytes()) == {"skills": [SKILL]}
    assert FederationNonce.objects.filter(sender="acme-lab").count() == 1


def test_the_inbox_refuses_every_forged_or_mistaken_request(installations: Any, settings: Any) -> None:
    url, good = installations["url"], _body()
    cases = [
        ("tampered signature", dict(body=good, tamper={SIGNATURE: "f" * 64}), 401, "bad_signature"),
        ("signed for another path", dict(body=good, path="/api/v1/federation/elsewhere/"), 401, "bad_signature"),
        ("sender changed after signing", dict(body=good, tamper={SENDER: "acme-lab2"}), 401, "unknown_peer"),
        ("wrong key", dict(body=good, key="not-the-secret-bravo-lab-holds"), 401, "bad_signature"),
        ("body is not the signed one", dict(body=good, signed_body=_body(skills=("something else",))), 400, "sha256_mismatch"),
        ("nonce too short", dict(body=good, nonce="short"), 401, "unsigned"),
        ("undeclared sender", dict(body=good, sender="stranger-lab"), 401, "unknown_peer"),
        ("stale timestamp", dict(body=good, now=__import__("time").time() - 310), 401, "stale_request"),
        ("clock far ahead", dict(body=good, now=__import__("time").time() + 310), 401, "stale_request"),
        ("target without consent", dict(body=_body(project="charlie")), 404, "not_found"),
        ("target unknown", dict(body=_body(project="nosuch")), 404, "not_found"),
        ("payload sha mismatch", dict(body=_body(sha256="0" * 64)), 400, "sha256_mismatch"),
        ("unknown kind", dict(body=_body(kind="weights")), 400, "invalid_manifest"),
        ("adapter with no weight", dict(body=_body(kind="adapter")), 400, "invalid_manifest"),
        ("email in a skill", dict(body=_body(skills=("Write to ops@acme.example.com first.",))), 400, "content_refused"),
        ("long number in a skill", dict(body=_body(skills=("Account 4929 1234 5678 9012 pays.",))), 400, "content_refused"),
        ("not JSON", dict(body=b"\x00\xff not json"), 400, "invalid_json"),
        ("signed for another recipient", dict(body=good, recipient="charlie-lab"), 401, "wrong_recipient"),
        (
            "recipient changed after signing",
            dict(body=good, tamper={RECIPIENT: "bravo-lab"}, recipient="charlie-lab"),
            401,
            "bad_signature",
        ),
    ]
    from lab.projects.services import project_create

    project_create(name="Charlie", slug="charlie")  # exists, but has no peer record for acme-lab
    for name, kwargs, status, code in cases:
        answer_status, answer = _send(url, **kwargs)
        assert (answer_status, answer["error"]["code"]) == (status, code), (name, answer)
        assert "ops@acme" not in json.dumps(answer) and "4929" not in json.dumps(answer), name  # refusals never echo the value
    status, answer = post_signed(base_url=url, key=SECRET, sender="acme-lab", body=good, timeout=10.0, headers={}, recipient="bravo-lab")
    assert (status, answer["error"]["code"]) == (401, "unsigned")
    assert not ReceivedArtifact.objects.exists()


def test_a_replayed_request_and_an_oversized_body_are_refused(installations: Any, settings: Any) -> None:
    url, body = installations["url"], _body()
    assert _send(url, body, nonce="nonce-used-once-0001")[0] == 201
    status, answer = _send(url, body, nonce="nonce-used-once-0001")
    assert (status, answer["error"]["code"]) == (409, "replayed")
    settings.PRACTICUM_FEDERATION_MAX_BYTES = 2048
    status, answer = _send(url, _body(skills=tuple(f"{SKILL} Variant {i}." for i in range(40))))
    assert (status, answer["error"]["code"]) == (413, "too_large")
    assert ReceivedArtifact.objects.count() == 1


def test_what_the_sender_keeps_home(installations: Any, project_a: Any, alice: Any, settings: Any) -> None:
    with pytest.raises(DomainError, match="the gate refused export") as refused:
        _push(project_a, make_export(project_a, [f"ledger {CANARY}"], canaries={"ledger.ref": CANARY}), alice)
    assert refused.value.code == "export_refused"
    clean = make_export(project_a, [SKILL])
    sharing_policy_set(project=project_a, kinds=["skills"], canaries={"ledger.ref": CANARY, "ledger.step": "stock(item"}, user=alice)
    with pytest.raises(DomainError, match="the canaries of ledger.step appear in it") as refused:  # planted after the round
        _push(project_a, clean, alice)
    assert "stock(item" not in refused.value.message
    sharing_policy_set(project=project_a, kinds=["stats"], user=alice)
    with pytest.raises(DomainError, match="does not share skills"):
        _push(project_a, clean, alice)
    sharing_policy_set(project=project_a, kinds=["skills"], user=alice)
    with pytest.raises(DomainError, match=r"skills\[0\]: holds email-shaped text") as refused:
        _push(project_a, make_export(project_a, ["Mail ops@acme.example.com."], gate=False), alice)
    assert refused.value.code == "content_refused"
    settings.PRACTICUM_FEDERATION_MAX_BYTES = 1024
    with pytest.raises(DomainError, match="PRACTICUM_FEDERATION_MAX_BYTES") as refused:
        _push(project_a, make_export(project_a, [f"{SKILL} Variant {i}." for i in range(20)]), alice)
    assert refused.value.status == 413
    transfers = list(OutgoingTransfer.objects.order_by("pk"))
    assert [t.status for t in transfers] == ["refused"] * 5 and all(t.bytes == 0 and t.response_status is None for t in transfers)
    assert not FederationNonce.objects.exists() and not ReceivedArtifact.objects.exists()  # nothing reached bravo-lab


def test_a_peer_without_a_key_is_refused_before_any_call(
    installations: Any, project_a: Any, alice: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    export = make_export(project_a, [SKILL])
    settings.PRACTICUM_FEDERATION_PEERS = {
        **settings.PRACTICUM_FEDERATION_PEERS,
        "bravo-lab": {"base_url": installations["url"], "key_env": ""},
    }
    with pytest.raises(DomainError, match="bravo \\(bravo-lab\\) has no key") as refused:
        _push(project_a, export, alice)
    assert refused.value.code == "no_key"
    settings.PRACTICUM_FEDERATION_PEERS = {
        **settings.PRACTICUM_FEDERATION_PEERS,
        "bravo-lab": {"base_url": installations["url"], "key_env": "FED_KEY_BRAVO"},
    }
    monkeypatch.delenv("FED_KEY_BRAVO")  # named, but the operator did not set it
    with pytest.raises(DomainError, match="has no key"):
        _push(project_a, export, alice)
    assert list(OutgoingTransfer.objects.values_list("status", flat=True)) == ["refused", "refused"]
    assert not FederationNonce.objects.exists()  # the inbox never saw a request


def test_a_peer_down_or_refusing_is_a_clear_recorded_error(installations: Any, project_a: Any, alice: Any, settings: Any) -> None:
    export = make_export(project_a, [SKILL])
    with pytest.raises(DomainError, match=r"peer bravo answered 404: not_found: project: no project 'charlie' here receives") as refused:
        _push(project_a, export, alice, target="charlie")
    assert refused.value.status == 502 and refused.value.details["peer_status"] == 404
    down = f"http://127.0.0.1:{_closed_port()}"
    settings.PRACTICUM_FEDERATION_PEERS = {
        **settings.PRACTICUM_FEDERATION_PEERS,
        "bravo-lab": {"base_url": down, "key_env": "FED_KEY_BRAVO"},
    }
    with pytest.raises(DomainError, match=f"peer bravo \\({down}\\) could not be reached: ConnectError") as refused:
        _push(project_a, export, alice)
    assert refused.value.code == "peer_unreachable" and refused.value.status == 502
    answered, unreachable = OutgoingTransfer.objects.order_by("pk")
    assert (answered.status, answered.response_status, answered.target) == (
        "failed",
        404,
        "charlie",
    ) and "receives from 'acme-lab'" in answered.error
    assert (unreachable.status, unreachable.response_status) == ("failed", None) and unreachable.error.startswith("ConnectError")


def test_an_export_of_another_project_or_an_unknown_peer_is_404(installations: Any, project_a: Any, project_b: Any, alice: Any) -> None:
    theirs = make_export(project_b, [SKILL])
    with pytest.raises(DomainError, match=f"export: no export {theirs.pk} of project acme") as missing:
        _push(project_a, theirs, alice)
    assert missing.value.status == 404
    with pytest.raises(DomainError, match="project acme has no peer 'nobody'"):
        _push(project_a, make_export(project_a, [SKILL]), alice, peer="nobody")
    assert not OutgoingTransfer.objects.exists()


@pytest.mark.slow
def test_an_accepted_push_joins_a_skills_round_on_the_receiving_side(
    installations: Any, project_a: Any, project_b: Any, alice: Any, bob: Any, tiny_model: str, tiny_config: dict[str, int]
) -> None:
    from lab.trajectories.services import episodes_ingest
    from training.scripted import scripted_episodes

    _push(project_a, make_export(project_a, [SKILL]), alice)
    received = ReceivedArtifact.objects.get(project=project_b)
    episodes_ingest(project=project_b, records=scripted_episodes(ExpertPolicy(), "fedgym/b", range(4)))
    sharing_policy_set(project=project_b, kinds=["skills"], user=bob)
    launch = dict(
        project=project_b,
        name="with acme",
        mode="skills",
        base_model=tiny_model,
        participants=[{"project": "bravo", "task": "fedgym/b"}],
        user=bob,
        enqueue=False,
    )
    with pytest.raises(DomainError, match=r"config.received\[0\]: received artifact \d+ is pending; an owner accepts it first"):
        federation_create(**launch, config={**tiny_config, "received": [received.pk]})
    received_decide(received=received, accept=True, user=bob)
    federation = federation_create(**launch, config={**tiny_config, "received": [received.pk]})
    federation = federation_execute(federation_id=federation.pk)
    assert federation.status == "finished", federation.error
    skills = json.loads((federation_folder(federation) / "round-000" / "skills.json").read_text())
    assert SKILL in skills and len(skills) == 2  # acme's skill beside bravo's own
    assert federation.results[0]["received"] == 1.0 and federation.results[0]["skills"] == 2
