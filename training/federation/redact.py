"""The redactor every shared text passes: a participant's private values and anything credential- or PII-shaped
become placeholders. Pure (no Django): the lab's ingest redaction (lab/ingest/redaction.py) guards what comes in;
this guards what goes out, with the participant's own list of private values as the first rule.

    redactor = PrivateRedactor({"catalogue.supplier_ref": "cnry20da...", "catalogue.color.lamp": "yellow"})
    text, count = redactor.redact("lamp is yellow (ref cnry20da...)")   # "lamp is <catalogue.color.lamp> (ref <...>)", 2
    shapes_found("mail bob@example.org")                                 # ["email"]: what a receiver refuses

`shapes_found` needs none of the sender's secrets, so a receiving installation runs it on what arrives too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

# credential shapes, after lab/ingest/redaction.py's defaults (the kinds an agent's tool text carries)
CREDENTIAL_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("api_key", r"\b(?:prk|sk|sk-ant|ghp|gho|github_pat|xox[abposre])[_-][A-Za-z0-9_\-]{16,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("bearer_token", r"(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{12,}=*"),
    ("assignment", r"(?i)\b(?:api[_\-]?key|secret|token|password|passwd)[\"']?\s*[:=]\s*[\"']?[^\s\"',;{}\[\]]{8,}"),
)
# personal data shapes: an e-mail address, and a long number (an account, phone or card number; 8+ digits, single
# spaces or dashes between them allowed; not the decimals of a fraction such as 0.12345678)
PII_PATTERNS: tuple[tuple[str, str], ...] = (
    ("email", r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
    ("long_number", r"(?<![\w.])\+?\d(?:[ -]?\d){7,}(?!\w)"),
)
_SHAPES = [(kind, re.compile(pattern)) for kind, pattern in CREDENTIAL_PATTERNS + PII_PATTERNS]
MIN_PRIVATE_CHARS = 3  # shorter private values ("a", "no") would redact ordinary words; list them in a longer form


class PrivateRedactor:
    """Replaces each private value with `<field>` (longest values first, whole words only) and credential shapes
    with `<redacted:kind>`; `redact(text)` returns (text, replacements made)."""

    def __init__(self, private: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
        pairs = list(private.items() if isinstance(private, Mapping) else private)  # (field, value); a field may name several values
        short = sorted(f for f, v in pairs if len(v) < MIN_PRIVATE_CHARS)
        assert not short, f"private values of {short} are shorter than {MIN_PRIVATE_CHARS} characters"
        ordered = sorted(pairs, key=lambda item: -len(item[1]))
        self._private = [(f, re.compile(rf"(?<![\w-]){re.escape(v)}(?![\w-])", re.IGNORECASE)) for f, v in ordered]
        self._credentials = _SHAPES

    def redact(self, text: str) -> tuple[str, int]:
        count = 0
        for name, pattern in self._credentials:
            text, n = pattern.subn(f"<redacted:{name}>", text)
            count += n
        for name, pattern in self._private:
            text, n = pattern.subn(f"<{name}>", text)
            count += n
        return text, count


def shapes_found(text: str) -> list[str]:
    """The kinds of credential and personal-data shapes in `text` (sorted, each once): what the redactor would replace."""
    return sorted({kind for kind, pattern in _SHAPES if pattern.search(text)})
