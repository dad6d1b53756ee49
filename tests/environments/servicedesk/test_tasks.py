"""Task templates: at least 40, split by template, deterministic per seed, gold changes that apply cleanly."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from environments.registry import list_tasks
from environments.servicedesk.tasks import TEMPLATES, build_goal, expected_db
from environments.servicedesk.world import db_hash


def test_there_are_at_least_40_templates_registered_as_tasks_with_every_split() -> None:
    tasks = list_tasks("servicedesk")
    assert len(tasks) == len(TEMPLATES) >= 40
    splits = Counter(t.split for t in tasks)
    assert set(splits) == {"train", "dev", "test"} and splits["dev"] >= 8 and splits["test"] >= 8
    assert {t.key for t in tasks} == set(TEMPLATES) and all(t.spec == {"template": t.key} for t in tasks)


def test_outcomes_include_refusals_declines_and_transfers() -> None:
    goals = [build_goal(key, 0)[1] for key in TEMPLATES]
    outcomes = Counter(g.outcome for g in goals)
    assert outcomes["refuse"] >= 8 and outcomes["transfer"] >= 3 and sum(g.decline for g in goals) >= 3
    assert all(g.gold or g.statements for g in goals), "every task asks for a change, a statement or a transfer"


@pytest.mark.parametrize("key", sorted(TEMPLATES))
def test_each_template_is_a_pure_function_of_the_seed_and_its_gold_applies(key: str) -> None:
    db1, goal1 = build_goal(key, 4)
    db2, goal2 = build_goal(key, 4)
    assert db_hash(db1) == db_hash(db2) and goal1 == goal2
    assert db_hash(build_goal(key, 5)[0]) != db_hash(db1)
    expected = expected_db(db1, goal1)  # raises when a gold call fails
    assert (expected != db1) == any(c["tool"] != "transfer_to_human" for c in goal1.gold)
    for statement in goal1.statements:
        assert re.search(statement["pattern"], statement["say"], re.I), f"{key}: the oracle's words miss {statement['name']}"
    assert {"phone", "date_of_birth", "postcode"} <= set(goal1.facts) and set(goal1.needs) <= set(goal1.facts)
