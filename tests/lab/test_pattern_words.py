"""lab.pattern_words: a tool argument's pattern in words, with an example the pattern accepts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from environments import registry
from lab.pattern_words import pattern_example, pattern_rule


@pytest.mark.parametrize(
    ("pattern", "rule", "example"),
    [
        (r"P\d{2}-[A-Z]{3}-(S|M|L|OS)", "“P”, 2 digits, “-”, 3 capital letters, “-”, one of S, M, L or OS", "P12-ABC-S"),
        (r"PO-\d{1,6}", "“PO-”, 1 to 6 digits", "PO-12"),
        (r"SUP-\d{1,2}", "“SUP-”, 1 or 2 digits", "SUP-12"),
        (r"P\d{1,5}|all", "either (“P”, 1 to 5 digits) or all", "P12"),
        (r"a[0-9]{5}", "“a”, 5 digits", "a12345"),
        (
            r"[^@\s]+@[^@\s]+\.[a-z]{2,}",
            "one or more characters other than @ or space, “@”, one or more characters other than @ or space, "
            "“.”, 2 or more lowercase letters",
            "abc@def.ghi",
        ),
    ],
)
def test_it_says_a_pattern_in_words_with_an_example_it_accepts(pattern: str, rule: str, example: str) -> None:
    assert pattern_rule(pattern) == rule
    assert pattern_example(pattern) == example


def test_it_says_nothing_rather_than_something_wrong_for_patterns_past_its_subset() -> None:
    assert pattern_rule(r"a(?=b)") == "" and pattern_example(r"a(?=b)") == ""
    assert pattern_rule("(") == "" and pattern_example("(") == ""


def _patterns(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
        return own + [p for value in schema.values() for p in _patterns(value)]
    if isinstance(schema, list):
        return [p for value in schema for p in _patterns(value)]
    return []


def test_every_pattern_of_every_playable_environment_has_words_and_a_matching_example() -> None:
    seen: set[str] = set()
    for meta in registry.list_envs():
        if not meta.playable:
            continue
        task = registry.list_tasks(meta.env)[0]
        for spec in registry.make(task.id, seed=0).tools():
            seen.update(_patterns(spec.parameters))
    assert len(seen) >= 10, seen
    for pattern in sorted(seen):
        assert pattern_rule(pattern), f"no words for {pattern!r}"
        assert re.fullmatch(pattern, pattern_example(pattern)), f"no example for {pattern!r}"
