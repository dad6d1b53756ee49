"""The record types' accessors, their agreement with the trajectory schema, and the one place the score is read."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from environments.records import (
    Header,
    Record,
    ScoreDict,
    Step,
    header_components,
    header_composite,
    header_passed,
    header_score,
    record_composite,
    record_passed,
    record_score,
)
from environments.trajectory import HEADER_SCHEMA, STEP_SCHEMA, make_step, new_record, validate_record

ROOT = Path(__file__).resolve().parents[2]


def _record(score: object) -> Record:
    header: Header = {"env": "toolgym", "task": "echo", "source": "upload"}
    if score is not ...:
        header["score"] = score  # type: ignore[typeddict-item]  # null and odd shapes on purpose
    return new_record(header=header, steps=[make_step(index=0, source="env", message="hi")])


def test_it_reads_a_full_score() -> None:
    score: ScoreDict = {"composite": 0.75, "passed": True, "components": {"profit": 0.5}}
    alice = _record(score)
    assert record_score(alice) == score
    assert record_composite(alice) == 0.75 and record_composite(alice, 0.0) == 0.75
    assert record_passed(alice) is True
    assert header_components(alice["header"]) == {"profit": 0.5}
    assert header_composite(alice["header"], 0.0) == 0.75 and header_passed(alice["header"]) is True
    assert validate_record(alice) == []


@pytest.mark.parametrize("score", [..., None, {}], ids=["absent", "null", "empty"])
def test_it_answers_empty_for_an_unscored_record(score: object) -> None:
    bob = _record(score)
    assert record_score(bob) == {} and header_score(bob["header"]) == {}
    assert record_composite(bob) is None and record_composite(bob, 0.0) == 0.0
    assert header_composite(bob["header"]) is None and header_composite(bob["header"], 0.5) == 0.5
    assert record_passed(bob) is None and header_passed(bob["header"]) is None
    assert header_components(bob["header"]) == {}


def test_it_keeps_a_zero_composite_and_a_false_pass() -> None:
    carol = _record({"composite": 0.0, "passed": False, "components": None})
    assert record_composite(carol, 1.0) == 0.0  # a default stands in only for an absent composite
    assert record_passed(carol) is False
    assert header_components(carol["header"]) == {}


def test_the_types_declare_every_schema_field() -> None:
    assert set(HEADER_SCHEMA["properties"]) <= Header.__annotations__.keys()
    assert set(STEP_SCHEMA["properties"]) == Step.__annotations__.keys()
    hints = typing.get_type_hints(Step, include_extras=True)  # __required_keys__ misses Required[] in string annotations (3.11)
    assert {name for name, hint in hints.items() if typing.get_origin(hint) is typing.Required} == set(STEP_SCHEMA["required"])
    assert Record.__required_keys__ == {"schema_version", "header", "steps"}
    assert set(HEADER_SCHEMA["properties"]["score"]["properties"]) <= ScoreDict.__annotations__.keys()


# `header.get("score") or {}` and its variants: the score is read through environments.records, nowhere else.
_SCORE_IDIOM = re.compile(r"""\.get\(\s*["']score["']\s*\)\s*or\s*\{\s*\}""")


def test_the_score_is_read_only_through_the_accessors() -> None:
    found = []
    for package in ("environments", "training", "lab"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "environments" / "records.py":
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _SCORE_IDIOM.search(line):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "read the score with environments.records (header_score, record_passed, ...):\n" + "\n".join(found)


def test_the_scan_sees_the_idiom() -> None:
    assert _SCORE_IDIOM.search('x = (header.get("score") or {}).get("passed")')
    assert _SCORE_IDIOM.search("s = record['header'].get('score')  or  {}")
    assert not _SCORE_IDIOM.search('x = header.get("score")')


# A trajectory record, header or step annotated as a plain dict: the types in environments.records say what it holds.
_PLAIN_RECORD_ANNOTATION = re.compile(
    r"\b(?:record|header|step|history)\s*:\s*dict\[str,\s*Any\]"
    r"|\b(?:records|steps|history|pairs)\s*:\s*(?:list|Sequence|Iterable|Iterator)\[dict\[str,\s*Any\]\]"
)
# Files where such a name is not a trajectory's, with how many such annotations each may hold.
_PLAIN_DICTS_ALLOWED = {
    "environments/trajectory.py": (1, "make_step builds the dict it then returns as a Step"),
    "environments/desktop/explore_synth.py": (4, "the explorer's path steps ({action, name, role, where}), not trajectory steps"),
    "lab/ingest/native_fast.py": (2, "msgspec Struct fields: a TypedDict there would change what the decoder accepts"),
    "lab/runs/experiment_results.py": (2, "rows of training/results files, not trajectories"),
    "lab/console/lanes.py": (3, "the viewer's rows, which the page decorates with display fields (lane, influence)"),
    "lab/console/views/viewer_analysis.py": (1, "the viewer's rows, decorated with credit and pivotal"),
    "lab/console/turns.py": (1, "a partial step row read off the table (episode_id, a few columns)"),
}


def _plain_record_annotations() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in ("environments", "training", "lab"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _PLAIN_RECORD_ANNOTATION.search(line):
                    found.setdefault(str(path.relative_to(ROOT)), []).append(f"{number}: {line.strip()}")
    return found


def test_records_are_annotated_with_the_record_types() -> None:
    over = {path: lines for path, lines in _plain_record_annotations().items() if len(lines) > _PLAIN_DICTS_ALLOWED.get(path, (0, ""))[0]}
    assert not over, "annotate trajectories with environments.records (Record, Header, Step):\n" + "\n".join(
        f"{path}:{line}" for path, lines in over.items() for line in lines
    )


def test_the_allow_list_holds_no_stale_entries() -> None:
    found = _plain_record_annotations()
    stale = {path: allowed for path, (allowed, _) in _PLAIN_DICTS_ALLOWED.items() if len(found.get(path, [])) < allowed}
    assert not stale, f"lower these allowances to what the files hold now: {stale}"


def test_the_annotation_scan_sees_plain_records() -> None:
    assert _PLAIN_RECORD_ANNOTATION.search("def f(record: dict[str, Any]) -> None:")
    assert _PLAIN_RECORD_ANNOTATION.search("    steps: list[dict[str, Any]] = []")
    assert _PLAIN_RECORD_ANNOTATION.search("def act(self, history: list[dict[str, Any]], tools)")
    assert _PLAIN_RECORD_ANNOTATION.search("def g(records: Sequence[dict[str, Any]]) -> None:")
    assert not _PLAIN_RECORD_ANNOTATION.search("def f(record: Record) -> None:")
    assert not _PLAIN_RECORD_ANNOTATION.search("def f(meta: dict[str, Any]) -> None:")


def test_call_arguments_is_a_dict_even_when_the_models_json_did_not_parse():
    from environments.records import call_arguments

    assert call_arguments({"id": "c", "name": "lookup", "arguments": {"item": "lamp"}}) == {"item": "lamp"}
    assert call_arguments({"id": "c", "name": "lookup", "arguments": '{"item": "la'}) == {}
    assert call_arguments({"id": "c", "name": "lookup"}) == {}
