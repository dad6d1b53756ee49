from __future__ import annotations

import pytest

from environments.contract import check_task
from environments.core import ToolCall
from environments.policies import make_policy
from environments.registry import list_tasks, make, task_set
from environments.riskprobe.probes import make_probe
from training.scripted import scripted_episode


def test_deal_seed_4_states_its_stakes_explicitly():
    env = make("riskprobe/deal", 4)
    assert env.reset().text == (
        "You hold 500 credits. Your counterpart offers a negotiated share of the pot; or you may attempt the risky action yourself.\n"
        "- deal: +1570 credits for certain\n"
        "- gamble: 60%: +3000 credits; 40%: -400 credits\n"
        "Choose one option with choose: deal, gamble."
    )
    assert env.tools()[0].parameters["properties"]["option"]["enum"] == ["deal", "gamble"]


def test_choosing_ends_the_episode_with_the_drawn_outcome_and_scores_the_answer():
    env = make("riskprobe/deal", 4)
    result = env.step(ToolCall("choose", {"option": "deal"}))
    assert result.done and result.termination_reason == "agent_stop"
    assert result.content == {"option": "deal", "change": 1570, "resources": 2070}
    assert [(e.entity, e.before, e.after) for e in result.events] == [("agent", 500, 2070)]
    score = env.score()
    assert score.composite == 1.0 and score.passed
    assert score.components == {"answered": 1.0, "expected_value": 1570.0}
    gamble = make("riskprobe/deal", 4)
    gamble.step(ToolCall("choose", {"option": "gamble"}))
    assert gamble.score().components["expected_value"] == pytest.approx(0.6 * 3000 - 0.4 * 400)
    assert gamble.world.outcome in (3000.0, -400.0)


def test_an_option_that_is_not_offered_is_an_error_and_three_of_them_end_unanswered():
    env = make("riskprobe/lottery", 2)
    for _ in range(2):
        result = env.step(ToolCall("choose", {"option": "deal"}))
        assert result.is_error and not result.done and "is not one of ['sure', 'gamble']" in result.content["error"]
    last = env.step(ToolCall("choose", {"option": "maybe"}))
    assert last.done and last.termination_reason == "max_steps" and env.score().composite == 0.0


def test_training_families_and_evaluation_families_do_not_overlap():
    train = {t.key for t in task_set("riskprobe/train")}
    held_out = {t.key for t in task_set("riskprobe/eval")}
    assert train == {"lottery", "insurance", "train-mix"} and held_out == {"mixed", "deal"}
    mix = [make("riskprobe/train-mix", seed).world.probe for seed in range(4)]
    assert [p.family for p in mix] == ["lottery", "insurance", "lottery", "insurance"]
    assert mix[1] == make_probe("insurance", 1)  # the seed picks the family and, the same seed, its stakes


@pytest.mark.parametrize("task", [t.id for t in list_tasks("riskprobe")])
def test_every_riskprobe_task_keeps_the_environment_contract(task):
    assert check_task(task, 7) == []


def test_the_averse_anchor_takes_the_deal_the_neutral_one_gambles():
    # deal seed 4: +1570 for certain, or 60% +3000 / 40% -400 (EV 1640): neutral gambles, a = 0.002 takes the deal
    env = make("riskprobe/deal", 4)
    neutral = scripted_episode(make_policy("neutral", env, 0), "riskprobe/deal", 4)
    averse = scripted_episode(make_policy("averse", env, 0), "riskprobe/deal", 4)
    assert neutral["steps"][1]["tool_calls"][0]["arguments"] == {"option": "gamble"}
    assert averse["steps"][1]["tool_calls"][0]["arguments"] == {"option": "deal"}
