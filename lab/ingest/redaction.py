"""Secret redaction at ingest: anything that looks like a credential becomes `[REDACTED:<kind>]`.

Patterns are (kind, regex) pairs. A pattern with a `secret` group replaces only that group, so
`api_key=abc123...` becomes `api_key=[REDACTED:assignment]` and the reader still sees what was there.
Beyond text patterns, a string value under a key named like a credential (`api_key`, `password`, ...)
is redacted whole: tool arguments carry secrets that way without any telltale prefix.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import re2

REDACTED_PREFIX = "[REDACTED:"
# `DB_PASSWORD=...`, `github_token: ...`, `client-secret`, `GITHUB_TOKEN`, `client-secret`: a name with a prefix and a credential suffix; `eos_token` and its
# kin name a tokenizer's special tokens, which trajectories carry in the open.
_NAMED_SECRET = r"(?i)\b(?!(?:eos|bos|pad|unk|sep|cls|mask)[_\-]token\b)(?:[a-z0-9]+[_\-])+(?:password|passwd|token|secret)"

# Order matters: the specific kinds run before the generic ones, so `Bearer sk-ant-...` counts as one
# anthropic key, not as a bearer token too (a redacted value starts with "[" and no later pattern matches it).
DEFAULT_REDACTION_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----"),
    ("practicum_key", r"\bprk_[A-Za-z0-9_\-]{20,}"),  # this project's own API keys (lab.projects.models.KEY_PREFIX)
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
    ),
    ("assignment", _NAMED_SECRET + r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[^\s\"',;{}\[\]]{8,})"),
    # The password of `scheme://user:password@host`; the last `@` ends it, as an unencoded `@` may stand inside.
    ("url_credentials", r"(?i)\b[a-z][a-z0-9+.\-]*://[^\s/:@\"'<>]*:(?!\[REDACTED:)(?P<secret>[^\s/\"'<>]+)@"),
    # JSON text (tool arguments kept as a string) quoting a bare credential key: {"token": "..."}.
    ("assignment", r'"(?i:token|secret|refresh_token|authorization)"\s*:\s*"(?![^"]*\[REDACTED:)(?P<secret>[^"\s][^"]{7,})"'),
    # What users leak most besides (appended: _DEFAULT_TEXT_CHECKS names the patterns above by position).
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("payment_key", r"\b(?:sk|rk)_live_[0-9A-Za-z]{16,}"),  # Stripe's live secret and restricted keys
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("basic_auth", r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})"),
    ("aws_secret_key", r"(?i)\baws[_\-]?secret[_\-]?(?:access[_\-]?)?key[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})"),
    # camelCase names: dbPassword, clientSecret, refreshToken (a lower-case start, then the capitalised suffix).
    ("assignment", r"\b[a-z][a-z0-9]*(?:Password|Passwd|Secret|Token)[\"']?\s*[:=]\s*[\"']?(?P<secret>[^\s\"',;{}\[\]]{8,})"),
)
_PLACEHOLDER = re.compile(r"\[REDACTED:[a-z_]+\]")
SECRET_KEY_NAMES = re.compile(
    r"(?i)^(?:api[_\-]?key|apikey|x[_\-]api[_\-]key|secret|secret[_\-]?key|client[_\-]?secret|access[_\-]?token|"
    r"auth[_\-]?token|refresh[_\-]?token|token|password|passwd|authorization|[a-z][a-z0-9]*(?:password|passwd)|"
    r"(?!(?:eos|bos|pad|unk|sep|cls|mask)[_\-]token$)(?:[a-z0-9]+[_\-])+(?:password|passwd|token|secret))$"
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
        self._text_checks = _text_checks(self.patterns, redact_secret_keys)

    def may_hold_secrets(self, json_text: str) -> bool:
        """False only when `redact` would change nothing in the value parsed from `json_text`.

        Then the walk over every string can be skipped. The text is unescaped first, so each string
        value of the document stands in it verbatim between quote characters; a default pattern is
        looked for through literal-led searches that match at least wherever it does (on a lowercased
        copy for the case-insensitive ones), a custom pattern as itself when nothing in it depends on
        what surrounds a match. A pattern that does cannot be checked this way: answer True.
        """
        if self._text_checks is None:
            return True
        lowered_checks, verbatim_checks = self._text_checks
        text = _unescaped(json_text)
        if lowered_checks is not None:
            if text.isascii():  # case-insensitive search instead of a lowered copy: the same for ASCII, one pass less
                if lowered_checks[1].search(text):
                    return True
            else:
                folded = text.translate(_SRE_ASCII_FOLD_MAP) if _SRE_ASCII_FOLDS.search(text) else text
                if lowered_checks[0].search(folded.lower()):
                    return True
        return any(check.search(text) for check in verbatim_checks)

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
            if _PLACEHOLDER.fullmatch(value):  # only a placeholder itself is done: a secret may follow one
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


# --- steps with sampled token ids ----------------------------------------------------------------------------

# Token ids (and their logprobs) are the text they were sampled as, secret included, and no tokenizer is at hand to
# derive them again from the redacted text: a step that lost a secret loses them too, and is marked so that training
# masks it instead of learning the placeholder as if the model had written it.
SAMPLED_FIELDS = ("token_ids", "logprobs", "prompt_token_ids")
TRAINING_UNUSABLE = "training_unusable"


def step_unusable_for_training(step: Mapping[str, Any]) -> dict[str, Any]:
    """The step without its sampled ids, its meta marked `training_unusable: "redacted"` (a non-object meta, which
    validation refuses next, is left for it to name)."""
    unusable = {k: v for k, v in step.items() if k not in SAMPLED_FIELDS}
    meta = unusable.get("meta")
    if meta is None or isinstance(meta, dict):
        unusable["meta"] = {**(meta or {}), TRAINING_UNUSABLE: "redacted"}
    return unusable


def record_sampled_ids_dropped(record: Any) -> Any:
    """An uploaded record after redaction: each step that carries sampled ids and holds a redaction placeholder is
    made unusable for training (step_unusable_for_training), and the steps after the first placeholder lose their
    prompt ids, which spell the earlier text out. A placeholder the uploader wrote is as inconsistent with the ids
    as one put there here."""
    steps = record.get("steps") if isinstance(record, dict) else None
    if not isinstance(steps, list):
        return record  # validation names what is wrong with it
    marked: list[Any] = []
    seen = False
    for step in steps:
        new = step
        if isinstance(step, dict):
            if _holds_placeholder(step):
                seen = True
                if any(step.get(f) is not None for f in SAMPLED_FIELDS):
                    new = step_unusable_for_training(step)
            elif seen and step.get("prompt_token_ids") is not None:
                new = {k: v for k, v in step.items() if k != "prompt_token_ids"}
        marked.append(new)
    if all(new is old for new, old in zip(marked, steps, strict=True)):
        return record
    return {**record, "steps": marked}


def _holds_placeholder(value: Any) -> bool:
    if isinstance(value, str):
        return REDACTED_PREFIX in value
    if isinstance(value, dict):
        return any(_holds_placeholder(v) for k, v in value.items() if k not in SAMPLED_FIELDS)
    if isinstance(value, list):
        return any(_holds_placeholder(v) for v in value)
    return False


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


# --- the text pre-scan ---------------------------------------------------------------------------------------

# For each default pattern, searches on the lowercased, unescaped document text that match wherever the
# pattern matches inside one of its strings. Each starts with a literal, which the regex engine finds fast.
_DEFAULT_TEXT_CHECKS: dict[str, tuple[str, ...]] = {
    DEFAULT_REDACTION_PATTERNS[0][1]: (r"private key-----",),
    DEFAULT_REDACTION_PATTERNS[1][1]: (r"prk_[a-z0-9_\-]{20}",),
    DEFAULT_REDACTION_PATTERNS[2][1]: (r"sk-[a-z0-9_\-]{20}",),
    DEFAULT_REDACTION_PATTERNS[3][1]: (r"sk-[a-z0-9_\-]{20}",),
    DEFAULT_REDACTION_PATTERNS[4][1]: (r"gh[pousr]_[a-z0-9]{36}", r"github_pat_[a-z0-9_]{22}"),
    DEFAULT_REDACTION_PATTERNS[5][1]: (r"akia[0-9a-z]{16}", r"asia[0-9a-z]{16}"),
    DEFAULT_REDACTION_PATTERNS[6][1]: (r"xox[abposre]-[a-z0-9\-]{10}",),
    DEFAULT_REDACTION_PATTERNS[7][1]: (r"bearer\s+[a-z0-9\-._~+/]{12}",),
    DEFAULT_REDACTION_PATTERNS[8][1]: (
        r"api[_\-]?key[\s\"']*[:=]",
        r"secret(?:[_\-]?key)?[\s\"']*[:=]",
        r"token[\s\"']*[:=]",
        r"passw(?:or)?d[\s\"']*[:=]",
    ),
    DEFAULT_REDACTION_PATTERNS[9][1]: (r"secret[\s\"']*[:=]", r"token[\s\"']*[:=]", r"passw(?:or)?d[\s\"']*[:=]"),
    # No `\s` inside a negated class here (`_one_search` spells out `\s` only where it opens a class or stands
    # alone); leaving the spaces in makes the check wider than the pattern, which is allowed.
    DEFAULT_REDACTION_PATTERNS[10][1]: (r"://[^/:@\"'<>]*:[^/\"'<>]+@",),
    DEFAULT_REDACTION_PATTERNS[11][1]: (r"token[\s\"']*[:=]", r"secret(?:[_\-]?key)?[\s\"']*[:=]", r"authorization[\s\"']*[:=]"),
    DEFAULT_REDACTION_PATTERNS[12][1]: (r"hf_[a-z0-9]{30}",),
    DEFAULT_REDACTION_PATTERNS[13][1]: (r"aiza[0-9a-z_\-]{35}",),
    DEFAULT_REDACTION_PATTERNS[14][1]: (r"_live_[0-9a-z]{16}",),
    DEFAULT_REDACTION_PATTERNS[15][1]: (r"eyj[a-z0-9_\-]{8}",),
    DEFAULT_REDACTION_PATTERNS[16][1]: (r"authorization[\s\"']*[:=]",),
    DEFAULT_REDACTION_PATTERNS[17][1]: (r"aws[_\-]?secret",),
    DEFAULT_REDACTION_PATTERNS[18][1]: (r"passw(?:or)?d[\s\"']*[:=]", r"secret[\s\"']*[:=]", r"token[\s\"']*[:=]"),
}
# A key SECRET_KEY_NAMES matches, quoted and followed by a colon (`$` also matches before a final newline).
_SECRET_KEY_TEXT_CHECKS = (
    r"api[_\-]?key[\s\"']*[:=]",
    r"secret(?:[_\-]?key)?[\s\"']*[:=]",
    r"token[\s\"']*[:=]",
    r"passw(?:or)?d[\s\"']*[:=]",
    r"authorization[\s\"']*[:=]",
)
# Characters that re.IGNORECASE matches to an ASCII letter although str.lower() does not give that letter.
_SRE_ASCII_FOLD_MAP = {0x130: "i", 0x131: "i", 0x17F: "s", 0x212A: "k"}
_SRE_ASCII_FOLDS = re.compile("[\u0130\u0131\u017f\u212a]")
# What lets a match depend on text beyond the string it lies in: anchors, lookarounds, conditionals.
_CONTEXT_SENSITIVE = re.compile(r"\\[AZ]|\(\?(?:=|!|<=|<!|\()|[$^]")
_SIMPLE_ESCAPES = (('\\"', '"'), ("\\/", "/"), ("\\n", "\n"), ("\\t", "\t"), ("\\r", "\r"), ("\\b", "\b"), ("\\f", "\f"))
_ESCAPE_RUN = re.compile(r'(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))+')


# ((one RE2 search for every lowered check, the same case-insensitive for ASCII text) or None; verbatim checks)
_TextChecks = tuple[tuple[Any, Any] | None, list[re.Pattern[str]]]

# Python's `\s` on text (str.isspace(), as tests/lab/ingest checks), spelled out for RE2, whose own `\s` leaves out
# \v and the Unicode spaces: a check may miss nothing that the pattern it stands for matches.
_PYTHON_SPACES = re.escape(
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.max_mem = 64 << 20  # room for the DFA of the combined checks, so it never falls back to the slower engine


def _one_search(sources: Iterable[str]) -> tuple[Any, Any] | None:
    """All checks as one RE2 alternation: RE2 scans the text once for all of them (three times faster than
    thirteen literal-led `re` searches on the benchmark upload), and matches wherever any one of them would."""
    # `\s` opens a class in these checks or stands alone: `[\s"']` and `bearer\s+`.
    alternatives = [source.replace(r"[\s", "[" + _PYTHON_SPACES).replace(r"\s", f"[{_PYTHON_SPACES}]") for source in sorted(sources)]
    if not alternatives:
        return None
    combined = "|".join(f"(?:{a})" for a in alternatives)
    return re2.compile(combined, _RE2_OPTIONS), re2.compile(f"(?i:{combined})", _RE2_OPTIONS)


def _text_checks(patterns: list[tuple[str, re.Pattern[str]]], secret_keys: bool) -> _TextChecks | None:
    lowered: set[str] = set(_SECRET_KEY_TEXT_CHECKS) if secret_keys else set()
    verbatim: list[re.Pattern[str]] = []
    for _, pattern in patterns:
        known = _DEFAULT_TEXT_CHECKS.get(pattern.pattern)
        if known is not None and pattern.flags == re.compile(pattern.pattern).flags:
            lowered.update(known)
        elif _CONTEXT_SENSITIVE.search(re.sub(r"\\[^AZ]|\[\^", "", pattern.pattern)) is None:
            verbatim.append(pattern)  # e.g. [^...] classes and escaped characters are removed before looking
        else:
            return None
    return _one_search(lowered), verbatim


def _unescaped(text: str) -> str:
    """The JSON text with its string escapes decoded (it must be valid JSON, which holds no raw control characters)."""
    if "\\" not in text:
        return text
    if "\\u" in text:  # rare: decode every escape run in one pass, so a decoded backslash starts nothing
        return _ESCAPE_RUN.sub(lambda match: _decode_escapes(match.group()), text)
    text = text.replace("\\\\", "\x00")  # an escaped backslash, parked so that it starts no escape below
    for escape, char in _SIMPLE_ESCAPES:
        text = text.replace(escape, char)
    return text.replace("\x00", "\\")


@functools.lru_cache(maxsize=4096)
def _decode_escapes(run: str) -> str:
    decoded: str = json.loads(f'"{run}"')
    return decoded
