from __future__ import annotations

import dataclasses
import json
import math
import sys
import types
from pathlib import Path

import pytest

import training.experiments as experiments
from training.experiments.__main__ import main as experiments_cli
from training.experiments.graphopd import GRAPHOPD
from training.experiments.report import experiment_markdown, write_readme_section
from training.experiments.runner import run_experiment
from training.experiments.standard import minimum_detectable_effect, paired_difference, summarise


@pytest.fixture
def only_graphopd(monkeypatch):
    """The registry as this branch has it: pivotopd's module lands separately."""
    monkeypatch.setattr(experiments, "MODULES", ("training.experiments.graphopd",))


# --- the standard ------------------------------------------------------------------------------------------
def test_summary_is_the_mean_of_seed_means_with_a_t_interval_over_seeds():
    summary = summarise({0: [1.0, 0.0], 1: [0.5, 0.5], 2: [1.0, 1.0]})  # seed means 0.5, 0.5, 1.0
    assert summary.mean == pytest.approx(2 / 3) and summary.seeds == 3
    assert summary.ci == pytest.approx(4.303 * math.sqrt(1 / 12) / math.sqrt(3))  # t(2 df) x stdev / sqrt(3)
    assert summarise({4: [0.25, 0.75]}).ci == 0.0


def test_a_constant_paired_difference_has_a_point_interval_and_no_detectable_effect_width():
    paired = paired_difference({0: [1.0, 0.5], 1: [0.7, 0.2]}, {0: [0.8, 0.3], 1: [0.5, 0.0]})
    assert paired.mean == pytest.approx(0.2)
    assert paired.low == pytest.approx(0.2) and paired.high == pytest.approx(0.2)
    assert paired.se == pytest.approx(0.0, abs=1e-12) and paired.mde == pytest.approx(0.0, abs=1e-12)


def test_the_bootstrap_sees_training_seed_variance():
    # within each seed the difference is constant (1 or 0): resampling two seeds gives 0, 0.5 or 1 with
    # probabilities 1/4, 1/2, 1/4, so SE = sqrt(1/8) and the interval spans [0, 1]
    paired = paired_difference({0: [1.0, 1.0], 1: [0.0, 0.0]}, {0: [0.0, 0.0], 1: [0.0, 0.0]}, resamples=4000, seed=3)
    assert paired.mean == 0.5
    assert paired.se == pytest.approx(math.sqrt(1 / 8), abs=0.01)
    assert (paired.low, paired.high) == (0.0, 1.0)
    assert paired.mde == pytest.approx(2.8 * paired.se)
    assert paired == paired_difference({0: [1.0, 1.0], 1: [0.0, 0.0]}, {0: [0.0, 0.0], 1: [0.0, 0.0]}, resamples=4000, seed=3)


def test_mde_and_mismatched_cells():
    assert minimum_detectable_effect(0.1) == pytest.approx(0.28)
    with pytest.raises(AssertionError, match="different seeds"):
        paired_difference({0: [1.0]}, {1: [1.0]})
    with pytest.raises(AssertionError, match="evaluation episodes"):
        paired_difference({0: [1.0, 0.0]}, {0: [1.0]})


# --- the README section ------------------------------------------------------------------------------------
def test_every_experiment_names_a_readme_that_exists_and_storebench_loop_writes_into_storebench_s():
    from training.experiments.__main__ import ROOT

    for experiment in experiments.load_all().values():
        assert (ROOT / experiment.readme).is_file(), (experiment.name, experiment.readme)
    assert experiments.get("storebench-loop").readme == "environments/storebench/README.md"
    assert experiments.get("tjpo").readme == "training/README.md"


def test_readme_sections_are_added_under_experiments_and_replaced_in_place(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("# Training\n\n## Experiments\n\nThe standard.\n\n## Limits\n\nNone.\n")
    write_readme_section(readme, "alpha", "table A1")
    write_readme_section(readme, "beta", "table B1")
    write_readme_section(readme, "alpha", "table A2")
    text = readme.read_text()
    assert "table A1" not in text and text.count("<!-- experiment:alpha:begin -->") == 1
    assert text.index("The standard.") < text.index("table A2") < text.index("table B1") < text.index("## Limits")
    assert text.endswith("## Limits\n\nNone.\n")

    bare = tmp_path / "BARE.md"
    bare.write_text("# Notes\n")
    write_readme_section(bare, "alpha", "table")
    assert bare.read_text() == "# Notes\n\n## Experiments\n\n<!-- experiment:alpha:begin -->\ntable\n<!-- experiment:alpha:end -->\n"


# --- the CLI -------------------------------------------------------------------------------------------------
def test_cli_lists_experiments_and_rejects_bad_names(only_graphopd, capsys, tmp_path):
    assert experiments_cli(["list"]) == 0
    listing = capsys.readouterr().out
    assert "graphopd: Does distilling" in listing and "graphopd (method), divergence, graph, random, opd" in listing
    assert "needs teacher: yes" in listing
    assert experiments_cli(["nosuch", "--smoke"]) == 2
    assert "unknown experiment 'nosuch'" in capsys.readouterr().err
    assert experiments_cli(["graphopd", "--smoke", "--arms", "graphopd,best"]) == 2
    assert "unknown arm(s) best" in capsys.readouterr().err
    assert experiments_cli(["graphopd", "--base", str(tmp_path / "missing"), "--teacher", str(tmp_path)]) == 2
    assert "missing" in capsys.readouterr().err


# --- the runner ----------------------------------------------------------------------------------------------
def test_smoke_run_gives_every_arm_test_rewards_on_the_same_seeds_and_resumes(tmp_path):
    from training.tiny import tiny_model_path

    base, teacher = tiny_model_path(0), tiny_model_path(1)
    result = run_experiment(GRAPHOPD, base=base, teacher=teacher, out=tmp_path, smoke=True, progress=False)
    assert list(result.arms) == ["graphopd", "divergence", "graph", "random", "opd"] and result.trained == 5
    assert result.test_seeds == [100_000, 100_001, 100_002, 100_003]
    for arm in result.arms.values():
        assert list(arm.rewards) == [0] and len(arm.rewards[0]) == len(arm.passed[0]) == 4
        (run,) = arm.runs
        assert [e["seed"] for e in run["evaluations"]["test"]["episodes"]] == result.test_seeds
        assert run["config"]["model"] == str(base) and run["config"]["teacher"] == str(teacher)
        assert (
            run["config"]["max_steps"] == 2
            and run["config"]["learning_rate"] == GRAPHOPD.tuning["learning_rate"][0]
            and run["trained_tokens"] > 0
        )
        assert arm.chosen == {"learning_rate": GRAPHOPD.tuning["learning_rate"][0]} and arm.wall_s > 0
    graphopd, opd = result.arms["graphopd"].runs[0], result.arms["opd"].runs[0]
    assert graphopd["trained_tokens"] < opd["trained_tokens"]  # only the mask differs between arms

    folder = tmp_path / "graphopd"
    stamps = {p: p.stat().st_mtime_ns for p in folder.glob("*/result.json")}
    again = run_experiment(GRAPHOPD, base=base, teacher=teacher, out=tmp_path, smoke=True, progress=False)
    assert again.trained == 0 and {p: p.stat().st_mtime_ns for p in folder.glob("*/result.json")} == stamps
    assert {n: a.rewards for n, a in again.arms.items()} == {n: a.rewards for n, a in result.arms.items()}

    text = experiment_markdown(GRAPHOPD, again, command="python -m training.experiments graphopd --smoke")
    assert text.count("\n| ") == 7 and "| graphopd | " in text and "(method)" in text and "Minimum detectable effect" in text
    assert json.loads(text.split("Shared config: `")[1].split("`")[0])["max_steps"] == 2


# --- the GPU configuration ------------------------------------------------------------------------------------
def test_gpu_config_is_a_qwen3_1_7b_architecture():
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    assert GRAPHOPD.gpu is not None
    config = Qwen3Config(**GRAPHOPD.gpu.architecture)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    params = sum(p.numel() for p in model.parameters())
    assert 1.6e9 < params < 1.8e9, params  # Qwen3-1.7B: 1.72B with tied embeddings
    assert GRAPHOPD.gpu.steps >= 1


def test_the_table_reports_means_paired_differences_and_the_chosen_point():
    from training.experiments.runner import ArmResult, ExperimentResult

    def arm(name, rewards, wall_s):
        passed = {s: [1.0 if r == 1.0 else 0.0 for r in v] for s, v in rewards.items()}
        return ArmResult(name, {"learning_rate": 3e-4}, rewards=rewards, passed=passed, wall_s=wall_s)

    arms = {
        "graphopd": arm("graphopd", {0: [1.0, 1.0], 1: [1.0, 0.0], 2: [0.5, 0.5]}, 120.0),
        "opd": arm("opd", {0: [0.0, 1.0], 1: [1.0, 0.0], 2: [0.5, 0.5]}, 60.0),
    }
    result = ExperimentResult(
        "graphopd", "/m/base", "/m/teacher", False, "/out", [100_000, 100_001], {"max_steps": 20}, arms, "today", 180.0, 6
    )
    text = experiment_markdown(GRAPHOPD, result, command="python -m training.experiments graphopd")
    rows = {line.split(" | ")[0][2:]: line for line in text.splitlines() if line.startswith("| graphopd |") or line.startswith("| opd |")}
    # reward seed means: graphopd 1.0, 0.5, 0.5; opd 0.5, 0.5, 0.5. pass seed means: graphopd 1, 0.5, 0 (t x 0.5 / sqrt 3)
    assert "| 0.667 ± 0.717 | 0.500 ± 1.242 | (method) | learning_rate=0.0003 | 2.0 min |" in rows["graphopd"]
    assert "| 0.500 ± 0.000 | 0.333 ± 0.717 |" in rows["opd"] and "| +0.167 [" in rows["opd"]
    assert "tuned on dev seeds [50000, 50032)" in text and "training seeds [0, 1, 2]" in text
    assert "Minimum detectable effect" in text and "opd 0." in text and "not from the zoo" in text


def test_a_none_arm_is_the_start_checkpoint_evaluated_like_the_others(tmp_path):
    from training.experiments import Arm, Evaluation, Experiment
    from training.tiny import tiny_model_path

    probe = Experiment(
        name="probe",
        question="What does the start checkpoint score?",
        method="start",
        arms=(Arm("start", "none"),),
        shared={"max_steps": 5},
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_004), test_seeds=(100_000, 100_004), max_turns=2, max_new_tokens=8
        ),
        smoke={"eval_episodes": 2},
        needs_teacher=False,
    )
    result = run_experiment(probe, base=tiny_model_path(0), teacher="", out=tmp_path, smoke=True, progress=False)
    (run,) = result.arms["start"].runs
    assert result.trained == 0 and run["checkpoint"] == str(tiny_model_path(0)) and run["trained_tokens"] == 0
    assert run["config"] == {"model": str(tiny_model_path(0)), "seed": 0}  # a recipe's fields mean nothing here
    assert result.arms["start"].rewards == {0: [0.0, 0.0]}


def probe_measures(checkpoint, base, values, seeds):
    """An Experiment.measures function for the test below: what it was given, as numbers."""
    return {"seeds": float(len(seeds)), "trained": float(checkpoint != base), "steps": float(values["max_steps"])}


def test_extra_measures_are_taken_once_per_run_and_reported_over_training_seeds(tmp_path, monkeypatch):
    from training.experiments import Arm, Evaluation, Experiment
    from training.tiny import tiny_model_path

    monkeypatch.setitem(sys.modules, "probe_module", types.SimpleNamespace(probe_measures=probe_measures))
    probe = Experiment(
        name="probe",
        question="q",
        method="start",
        arms=(Arm("start", "none"),),
        shared={"max_steps": 5},
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_004), test_seeds=(100_000, 100_004), max_turns=2, max_new_tokens=8
        ),
        smoke={"eval_episodes": 3},
        needs_teacher=False,
        measures="probe_module:probe_measures",
    )
    result = run_experiment(probe, base=tiny_model_path(0), teacher="", out=tmp_path, smoke=True, progress=False, seeds=[0, 1])
    assert result.arms["start"].measures == {
        0: {"seeds": 3.0, "trained": 0.0, "steps": 5.0},
        1: {"seeds": 3.0, "trained": 0.0, "steps": 5.0},
    }
    with_components = dataclasses.replace(probe, evaluation=dataclasses.replace(probe.evaluation, components=True))
    again = run_experiment(with_components, base=tiny_model_path(0), teacher="", out=tmp_path, smoke=True, progress=False, seeds=[0])
    (episodes,) = [r["evaluations"]["test"]["episodes"] for r in again.arms["start"].runs]
    rate = sum(e["valid_call_rate"] for e in episodes) / len(episodes)
    assert again.arms["start"].measures[0]["valid call rate"] == pytest.approx(rate) and 0.0 <= rate <= 1.0
    assert {f"component {k}" for k in episodes[0]["components"]} <= set(again.arms["start"].measures[0])
    turns = sum(e["agent_turns"] for e in episodes) / len(episodes)
    assert again.arms["start"].measures[0]["agent turns"] == pytest.approx(turns) and turns >= 1
    text = experiment_markdown(probe, result, command="c")
    assert "| measure | start |" in text and "| seeds | 3.000 ± 0.000 |" in text and "| steps | 5.000 ± 0.000 |" in text
    stored = next(tmp_path.glob("start/*seed0*/result.json")).read_text()
    assert '"measures"' in stored  # kept with the run: a rerun reads it instead of measuring again


def test_evaluation_jobs_cycle_through_a_task_set():
    from environments import registry
    from training.experiments.runner import evaluation_jobs

    assert evaluation_jobs("toolgym/chain", [7, 8]) == [("toolgym/chain", 7), ("toolgym/chain", 8)]
    tasks = [t.id for t in registry.task_set("toolgym/train")]
    jobs = evaluation_jobs("toolgym/train", list(range(len(tasks) + 1)))
    assert [task for task, _ in jobs] == [*tasks, tasks[0]] and [seed for _, seed in jobs] == list(range(len(tasks) + 1))


@pytest.mark.parametrize("name", sorted(set(experiments.load_all()) - {"graphopd"}))  # graphopd's smoke is checked in detail above
def test_every_experiments_smoke_config_runs_every_arm_on_the_same_test_seeds(name, tmp_path, monkeypatch):
    from training.tiny import tiny_model_path

    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path / "var"))  # data an experiment prepares stays in the test's folder

    experiment = experiments.load_all()[name]
    result = run_experiment(experiment, base=tiny_model_path(0), teacher=tiny_model_path(1), out=tmp_path, smoke=True, progress=False)
    assert list(result.arms) == [arm.name for arm in experiment.arms]
    for arm in result.arms.values():
        assert list(arm.rewards) == [0] and len(arm.rewards[0]) == len(result.test_seeds) > 0
        assert all(0.0 <= r <= 1.0 for r in arm.rewards[0])


def test_ascent_stream_table_averages_each_part_of_every_seeds_stream(tmp_path):
    from training.experiments.ascent import stream_table

    runs = []
    for seed, passes in enumerate(([0, 0, 1, 1], [0, 1, 1, 1])):
        folder = tmp_path / f"seed{seed}"
        folder.mkdir()
        rows = [{"step": i + 1, "stream_passed": float(p), "stream_reward": float(p), "stream_turns": 3.0} for i, p in enumerate(passes)]
        (folder / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in [{"step": 0}, *rows]))
        runs.append({"checkpoint": str(folder / "final")})
    (tmp_path / "experiment.json").write_text(json.dumps({"arms": {"ascent": {"runs": runs}}}))
    table = stream_table(tmp_path, parts=2)
    # first halves: 0 and 0.5 -> 0.25; second halves: 1 and 1 -> 1.0 (no spread)
    assert "| ascent | 0.25 ± " in table and "| 1.00 ± 0.00, 1.00 ± 0.00, 3.00 ± 0.00 |" in table


def probe_prepare(experiment, values):
    """An Experiment.prepare function for the test below: overrides made from what it was given."""
    return {"data": f"/data/{experiment.name}-seed{values['seed']}.jsonl", "max_steps": values["max_steps"] + 1}


def test_prepare_overrides_join_each_run_config_and_so_its_hash(tmp_path, monkeypatch):
    from training.experiments import Arm, Evaluation, Experiment
    from training.experiments.runner import _Runs
    from training.tiny import tiny_model_path

    monkeypatch.setitem(sys.modules, "probe_prepare_module", types.SimpleNamespace(probe_prepare=probe_prepare))
    probe = Experiment(
        name="probe",
        question="q",
        method="sft",
        arms=(Arm("sft", "sft"),),
        shared={"max_steps": 5},
        evaluation=Evaluation(task="toolgym/chain", dev_seeds=(50_000, 50_004), test_seeds=(100_000, 100_004)),
        needs_teacher=False,
        prepare="probe_prepare_module:probe_prepare",
    )
    runs = _Runs(probe, "sft", base=str(tiny_model_path(0)), teacher="", values={"max_steps": 5}, out=tmp_path, progress=False)
    assert runs.config({}, 3)["data"] == "/data/probe-seed3.jsonl" and runs.config({}, 4)["data"] == "/data/probe-seed4.jsonl"
    assert runs.config({}, 3)["max_steps"] == 6  # it saw the run's config, seed included
    plain = _Runs(
        dataclasses.replace(probe, prepare=""),
        "sft",
        base=str(tiny_model_path(0)),
        teacher="",
        values={"max_steps": 5},
        out=tmp_path,
        progress=False,
    )
    assert "data" not in plain.config({}, 3) and plain.config({}, 3)["max_steps"] == 5


def test_horizon_demonstrations_are_written_once_under_var_and_shared_by_both_experiments(tmp_path, monkeypatch):
    from training.experiments.horizon import DEMO_SEEDS, HORIZON, REFINE, demonstrations

    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    path = Path(demonstrations(HORIZON, {"seed": 0})["data"])
    assert path.parent == tmp_path / "experiments" / "data" and path.exists()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["header"]["seed"] for r in records] == list(range(*DEMO_SEEDS))  # the expert passes every one
    assert all(r["header"]["score"]["passed"] and r["header"]["task"].endswith("chain") for r in records)
    stamp = path.stat().st_mtime_ns
    assert demonstrations(REFINE, {"seed": 1}) == {"data": str(path)} and path.stat().st_mtime_ns == stamp
    assert HORIZON.prepare == REFINE.prepare == "training.experiments.horizon:demonstrations"
    assert all(set(arm.overrides) <= {"horizon_turns", "refine_fraction", "refine_select"} for arm in HORIZON.arms + REFINE.arms)


def test_a_none_arm_is_played_once_and_its_evaluation_shared_by_every_training_seed(tmp_path):
    from training.experiments import Arm, Evaluation, Experiment
    from training.tiny import tiny_model_path

    probe = Experiment(
        name="probe",
        question="q",
        method="start",
        arms=(Arm("start", "none"),),
        shared={"max_steps": 5},
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_004), test_seeds=(100_000, 100_004), max_turns=2, max_new_tokens=8
        ),
        smoke={"eval_episodes": 2},
        needs_teacher=False,
    )
    result = run_experiment(probe, base=tiny_model_path(0), teacher="", out=tmp_path, smoke=True, progress=False, seeds=[0, 1, 2])
    first, *others = [run["evaluations"]["test"] for run in result.arms["start"].runs]
    assert "reused" not in first and [o["reused"] for o in others] == [True, True]
    assert all(o["episodes"] == first["episodes"] for o in others) and result.arms["start"].rewards[2] == result.arms["start"].rewards[0]
