from __future__ import annotations

import itertools
import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from environments.toolgym.anchors import ExpertPolicy
from training import ConfigError, run_recipe
from training.__main__ import main as cli_main
from training.data import TokenizedEpisode, read_records
from training.evidence.common import write_records
from training.recipes.sft import SFTConfig, training_pairs, within_budget
from training.scripted import scripted_episodes


@pytest.fixture(scope="module")
def demos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("demos")
    return str(write_records(folder / "demos.jsonl", scripted_episodes(ExpertPolicy(), "toolgym/lookup", range(6))))


def _sft(tiny_path, demos, out, **extra):
    return {
        "model": str(tiny_path),
        "data": demos,
        "batch_size": 2,
        "max_tokens": 600,
        "learning_rate": 1e-3,
        "output_dir": str(out),
        **extra,
    }


def _rows(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def _weights(path):
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


def test_sft_lowers_the_loss_streams_metrics_and_saves_config(tiny_path, demos, tmp_path):
    seen, saved = [], []
    result = run_recipe(
        "sft",
        _sft(tiny_path, demos, tmp_path, max_steps=6, learning_rate=3e-3),
        on_metric=lambda s, n, v: seen.append((s, n, v)),
        on_checkpoint=lambda s, p: saved.append((s, p)),
    )
    losses = [v for s, n, v in seen if n == "loss"]
    assert result.steps == 6 and len(losses) == 6 and losses[-1] < losses[0]
    assert saved == [(6, result.final_checkpoint)]
    stored = json.loads(Path(f"{result.final_checkpoint}/training_config.json").read_text())
    assert stored["recipe"] == "sft" and stored["config"]["max_steps"] == 6
    rows = _rows(tmp_path / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2, 3, 4, 5, 6]


def test_resume_continues_exactly(tiny_path, demos, tmp_path):
    straight = run_recipe("sft", _sft(tiny_path, demos, tmp_path / "a", max_steps=4, grad_accum=2))
    half = run_recipe(
        "sft",
        _sft(tiny_path, demos, tmp_path / "b", max_steps=4, grad_accum=2),
        should_stop=lambda: len(list((tmp_path / "b").glob("metrics.jsonl"))) > 0 and len(_rows(tmp_path / "b" / "metrics.jsonl")) >= 2,
    )
    assert half.steps == 2 and half.stopped
    resumed = run_recipe("sft", _sft(tiny_path, demos, tmp_path / "b", max_steps=4, grad_accum=2, resume_from=half.final_checkpoint))
    assert resumed.steps == 4
    a, b = _weights(straight.final_checkpoint), _weights(resumed.final_checkpoint)
    assert all(torch.allclose(a[k], b[k], atol=1e-6, rtol=0) for k in a)
    assert not torch.equal(a["model.embed_tokens.weight"], _weights(str(tiny_path))["model.embed_tokens.weight"])


def test_lora_trains_only_the_adapter(tiny_path, demos, tmp_path):
    result = run_recipe("sft", _sft(tiny_path, demos, tmp_path, max_steps=2, lora_r=4, lora_target_modules=["q_proj", "v_proj"]))
    files = {p.name for p in (tmp_path / "step-000002").iterdir()}
    assert "adapter_config.json" in files and "adapter_model.safetensors" in files
    assert json.loads(Path(f"{result.final_checkpoint}/adapter_config.json").read_text())["r"] == 4


def test_selective_refinement_switches_to_the_selected_episodes(tiny_path, demos, tmp_path):
    result = run_recipe("sft", _sft(tiny_path, demos, tmp_path, max_steps=3, horizon_tokens=450, refine_count=2, warm_start_steps=2))
    rows = _rows(tmp_path / "metrics.jsonl")
    assert [r["episodes_in_pool"] for r in rows] == [6.0, 6.0, 2.0]
    state = json.loads(Path(f"{result.final_checkpoint}/trainer_state.json").read_text())
    assert len(state["recipe_state"]["refine_selection"]) == 2


def test_config_errors_name_the_field_and_value(tiny_path, demos, tmp_path):
    with pytest.raises(ConfigError, match=r"batch_size=0"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, batch_size=0))
    with pytest.raises(ConfigError, match=r"unknown field\(s\) bogus"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, bogus=1))
    with pytest.raises(ConfigError, match=r"aggregation='mean'"):
        run_recipe("grpo", {"model": str(tiny_path), "aggregation": "mean"})
    with pytest.raises(ConfigError, match=r"max_steps='3' should be int"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, max_steps="3"))


def test_cli_runs_a_recipe_from_a_toml_file(tiny_path, demos, tmp_path, capsys):
    config = tmp_path / "sft.toml"
    config.write_text(f'model = "{tiny_path}"\ndata = "{demos}"\nbatch_size = 2\nmax_tokens = 600\noutput_dir = "{tmp_path / "run"}"\n')
    assert cli_main(["sft", "--config", str(config), "--set", "max_steps=2", "--quiet"]) == 0
    assert "sft: 2 steps" in capsys.readouterr().out
    assert cli_main(["sft", "--config", str(config), "--set", "max_steps=-1", "--quiet"]) == 2
    assert cli_main(["grpo", "--describe"]) == 0
    assert "Lower clip of the ratio" in capsys.readouterr().out


ONPOLICY = {
    "task": "toolgym/lookup",
    "tasks_per_step": 1,
    "max_turns": 2,
    "max_new_tokens": 10,
    "eval_episodes": 1,
    "eval_every": 0,
    "learning_rate": 1e-3,
}


@pytest.mark.slow
def test_grpo_runs_multi_turn_groups_and_ties_give_no_update(tiny_path, tmp_path):
    result = run_recipe(
        "grpo", {**ONPOLICY, "model": str(tiny_path), "group_size": 2, "max_steps": 2, "kl_coef": 0.1, "output_dir": str(tmp_path)}
    )
    rows = _rows(tmp_path / "metrics.jsonl")
    assert "eval_reward_mean" in rows[0] and rows[-1]["step"] == 2
    assert {"reward_mean", "clip_fraction", "kl_ref", "sampler_logp_gap"} <= set(rows[1])
    assert rows[1]["sampler_logp_gap"] < 1e-3 and rows[1]["ratio_mean"] == pytest.approx(1.0, abs=1e-5)
    # the on-policy check: the engine's sampled logprobs against the trainer's recomputation, every step
    for row in rows[1:]:
        assert row["onpolicy_logprob_diff"] < 1e-3 and 0 <= row["onpolicy_kl"] < 1e-6 and row["onpolicy_warning"] == 0
    # a random model scores 0 in every rollout: equal rewards give zero advantages, and the KL to an identical
    # reference has zero gradient, so GRPO must leave the weights exactly as they were
    assert all(r["reward_std"] == 0.0 for r in rows[1:])
    assert torch.equal(_weights(result.final_checkpoint)["model.norm.weight"], _weights(str(tiny_path))["model.norm.weight"])


@pytest.mark.slow
def test_opd_and_self_distill_run_and_report_kl(tiny_path, tmp_path):
    from training.tiny import build_tiny_model

    teacher = build_tiny_model(tmp_path / "teacher", seed=1)
    run_recipe("opd", {**ONPOLICY, "model": str(tiny_path), "teacher": str(teacher), "max_steps": 1, "output_dir": str(tmp_path / "opd")})
    row = _rows(tmp_path / "opd" / "metrics.jsonl")[-1]
    assert row["reverse_kl"] != 0 and row["tokens"] > 0  # the sampled estimator may be negative on a few tokens
    assert row["onpolicy_logprob_diff"] < 1e-3 and row["onpolicy_warning"] == 0  # scored again: opd keeps no old_logp
    run_recipe(
        "opd",
        {
            **ONPOLICY,
            "model": str(tiny_path),
            "teacher": str(teacher),
            "max_steps": 1,
            "loss": "full",
            "top_k": 8,
            "output_dir": str(tmp_path / "opdf"),
        },
    )
    row = _rows(tmp_path / "opdf" / "metrics.jsonl")[-1]
    assert row["reverse_kl"] > 0
    run_recipe(
        "self_distill", {**ONPOLICY, "model": str(tiny_path), "max_steps": 1, "feedback_modeling": True, "output_dir": str(tmp_path / "sd")}
    )
    row = _rows(tmp_path / "sd" / "metrics.jsonl")[-1]
    assert row["feedback_nll"] > 0 and row["reverse_kl"] >= 0
    assert row["onpolicy_logprob_diff"] < 1e-3


def test_cli_trains_a_critic_on_the_critic_turns_that_preceded_success(tiny_path, team_record, tmp_path, capsys):
    failed = json.loads(json.dumps(team_record))
    failed["header"].update(reward=0.0, score={"composite": 0.0, "passed": False})
    failed["steps"][2]["message"] = "Give up."
    data = write_records(tmp_path / "team.jsonl", [team_record, failed])
    argv = [
        "sft",
        "--role",
        "critic",
        "--set",
        f"model='{tiny_path}'",
        "--set",
        f"data='{data}'",
        "--set",
        "min_score=0.5",
        "--set",
        "batch_size=2",
        "--set",
        "max_steps=2",
        "--set",
        f"output_dir='{tmp_path / 'run'}'",
        "--quiet",
    ]
    assert cli_main(argv) == 0
    out = capsys.readouterr().out
    assert "sft: 2 steps" in out and "episodes_in_pool = 1" in out  # one critic turn was followed by success
    saved = json.loads((tmp_path / "run" / "step-000002" / "training_config.json").read_text())
    assert saved["config"]["role"] == "critic"
    with pytest.raises(SystemExit):
        cli_main(["grpo", "--role", "critic", "--set", f"model='{tiny_path}'", "--quiet"])


def test_role_settings_are_validated_by_name(tiny_path, demos, tmp_path):
    with pytest.raises(ConfigError, match=r"role='Critic!': must be a role name"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, role="Critic!"))
    with pytest.raises(ConfigError, match=r"turn_horizon=2: rewards turns of other roles"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, turn_horizon=2))
    with pytest.raises(ValueError, match="no critic turns to train on .*: none of the 6 episodes has a critic token to train on"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, role="critic", max_steps=1))


def test_episodes_cut_before_their_first_turn_are_refused_with_what_to_change(tiny_path, demos, tmp_path):
    """What a run page showed as 'AssertionError: no actor turns to train on' for long StoreBench demonstrations."""
    with pytest.raises(
        ValueError,
        match=r"each of the 6 episodes is cut at max_tokens=20 before its first actor turn \(the earliest starts at token \d+\): raise max_tokens",
    ):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, max_tokens=20, max_steps=1))


def _episode(length):
    return TokenizedEpisode([1] * length, [1] * length, [0] * length, [1.0] * length, [1] * length, [(1, 0, length)], [math.nan] * length)


def test_within_budget_keeps_the_episodes_that_fit_in_order_and_never_more():
    a, b, c, d = _episode(3), _episode(4), _episode(5), _episode(1)
    assert within_budget([[a, b], [c, d]], 100) == [[a, b], [c, d]]
    assert within_budget([[a, b], [c, d]], 12) == [[a, b], [c]]  # 3 + 4 + 5; d would fit but follows one that does not
    assert within_budget([[a, b], [c, d]], 6) == [[a]]
    assert within_budget([[a, b], [c, d]], 2.9) == []  # the budget is spent


def test_a_token_budget_ends_the_run_within_one_episode_below_it(tiny_path, demos, tmp_path):
    budget = 2_500
    result = run_recipe("sft", _sft(tiny_path, demos, tmp_path, max_steps=20, token_budget=budget))
    rows = _rows(tmp_path / "metrics.jsonl")
    longest = max(
        len(e)
        for _, e in training_pairs(
            read_records(demos), AutoTokenizer.from_pretrained(tiny_path), SFTConfig(model=str(tiny_path), data=demos, max_tokens=600)
        )
    )
    assert result.steps == len(rows) < 20
    assert [r["compute_tokens"] for r in rows] == list(itertools.accumulate(r["input_tokens"] for r in rows))
    assert budget - longest < rows[-1]["compute_tokens"] <= budget


def test_refinement_picks_by_the_rule_logs_the_share_and_counts_the_scoring(tiny_path, demos, tmp_path, monkeypatch):
    import training.recipes.sft as sft

    scores = [-1.0, -3.0, -0.5, -2.0, float("-inf"), -4.0]  # one per demo (6), as the warm model would score them
    picked = {}
    for rule, expected in (("unlikely", [1, 5]), ("likely", [0, 2])):
        monkeypatch.setattr(sft, "continuation_logprob", lambda model, episodes, prefixes, pad_id: scores)
        config = _sft(
            tiny_path, demos, tmp_path / rule, max_steps=3, horizon_turns=1, refine_count=2, warm_start_steps=2, refine_select=rule
        )
        result = run_recipe("sft", config)
        rows = _rows(tmp_path / rule / "metrics.jsonl")
        picked[rule] = json.loads(Path(f"{result.final_checkpoint}/trainer_state.json").read_text())["recipe_state"]["refine_selection"]
        assert picked[rule] == expected
        assert [r["refine_selected_share"] for r in rows] == [0.0, 0.0, pytest.approx(2 / 6)]
        assert [r["refining"] for r in rows] == [0.0, 0.0, 1.0]
        assert [r["episodes_in_pool"] for r in rows] == [6.0, 6.0, 2.0]
        lengths = [len(e) for _, e in training_pairs(read_records(demos), AutoTokenizer.from_pretrained(tiny_path), SFTConfig(**config))]
        scored = sum(lengths) / 3  # forward only: a third of a trained token
        assert rows[2]["compute_tokens"] == pytest.approx(rows[1]["compute_tokens"] + scored + rows[2]["input_tokens"])
        assert rows[2]["input_tokens"] == sum(lengths[i] for i in expected)  # batch 2 = both selected episodes, whole
        assert rows[0]["input_tokens"] < sum(sorted(lengths)[-2:])  # warm start on first turns only


def test_horizon_options_are_checked(tiny_path, demos, tmp_path):
    with pytest.raises(ConfigError, match=r"horizon_tokens=100 and horizon_turns=1: give only one"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, horizon_tokens=100, horizon_turns=1))
    with pytest.raises(ConfigError, match=r"refine_select='hardest': must be one of likely, unlikely, random"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, refine_select="hardest"))
    with pytest.raises(ConfigError, match=r"needs a horizon \(horizon_tokens or horizon_turns\)"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, max_steps=3, refine_count=2, warm_start_steps=1))
    with pytest.raises(ConfigError, match=r"token_budget=-1: must not be negative"):
        run_recipe("sft", _sft(tiny_path, demos, tmp_path, token_budget=-1))


@pytest.mark.slow
def test_a_run_killed_mid_rollout_resumes_to_the_straight_runs_weights_with_each_step_logged_once(tiny_path, tmp_path, monkeypatch):
    from training import sampling
    from training.tiny import build_tiny_model

    teacher = build_tiny_model(tmp_path / "teacher", seed=1)  # OPD updates on every step (a random policy's GRPO would not)

    def config(out: str, **extra: Any) -> dict[str, Any]:
        return {
            **ONPOLICY,
            "model": str(tiny_path),
            "teacher": str(teacher),
            "group_size": 2,
            "max_steps": 3,
            "save_every": 1,
            "output_dir": str(tmp_path / out),
            **extra,
        }

    straight = run_recipe("opd", config("straight"))
    real_make = sampling.make

    def make_or_die(*args: Any, **kwargs: Any) -> Any:
        if (tmp_path / "killed" / "step-000002" / "trainer_state.json").exists():
            raise KeyboardInterrupt  # the process dies while step 3's episodes are being played
        return real_make(*args, **kwargs)

    monkeypatch.setattr(sampling, "make", make_or_die)
    with pytest.raises(KeyboardInterrupt):
        run_recipe("opd", config("killed"))
    monkeypatch.setattr(sampling, "make", real_make)
    # as if the process had also logged a step it never saved: the resumed run must not show it twice
    with open(tmp_path / "killed" / "metrics.jsonl", "a") as handle:
        handle.write(json.dumps({"step": 3, "loss": 123.0}) + "\n")
    resumed = run_recipe("opd", config("killed", resume_from=str(tmp_path / "killed" / "step-000002")))
    assert resumed.steps == 3
    steps = [r["step"] for r in _rows(tmp_path / "killed" / "metrics.jsonl") if "loss" in r]
    assert steps == [1, 2, 3] and 123.0 not in [r.get("loss") for r in _rows(tmp_path / "killed" / "metrics.jsonl")]
    assert [r["kl_mean"] for r in _rows(tmp_path / "killed" / "metrics.jsonl") if "kl_mean" in r] == pytest.approx(
        [r["kl_mean"] for r in _rows(tmp_path / "straight" / "metrics.jsonl") if "kl_mean" in r], abs=1e-6
    )  # the same episodes were played at step 3: none lost, none doubled
    a, b = _weights(straight.final_checkpoint), _weights(resumed.final_checkpoint)
    assert all(torch.allclose(a[k], b[k], atol=1e-6, rtol=0) for k in a)
