"""The Phantom demonstration builder: question-kind filters, kept episodes and their tags, the cached file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from training.config import ConfigError
from training.phantom_data import PhantomDemoConfig, phantom_demonstrations, phantom_demonstrations_file, question_matches


def tags(hops: int, kind: str = "chain", constrained: bool = False) -> dict:
    return {"hops": hops, "question_kind": kind, "constrained": constrained}


def test_it_rejects_dev_tasks_unknown_filters_and_bad_counts_by_name():
    with pytest.raises(ConfigError, match=r"task='phantom/mixed-dev'.*questions='deep'.*episodes=0") as caught:
        PhantomDemoConfig(task="phantom/mixed-dev", questions="deep", episodes=0)
    assert caught.value.fields == ["task", "questions", "episodes"]
    with pytest.raises(ConfigError, match="anchor='keyword'"):
        PhantomDemoConfig(anchor="keyword")


def test_the_three_restricted_sets_are_disjoint_and_all_keeps_everything():
    many, constraint, comparison, every = (PhantomDemoConfig(questions=q) for q in ("many_hops", "constraint", "comparison", "all"))
    cases = {
        "4-hop chain": (tags(4), (True, False, False)),
        "3-hop chain": (tags(3), (True, False, False)),
        "2-hop chain": (tags(2), (False, False, False)),
        "4-hop constrained chain": (tags(4, constrained=True), (False, True, False)),
        "1-hop constrained chain": (tags(1, constrained=True), (False, True, False)),
        "3-hop comparison": (tags(3, "comparison"), (False, False, True)),
        "constrained comparison": (tags(2, "comparison", True), (False, False, True)),
    }
    for name, (question, expected) in cases.items():
        assert tuple(question_matches(question, c) for c in (many, constraint, comparison)) == expected, name
        assert question_matches(question, every), name
    assert question_matches(tags(2), PhantomDemoConfig(questions="many_hops", min_hops=2))


def test_kept_episodes_passed_match_the_filter_and_carry_their_question_tags():
    import environments.phantom  # noqa: F401
    from environments.registry import make

    config = PhantomDemoConfig(questions="constraint", episodes=3, seed_start=30_000)
    records = phantom_demonstrations(config)
    assert len(records) == 3
    seeds = [r["header"]["seed"] for r in records]
    assert seeds == sorted(seeds) and seeds[0] >= 30_000
    for record in records:
        question = make("phantom/mixed-train", record["header"]["seed"]).question
        assert record["header"]["score"]["passed"] and question.constrained and question.kind == "chain"
        assert record["header"]["meta"] == {"hops": question.hops, "question_kind": "chain", "constrained": True}
    skipped = [s for s in range(30_000, seeds[-1]) if s not in seeds]
    skipped_questions = [make("phantom/mixed-train", s).question for s in skipped]
    assert all(q.kind == "comparison" or not q.constrained for q in skipped_questions)  # none skipped for failing


def test_too_few_matching_seeds_is_an_error_naming_the_counts():
    with pytest.raises(ValueError, match="of 50 comparison episodes passed in 3 seeds"):
        phantom_demonstrations(PhantomDemoConfig(questions="comparison", episodes=50, max_seeds=3))


def test_the_file_is_written_once_and_named_by_the_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    config = PhantomDemoConfig(questions="comparison", episodes=2)
    path = Path(phantom_demonstrations_file(config))
    assert path.parent == tmp_path / "experiments" / "data" and path.name.startswith("phantom-demos-comparison-")
    assert [json.loads(line)["header"]["meta"]["question_kind"] for line in path.read_text().splitlines()] == ["comparison"] * 2
    stamp = path.stat().st_mtime_ns
    assert phantom_demonstrations_file(config) == str(path) and path.stat().st_mtime_ns == stamp
    assert phantom_demonstrations_file(PhantomDemoConfig(questions="comparison", episodes=3)) != str(path)
