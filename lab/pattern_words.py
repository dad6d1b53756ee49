"""A tool argument's regular expression, said for a person: the rule in words and an example value that meets it.

    pattern_rule(r"PO-\\d{1,6}")       # '"PO-", then 1 to 6 digits'
    pattern_example(r"PO-\\d{1,6}")    # 'PO-12'

The play page and the viewer's correction forms show these instead of the raw pattern. Both read Python's own
parse of the pattern (re._parser, the parser `re` itself uses), over the small subset tool schemas use: literals,
classes, counted repeats, groups, alternatives. Anything outside it gives "" (the caller then says nothing
rather than something wrong); an example is only returned when the pattern fully matches it.
"""

from __future__ import annotations

import re
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any


class _Unsupported(Exception):
    pass


_CATEGORY_WORDS = {C.CATEGORY_DIGIT: "digit", C.CATEGORY_SPACE: "space", C.CATEGORY_WORD: "letter, digit or _"}
_CATEGORY_SAMPLES = {C.CATEGORY_DIGIT: "1234567890", C.CATEGORY_SPACE: " ", C.CATEGORY_WORD: "abcdefgh"}
_RANGE_WORDS = {("a", "z"): "lowercase letter", ("A", "Z"): "capital letter", ("0", "9"): "digit"}
_SAMPLES = {"lowercase letter": "abcdefghij", "capital letter": "ABCDEFGHIJ", "digit": "1234567890"}


def _class_names(items: list[tuple[Any, Any]]) -> tuple[list[str], bool]:
    """A character class as the kinds it admits (["capital letter", "digit", '"_"']) and whether it is negated."""
    names: list[str] = []
    negated = False
    for op, av in items:
        if op is C.NEGATE:
            negated = True
        elif op is C.LITERAL:
            names.append(chr(av))
        elif op is C.RANGE:
            low, high = chr(av[0]), chr(av[1])
            names.append(_RANGE_WORDS.get((low, high), f"{low}-{high}"))
        elif op is C.CATEGORY and av in _CATEGORY_WORDS:
            names.append(_CATEGORY_WORDS[av])
        else:
            raise _Unsupported(op)
    if "lowercase letter" in names and "capital letter" in names:
        names = ["letter" if n == "lowercase letter" else n for n in names if n != "capital letter"]
    return names, negated


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


def _plural(name: str) -> str:
    return (
        name
        if len(name) == 1 or name.endswith("_")
        else name.replace("letter", "letters").replace("digit", "digits").replace("space", "spaces")
    )


def _class_words(items: list[tuple[Any, Any]], *, plural: bool) -> str:
    names, negated = _class_names(items)
    if negated:
        return ("characters" if plural else "any character") + " other than " + _or(names)
    if all(len(n) == 1 for n in names):  # [SML]: one of these exact characters
        return "one of " + ", ".join(names) if not plural else "characters among " + ", ".join(names)
    return _or([_plural(n) if plural else n for n in names]) if plural else "a " + _or(names)


def _single(op: Any, av: Any, *, plural: bool) -> str:
    """One repeated element in words (a class or a single character), or raise when it is a group."""
    if op is C.IN:
        return _class_words(av, plural=plural)
    if op is C.LITERAL:
        return f"“{chr(av)}”" + ("s" if plural else "")
    if op is C.ANY:
        return "characters" if plural else "any character"
    raise _Unsupported(op)


def _count(low: int, high: int) -> str:
    if high == C.MAXREPEAT:
        return "one or more" if low == 1 else "any number of" if low == 0 else f"{low} or more"
    if low == high:
        return str(low)
    return f"{low} or {high}" if high == low + 1 else f"{low} to {high}"


def _option(parts: list[str]) -> str:
    """One alternative: a bare literal ("OS") as itself, anything longer in parentheses."""
    if len(parts) == 1 and parts[0].startswith("“") and parts[0].count("“") == 1 and parts[0].endswith("”"):
        return parts[0][1:-1]
    return "(" + ", ".join(parts) + ")"


def _words(parsed: Any) -> list[str]:
    parts: list[str] = []
    literal = ""
    for op, av in parsed:
        if op is C.LITERAL:
            literal += chr(av)
            continue
        if literal:
            parts.append(f"“{literal}”")
            literal = ""
        if op is C.AT:
            continue
        if op in (C.MAX_REPEAT, C.MIN_REPEAT):
            low, high, sub = av
            if len(sub) == 1 and sub[0][0] is not C.SUBPATTERN:
                if (low, high) == (0, 1):
                    parts.append("optionally " + _single(*sub[0], plural=False))
                else:
                    parts.append(f"{_count(low, high)} {_single(*sub[0], plural=not (low == high == 1))}")
                continue
            inner = ", ".join(_words(sub))
            parts.append(f"optionally ({inner})" if (low, high) == (0, 1) else f"{_count(low, high)} times ({inner})")
        elif op is C.SUBPATTERN:
            parts.extend(_words(av[3]))
        elif op is C.BRANCH:
            options = [_option(_words(branch)) for branch in av[1]]
            parts.append(("either " if len(options) == 2 else "one of ") + _or(options))
        elif op in (C.IN, C.ANY):
            parts.append(_single(op, av, plural=False))
        else:
            raise _Unsupported(op)
    if literal:
        parts.append(f"“{literal}”")
    return parts


def pattern_rule(pattern: str) -> str:
    """The pattern in words ("" when it uses more than tool schemas do)."""
    try:
        return ", ".join(_words(_parser.parse(pattern)))
    except (_Unsupported, re.error, TypeError, ValueError):
        return ""


class _Sampler:
    """Builds one value: each kind of character walks its own sample string, so "[A-Z]{3}" gives "ABC"."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}

    def take(self, samples: str) -> str:
        n = self.used.get(samples, 0)
        self.used[samples] = n + 1
        return samples[n % len(samples)]

    def char(self, op: Any, av: Any) -> str:
        if op is C.LITERAL:
            return chr(av)
        if op is C.ANY:
            return self.take("abcdefgh")
        if op is not C.IN:
            raise _Unsupported(op)
        names, negated = _class_names(av)
        if negated:
            return self.take("".join(c for c in "abcdefghij" if c not in names))
        for preferred in ("lowercase letter", "letter", "letter, digit or _", "capital letter", "digit"):
            if preferred in names:
                return self.take(_SAMPLES.get(preferred, "abcdefghij"))
        for item_op, item_av in av:
            if item_op is C.LITERAL:
                return chr(item_av)
            if item_op is C.RANGE:
                return chr(item_av[0])
            if item_op is C.CATEGORY:
                return self.take(_CATEGORY_SAMPLES[item_av])
        raise _Unsupported(av)

    def build(self, parsed: Any) -> str:
        out = ""
        for op, av in parsed:
            if op is C.AT:
                continue
            if op in (C.MAX_REPEAT, C.MIN_REPEAT):
                low, high, sub = av
                if len(sub) == 1 and sub[0][0] is not C.SUBPATTERN:  # a run of characters: long enough to read as one
                    count = max(low, 3) if high == C.MAXREPEAT else max(low, min(high, 2))
                    out += "".join(self.char(*sub[0]) for _ in range(count))
                else:  # a group: once, so an optional part shows in the example
                    out += "".join(self.build(sub) for _ in range(max(low, 1)))
            elif op is C.SUBPATTERN:
                out += self.build(av[3])
            elif op is C.BRANCH:
                out += self.build(av[1][0])
            else:
                out += self.char(op, av)
        return out


def pattern_example(pattern: str) -> str:
    """A value the pattern fully matches, built to be readable ("" when none could be made)."""
    try:
        example = _Sampler().build(_parser.parse(pattern))
    except (_Unsupported, re.error, TypeError, ValueError, StopIteration):
        return ""
    return example if re.fullmatch(pattern, example) else ""
