"""The fidelity report on scripted stand-in sets with known differences."""

from __future__ import annotations

import random
from typing import Any

from training.fidelity import fidelity_report, ks_statistic, user_turns, wasserstein

_TERSE = ["yes", "ok", "BK-{n}", "no", "fine", "{n}", "sure thing", "whatever"]
_VERBOSE = [
    "Hello there, I was hoping you could help me with my booking {n}, because I need to change the date please",
    "Actually, I would rather have the later flight instead, if that is at all possible for you to arrange today",
    "Could you tell me what the fee would be? And also whether I keep my seat?",
    "I think my reference is {n} but I am not completely sure, let me check my email again for you",
    "That sounds good to me, thank you so much for explaining all of the options so clearly and patiently",
]


def _records(templates: list[str], *, seed: int, episodes: int = 30, turns: int = 6, source: str = "agent") -> list[dict[str, Any]]:
    rng = random.Random(seed)
    records = []
    for _ in range(episodes):
        steps: list[dict[str, Any]] = []
        for _ in range(turns):
            steps.append({"index": len(steps), "source": "agent", "message": "How can I help?"})
            text = rng.choice(templates).format(n=rng.randint(100, 9999))
            steps.append({"index": len(steps), "source": source, "role": "user", "message": text})
        records.append({"header": {"source": "human" if source == "human" else "rollout"}, "steps": steps})
    return records


def test_it_shows_the_length_difference_and_tells_terse_from_verbose_users() -> None:
    report = fidelity_report(_records(_TERSE, seed=1, source="human"), _records(_VERBOSE, seed=2))
    human, simulated = report["sets"]["human"], report["sets"]["simulated"]
    assert human["turns"] == simulated["turns"] == 180
    assert human["length"]["mean"] < 2 < 15 < simulated["length"]["mean"]
    assert report["length"]["ks"] == 1.0  # no terse turn is as long as any verbose one
    assert report["length"]["wasserstein"] > 10
    assert report["length"]["edges"][:3] == [0, 2, 4]  # 12 bins of 2 words cover the longest turn
    assert sum(human["length_histogram"][:2]) == 180 and sum(simulated["length_histogram"][:2]) == 0
    assert simulated["clarification_rate"] > human["clarification_rate"] == 0.0
    assert simulated["goal_change_rate"] > 0.1 and human["patterns"]["terse"] == 1.0
    assert report["turing"]["accuracy"] >= 0.95


def test_two_samples_of_one_generator_are_indistinguishable() -> None:
    report = fidelity_report(_records(_VERBOSE + _TERSE, seed=3), _records(_VERBOSE + _TERSE, seed=4))
    assert report["length"]["ks"] < 0.15
    assert 0.35 <= report["turing"]["accuracy"] <= 0.65


def test_it_counts_env_fact_keys_when_steps_carry_them() -> None:
    record = {"steps": [{"index": 0, "source": "user", "role": "user", "message": "it's me", "meta": {"facts": ["name", "booking"]}}]}
    assert user_turns([record]) == [{"text": "it's me", "facts": ["name", "booking"]}]
    report = fidelity_report([record], [record])
    assert report["sets"]["human"]["facts_per_turn"]["mean"] == 2.0
    assert report["turing"]["accuracy"] is None  # too few turns for a cross-validated classifier


def test_it_reads_only_user_turns_and_the_distances_are_exact() -> None:
    record = {
        "steps": [
            {"index": 0, "source": "agent", "message": "hi"},
            {"index": 1, "source": "human", "role": "user", "message": "order 42 please?"},
        ]
    }
    assert [t["text"] for t in user_turns([record])] == ["order 42 please?"]
    assert ks_statistic([1, 2, 3], [1, 2, 3]) == 0.0 and ks_statistic([1], [5]) == 1.0
    assert wasserstein([0, 0], [2, 2]) == 2.0 and wasserstein([1, 3], [1, 3]) == 0.0
