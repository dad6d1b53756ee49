from __future__ import annotations

import pytest

from environments.core import EnvError, ToolCall
from environments.policies import make_policy
from environments.registry import make
from environments.toolgym.anchors import ExpertPolicy, RandomPolicy
from training.scripted import scripted_episode


def test_expert_solves_lookup_in_two_calls_and_scores_one():
    record = scripted_episode(ExpertPolicy(), "toolgym/lookup", 5)
    names = [c["name"] for s in record["steps"] for c in s["tool_calls"]]
    assert names == ["lookup", "answer"]
    assert record["header"]["score"] == {"composite": 1.0, "passed": True, "components": {"composite": 1.0}}
    assert record["header"]["termination_reason"] == "agent_stop"


def test_looking_up_the_right_item_but_answering_wrong_scores_point_three():
    env = make("toolgym/lookup", 5)
    target = env.world.target
    result = env.step(ToolCall("lookup", {"item": target}))
    assert result.content == {"item": target, "color": env.world.colors[target]} and not result.done
    wrong = next(c for c in ("red", "blue") if c != env.world.colors[target])
    final = env.step(ToolCall("answer", {"color": wrong}))
    assert final.done and final.reward == 0.3 and env.score().composite == 0.3 and not env.score().passed


def test_bad_calls_are_errors_that_count_toward_the_cap():
    env = make("toolgym/lookup", 1)
    assert env.step(ToolCall("fly", {})).is_error
    assert "required" in env.step(ToolCall("lookup", {})).content["error"]
    assert env.step(ToolCall("lookup", {"item": "unicorn"})).is_error
    last = env.step(ToolCall("lookup", {"item": "lamp"}))
    assert last.done and last.termination_reason == "max_steps" and env.score().composite in (0.0, 0.3)


def test_it_is_deterministic_and_restores_snapshots():
    a, b = make("toolgym/lookup", 9), make("toolgym/lookup", 9)
    assert a.state_hash() == b.state_hash() and a.reset().text == b.reset().text
    blob = a.snapshot()
    a.step(ToolCall("lookup", {"item": "lamp"}))
    assert a.state_hash() != b.state_hash()
    a.restore(blob)
    assert a.state_hash() == b.state_hash()
    assert make("toolgym/lookup", 10).state_hash() != a.state_hash()


def test_echo_and_random_policy():
    assert scripted_episode(ExpertPolicy(), "toolgym/echo", 3)["header"]["score"]["composite"] == 1.0
    scores = [scripted_episode(RandomPolicy(seed=s), "toolgym/lookup", s)["header"]["score"]["composite"] for s in range(20)]
    assert sum(scores) / len(scores) < 0.5


def test_the_guess_task_rewards_only_the_hidden_secret_the_same_for_every_seed():
    from environments.toolgym.world import SECRET

    assert scripted_episode(ExpertPolicy(), "toolgym/guess", 11)["header"]["score"]["composite"] == 1.0
    for seed in (0, 1, 2):
        env = make("toolgym/guess", seed)
        assert SECRET not in env.reset().text  # only the reward reveals it
        assert [t.name for t in env.tools()] == ["say"]
    wrong = make("toolgym/guess", 4)
    result = wrong.step(ToolCall("say", {"word": "river"}))
    assert result.done and result.reward == 0.0 and wrong.score().composite == 0.0


def test_asking_for_an_unknown_policy_names_the_expert_its_only_anchor() -> None:
    env = make("toolgym/lookup", 3)
    with pytest.raises(EnvError, match="no policy 'oracle' for toolgym; choose one of expert"):
        make_policy("oracle", env, 3)
    assert make_policy("expert", env, 3).name == "toolgym-expert"


def test_the_expert_solves_chain_in_three_dependent_steps():
    from environments.diagnosis.credit_graph import dependency_graph

    record = scripted_episode(ExpertPolicy(), "toolgym/chain", 7)
    assert [c["name"] for s in record["steps"] for c in s["tool_calls"]] == ["owner", "lookup", "answer"]
    assert record["header"]["score"]["composite"] == 1.0 and record["header"]["score"]["passed"]
    owner_step, lookup_step, answer_step = (s["index"] for s in record["steps"] if s["tool_calls"])
    assert set(dependency_graph(record["steps"], env="toolgym").edges) == {(owner_step, lookup_step), (lookup_step, answer_step)}


def test_chain_partial_credit_and_a_wasted_lookup_has_no_dependants():
    from environments.diagnosis.credit_graph import dependency_graph
    from environments.toolgym.world import ITEMS

    env = make("toolgym/chain", 3)
    person, item = env.world.person, env.world.target
    assert env.reset().text.startswith(f"Which color is the thing {person} owns?")
    assert env.step(ToolCall("owner", {"person": person})).content == {"person": person, "item": item}
    other = next(i for i in ITEMS if i != item)
    wasted = env.step(ToolCall("lookup", {"item": other}))
    assert [e.op for e in wasted.events] == ["write"]  # nobody asked owns it: it built on nothing
    assert env.step(ToolCall("owner", {"person": "zed"})).is_error
    wrong = next(c for c in ("red", "blue") if c != env.world.colors[item])
    final = env.step(ToolCall("answer", {"color": wrong}))
    assert final.done and final.reward == 0.15 and not env.score().passed
    steps = [{"index": i, "source": "agent", "events": [vars(e) for e in ev]} for i, ev in enumerate([[], wasted.events, final.events])]
    assert dependency_graph(steps, env="toolgym").edges == {}


def test_chain_answers_differ_by_seed_and_other_tasks_keep_their_state():
    answers = {make("toolgym/chain", s).world.colors[make("toolgym/chain", s).world.target] for s in range(40)}
    assert len(answers) >= 5
    assert "owners" not in make("toolgym/lookup", 1).world.to_json()
