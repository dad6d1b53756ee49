"""HAT: the curriculum's schedule, which tokens are trained at each harness level, the loss, the sampler's harness
levels, and a tiny end-to-end run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import AutoModelForCausalLM

import training.sampling as sampling
from training import ConfigError, run_recipe
from training.data import tokenize_record
from training.evidence.common import write_records
from training.harness_data import (
    harness_demonstrations_file,
    harness_episodes,
    record_level,
    teacher_harness_episodes,
    tokenize_with_decisions,
)
from training.recipes.hat import HATConfig, hat_loss, stage_pools

VERIFY = "One step is left: verify your work now and use the last step for anything still open."


def _config(**extra: Any) -> HATConfig:
    return HATConfig(model="m", data="d.jsonl", **extra)


def _trained_text(tokenizer: Any, ids: list[int], flags: list[int]) -> str:
    return tokenizer.decode([i for i, f in zip(ids, flags, strict=True) if f])


# --- the schedule --------------------------------------------------------------------------------------------
def test_max_steps_split_evenly_over_the_levels_with_the_remainder_on_the_last_stages():
    config = _config(max_steps=10)
    assert config.schedule() == [2, 2, 3, 3]
    assert [config.stage_at(step) for step in range(10)] == [0, 0, 1, 1, 2, 2, 2, 3, 3, 3]
    assert _config(max_steps=8).schedule() == [2, 2, 2, 2]


def test_explicit_stage_steps_set_each_stages_length():
    config = _config(max_steps=6, levels=["full", "tools-only"], stage_steps=[1, 5])
    assert [config.stage_at(step) for step in range(6)] == [0, 1, 1, 1, 1, 1]
    assert config.stage_at(99) == 1  # a resumed run past max_steps stays on the last stage


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"levels": ["full", "scaffold"]}, "levels=['full', 'scaffold']: give one or more of full, guided, light, tools-only"),
        ({"levels": []}, "levels=[]"),
        ({"levels": ["full", "full"]}, "a level appears twice"),
        ({"levels": [["full"]]}, "levels=[['full']]: give one or more of"),
        ({"stage_steps": ["a", 2, 3, 4]}, "stage_steps=['a', 2, 3, 4]: must be whole numbers of steps"),
        ({"stage_steps": [1, 2]}, "stage_steps=[1, 2]: give one count per level (4)"),
        ({"stage_steps": [1, 1, 1, 1]}, "stage_steps=[1, 1, 1, 1]: each at least 1, summing to max_steps=100"),
        ({"max_steps": 3}, "max_steps=3: at least one step per level (4)"),
        ({"harness_weight": -0.5}, "harness_weight=-0.5: must not be negative"),
    ],
)
def test_bad_fields_are_refused_with_their_values(extra, message):
    with pytest.raises(ConfigError) as caught:
        _config(**extra)
    assert message in str(caught.value)


# --- which tokens are trained --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chain_levels() -> dict[str, dict[str, Any]]:
    """The expert's toolgym/chain episode on seed 0 under each level, the harness's step cap at 3."""
    return {record_level(r): r for r in harness_episodes("toolgym/chain", [0], max_turns=3)}


def test_full_and_guided_record_the_verification_before_the_last_step_and_the_weaker_levels_none(chain_levels):
    decisions = {
        level: [(s["index"], s["meta"]["decision"], s["message"]) for s in r["steps"] if s.get("role") == "harness"]
        for level, r in chain_levels.items()
    }
    assert decisions == {"full": [(3, "verify", VERIFY)], "guided": [(3, "verify", VERIFY)], "light": [], "tools-only": []}
    calls = {level: [c["name"] for s in r["steps"] if s["source"] == "agent" for c in s["tool_calls"]] for level, r in chain_levels.items()}
    assert set(map(tuple, calls.values())) == {("owner", "lookup", "answer")}  # the expert acts alike at every level


def test_the_decision_text_after_its_label_is_trained_at_its_weight_and_the_actor_turns_as_in_sft(chain_levels, tokenizer):
    for level, record in chain_levels.items():
        (episode,) = tokenize_with_decisions(record, tokenizer, weight=0.5)
        (plain,) = tokenize_record(record, tokenizer)
        flags = episode.meta["harness_mask"]
        expected = f" {VERIFY}<|im_end|>" if level in ("full", "guided") else ""
        assert _trained_text(tokenizer, episode.input_ids, flags) == expected, level
        assert episode.input_ids == plain.input_ids
        # every other token is trained exactly as SFT trains it, the decision tokens at 0.5
        assert [m - f for m, f in zip(episode.mask, flags, strict=True)] == plain.mask
        assert {w for w, f in zip(episode.weights, flags, strict=True) if f} <= {0.5}
        decided = {s["index"] for s in record["steps"] if s.get("role") == "harness"}
        assert [s for s in episode.agent_spans if s[0] not in decided] == plain.agent_spans
    (weightless,) = tokenize_with_decisions(chain_levels["full"], tokenizer, weight=0.0)
    assert sum(weightless.meta["harness_mask"]) == 0 and weightless.mask == tokenize_record(chain_levels["full"], tokenizer)[0].mask


def test_a_team_records_harness_note_is_trained_and_the_critics_and_consultants_turns_are_not(team_record, tokenizer):
    (episode,) = tokenize_with_decisions(team_record, tokenizer, weight=2.0)
    assert (
        _trained_text(tokenizer, episode.input_ids, episode.meta["harness_mask"])
        == " Verify before finishing: is the answer supported?<|im_end|>"
    )
    assert [step for step, _, _ in episode.agent_spans] == [1, 3, 5, 6]  # actor turns 1, 3, 6 and the harness decision 5


def test_truncation_inside_a_decision_trains_what_is_left_of_it(chain_levels, tokenizer):
    (whole,) = tokenize_with_decisions(chain_levels["full"], tokenizer, weight=1.0)
    start = whole.meta["harness_mask"].index(1)
    (cut,) = tokenize_with_decisions(chain_levels["full"], tokenizer, weight=1.0, max_tokens=start + 3)
    assert cut.meta["harness_mask"][start:] == [1, 1, 1] and sum(cut.meta["harness_mask"]) == 3


def test_each_stage_trains_on_its_own_levels_records(chain_levels):
    records = list(chain_levels.values())
    pools = stage_pools(records, _config(levels=["tools-only", "full"], max_steps=2))
    assert [[record_level(r) for r in pool] for pool in pools] == [["tools-only"], ["full"]]
    with pytest.raises(AssertionError, match=r"no guided records to train on in d.jsonl \(levels found: full\)"):
        stage_pools(records[:1], _config(levels=["guided"], max_steps=2))


# --- the loss ------------------------------------------------------------------------------------------------
def test_the_loss_is_sfts_token_mean_with_decisions_weighted_and_each_parts_nll_logged():
    # labels 0, 1, 0; the first an actor token, the second a decision token at weight 0.5, the third untrained
    batch = {
        "input_ids": torch.tensor([[0, 0, 1, 0]]),
        "mask": torch.tensor([[0.0, 1.0, 1.0, 0.0]]),
        "weights": torch.tensor([[0.0, 1.0, 0.5, 0.0]]),
        "harness_mask": torch.tensor([[0.0, 0.0, 1.0, 0.0]]),
    }
    logits = torch.tensor([[[0.0, 0.0], [0.0, math.log(3.0)], [9.0, 0.0]]])  # p(label) = 1/2, then 3/4
    loss, metrics = hat_loss(logits, batch)
    assert loss.item() == pytest.approx((math.log(2.0) + 0.5 * math.log(4 / 3)) / 2)
    assert metrics["actor_nll"] == pytest.approx(math.log(2.0)) and metrics["harness_nll"] == pytest.approx(math.log(4 / 3))
    assert metrics["harness_tokens"] == 1.0 and metrics["tokens"] == 2.0


# --- the sampler under a harness -----------------------------------------------------------------------------
def _scripted_generate(tokenizer: Any, texts: list[str]):
    outputs = iter(texts)

    def generate(model, tok, prompts, *, max_new_tokens, temperature):
        return [(tokenizer(next(outputs), add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id], [0.0]) for _ in prompts]

    return generate


def test_the_sampler_shows_the_harness_decisions_in_the_next_prompt_and_records_them(monkeypatch, tokenizer):
    monkeypatch.setattr(sampling, "generate", _scripted_generate(tokenizer, ["hm", "well", "so"]))
    (record,) = sampling.rollout_episodes(None, tokenizer, [("toolgym/lookup", 0)], max_turns=3, harness_level="full")
    steps = record["steps"]
    assert [(s["source"], s.get("role")) for s in steps] == [
        ("env", None),
        ("agent", None),
        ("agent", None),
        ("system", "harness"),
        ("agent", None),
    ]
    assert steps[3]["message"] == VERIFY and record["header"]["team"] == {"harness_level": "full"}
    assert f"<|im_start|>user\nHarness: {VERIFY}<|im_end|>" in tokenizer.decode(steps[4]["prompt_token_ids"])
    assert record["header"]["termination_reason"] == "max_steps"
    (episode,) = tokenize_with_decisions(record, tokenizer, weight=1.0)  # a sampled record's decisions are found too
    assert _trained_text(tokenizer, episode.input_ids, episode.meta["harness_mask"]) == f" {VERIFY}<|im_end|>"


@pytest.mark.parametrize(
    "level, roles, reason",
    [
        ("light", [None, None, None, "harness"], "too_many_errors"),
        ("full", [None, None, None, "harness", "harness"], "too_many_errors"),  # verify (one step left), then the stop check
        ("tools-only", [None, None, None, None], "max_steps"),
    ],
)
def test_the_stop_check_ends_a_sampled_episode_that_repeats_a_fruitless_turn(monkeypatch, tokenizer, level, roles, reason):
    monkeypatch.setattr(sampling, "generate", _scripted_generate(tokenizer, ["hm"] * 4))
    (record,) = sampling.rollout_episodes(None, tokenizer, [("toolgym/lookup", 0)], max_turns=4, harness_level=level)
    assert [s.get("role") for s in record["steps"][1:]] == roles and record["header"]["termination_reason"] == reason
    assert ("team" in record["header"]) == (level != "tools-only")


# --- end to end ----------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_tiny_hat_run_walks_the_stages_and_supervises_decisions_only_where_the_harness_made_them(tiny_path, tmp_path):
    data = write_records(tmp_path / "levels.jsonl", harness_episodes("toolgym/chain", range(2), max_turns=3))
    seen: list[tuple[int, str, float]] = []
    values = {
        "model": str(tiny_path),
        "data": str(data),
        "output_dir": str(tmp_path / "run"),
        "max_steps": 4,
        "batch_size": 2,
        "max_tokens": 900,
        "learning_rate": 1e-3,
    }
    result = run_recipe("hat", values, on_metric=lambda step, name, value: seen.append((step, name, value)))
    rows = [json.loads(line) for line in (Path(values["output_dir"]) / "metrics.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in rows] == [0, 1, 2, 3] and [r["level"] for r in rows] == [0, 1, 2, 3]
    assert [r["harness_tokens"] > 0 for r in rows] == [True, True, False, False]
    assert {name for _, name, _ in seen} >= {"stage", "harness_nll", "actor_nll", "loss"}
    saved = json.loads((Path(result.final_checkpoint) / "training_config.json").read_text())
    assert saved["recipe"] == "hat" and saved["config"]["levels"] == ["full", "guided", "light", "tools-only"]
    before = AutoModelForCausalLM.from_pretrained(tiny_path).state_dict()
    after = AutoModelForCausalLM.from_pretrained(result.final_checkpoint).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_the_sampler_plays_one_level_per_job_in_one_batch(monkeypatch, tokenizer):
    monkeypatch.setattr(sampling, "generate", _scripted_generate(tokenizer, ["hm", "hm", "well", "well", "so", "so"]))
    full, bare = sampling.rollout_episodes(None, tokenizer, [("toolgym/lookup", 0)] * 2, max_turns=3, harness_level=["full", "tools-only"])
    assert [s.get("role") for s in full["steps"]] == [None, None, None, "harness", None]
    assert [s.get("role") for s in bare["steps"]] == [None, None, None, None]
    with pytest.raises(AssertionError, match="harness_level: 1 levels for 2 jobs"):
        sampling.rollout_episodes(None, tokenizer, [("toolgym/lookup", 0)] * 2, harness_level=["full"])


def test_a_model_teacher_plays_each_level_greedily_through_the_sampler(monkeypatch, tokenizer):
    monkeypatch.setattr(sampling, "generate", _scripted_generate(tokenizer, ["hm", "well", "so"] * 2))
    records = teacher_harness_episodes(None, tokenizer, "toolgym/lookup", [0], levels=["guided", "tools-only"], max_turns=3)
    assert [record_level(r) for r in records] == ["guided", "tools-only"]
    assert [sum(s.get("role") == "harness" for s in r["steps"]) for r in records] == [1, 0]


def test_the_demonstrations_file_is_written_once_with_every_levels_passed_episodes(tmp_path, monkeypatch):
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path))
    path = harness_demonstrations_file("toolgym/chain", range(20_000, 20_003), max_turns=3, levels=["full", "light"])
    stamp = Path(path).stat().st_mtime_ns
    assert harness_demonstrations_file("toolgym/chain", range(20_000, 20_003), max_turns=3, levels=["full", "light"]) == path
    assert Path(path).stat().st_mtime_ns == stamp and Path(path).name == "toolgym-chain-harness-full+light-20000-20003-turns3.jsonl"
    records = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert [(record_level(r), r["header"]["seed"]) for r in records] == [
        (level, s) for level in ("full", "light") for s in range(20_000, 20_003)
    ]
    assert all(r["header"]["score"]["passed"] for r in records)
