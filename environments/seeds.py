"""Seed lists and ranges as people type them ("0,1,2", "0 1 2", "0-4", "-3"), checked before anything is built.

    seeds_parse("0-4, 9", maximum=1000)    # [0, 1, 2, 3, 4, 9]
    seeds_parse("0-99999999999", maximum=1000)  # SeedError: counted from the range's ends, never listed

One parser for the console forms, the API, `manage.py evaluate` and `python -m environments`: a seed is a
signed 64-bit integer (what the lab stores), and a list holds at most `maximum` seeds.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable

SEED_MIN = -(2**63)
SEED_MAX = 2**63 - 1
DEFAULT_MAX_SEEDS = 1000
_MAX_DIGITS = 20  # int() of a longer text is refused before it is converted (the bounds need at most 19 digits)


class SeedError(ValueError):
    """A seed or seed list that cannot be used; the message names the offending text."""


def seed_parse(raw: str | int) -> int:
    """One seed from text (or an int), within the signed 64-bit range."""
    text = str(raw).strip()
    digits = text.removeprefix("-")
    if not digits.isascii() or not digits.isdigit():
        raise SeedError(f"{str(raw)[:40]!r} is not a seed: give a whole number like 0 or 42")
    if len(digits) > _MAX_DIGITS:
        raise SeedError(f"seed {text[:24]}... is outside [{SEED_MIN}, {SEED_MAX}]")
    return seed_check(int(text))


def seed_check(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise SeedError(f"{value!r} is not a seed: give a whole number like 0 or 42")
    if not SEED_MIN <= value <= SEED_MAX:
        raise SeedError(f"seed {value} is outside [{SEED_MIN}, {SEED_MAX}]")
    return value


def seeds_parse(raw: str, *, maximum: int = DEFAULT_MAX_SEEDS) -> list[int]:
    """Seeds separated by commas or spaces, `low-high` for an inclusive range; at most `maximum` of them.

    A range is counted from its two ends before it is expanded, so a huge range costs nothing to refuse.
    """
    parts = raw.replace(",", " ").split()
    spans: list[tuple[int, int]] = []
    count = 0
    for part in parts:
        low_text, dash, high_text = part[1:].partition("-")  # a leading "-" is a negative seed's sign, not a range
        low_text = part[0] + low_text
        low = seed_parse(low_text)
        high = seed_parse(high_text) if dash else low
        if high < low:
            raise SeedError(f"range {part!r} runs backwards: write the smaller seed first, e.g. {high}-{low}")
        count += high - low + 1
        if count > maximum:
            raise SeedError(f"{raw.strip()[:60]!r} holds more than {maximum} seeds; at most {maximum} are allowed")
        spans.append((low, high))
    if not spans:
        raise SeedError("give at least one seed, e.g. 0,1,2 or 0-4")
    return [seed for low, high in spans for seed in range(low, high + 1)]


def seeds_check(values: Iterable[object], *, maximum: int = DEFAULT_MAX_SEEDS) -> list[int]:
    """A list of seeds given as JSON numbers: each in range, at least one, at most `maximum`."""
    seeds: list[int] = []
    for value in values:
        if len(seeds) >= maximum:
            raise SeedError(f"more than {maximum} seeds; at most {maximum} are allowed")
        seeds.append(seed_check(value))
    if not seeds:
        raise SeedError("give at least one seed, e.g. [0, 1, 2]")
    return seeds


def heldout_seeds_parse(raw: Iterable[object] | str) -> list[int]:
    """Held-out seeds for a calibration, as text ("1000-1009") or a list: sorted, without repeats; SeedError
    otherwise. Whether they are disjoint from a task's public seeds is the calibration's own check."""
    try:
        seeds = seeds_parse(raw) if isinstance(raw, str) else seeds_check(raw)
    except SeedError as exc:
        raise SeedError(f"heldout seeds: {exc}") from None
    return sorted(set(seeds))


def comma_choices(allowed: Iterable[str], what: str) -> Callable[[str], list[str]]:
    """An argparse type: a comma-separated list whose every item is one of `allowed`, refused naming the first that is not."""
    allowed = tuple(allowed)

    def parse(raw: str) -> list[str]:
        picked = [p for p in raw.split(",") if p]
        if bad := [p for p in picked if p not in allowed]:
            raise argparse.ArgumentTypeError(f"{what} {bad[0]!r} is not one of {', '.join(allowed)}")
        return picked

    return parse
