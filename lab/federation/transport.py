"""Signed requests between installations: how a push is signed, checked and sent (no models, no policy here).

    headers = signed_headers(key=secret, method="POST", path=INBOX_PATH, sender="acme-lab", recipient="bravo-lab", body=body)
    fields = signed_fields(request.headers)   # (sender, timestamp, nonce, sha256, signature, recipient), or why not
    status, answer = post_signed(base_url=spec["base_url"], key=secret, sender="acme-lab", recipient="bravo-lab", body=body, timeout=30.0)

The signature is HMAC-SHA256, with the secret both installations hold for each other (each side's
PRACTICUM_FEDERATION_PEERS names the variable it is in), over the canonical string

    practicum-federation-v2 \\n METHOD \\n PATH \\n TIMESTAMP \\n NONCE \\n SENDER \\n RECIPIENT \\n SHA256(BODY)

sent in the X-Practicum-* headers below. The body (target project, manifest, payload) is covered through its
sha256; the timestamp bounds how long a captured request stays usable, and the receiver keeps nonces for that long.
The recipient (the name the sender declared the receiving installation under, which is that installation's own
PRACTICUM_FEDERATION_NAME) is signed too, and a receiver refuses a request signed for another: an installation that
got a push cannot replay it to a third that happens to share the sender's secret.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

INBOX_PATH = "/api/v1/federation/inbox/"
VERSION = "practicum-federation-v2"
SENDER, TIMESTAMP, NONCE, CONTENT_SHA256, SIGNATURE, RECIPIENT = (
    "X-Practicum-Peer",
    "X-Practicum-Timestamp",
    "X-Practicum-Nonce",
    "X-Practicum-Content-SHA256",
    "X-Practicum-Signature",
    "X-Practicum-Recipient",
)
MAX_ANSWER_BYTES = 64 * 1024  # a peer's answer is a small JSON object; more is not read

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")  # lab/env.py's endpoint names
_NONCE = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def canonical(*, method: str, path: str, timestamp: int, nonce: str, sender: str, recipient: str, body_sha256: str) -> bytes:
    return "\n".join([VERSION, method.upper(), path, str(timestamp), nonce, sender, recipient, body_sha256]).encode()


def sign(key: str, message: bytes) -> str:
    return hmac.new(key.encode(), message, hashlib.sha256).hexdigest()


def signed_headers(
    *, key: str, method: str, path: str, sender: str, recipient: str, body: bytes, now: float | None = None, nonce: str | None = None
) -> dict[str, str]:
    """The X-Practicum-* headers of a request (`now` and `nonce` fixed only by tests)."""
    assert key, "a federation request is never sent unsigned"
    timestamp = int(time.time() if now is None else now)
    nonce = nonce or secrets.token_urlsafe(24)
    digest = hashlib.sha256(body).hexdigest()
    message = canonical(method=method, path=path, timestamp=timestamp, nonce=nonce, sender=sender, recipient=recipient, body_sha256=digest)
    return {
        SENDER: sender,
        RECIPIENT: recipient,
        TIMESTAMP: str(timestamp),
        NONCE: nonce,
        CONTENT_SHA256: digest,
        SIGNATURE: sign(key, message),
    }


def signed_fields(headers: Mapping[str, str]) -> tuple[str, int, str, str, str, str] | str:
    """(sender, timestamp, nonce, content sha256, signature, recipient) from the headers, or why they are not a signed request."""
    sender, timestamp, nonce = headers.get(SENDER, ""), headers.get(TIMESTAMP, ""), headers.get(NONCE, "")
    recipient = headers.get(RECIPIENT, "")
    digest, signature = headers.get(CONTENT_SHA256, ""), headers.get(SIGNATURE, "")
    if not _NAME.match(sender):
        return f"{SENDER} must name the sending installation (letters, digits, '_', '.', '-'; at most 64)"
    if not _NAME.match(recipient):
        return f"{RECIPIENT} must name the receiving installation (letters, digits, '_', '.', '-'; at most 64)"
    if not timestamp.isascii() or not timestamp.isdigit() or len(timestamp) > 12:
        return f"{TIMESTAMP} must be the Unix time in seconds"
    if not _NONCE.match(nonce):
        return f"{NONCE} must be 16 to 64 URL-safe characters"
    if not _HEX64.match(digest) or not _HEX64.match(signature):
        return f"{CONTENT_SHA256} and {SIGNATURE} must be 64 lower-case hex digits"
    return sender, int(timestamp), nonce, digest, signature, recipient


def signature_valid(*, key: str, method: str, path: str, fields: tuple[str, int, str, str, str, str]) -> bool:
    sender, timestamp, nonce, digest, signature, recipient = fields
    message = canonical(method=method, path=path, timestamp=timestamp, nonce=nonce, sender=sender, recipient=recipient, body_sha256=digest)
    return hmac.compare_digest(sign(key, message), signature)


def post_signed(
    *, base_url: str, key: str, sender: str, recipient: str, body: bytes, timeout: float, headers: Mapping[str, str] | None = None
) -> tuple[int, Any]:
    """POST `body` to the peer's inbox, signed; (HTTP status, the answer's JSON or None). Only the declared base URL's
    origin is ever called (redirects are not followed); httpx.HTTPError when the peer cannot be reached in time.
    `headers` replace the computed signature headers (tests forge requests with them)."""
    from training.policies.netguard import Connection, guarded_client

    url = base_url.rstrip("/") + INBOX_PATH
    sent = (
        dict(headers)
        if headers is not None
        else signed_headers(key=key, method="POST", path=urlsplit(url).path, sender=sender, recipient=recipient, body=body)
    )
    connection = Connection(base_url=base_url, any_address=True)  # an endpoint the operator declared: any address
    with (
        guarded_client(connection, timeout=timeout) as client,
        client.stream("POST", url, content=body, headers={**sent, "Content-Type": "application/json"}) as response,
    ):
        answer = b""
        for chunk in response.iter_bytes():
            answer += chunk
            if len(answer) > MAX_ANSWER_BYTES:
                break
    try:
        return response.status_code, json.loads(answer[:MAX_ANSWER_BYTES])
    except ValueError:
        return response.status_code, None
