"""The options desk's SOTA pieces: the sft_grpo recipe (SFT then GRPO from its checkpoint), the experiment's compact
demonstrations and anchor figures, and the constitution's desk utility measures."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from environments.core import ToolCall
from environments.registry import make
from environments.riskprobe.probes import Probe
from training import ConfigError, make_config, run_recipe
from training.experiments import get
from training.experiments.constitution import choice_utility, pnl_certainty_equivalent
from training.experiments.optionsdesk import EVAL_TASK, TRAIN_TASK, anchor_figures, compact_record
from training.recipes.sft_grpo import SFTGRPOConfig, stage_configs
from training.scripted import anchor_episode, demonstrations_file


# --- the recipe ------------------------------------------------------------------------------------------------
def test_the_config_names_what_is_wrong() -> None:
    with pytest.raises(ConfigError, match=r"data='': give a JSONL file of demonstration records"):
        make_config("sft_grpo", {"model": "m"})
    with pytest.raises(ConfigError, match=r"sft_steps=0: must be at least 1"):
        make_config("sft_grpo", {"model": "m", "data": "d.jsonl", "sft_steps": 0})
    with pytest.raises(ConfigError, match=r"lora_r=8: stage 2 cannot start from a LoRA adapter yet"):
        make_config("sft_grpo", {"model": "m", "data": "d.jsonl", "lora_r": 8})


def test_the_stages_get_their_own_fields_and_share_the_rest() -> None:
    config = SFTGRPOConfig(
        model="base",
        data="d.jsonl",
        output_dir="out",
        sft_steps=7,
        sft_learning_rate=1e-3,
        sft_batch_size=3,
        max_steps=5,
        learning_rate=2e-5,
        task="optionsdesk/train-short",
        seed=4,
        compact_tools=True,
    )
    first, second = stage_configs(config)
    assert (first.model, first.data, first.output_dir, first.max_steps, first.learning_rate, first.batch_size) == (
        "base",
        "d.jsonl",
        str(Path("out") / "sft"),
        7,
        1e-3,
        3,
    )
    assert first.seed == 4 and first.compact_tools is True and first.save_every == 0
    assert (second.output_dir, second.max_steps, second.learning_rate, second.task, second.seed) == ("out", 5, 2e-5, TRAIN_TASK, 4)
    alone, _ = stage_configs(SFTGRPOConfig(model="base", data="d.jsonl", output_dir="out", rl=False))
    assert alone.output_dir == "out"  # the SFT-only baseline's run folder is the run's own (its metrics.jsonl there)


def test_grpo_starts_from_the_sft_checkpoint(tiny_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path / "var"))
    data = demonstrations_file("toolgym/lookup", range(0, 4), max_turns=4)
    out = tmp_path / "run"
    values = {
        "model": str(tiny_path),
        "data": data,
        "output_dir": str(out),
        "sft_steps": 1,
        "sft_batch_size": 2,
        "max_steps": 1,
        "task": "toolgym/lookup",
        "tasks_per_step": 1,
        "group_size": 2,
        "max_turns": 2,
        "max_new_tokens": 16,
        "eval_episodes": 1,
        "eval_every": 0,
    }
    result = run_recipe("sft_grpo", values)
    assert result.recipe == "sft_grpo" and result.steps == 2 and len(result.checkpoints) == 2
    sft_checkpoint, final = result.checkpoints
    assert Path(sft_checkpoint).parent == out / "sft" and Path(final).parent == out
    saved = json.loads((Path(final) / "training_config.json").read_text())
    assert saved["recipe"] == "grpo" and saved["config"]["model"] == sft_checkpoint
    assert (out / "metrics.jsonl").exists() and (out / "sft" / "metrics.jsonl").exists()


# --- the experiment --------------------------------------------------------------------------------------------
def test_the_experiment_compares_sft_grpo_with_its_news_ablation_sft_alone_and_the_base() -> None:
    experiment = get("optionsdesk")
    assert [(a.name, a.recipe, a.overrides) for a in experiment.arms] == [
        ("sft_grpo", "sft_grpo", {}),
        ("sft_grpo_nonews", "sft_grpo", {"task": "optionsdesk/train-short-nonews"}),
        ("sft", "sft_grpo", {"rl": False}),
        ("none", "none", {}),
    ]
    assert experiment.shared["task"] == TRAIN_TASK and experiment.evaluation.task == EVAL_TASK
    train_end = experiment.shared["train_seed_start"] + experiment.shared["train_seeds"]
    assert train_end <= experiment.evaluation.test_seeds[0] == 1000  # evaluation histories the training never saw


def test_a_rewritten_anchor_record_holds_exactly_what_the_compact_environment_answers() -> None:
    record = compact_record(anchor_episode("regime-rule", TRAIN_TASK, 7, options={"compact": False}))
    assert "options" not in record["header"] and record["header"]["task"] == "train-short"
    env = make(TRAIN_TASK, 7)
    calls = [(c, r) for step in record["steps"] for c, r in zip(step.get("tool_calls") or [], step.get("results") or [], strict=True)]
    assert [c["name"] for c, _ in calls][:4] == ["market_snapshot", "close_position", "open_strategy", "next_day"]
    for call, result in calls:
        assert env.step(ToolCall(call["name"], call["arguments"], call["id"])).content == result["content"]
    assert env.score().composite == record["header"]["score"]["composite"]


def test_the_anchor_figures_are_the_anchors_scores_on_the_same_windows() -> None:
    figures = anchor_figures(EVAL_TASK, [1000, 1001], anchors=("no-trade", "regime-rule"))
    assert figures["no-trade composite"] == 0.5 and figures["no-trade total_return"] == 0.0 and figures["no-trade max_drawdown"] == 0.0
    scores = [anchor_episode("regime-rule", EVAL_TASK, s, options={"compact": False})["header"]["score"] for s in (1000, 1001)]
    assert figures["regime-rule composite"] == pytest.approx((scores[0]["composite"] + scores[1]["composite"]) / 2)
    assert figures["regime-rule sharpe"] == pytest.approx((scores[0]["components"]["sharpe"] + scores[1]["components"]["sharpe"]) / 2)


# --- the constitution's desk utility ----------------------------------------------------------------------------
def test_choice_utility_is_the_expected_certainty_equivalent_and_what_it_gives_up() -> None:
    probe = Probe("deal", 10_000, (("deal", ((1.0, 100.0),)), ("gamble", ((0.5, 300.0), (0.5, 0.0)))), "")
    # a = 0.01: CE(gamble) = -100 log(0.5 e^-3 + 0.5) = 64.456; half on each: 0.5 x 100 + 0.5 x 64.456 = 82.228; best 100
    utility, gap = choice_utility([(probe, [0.5, 0.5])], 0.01)
    assert utility == pytest.approx(82.228, abs=1e-3) and gap == pytest.approx(17.772, abs=1e-3)
    assert choice_utility([(probe, [1.0, 0.0])], 0.0) == (100.0, 50.0)  # neutral: the gamble is worth its mean, 150


def test_the_pnl_certainty_equivalent_treats_episodes_as_equally_likely() -> None:
    # -100 log(0.5 e^-1 + 0.5 e^1) = -100 log cosh(1) = -43.38: an averse owner values +-100 credits below nothing
    assert pnl_certainty_equivalent([100.0, -100.0], 0.01) == pytest.approx(-100 * math.log(math.cosh(1.0)))
    assert pnl_certainty_equivalent([100.0, -100.0], 0.01) == pytest.approx(-43.378, abs=1e-3)
    assert pnl_certainty_equivalent([30.0, 10.0], 0.0) == 20.0
