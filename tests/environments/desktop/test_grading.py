from __future__ import annotations

import pytest

from environments.desktop.grading import COLLATERAL_PENALTY, EFFICIENCY_WEIGHT, Grader
from environments.desktop.shell import run_shell
from environments.desktop.tasks import synthesize
from tests.environments.desktop.conftest import fresh


def _grader(key: str, seed: int = 1000):  # type: ignore[no-untyped-def]
    data, ui = fresh(seed)
    return Grader(synthesize(key, data, seed), data), data, ui


def test_the_solution_scores_one_and_a_longer_correct_path_less_by_the_formula() -> None:
    grader, data, ui = _grader("change-setting")
    for command in grader.task.solution:
        run_shell(data, ui, command)
    assert grader.grade(data, actions=2)["composite"] == 1.0
    report = grader.grade(data, actions=8)
    assert report["state_ok"] and report["efficiency"] == 0.25
    assert report["composite"] == pytest.approx(1 - EFFICIENCY_WEIGHT + EFFICIENCY_WEIGHT * 0.25)


def test_doing_nothing_scores_zero() -> None:
    grader, data, _ = _grader("errand")
    report = grader.grade(data, actions=0)
    assert report["composite"] == 0.0 and report["goal"] == 0.0 and not report["state_ok"]


def test_partial_progress_counts_items_and_collateral_damage_halves_it_and_blocks_the_credit() -> None:
    grader, data, ui = _grader("errand")
    run_shell(data, ui, grader.task.solution[0])  # only the files moved
    partial = grader.grade(data, actions=1)
    moved = sum(1 for i in partial["items"] if i["ok"])
    assert 0 < partial["goal"] < 1 and partial["goal"] == moved / len(partial["items"])
    assert partial["composite"] == pytest.approx((1 - EFFICIENCY_WEIGHT) * partial["goal"])
    for command in grader.task.solution[1:]:
        run_shell(data, ui, command)
    run_shell(data, ui, "shop buy p01")  # an extra purchase nobody asked for
    damaged = grader.grade(data, actions=6)
    assert damaged["goal"] == 1.0 and damaged["damage"] == ["orders ['p01']"] and not damaged["state_ok"]
    assert damaged["composite"] == pytest.approx((1 - EFFICIENCY_WEIGHT) * (1 - COLLATERAL_PENALTY))


def test_a_wrong_reply_text_or_an_extra_mail_is_not_the_goal() -> None:
    grader, data, ui = _grader("reply-mail")
    mail_id = grader.task.solution[1].split()[2]
    run_shell(data, ui, f"mail reply {mail_id} --body 'something else'")
    report = grader.grade(data, actions=2)
    assert report["goal"] == 0.0 and any(d.startswith("extra sent") for d in report["damage"])
