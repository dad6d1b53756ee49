"""Exchange between separate installations: an owner pushes a gated export to a peer's installation, whose inbox
checks the signature and the content and keeps it pending until an owner there accepts or rejects it; a federation
round may then aggregate the accepted ones (its config's "received").

    transfer = artifact_push(project=p, export_id=12, peer_name="partner", target="bravo", user=owner)
    received = inbox_receive(method="POST", path=request.path, headers=request.headers, body=raw)   # pending
    received_decide(received=received, accept=True, user=owner)
    artifacts = received_artifacts(project=p, ids=[3])        # training Artifacts for federation_run

Push (the caller checked that the user owns `project`): the export must be the project's own, passed by the gate
in its round, of a kind the project's *current* sharing policy shares, its bytes unchanged, free of the policy's
current canaries (searched in the bytes; the extraction attack on adapters ran at the round's gate) and of
credential- or PII-shaped text. It goes only to the base URL the operator declared for the peer's endpoint, signed
with the key named there (lab/federation/transport.py), within PRACTICUM_FEDERATION_TIMEOUT_S and
PRACTICUM_FEDERATION_MAX_BYTES. Every push past the lookups is an OutgoingTransfer row, refused and failed ones
included; a peer that cannot be reached or answers an error is a DomainError (502) naming the peer and its answer.

Receive: only a sender this installation declared in PRACTICUM_FEDERATION_PEERS with a key, within the clock window,
with a valid signature, a body matching its signed sha256 and a nonce not seen before; the target project must have
a Peer record for the sender (its owner's consent to receive from it). Then the manifest, the payload's sha256 and
content_problems (training/federation/checks.py): what can be checked without the sender's secrets.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from lab.edge import json_loads_checked, json_problem
from lab.errors import Conflict, DomainError, NotFound
from lab.federation.models import ARTIFACT_KINDS, ArtifactExport, FederationNonce, OutgoingTransfer, Peer, ReceivedArtifact
from lab.federation.selectors import sharing_policy_current
from lab.federation.transport import post_signed, signature_valid, signed_fields
from lab.projects.models import Project
from lab.runs.paths import project_checkpoint_dir
from training.federation.artifacts import Artifact

_SLUG = re.compile(r"^[-a-zA-Z0-9_]{1,64}$")
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MANIFEST_META = {"examples": int, "tensors": int, "skills": int, "redactions": int, "episodes": int, "lora": dict}  # per-kind extras
MAX_ERROR_CHARS = 2000


class Unauthenticated(DomainError):
    status = 401


def _bad(code: str, field: str, message: str, status: int = 400) -> DomainError:
    return DomainError(code, f"{field}: {message}", status=status, fields=[field])


def _peer_key(endpoint: str) -> tuple[dict[str, Any] | None, str]:
    """The operator's declaration of `endpoint` and the secret in its key_env ("" when there is none)."""
    spec = settings.PRACTICUM_FEDERATION_PEERS.get(endpoint)
    key_env = (spec or {}).get("key_env") or ""
    return spec, os.environ.get(key_env, "") if key_env else ""


# --- pushing ----------------------------------------------------------------------------------------------------


def export_payload_path(export: ArtifactExport) -> Path:
    from lab.federation.services import federation_folder

    source = str(export.manifest.get("source", ""))
    assert _SOURCE.match(source), f"export {export.pk}: its manifest's source {source!r} is not a participant name"
    return federation_folder(export.federation) / f"round-{export.round:03d}" / "artifacts" / f"{source}-{export.kind}.bin"


def _push_body(*, project: Project, export: ArtifactExport, target: str) -> bytes:
    """The request body, after every check that keeps an export home (DomainError naming the field otherwise)."""
    from training.federation.checks import canaries_in_bytes, content_problems

    policy = sharing_policy_current(project=project)
    if export.refused:
        raise _bad("export_refused", "export", f"the gate refused export {export.pk} in its round; it does not leave the project")
    if policy is None or export.kind not in policy.kinds:
        raise _bad("not_shared", "export", f"{project.slug}'s current sharing policy does not share {export.kind} (its owner decides)")
    path = export_payload_path(export)
    if not path.is_file():
        raise _bad("artifact_missing", "export", f"the bytes of export {export.pk} are no longer in its federation's folder", 409)
    payload = path.read_bytes()
    if hashlib.sha256(payload).hexdigest() != export.sha256:
        raise _bad("artifact_changed", "export", f"the bytes of export {export.pk} no longer match its recorded sha256", 409)
    found = canaries_in_bytes(payload, policy.canaries)
    if found:  # the owner may have planted canaries since the round: the current policy decides
        raise DomainError(
            "canary_found",
            f"export: the canaries of {', '.join(found)} appear in it; it does not leave the project",
            fields=["export"],
            canaries=found,
        )
    meta = {k: v for k, v in export.manifest.items() if k in MANIFEST_META}
    problems = content_problems(Artifact(export.kind, payload, str(export.manifest["source"]), export.round, meta))
    if problems:
        raise _bad("content_refused", "export", "; ".join(problems))
    body = json.dumps({"project": target, "manifest": export.manifest, "payload": base64.b64encode(payload).decode()}).encode()
    if len(body) > settings.PRACTICUM_FEDERATION_MAX_BYTES:
        raise _bad(
            "too_large",
            "export",
            f"the push would be {len(body)} bytes; at most {settings.PRACTICUM_FEDERATION_MAX_BYTES} (PRACTICUM_FEDERATION_MAX_BYTES)",
            413,
        )
    return body


def _finish(transfer: OutgoingTransfer, status: str, *, error: str = "", response_status: int | None = None, remote_id: Any = None) -> None:
    remote_id = remote_id if isinstance(remote_id, int) and not isinstance(remote_id, bool) and remote_id > 0 else None
    transfer.mark_ended(status, error=error[:MAX_ERROR_CHARS], response_status=response_status, remote_id=remote_id)


def artifact_push(*, project: Project, export_id: Any, peer_name: Any, target: Any, user: Any = None) -> OutgoingTransfer:
    """Push one of the project's exports to a peer's project `target` (module docstring); the delivered transfer, or
    DomainError after the transfer was recorded as refused or failed."""
    import httpx

    from lab.edge import id_param

    try:
        pk = id_param(export_id, name="export")
    except DomainError:
        raise _bad("invalid_export", "export", f"{str(export_id)[:40]!r} is not an export id") from None
    export = ArtifactExport.objects.filter(project=project, pk=pk).select_related("federation").first()
    if export is None:
        raise NotFound("not_found", f"export: no export {export_id!r} of project {project.slug}", fields=["export"])
    peer = Peer.objects.filter(project=project, name=peer_name).first() if isinstance(peer_name, str) else None
    if peer is None:
        raise NotFound("not_found", f"peer: project {project.slug} has no peer {peer_name!r}", fields=["peer"])
    if not isinstance(target, str) or not _SLUG.match(target):
        raise _bad("invalid_target", "target", f"{target!r} is not a project slug (letters, digits, '_', '-'; at most 64)")
    transfer = OutgoingTransfer.objects.create(
        project=project,
        peer=peer,
        peer_name=peer.name,
        endpoint=peer.endpoint,
        target=target,
        export=export,
        kind=export.kind,
        sha256=export.sha256,
        pushed_by=user if getattr(user, "is_authenticated", False) else None,
    )
    spec, key = _peer_key(peer.endpoint)
    try:
        if spec is None:
            raise _bad(
                "endpoint_refused", "peer", f"{peer.name}'s endpoint {peer.endpoint!r} is no longer declared in PRACTICUM_FEDERATION_PEERS"
            )
        if not key:
            raise _bad(
                "no_key",
                "peer",
                f"{peer.name} ({peer.endpoint}) has no key: the operator names its variable as key_env in "
                "PRACTICUM_FEDERATION_PEERS and sets it; nothing is pushed unsigned",
            )
        body = _push_body(project=project, export=export, target=target)
    except DomainError as refusal:
        _finish(transfer, "refused", error=refusal.message)
        raise
    transfer.bytes = len(body)
    try:
        status, answer = post_signed(
            base_url=spec["base_url"],
            key=key,
            sender=settings.PRACTICUM_FEDERATION_NAME,
            recipient=peer.endpoint,
            body=body,
            timeout=float(settings.PRACTICUM_FEDERATION_TIMEOUT_S),
        )
    except httpx.HTTPError as exc:
        _finish(transfer, "failed", error=f"{type(exc).__name__}: {exc}")
        raise DomainError(
            "peer_unreachable",
            f"peer {peer.name} ({spec['base_url']}) could not be reached: {type(exc).__name__}: {exc}",
            status=502,
            transfer=transfer.pk,
        ) from None
    error = answer.get("error") if isinstance(answer, dict) else None
    if not 200 <= status < 300:
        said = f"{error.get('code')}: {error.get('message')}" if isinstance(error, dict) else "no error message"
        _finish(transfer, "failed", response_status=status, error=str(said))
        raise DomainError(
            "peer_refused",
            f"peer {peer.name} answered {status}: {said}"[:MAX_ERROR_CHARS],
            status=502,
            peer_status=status,
            transfer=transfer.pk,
        )
    _finish(transfer, "delivered", response_status=status, remote_id=answer.get("id") if isinstance(answer, dict) else None)
    return transfer


# --- receiving --------------------------------------------------------------------------------------------------


def received_path(received: ReceivedArtifact) -> Path:
    return project_checkpoint_dir(received.project_id) / "federation-received" / f"received-{received.pk}-{received.kind}.bin"


def inbox_name() -> str:
    """The name this installation receives under: what its peers declare it as, and sign as the recipient."""
    return str(settings.PRACTICUM_FEDERATION_NAME)


def _authenticate(*, method: str, path: str, headers: Mapping[str, str]) -> tuple[str, int, str, str, str, str]:
    fields = signed_fields(headers)
    if isinstance(fields, str):
        raise Unauthenticated("unsigned", f"not a signed federation request: {fields}")
    sender, timestamp = fields[0], fields[1]
    spec, key = _peer_key(sender)
    if spec is None or not key:
        raise Unauthenticated("unknown_peer", f"{sender!r} is not a peer this installation declared with a key")
    window = settings.PRACTICUM_FEDERATION_CLOCK_SKEW_S
    if abs(time.time() - timestamp) > window:
        raise Unauthenticated("stale_request", f"the request's timestamp is more than {window} s from this server's clock")
    if not signature_valid(key=key, method=method, path=path, fields=fields):
        raise Unauthenticated("bad_signature", f"the signature does not verify with the key declared for {sender!r}")
    if fields[5] != inbox_name():  # checked after the signature: the recipient named is the one the sender signed
        raise Unauthenticated("wrong_recipient", f"the request was signed for {fields[5]!r}, not for this installation ({inbox_name()!r})")
    return fields


def _nonce_spend(sender: str, nonce: str) -> None:
    """Remember the nonce for as long as its request could pass the window; a second use is a replay (409)."""
    horizon = timezone.now() - timedelta(seconds=2 * settings.PRACTICUM_FEDERATION_CLOCK_SKEW_S)
    FederationNonce.objects.filter(received_at__lt=horizon).delete()
    try:
        with transaction.atomic():
            FederationNonce.objects.create(sender=sender, nonce=nonce)
    except IntegrityError:
        raise Conflict("replayed", f"nonce {nonce!r} of {sender!r} was used already: a replayed request") from None


def _manifest_check(manifest: Any) -> dict[str, Any]:
    if not isinstance(manifest, dict) or json_problem(manifest) or len(json.dumps(manifest)) > 4000:
        raise _bad("invalid_manifest", "manifest", "a JSON object of at most 4000 characters (kind, bytes, sha256, source, round, ...)")
    unknown = sorted(set(manifest) - {"kind", "bytes", "sha256", "source", "round", *MANIFEST_META})
    if unknown:
        raise _bad("invalid_manifest", f"manifest.{unknown[0][:64]}", "unknown manifest field")
    checks = {
        "kind": lambda v: v in ARTIFACT_KINDS,
        "bytes": lambda v: type(v) is int and v >= 0,
        "sha256": lambda v: isinstance(v, str) and re.fullmatch(r"[0-9a-f]{64}", v) is not None,
        "source": lambda v: isinstance(v, str) and _SOURCE.match(v) is not None,
        "round": lambda v: type(v) is int and 0 <= v <= 10**6,
    }
    for name, ok in checks.items():
        if not ok(manifest.get(name)):
            raise _bad("invalid_manifest", f"manifest.{name}", f"{str(manifest.get(name))[:80]!r} is not a valid {name}")
    for name, kind in MANIFEST_META.items():
        if name in manifest and (type(manifest[name]) is not kind or kind is int and not 0 <= manifest[name] <= 10**12):
            raise _bad("invalid_manifest", f"manifest.{name}", f"must be {'a whole number' if kind is int else 'an object'}")
    if manifest["kind"] == "adapter" and not (type(manifest.get("examples")) is int and manifest["examples"] >= 1):
        raise _bad(
            "invalid_manifest", "manifest.examples", "an adapter states the examples it was trained on (its FedAvg weight), at least 1"
        )
    return manifest


def inbox_receive(*, method: str, path: str, headers: Mapping[str, str], body: bytes) -> ReceivedArtifact:
    """Store a pushed artifact pending, after every check in the module docstring (401, 400, 404, 409 otherwise)."""
    from training.federation.checks import content_problems

    fields = _authenticate(method=method, path=path, headers=headers)
    sender, nonce, digest = fields[0], fields[2], fields[3]
    if hashlib.sha256(body).hexdigest() != digest:
        raise DomainError("sha256_mismatch", "body: its sha256 is not the signed one", fields=["body"])
    _nonce_spend(sender, nonce)
    data = json_loads_checked(body, path="body")
    if not isinstance(data, dict) or set(data) != {"project", "manifest", "payload"}:
        raise _bad("invalid_body", "body", 'a JSON object {"project": slug, "manifest": {...}, "payload": base64}')
    slug = data["project"]
    project = Project.objects.filter(slug=slug).first() if isinstance(slug, str) and _SLUG.match(slug) else None
    peer = Peer.objects.filter(project=project, endpoint=sender).order_by("pk").first() if project is not None else None
    if project is None or peer is None:  # an unknown project and one that does not receive from this sender answer alike
        raise NotFound("not_found", f"project: no project {str(slug)[:64]!r} here receives from {sender!r}", fields=["project"])
    manifest = _manifest_check(data["manifest"])
    try:
        payload = base64.b64decode(data["payload"], validate=True) if isinstance(data["payload"], str) else None
    except (binascii.Error, ValueError):
        payload = None
    if payload is None:
        raise _bad("invalid_payload", "payload", "the artifact's bytes in base64")
    if len(payload) != manifest["bytes"] or hashlib.sha256(payload).hexdigest() != manifest["sha256"]:
        raise _bad("sha256_mismatch", "payload", "its size or sha256 is not the manifest's")
    meta = {k: v for k, v in manifest.items() if k in MANIFEST_META}
    problems = content_problems(Artifact(manifest["kind"], payload, manifest["source"], manifest["round"], meta))
    if problems:
        raise _bad("content_refused", "payload", "; ".join(problems))
    with transaction.atomic():
        received = ReceivedArtifact.objects.create(
            project=project,
            peer=peer,
            sender=sender,
            kind=manifest["kind"],
            manifest=manifest,
            sha256=manifest["sha256"],
            bytes=len(payload),
        )
        target = received_path(received)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(payload)
    return received


# --- deciding and using -----------------------------------------------------------------------------------------


def received_decide(*, received: ReceivedArtifact, accept: bool, user: Any = None) -> ReceivedArtifact:
    """An owner's decision (the caller checked the role); once only. A rejected artifact's bytes are deleted."""
    with transaction.atomic():
        locked = ReceivedArtifact.objects.select_for_update().get(pk=received.pk)
        if locked.status != "pending":
            raise Conflict("already_decided", f"received artifact {locked.pk} was {locked.status} already")
        locked.mark_decided(accept=accept, user=user)
    if not accept:
        received_path(locked).unlink(missing_ok=True)
    return locked


def received_artifacts(*, project: Project | int, ids: list[int]) -> list[Artifact]:
    """The accepted received artifacts `ids` of the project as training Artifacts, their bytes checked again."""
    out = []
    for received in ReceivedArtifact.objects.filter(project=project, pk__in=ids, status="accepted").order_by("pk"):
        payload = received_path(received).read_bytes()
        assert hashlib.sha256(payload).hexdigest() == received.sha256, f"received artifact {received.pk}: its bytes changed on disk"
        meta = {k: v for k, v in received.manifest.items() if k in MANIFEST_META}
        out.append(
            Artifact(received.kind, payload, f"{received.sender}:{received.manifest['source']}", int(received.manifest["round"]), meta)
        )
    return out
