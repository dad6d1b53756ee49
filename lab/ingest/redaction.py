"""Secret redaction at ingest: anything that looks like a credential becomes `[REDACTED:<kind>]`.

Patterns are (kind, regex) pairs. A pattern with a `secret` group replaces only that group, so
`api_key=abc123...` becomes `api_key=[REDACTED:assignment]` and the reader still sees what was there.
Beyond text patterns, a string value under a key named like a credential (`api_key`, `password`, ...)
is redacted whole: tool arguments carry secrets that way without any telltale prefix.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED_PREFIX = "[REDACTED:"

# Order matters: the specific kinds run before the generic ones, so `Bearer sk-ant-...` counts as one
# anthropic key, not as a bearer token too (a redacted value starts with "[" and no later pattern matches it).
DEFAULT_REDACTION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai_key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("github_token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("slack_token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}"),
    ("bearer_token", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9\-._~+/]{12,}=*)"),
    (
        "assignment",
        r"(?i)\b(?:api[_\-]?key|apikey|secret[_\-]?key|client[_\-]?secret|access[_\-]?token|auth[_\-]?token|password|passwd)"
        r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[^\s\"',;{}\[\]]{8,})",
    ),  # JSON text (tool arguments kept as a string) quoting a bare credential key: {"token": "..."}.
    ("assignment", r'"(?i:token|secret|refresh_token|authorization)"\s*:\s*"(?![^"]*\[REDACTED:)(?P<secret>[^"\s][^"]{7,})"'),
)
SECRET_KEY_NAMES = re.compile(
    r"(?i)^(?:api[_\-]?key|apikey|x[_\-]api[_\-]key|secret|secret[_\-]?key|client[_\-]?secret|access[_\-]?token|"
    r"auth[_\-]?token|refresh[_\-]?token|token|password|passwd|authorization)$"
)
MIN_KEYED_SECRET = 8  # shorter values under such keys are placeholders ("", "none", "xxx"), not secrets

PatternSpec = Mapping[str, str | re.Pattern[str]] | Iterable[tuple[str, str | re.Pattern[str]]]


class Redactor:
    """Counts and replaces secrets in JSON values. `redact(value)` returns (new value, replacements made)."""

    def __init__(self, patterns: PatternSpec | None = None, *, redact_secret_keys: bool = True) -> None:
        pairs = DEFAULT_REDACTION_PATTERNS if patterns is None else (patterns.items() if isinstance(patterns, Mapping) else patterns)
        self.patterns: list[tuple[str, re.Pattern[str]]] = []
        for kind, pattern in pairs:
            compiled = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
            self.patterns.append((str(kind), compiled))
        self.redact_secret_keys = redact_secret_keys
        # One combined search first: nearly every string holds no secret, and one scan is cheaper than eight.
        self._any = _combined(self.patterns)

    def redact_text(self, text: str) -> tuple[str, int]:
        if not self.patterns or (self._any is not None and not self._any.search(text)):
            return text, 0
        total = 0
        for kind, pattern in self.patterns:
            text, count = pattern.subn(functools.partial(_replace, kind=kind), text)
            total += count
        return text, total

    def redact(self, value: Any) -> tuple[Any, int]:
        counter = [0]
        return self._walk(value, counter, key=None), counter[0]

    def _walk(self, value: Any, counter: list[int], key: str | None) -> Any:
        if isinstance(value, str):
            if value.startswith(REDACTED_PREFIX):
                return value
            if self.redact_secret_keys and key is not None and len(value) >= MIN_KEYED_SECRET and SECRET_KEY_NAMES.match(key):
                counter[0] += 1
                return f"{REDACTED_PREFIX}assignment]"
            text, count = self.redact_text(value)
            counter[0] += count
            return text
        # Containers are copied only when something inside changed: most payloads hold no secret, and
        # token-id lists are long.
        if isinstance(value, dict):
            changed: dict[str, Any] | None = None
            for k, item in value.items():
                if isinstance(item, (str, dict, list)):
                    new = self._walk(item, counter, key=str(k))
                    if new is not item:
                        changed = changed if changed is not None else dict(value)
                        changed[k] = new
            return value if changed is None else changed
        if isinstance(value, list):
            replaced: list[Any] | None = None
            for i, item in enumerate(value):
                if isinstance(item, (str, dict, list)):
                    new = self._walk(item, counter, key=None)
                    if new is not item:
                        replaced = replaced if replaced is not None else list(value)
                        replaced[i] = new
            return value if replaced is None else replaced
        return value


def _replace(match: re.Match[str], kind: str) -> str:
    if "secret" in match.re.groupindex and match.group("secret") is not None:
        start, end = match.span("secret")
        whole_start = match.start()
        text = match.group(0)
        return text[: start - whole_start] + f"{REDACTED_PREFIX}{kind}]" + text[end - whole_start :]
    return f"{REDACTED_PREFIX}{kind}]"


def _combined(patterns: list[tuple[str, re.Pattern[str]]]) -> re.Pattern[str] | None:
    """One alternation of all patterns, or None (then every pattern runs) when they cannot be merged.

    Named groups repeat across patterns, which one alternation cannot hold, and a leading inline flag must
    become a scoped one; compiled patterns with flags of their own are not merged.
    """
    parts = []
    for _, pattern in patterns:
        if pattern.flags & ~(re.UNICODE | re.IGNORECASE) or (pattern.flags & re.IGNORECASE and not pattern.pattern.startswith("(?i)")):
            return None
        source = re.sub(r"\(\?P<\w+>", "(?:", pattern.pattern)
        if source.startswith("(?i)"):
            source = "(?i:" + source[4:] + ")"
        parts.append(f"(?:{source})")
    try:
        return re.compile("|".join(parts)) if parts else None
    except re.error:
        return None
