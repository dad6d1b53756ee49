from __future__ import annotations

import pytest

from environments.desktop.drift import LEVELS, RENAMES, Drift, drift_for, robustness
from environments.desktop.widgets import find
from tests.environments.desktop.conftest import do, new_desktop


def test_level_none_is_the_reference_desktop_and_other_levels_are_seeded() -> None:
    assert drift_for(5, "none") == Drift()
    assert drift_for(5, "high") == drift_for(5, "high") and drift_for(5, "low") == drift_for(5, "low")
    draws = [drift_for(seed, "high") for seed in range(40)]
    assert len({tuple(sorted(d.versions.items())) for d in draws}) > 5
    share_v2 = sum(v == 2 for d in draws for v in d.versions.values()) / (40 * 6)
    share_low = sum(v == 2 for s in range(40) for v in drift_for(s, "low").versions.values()) / (40 * 6)
    assert 0.65 < share_v2 < 0.95 and 0.15 < share_low < 0.45
    with pytest.raises(AssertionError, match="not one of"):
        drift_for(1, "extreme")
    assert LEVELS == ("none", "low", "high")


def test_version_2_renames_controls_and_moves_the_toolbar_to_the_bottom() -> None:
    v1, v2 = new_desktop(), new_desktop()
    v2.drift = Drift(level="high", versions={"mail": 2})
    for env in (v1, v2):
        do(env, "open_app", app="mail")
        do(env, "click", id="mail.item.m1")
    assert find(v1.screen(), "mail.reply").name == "Reply" and find(v2.screen(), "mail.reply") is None
    assert find(v2.screen(), "mail.respond").name == "Respond" == RENAMES["mail.reply"][1]
    assert find(v2.screen(), "mail.toolbar").bounds[1] > find(v1.screen(), "mail.toolbar").bounds[1]
    assert do(v2, "click", id="mail.reply").is_error and do(v2, "click", id="mail.respond").content["result"].startswith("replying")


def test_variant_b_mirrors_the_sidebar_and_reverses_lists() -> None:
    a, b = new_desktop(), new_desktop()
    b.drift = Drift(level="high", variants={"mail": "B"})
    for env in (a, b):
        do(env, "open_app", app="mail")
    assert find(b.screen(), "mail.list").bounds[0] > find(a.screen(), "mail.list").bounds[0]
    assert [w.id for w in find(b.screen(), "mail.list").children] == [w.id for w in find(a.screen(), "mail.list").children][::-1]


def test_personalisation_reorders_the_taskbar() -> None:
    env = new_desktop()
    env.drift = Drift(level="high", launcher=("shop", "mail", "files", "calendar", "settings", "table"))
    env._refresh()
    taskbar = find(env.screen(), "taskbar")
    assert [w.id for w in taskbar.children][:2] == ["launch.shop", "launch.mail"] and taskbar.children[0].bounds[0] == 8


def test_robustness_is_the_drifted_mean_over_the_reference_mean_capped_at_one() -> None:
    assert robustness([1.0, 0.8], [0.45, 0.45]) == pytest.approx(0.5)
    assert robustness([0.5], [0.9]) == 1.0
    assert robustness([0.0, 0.0], [0.3]) == 0.0 and robustness([], []) == 0.0
