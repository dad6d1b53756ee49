from __future__ import annotations

import training.experiments as experiments
from training.experiments.gui_priors import DATA, calls, followed, prior_block, prior_cases, rejected

CLICK_REPLY = {"name": "click", "arguments": {"id": "mail.reply"}}
CLICK_RESPOND = {"name": "click", "arguments": {"id": "mail.respond"}}
OPEN_MAIL = {"name": "open_app", "arguments": {"app": "mail"}}


def test_the_gui_priors_arms_are_sft_without_priors_with_priors_and_with_judging_items() -> None:
    experiment = experiments.get("gui-priors")
    assert [a.name for a in experiment.arms] == ["no-priors", "priors", "noise-aware"] and experiment.method == "noise-aware"
    assert [a.overrides["data"] for a in experiment.arms] == list(DATA) and all(a.overrides["rl"] is False for a in experiment.arms)


def test_a_prior_is_the_numbered_calls_of_a_record_without_submit() -> None:
    record = {
        "steps": [
            {"source": "env"},
            {"source": "agent", "tool_calls": [{"id": "a", **OPEN_MAIL}]},
            {"source": "agent", "tool_calls": [{"id": "b", "name": "submit", "arguments": {}}]},
        ]
    }
    assert calls(record) == [OPEN_MAIL]
    assert prior_block(calls(record)).endswith('\n1. open_app {"app": "mail"}')


def test_a_right_prior_is_followed_only_when_the_agent_repeats_every_call_in_order() -> None:
    assert followed([OPEN_MAIL, CLICK_REPLY, CLICK_REPLY], [OPEN_MAIL, CLICK_REPLY])
    assert not followed([OPEN_MAIL], [OPEN_MAIL, CLICK_REPLY]) and not followed([CLICK_REPLY, OPEN_MAIL], [OPEN_MAIL, CLICK_REPLY])
    assert not followed([], [])


def test_a_wrong_prior_is_rejected_when_the_agent_leaves_it_by_its_first_stale_call() -> None:
    wrong, right = [OPEN_MAIL, CLICK_REPLY], [OPEN_MAIL, CLICK_RESPOND]
    assert rejected([OPEN_MAIL, CLICK_RESPOND], wrong, right) and rejected([], wrong, right)
    assert not rejected([OPEN_MAIL, CLICK_REPLY, CLICK_RESPOND], wrong, right)  # it took the stale step


def test_prior_cases_give_a_passing_right_prior_and_a_differing_stale_one_per_drift() -> None:
    cases = prior_cases([1000])
    assert {(c[2], c[3]) for c in cases} <= {("none", "right"), ("none", "wrong"), ("high", "right"), ("high", "wrong")}
    assert ("none", "right") in {(c[2], c[3]) for c in cases}
    for _task, _seed, _drift, label, prior, right in cases:
        assert prior and (prior == right) == (label == "right")
