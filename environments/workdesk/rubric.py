"""Rubric items, and the grading of a deliverable against them with an execution audit.

A deliverable is Markdown with `## Summary`, `## Figures` and `## Sources`; each asked figure is one labelled
line, `- <label>: <value>`. Items check: the figure on its line (one number, within tolerance), a named answer,
a required section, a cited source, a forbidden value or claim absent, a stale file not cited.

Gates zero the grade whatever the items say, because they are the cheap ways to pass a keyword rubric: a
deliverable over MAX_CHARS, one that copies source lines wholesale (MAX_COPIED_LINES), one with a flood of
numbers (listing every candidate figure also trips the forbidden items). The audit is the share of cited
workspace files the agent actually read (read_file, a shown file, or a calc table over it). The score is
the weighted rubric (WEIGHTS, PENALTY) times the audit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from environments.meta import ScoreComponent

MAX_CHARS = 4000
MAX_COPIED_LINES = 2
NUMBERS_PER_FIGURE = 4
# Credit per item kind; a violated forbidden item takes PENALTY off instead of earning anything, so a skeleton
# that only avoids the traps (or only has the sections) scores low.
WEIGHTS = {"figure": 3.0, "answer": 3.0, "source": 1.0, "section": 0.5}
PENALTY = 2.0
_PRODUCT = "composite = rubric × audit, 0 when a gate refuses the deliverable"
# What the viewer says of each score component (the module docstring, in a reader's words).
COMPONENTS = {
    "rubric": ScoreComponent(
        "credit earned by the items met (" + ", ".join(f"{kind} {w:g}" for kind, w in WEIGHTS.items()) + f"), less {PENALTY:g} per "
        f"violated forbidden item, over the credit available; {_PRODUCT}",
        moved_by=("write_file", "edit_file"),
    ),
    "audit": ScoreComponent(
        "share of the workspace files the deliverable cites that the agent read (shown by list_files, loaded by calc, or "
        f"at least half their lines through read_file); {_PRODUCT}",
        moved_by=("read_file", "list_files", "calc"),
    ),
}
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?![.,]?\w)")


@dataclass(frozen=True)
class Item:
    id: str
    kind: str  # figure | answer | section | source | forbidden-value | forbidden-claim | forbidden-source
    text: str  # what the item checks, in words (the report's line)
    evidence: tuple[str, ...] = ()  # graph node ids (and, for source items, paths)
    label: str = ""
    value: float = 0.0
    tolerance: float = 0.0
    answer: str = ""
    choices: tuple[str, ...] = ()  # answer: the names to tell apart; forbidden-claim: the cue words of the claim
    paths: tuple[str, ...] = ()
    critical: bool = True


def numbers_in(text: str) -> list[float]:
    return [float(m.group().replace(",", "")) for m in _NUMBER.finditer(text)]


def sections(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    name = ""
    for line in text.splitlines():
        if line.startswith("## "):
            name = line[3:].strip().lower()
            out[name] = ""
        elif name:
            out[name] += line + "\n"
    return out


def labelled_line(text: str, label: str) -> str | None:
    pattern = re.compile(rf"^\s*[-*]\s*{re.escape(label)}\s*:(.*)$", re.IGNORECASE)
    return next((m.group(1) for line in text.splitlines() if (m := pattern.match(line))), None)


def check_item(item: Item, text: str) -> tuple[bool, str]:
    parts = sections(text)
    if item.kind == "section":
        body = parts.get(item.label.lower())
        return (bool(body and body.strip()), "present" if body and body.strip() else f"no non-empty '## {item.label}' section")
    if item.kind in ("figure", "answer"):
        line = labelled_line(text, item.label)
        if line is None:
            return False, f"no line '- {item.label}: ...'"
        if item.kind == "answer":
            named = [c for c in item.choices if re.search(rf"\b{re.escape(c)}\b", line, re.IGNORECASE)]
            return named == [item.answer], f"names {named or 'nothing'}, expected {item.answer}"
        found = numbers_in(line)
        if len(found) != 1:
            return False, f"{len(found)} numbers on the line; one figure per line"
        return abs(found[0] - item.value) <= item.tolerance, f"{found[0]:g} vs {item.value:g} (±{item.tolerance:g})"
    if item.kind == "source":
        cited = [p for p in item.paths if p in parts.get("sources", "")]
        return bool(cited), f"cites {cited}" if cited else f"Sources cite none of {list(item.paths)}"
    if item.kind == "forbidden-source":
        cited = [p for p in item.paths if p in parts.get("sources", "")]
        return not cited, f"cites {cited}" if cited else "not cited"
    if item.kind == "forbidden-value":
        hits = [x for x in numbers_in(text) if abs(x - item.value) <= item.tolerance]
        return not hits, f"shows {hits[0]:g}" if hits else "absent"
    assert item.kind == "forbidden-claim", f"unknown rubric item kind {item.kind!r}"
    # The claim is the name together with one of its cue words on a line ("North led Q4"), so mentioning the
    # name for another reason ("North grew slowest") is not the claim.
    said = [line for line in text.splitlines() if _word(item.answer, line) and any(_word(cue, line) for cue in item.choices)]
    return not said, f"claims it: {said[0].strip()[:60]!r}" if said else "absent"


def _word(word: str, line: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", line, re.IGNORECASE) is not None


def gates(text: str, sources: dict[str, str], figures: int) -> list[str]:
    """The reasons a deliverable is refused outright (empty when none)."""
    problems = []
    if len(text) > MAX_CHARS:
        problems.append(f"longer than {MAX_CHARS} characters ({len(text)})")
    source_lines = {line.strip() for body in sources.values() for line in body.splitlines() if len(line.strip()) >= 10}
    copied = sum(1 for line in text.splitlines() if line.strip() in source_lines)
    if copied > MAX_COPIED_LINES:
        problems.append(f"{copied} lines copied verbatim from workspace files")
    count = len(numbers_in(text))
    if count > NUMBERS_PER_FIGURE * figures + 8:
        problems.append(f"{count} numbers for {figures} asked figures")
    return problems


def grade(items: tuple[Item, ...], text: str | None, sources: dict[str, str], reads: set[str], threshold: float) -> dict[str, Any]:
    """{"score", "rubric", "audit", "passed", "gates", "items": [{id, kind, ok, why, evidence}], "cited", "unread"}."""
    if text is None:
        return {
            "score": 0.0,
            "rubric": 0.0,
            "audit": 0.0,
            "passed": False,
            "gates": ["no deliverable written"],
            "items": [],
            "cited": [],
            "unread": [],
        }
    report = []
    for item in items:
        ok, why = check_item(item, text)
        report.append({"id": item.id, "kind": item.kind, "ok": ok, "why": why, "evidence": list(item.evidence)})
    earned = sum(WEIGHTS[i.kind] for r, i in zip(report, items, strict=True) if r["ok"] and i.kind in WEIGHTS)
    lost = sum(PENALTY for r, i in zip(report, items, strict=True) if not r["ok"] and i.kind not in WEIGHTS)
    rubric = max(0.0, earned - lost) / sum(WEIGHTS.get(i.kind, 0.0) for i in items)
    cited = sorted(p for p in sources if p in text)
    unread = [p for p in cited if p not in reads]
    audit = (len(cited) - len(unread)) / len(cited) if cited else 0.0
    refused = gates(text, sources, sum(i.kind == "figure" for i in items))
    score = 0.0 if refused else rubric * audit
    critical = all(r["ok"] for r, i in zip(report, items, strict=True) if i.critical)
    passed = not refused and critical and audit == 1.0 and score >= threshold
    return {
        "score": round(score, 4),
        "rubric": round(rubric, 4),
        "audit": round(audit, 4),
        "passed": passed,
        "gates": refused,
        "items": report,
        "cited": cited,
        "unread": unread,
    }
