"""Synthesised pairs replay; the prior dataset labels clean priors right and each drift corruption wrong."""

from __future__ import annotations

import random
from collections import Counter

from environments.desktop.explore import make_env, systematic
from environments.desktop.explore_synth import CORRUPTIONS, corrupt, priors_dataset, synthesise
from environments.replay import replay_record
from environments.trajectory import validate_record


def test_pairs_are_replayable_records_with_a_hindsight_task() -> None:
    graph = systematic(make_env(4, "none"), 80)
    pairs = synthesise(graph, seed=4, drift="none")
    assert len(pairs) == len(graph.nodes) - 1  # every screen but the start
    for pair in pairs:
        assert validate_record(pair) == [] and replay_record(pair)["ok"]
        synth = pair["header"]["meta"]["synthesised"]
        assert synth["end_screen"] in graph.nodes and synth["instruction"]
    settings = next(
        p
        for p in pairs
        if p["header"]["meta"]["synthesised"]["end_screen"] and "Settings" in p["header"]["meta"]["synthesised"]["instruction"]
    )
    assert settings["header"]["meta"]["synthesised"]["instruction"].startswith("In Settings: open Settings")


def test_the_prior_dataset_has_a_right_prior_and_labelled_corruptions_per_pair() -> None:
    pairs = synthesise(systematic(make_env(5, "high"), 60), seed=5, drift="high")
    items = priors_dataset(pairs)
    labels = Counter((i["header"]["meta"]["label"], i["header"]["meta"]["corruption"]) for i in items)
    assert labels[("right", None)] == len(pairs)
    assert {k for (label, k) in labels if label == "wrong"} <= set(CORRUPTIONS) and sum(
        n for (lb, _), n in labels.items() if lb == "wrong"
    ) > len(pairs)
    for item in items:
        assert validate_record(item) == [] and item["steps"][1]["message"] == item["header"]["meta"]["label"]


def test_each_corruption_changes_the_prior_where_it_applies() -> None:
    steps = [
        {
            "action": {"name": "click", "arguments": {"id": "launch.mail"}},
            "role": "button",
            "name": "Mail",
            "where": {"x": 100, "y": 780, "index": 2, "of": 6},
        },
        {
            "action": {"name": "click", "arguments": {"id": "mail.reply"}},
            "role": "button",
            "name": "Reply",
            "where": {"x": 300, "y": 90, "index": 2, "of": 2},
        },
    ]
    lines = ["open Mail at (100, 780), item 2 of 6", 'click button "Reply" at (300, 90), item 2 of 2']
    rng = random.Random(0)
    assert corrupt("renamed", lines, steps, rng)[1] == 'click button "Respond" at (300, 90), item 2 of 2'
    moved = corrupt("moved", lines, steps, rng)
    assert sum(a != b for a, b in zip(moved, lines, strict=True)) == 1 and ("(1180, 20)" in moved[0] or "(980, 710)" in moved[1])
    assert any("promotion" in line for line in corrupt("ad", lines, steps, rng))
    variant = corrupt("variant", lines, steps, rng)
    assert variant in (
        [lines[0].replace("item 2 of 6", "item 5 of 6"), lines[1]],
        [lines[0], lines[1].replace("item 2 of 2", "item 1 of 2")],
    )
    assert len(corrupt("stale", lines, steps, rng)) == 1
