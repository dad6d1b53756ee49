"""The proposer trained with an idea critic for a reward model: answers parsed into configs of the space, rewards
routed to real verification only where the critic is unsure, and the verifications counted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from training import run_recipe
from training.config import ConfigError, load_config
from training.recipes import ideapropose
from training.recipes.ideapropose import IdeaProposeConfig, parse_proposal


def test_an_answer_parses_only_with_every_field_once_and_in_the_space():
    assert parse_proposal("lr=0.1 reg=0 epochs=100 degree=2") == {"lr": 0.1, "reg": 0.0, "epochs": 100, "degree": 2}
    assert parse_proposal("ok: lr = 0.30, reg=1e-3 epochs=20 degree=1.") == {"lr": 0.3, "reg": 0.001, "epochs": 20, "degree": 1}
    assert parse_proposal("lr=0.1 reg=0 epochs=100") is None  # degree missing
    assert parse_proposal("lr=0.2 reg=0 epochs=100 degree=2") is None  # 0.2 is not a learning rate of the space
    assert parse_proposal("lr=0.1 lr=0.3 reg=0 epochs=100 degree=2") is None  # said twice
    assert parse_proposal("lr=0..1 reg=0 epochs=100 degree=2") is None


def test_the_config_names_the_critic_as_a_model_path_and_refuses_other_environments():
    assert IdeaProposeConfig.MODEL_PATH_FIELDS == ("model", "resume_from", "critic")
    with pytest.raises(ConfigError, match="toolgym/lookup is not an improve task") as raised:
        load_config(IdeaProposeConfig, {"model": "m", "tasks": ["toolgym/lookup"], "route_band": -0.1})
    assert raised.value.fields == ["tasks", "route_band"]


def _run(tiny_path: Any, tmp_path: Any, monkeypatch: Any, **extra: Any) -> list[dict[str, Any]]:
    from training.data import encode_text
    from training.modeling import load_model

    _, tokenizer = load_model(str(tiny_path), trainable=False)
    texts = ["lr=0.1 reg=0 epochs=100 degree=2", "no idea", "lr=0.03 reg=0.01 epochs=50 degree=1", "lr=0.1 reg=0 epochs=100 degree=2"]
    answers = [encode_text(tokenizer, t) + [tokenizer.eos_token_id] for t in texts]
    monkeypatch.setattr(ideapropose, "generate", lambda *a, **k: [(ids, [0.0] * len(ids)) for ids in answers])
    values = {
        "model": str(tiny_path),
        "output_dir": str(tmp_path),
        "tasks": ["improve/linear"],
        "train_seeds": 2,
        "seeds_per_step": 2,
        "group_size": 2,
        "max_steps": 2,
        **extra,
    }
    run_recipe("ideapropose", values)
    return [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]


def test_without_a_critic_every_parsed_proposal_is_verified(tiny_path, tmp_path, monkeypatch):
    rows = _run(tiny_path, tmp_path, monkeypatch)
    assert [r["parsed"] for r in rows] == [0.75, 0.75]  # three of four answers parse
    assert [r["verifications"] for r in rows] == [3.0, 3.0] and [r["verifications_total"] for r in rows] == [3.0, 6.0]
    assert [r["verified_share"] for r in rows] == [1.0, 1.0]


def test_with_a_critic_only_scores_inside_the_band_are_verified(tiny_path, tmp_path, monkeypatch):
    everything = _run(tiny_path, tmp_path / "wide", monkeypatch, critic=str(tiny_path), route_band=1.0)
    assert [r["verifications_total"] for r in everything] == [3.0, 6.0]
    nothing = _run(tiny_path, tmp_path / "none", monkeypatch, critic=str(tiny_path), route_band=0.0)
    # the untrained critic's P(yes) is never exactly 0.5: every parsed proposal is rewarded with its score, unverified
    assert [r["verifications_total"] for r in nothing] == [0.0, 0.0] and all(0.0 < r["reward_mean"] < 1.0 for r in nothing)
