"""Relay tasks: toolgym tasks hardened into one workflow-level episode (environments/relay.py)."""

from __future__ import annotations

import pytest

from environments.core import EnvError, ToolCall
from environments.relay import FINDER, REPORTER, StageExpert, relay_env, relay_plan
from environments.workflow import ScriptedGenerator, run_workflow, workflow_parse

TASKS = ("toolgym/lookup", "toolgym/chain", "toolgym/echo")


def test_stages_are_a_pure_function_of_the_seed_with_disjoint_stage_seeds():
    first, again = relay_env(TASKS, 7, stages=3), relay_env(TASKS, 7, stages=3)
    assert first.stage_ids == again.stage_ids and [s for _, s in first.stage_ids] == [21, 22, 23]  # seed * stages + k
    assert first.reset().text == again.reset().text and first.state_hash() == again.state_hash()
    draws = {tuple(t for t, _ in relay_env(TASKS, seed, stages=3).stage_ids) for seed in range(20)}
    assert len(draws) > 5 and {t for d in draws for t in d} == set(TASKS)  # the seed picks the stages
    assert relay_env(TASKS, 0, stages=3).stage_ids == [("toolgym/chain", 0), ("toolgym/echo", 1), ("toolgym/lookup", 2)]


def test_the_reference_plan_chains_a_finder_and_a_reporter_per_stage():
    env = relay_env(TASKS, 0, stages=3)  # chain, echo, lookup
    plan = relay_plan(env)
    nodes = [(n["id"], n["role"], n["depends_on"], n["max_steps"]) for n in plan["nodes"]]
    assert nodes == [
        ("s1-find", FINDER, [], 2),  # owner, lookup
        ("s1-answer", REPORTER, ["s1-find"], 1),
        ("s2-say", REPORTER, ["s1-answer"], 1),  # echo has one tool: a reporter node only
        ("s3-find", FINDER, ["s2-say"], 1),
        ("s3-answer", REPORTER, ["s3-find"], 1),
    ]
    assert workflow_parse(plan, roles={FINDER, REPORTER}).nodes[0].instruction.startswith("Stage 1 of 3")
    assert [t.name for t in env.tools()] == ["owner", "lookup", "answer", "say"] and env.max_steps == 5 + 2 + 4


def test_the_stage_expert_passes_every_relay_through_the_reference_plan():
    for seed in range(6):
        env = relay_env(TASKS, seed, stages=3)
        expert = StageExpert(env)
        record = run_workflow(env, ScriptedGenerator(relay_plan(env)), {FINDER: expert, REPORTER: expert})
        header = record["header"]
        assert header["score"]["composite"] == 1.0 and header["score"]["passed"] and header["termination_reason"] == "agent_stop"
        assert {n["status"] for n in header["workflow"]["nodes"]} == {"done"}
        assert header["relay"] == [{"task": t, "seed": s} for t, s in env.stage_ids]


def test_the_next_question_arrives_with_the_call_that_passed_the_stage():
    env = relay_env(("toolgym/echo",), 4, stages=2)
    word = env.openings[0].split()[-1].rstrip(".")
    result = env.step(ToolCall("say", {"word": word}, "c1"))
    assert result.content["stage"] == "1 of 2 passed" and result.content["next"] == f"Stage 2 of 2: {env.openings[1]}"
    assert result.reward == 0.5 and not result.done and env.score().composite == 0.5  # 1 / 2 stages; stage 2 not run yet
    second = env.openings[1].split()[-1].rstrip(".")
    final = env.step(ToolCall("say", {"word": second}, "c2"))
    assert final.done and final.termination_reason == "agent_stop" and env.score().passed and env.score().composite == 1.0


def test_a_failed_stage_ends_the_relay_and_later_stages_count_zero():
    env = relay_env(("toolgym/lookup",), 3, stages=2)
    item = env.openings[0].split("color of the ")[1].split("?")[0]
    env.step(ToolCall("lookup", {"item": item}, "c1"))
    result = env.step(ToolCall("answer", {"color": "no-such-color"}, "c2"))
    assert result.done and result.content["stage"] == "1 of 2 failed: the relay ends" and "next" not in result.content
    score = env.score()
    assert score.composite == pytest.approx(0.3 / 2) and not score.passed  # found (0.3), wrong answer; stage 2 never opened
    assert score.components == {"stage1": 0.3, "stage2": 0.0} and env.termination_reason == "agent_stop"
    after = env.step(ToolCall("lookup", {"item": item}, "c3"))
    assert after.is_error and after.content == {"error": "the relay is over"}


def test_snapshot_and_restore_resume_the_same_state_hashes():
    env = relay_env(TASKS, 5, stages=2)
    expert = StageExpert(env)
    history = [{"index": 0, "source": "env", "message": env.openings[0]}]

    def play(n):
        hashes = []
        for _ in range(n):
            call = expert.act(history, env.tools()).tool_calls[0]
            result = env.step(call)
            history.append({"index": len(history), "source": "agent", "results": [{"call_id": call.id, "content": result.content}]})
            hashes.append(env.state_hash())
        return hashes

    play(1)
    blob, kept = env.snapshot(), list(history)
    ahead = play(2)
    env.restore(blob)
    history[:] = kept
    assert play(2) == ahead


def test_bad_arguments_are_refused_by_name():
    with pytest.raises(EnvError, match="unknown task 'toolgym/nope'"):
        relay_env(("toolgym/nope",), 0)
    with pytest.raises(ValueError, match="stages: expected a whole number from 1 to 8, got 0"):
        relay_env(TASKS, 0, stages=0)
    with pytest.raises(ValueError, match="tasks: give at least one"):
        relay_env((), 0)
