from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments import registry
from environments.policies import make_policy
from environments.runner import run_episode
from training.experiments import storebench_loop as loop
from training.experiments.runner import ArmResult, ExperimentResult, _Runs, evaluation_jobs
from training.onpolicy import pick_jobs
from training.recipes.grpo import GRPOConfig, training_reward

EXPERIMENT = loop.EXPERIMENT
TRAIN_TASKS = {t.id for t in registry.task_set("storebench/train")}
EVAL_TASKS = {t.id for t in registry.task_set("storebench/eval")}


def evaluation_job_set() -> set[tuple[str, int]]:
    ev = EXPERIMENT.evaluation
    return set(evaluation_jobs(ev.task, list(range(*ev.test_seeds)))) | set(evaluation_jobs(ev.task, list(range(*ev.dev_seeds))))


def run_config(arm: str, *, smoke: bool = False) -> dict:
    values = {**EXPERIMENT.shared, **({k: v for k, v in EXPERIMENT.smoke.items() if k != "eval_episodes"} if smoke else {})}
    runs = _Runs(EXPERIMENT, arm, base="/models/base-small", teacher="", values=values, out=Path("/unused"), progress=False)
    experiment = runs.experiment
    runs.experiment = type(experiment)(**{**experiment.__dict__, "prepare": ""})  # the data path is checked on its own below
    return runs.config({}, 0)


def test_every_training_job_is_a_training_scenario_and_meets_no_evaluation_job():
    assert EXPERIMENT.evaluation.task == "storebench/eval" and {t for t, _ in evaluation_job_set()} == EVAL_TASKS
    assert TRAIN_TASKS.isdisjoint(EVAL_TASKS) and len(TRAIN_TASKS) == 5
    for smoke in (False, True):
        values = {**EXPERIMENT.shared, **(EXPERIMENT.smoke if smoke else {})}
        jobs = loop.training_jobs(values)
        assert {t for t, _ in jobs} == TRAIN_TASKS
        assert not set(jobs) & evaluation_job_set()
    config = GRPOConfig(**{k: v for k, v in run_config("grpo").items() if k in GRPOConfig.__dataclass_fields__})
    drawn = [job for step in range(40) for job in pick_jobs(config, step)]
    assert {t for t, _ in drawn} == TRAIN_TASKS  # the five scenarios all come up, and nothing else
    assert all(loop.TRAIN_SEEDS[0] <= s < loop.TRAIN_SEEDS[1] for _, s in drawn)
    assert not set(drawn) & evaluation_job_set()


def test_a_single_task_draws_the_seeds_it_always_drew():
    config = GRPOConfig(model="m", task="toolgym/chain", tasks_per_step=3, group_size=2, seed=5)
    import torch

    from training.engine import step_generator

    seeds = torch.randint(config.train_seeds, (3,), generator=step_generator(5, 2)).tolist()
    assert pick_jobs(config, 2) == [("toolgym/chain", s) for s in seeds for _ in range(2)]


def test_each_arm_gets_its_own_recipes_fields_and_grpo_the_daily_reward():
    grpo, sft, none = run_config("grpo"), run_config("recovery_sft"), run_config("none")
    assert grpo["task"] == "storebench/train" and grpo["env_options"] == {"reward": "daily"} and grpo["step_rewards"] is True
    assert grpo["max_turns"] == EXPERIMENT.evaluation.max_turns  # trained on the horizon it is evaluated on
    assert "batch_size" not in grpo and "max_tokens" not in grpo  # the SFT arm's fields
    assert sft["data"] == loop.RECOVERY_DATA and sft["batch_size"] == 4
    assert not {"group_size", "env_options", "step_rewards", "task"} & set(sft)
    assert none == {"model": "/models/base-small", "seed": 0}
    assert EXPERIMENT.evaluation.options == {"reward": "daily"} and EXPERIMENT.evaluation.components


def test_step_rewards_are_the_daily_rewards_the_composite_of_a_cut_episode_is_not():
    env = registry.make("storebench/cold-snap", 2000, options={"reward": "daily"})
    record = run_episode(env, make_policy("naive-restock", env, 0), max_steps=8)
    daily = [s["reward"] for s in record["steps"] if s.get("source") == "agent" and s["reward"]]
    assert record["header"]["options"] == {"reward": "daily"} and daily  # days ended inside the cut earned their rewards
    assert record["header"]["score"]["composite"] == 0.0  # unfinished: the terminal composite is 0
    assert training_reward(record, "", steps=True) == pytest.approx(sum(daily)) and sum(daily) > 0
    assert training_reward(record, "") == 0.0
    assert env.world.value_mark == pytest.approx(sum(daily), abs=1e-5)  # the running composite the rewards telescope to


def test_the_sampler_plays_and_records_the_environment_options():
    from training.modeling import load_model
    from training.sampling import rollout_episodes
    from training.tiny import tiny_model_path

    model, tokenizer = load_model(str(tiny_model_path(0)), trainable=False)
    (record,) = rollout_episodes(
        model, tokenizer, [("storebench/cold-snap", 7)], max_turns=1, max_new_tokens=4, temperature=0.0, env_options={"reward": "daily"}
    )
    assert record["header"]["options"] == {"reward": "daily"}


def test_episode_figures_count_days_stock_outs_and_the_operation_budget():
    env = registry.make("storebench/payment-outage", 500_001, options={"reward": "daily"})
    idle = run_episode(env, make_policy("do-nothing", env, 0), max_steps=3)
    assert loop.episode_figures(idle) == {"days ended": 3.0, "days without stock-out": pytest.approx(3.0), "ops budget use": 0.0}
    env = registry.make("storebench/payment-outage", 500_001, options={"reward": "daily"})
    busy = run_episode(env, make_policy("smart-triage", env, 0), max_steps=6)
    figures = loop.episode_figures(busy)
    assert figures["days ended"] == 0.0 and 0.0 < figures["ops budget use"] <= 1.0  # reads spend the first day's operations
    ops = sum(env.tools()[[t.name for t in env.tools()].index(c["name"])].op_cost for s in busy["steps"] for c in s.get("tool_calls") or [])
    assert figures["ops budget use"] == pytest.approx(ops / 40)


def test_recovery_views_come_from_the_bases_training_episodes_only(tmp_path, monkeypatch):
    from training.tiny import tiny_model_path

    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    smoke = {k: v for k, v in EXPERIMENT.smoke.items() if k != "eval_episodes"}
    # what the runner hands `prepare`: the shared values with the smoke's and the arm's, before each recipe's filter
    values = {**EXPERIMENT.shared, **smoke, **EXPERIMENT.arm("recovery_sft").overrides, "model": str(tiny_model_path(0)), "seed": 0}
    assert loop.recovery_views(EXPERIMENT, {**values, "data": "other.jsonl"}) == {}  # another arm's data is left alone
    path = Path(loop.recovery_views(EXPERIMENT, values)["data"])
    views = [json.loads(line) for line in path.read_text().splitlines()]
    summary = json.loads(path.with_suffix(".json").read_text())
    assert [tuple(j) for j in summary["jobs"]] == loop.recovery_jobs(values) == [("storebench/cold-snap", loop.RECOVERY_SEEDS[0])]
    assert views and all(f"storebench/{v['header']['task']}" in TRAIN_TASKS for v in views)
    assert not {(f"storebench/{v['header']['task']}", v["header"]["seed"]) for v in views} & evaluation_job_set()
    for view in views:
        recovery = view["header"]["meta"]["recovery"]
        k = recovery["train_from_step"]
        assert view["header"]["source"] == "branch" and view["header"]["parent"]["branch_step"] == k
        assert recovery["verification"] in ("verified", "tie") and recovery["outcome"]["passed"]
        assert view["steps"][k]["tool_calls"][0]["name"] == recovery["diagnosis"]["correction"]["name"]
        assert sum(1 for s in view["steps"][k + 1 :] if s["source"] == "agent") <= loop.RECOVERY_TURNS
        assert view["header"]["options"] == {"reward": "daily"}
    (episode,) = summary["episodes"]
    assert episode["diagnosed"] and episode["kept"] in ("verified", "tie") and episode["corrected"]["passed"]
    stamp = path.stat().st_mtime_ns
    assert loop.recovery_views(EXPERIMENT, values) == {"data": str(path)} and path.stat().st_mtime_ns == stamp  # made once


def test_the_report_has_a_row_per_scenario_with_every_arm_and_the_anchors(tmp_path, monkeypatch):
    seen = {}

    def anchors(jobs, turns):
        seen.update(jobs=jobs, turns=turns)
        return {"do-nothing": [{"task": t, "seed": s, "cut_step_reward": 0.25} for t, s in jobs]}

    monkeypatch.setattr(loop, "anchor_rows", anchors)
    seeds = [500_000, 500_001, 500_002]
    jobs = evaluation_jobs("storebench/eval", seeds)  # holiday-peak, payment-outage, quality-recall

    def arm(name, rewards):
        runs = [
            {
                "seed": seed,
                "evaluations": {
                    "test": {
                        "episodes": [
                            {"seed": s, "task": t, "reward": 0.0, "step_reward": r, "extra": {"days ended": 2.0}}
                            for (t, s), r in zip(jobs, per, strict=True)
                        ]
                    }
                },
            }
            for seed, per in rewards.items()
        ]
        return ArmResult(name, {}, rewards={s: [0.0] * 3 for s in rewards}, passed={s: [0.0] * 3 for s in rewards}, runs=runs)

    arms = {"grpo": arm("grpo", {0: [0.1, 0.2, 0.3], 1: [0.3, 0.2, 0.1]}), "none": arm("none", {0: [0.0] * 3, 1: [0.0] * 3})}
    result = ExperimentResult("storebench-loop", "/b", "/b", False, str(tmp_path), seeds, dict(EXPERIMENT.shared), arms, "now", 1.0, 0)
    text = loop.scenario_report(EXPERIMENT, result)
    rows = {line.split(" | ")[0][2:]: line.split(" | ")[1:] for line in text.splitlines() if line.startswith("| ") and "---" not in line}
    assert list(rows) == ["scenario", "holiday-peak", "payment-outage", "quality-recall"]
    assert rows["scenario"][:3] == ["grpo composite", "grpo step reward", "grpo days"] and rows["scenario"][-1] == "do-nothing cut / full |"
    # holiday-peak: grpo step rewards 0.1 (seed 0) and 0.3 (seed 1): mean 0.2, t-interval 12.706 x 0.1414 / sqrt 2
    assert rows["holiday-peak"][:3] == ["0.000 ± 0.000", "0.200 ± 1.271", "2.000 ± 0.000"]
    assert rows["payment-outage"][1] == "0.200 ± 0.000" and rows["holiday-peak"][-1].startswith("0.250 / 0.000")
    assert f"cut at {EXPERIMENT.evaluation.max_turns} agent turns" in text
    assert seen == {"jobs": jobs, "turns": EXPERIMENT.evaluation.max_turns}
    seen.clear()
    assert loop.scenario_report(EXPERIMENT, result) == text and not seen  # the anchors are played once per run folder


def test_anchor_rows_cut_each_anchor_at_the_turn_cap_and_the_full_horizon_comes_from_the_calibration():
    (row,) = loop.anchor_rows([("storebench/payment-outage", 500_001)], 2, anchors=("do-nothing",))["do-nothing"]
    assert row["days ended"] == 2.0 and row["cut_composite"] == 0.0 and row["cut_step_reward"] > 0
    mean, episodes = loop.full_horizon_composite("storebench/payment-outage", "smart-triage")
    assert episodes == 10 and 0.5 < mean < 1.0
