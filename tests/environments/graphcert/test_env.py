"""GraphCertEnv: tools, the audit, the sealed certificate, the reward modes and the citing-everything hack."""

from __future__ import annotations

import json

import pytest

from environments.contract import check_task
from environments.graphcert.anchors import GraphWalkPolicy, OraclePolicy
from environments.policies import make_policy
from environments.registry import list_tasks, make
from environments.replay import replay_record
from environments.runner import run_episode
from environments.trajectory import validate_record
from tests.environments.graphcert.conftest import call, episode


def test_reads_show_edges_and_only_shown_edges_are_credited():
    alice = episode(7)
    cert = alice.certificate
    # answering at once with the certificate copied from nowhere: the answer may be right, the evidence earns nothing
    call(alice, "answer", text=alice.question.answer, evidence=list(cert.edges))
    score = alice.score()
    assert score.components["exact_match"] == 1.0 and score.components["evidence_f1"] == 0.0
    assert score.components["rubric"] == 0.5 and score.composite == 1.0  # the task's composite is the outcome
    assert score.details["uncredited"] == list(cert.edges)


def test_the_oracle_shows_then_cites_the_proof_and_scores_one_in_both_modes():
    for reward in ("outcome", "rubric"):
        bob = episode(11, reward=reward)
        record = run_episode(bob, OraclePolicy(bob))
        components = record["header"]["score"]["components"]
        assert record["header"]["score"]["composite"] == 1.0 and components["evidence_f1"] == 1.0 and components["rubric"] == 1.0


def test_citing_everything_seen_scores_below_citing_the_proof():
    floods, walks = [], []
    for seed in range(12):
        env = episode(seed)
        walk = run_episode(env, GraphWalkPolicy(env.question.text, env.config.max_steps))["header"]["score"]["components"]
        env = episode(seed)
        flood = run_episode(env, GraphWalkPolicy(env.question.text, env.config.max_steps, cite_everything=True))["header"]["score"]
        assert flood["components"]["exact_match"] == walk["exact_match"]  # same walk, same answer
        assert flood["components"]["evidence_recall"] == walk["evidence_recall"]  # recall alone would not see the hack
        floods.append(flood["components"]["rubric"])
        walks.append(walk["rubric"])
        assert len(flood["details"]["evidence"]) >= len(flood["details"]["certificate"]["edges"])
    assert sum(walks) / 12 == 1.0 and sum(floods) / 12 < 0.85


def test_gold_and_certificate_are_sealed_until_the_episode_ends():
    carol = episode(3)
    call(carol, "relations")
    assert "gold" not in carol.score().details and "certificate" not in carol.score().details
    call(carol, "answer", text="nobody")
    details = carol.score().details
    assert details["gold"] == carol.question.answer and details["certificate"]["edges"] == list(carol.certificate.edges)


def test_bad_input_is_an_error_result_and_every_call_counts():
    mallory = episode(5, max_steps=4)
    assert call(mallory, "node", id="person:999999").content["error"] == "unknown_entity"
    bad = call(mallory, "filter", kind="person", where=[{"attribute": "birth_year", "op": "near", "value": "1800"}])
    assert bad.content["error"] == "invalid_arguments" and "op" in bad.content["message"]
    assert call(mallory, "answer", text="x", evidence=["e"] * 41).content["error"] == "invalid_arguments"
    last = call(mallory, "lookup", name="Nobody At All")
    assert last.done and last.termination_reason == "max_steps" and mallory.score().composite == 0.0
    assert call(mallory, "relations").content["error"] == "episode_over"


def test_filter_and_path_results_are_shown_edges():
    dave = episode(9)
    person = dave.graph.entities["person:3"]
    where = [{"attribute": "family", "op": "eq", "value": str(person.attrs["family"])}]
    result = call(dave, "filter", kind="person", where=where).content
    assert {"id": "person:3", "name": person.name, "facts": [f"person:3 family {person.attrs['family']}"]} in result["matches"]
    path = call(dave, "path", source="person:3", target=person.rels["birthplace"]).content
    assert path["found"] and path["path"] == [f"person:3 birthplace {person.rels['birthplace']}"]
    assert set(json.loads(dave.snapshot())["state"]["shown"]) >= {path["path"][0], f"person:3 family {person.attrs['family']}"}


@pytest.mark.parametrize("name", ["oracle", "graphwalk", "flood", "random"])
def test_registered_episodes_record_validly_and_replay_exactly(name: str):
    env = make("graphcert/bridge-dev", 4)
    record = run_episode(env, make_policy(name, env, 4))
    assert validate_record(record) == []
    assert record["steps"][-1]["tool_calls"][0]["name"] == "answer"
    report = replay_record(record)
    assert report["ok"] and report["composite"] == record["header"]["score"]["composite"]


def test_tasks_cover_three_splits_and_keep_the_contract():
    tasks = list_tasks("graphcert")
    assert {t.split for t in tasks} == {"train", "dev", "test"} and len(tasks) == 15
    assert check_task("graphcert/mixed-rubric-dev", seed=7, steps=30) == []
    assert check_task("graphcert/lookup-test", seed=100_003, steps=30) == []


def test_the_gymnasium_wrapper_plays_an_episode_with_cited_evidence():
    from gymnasium.utils.env_checker import check_env

    from environments.gym import ToolEnvGym

    gym_env = ToolEnvGym("graphcert/lookup-dev", max_steps=8)
    check_env(gym_env, skip_render_check=True)
    observation, _ = gym_env.reset(seed=4)
    assert "Question:" in json.loads(observation)["observation"]
    env = make("graphcert/lookup-dev", 4)
    calls = [s["tool_calls"][0] for s in run_episode(env, OraclePolicy(env))["steps"] if s.get("tool_calls")]
    for played in calls:  # the oracle's calls, replayed through the wrapper
        _, reward, terminated, _, _ = gym_env.step(json.dumps({"name": played["name"], "arguments": played["arguments"]}))
    assert terminated and reward == 1.0
    gym_env.close()
