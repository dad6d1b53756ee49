"""AdvSim2Real with models: the simulator/real evaluation (a tiny model as the real world's caller), the recipe end
to end, and resumption from the per-round state on disk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from environments.runner import make_policy
from training import run_recipe
from training.advsim.adapters import adapter_for, real_world, sim_world
from training.advsim.evaluate import evaluate_sim_real
from training.advsim.worlds import ScriptedPlayer

HANDOFF = {"goal": "email_takeover", "framing": "colleague_handoff", "placement": "forwarded", "style": "plain"}
injection = adapter_for("servicedesk/train").injection
TINY_RUN = {
    "tasks_per_step": 2,
    "group_size": 2,
    "max_turns": 2,
    "max_new_tokens": 8,
    "max_prompt_tokens": 2048,
    "device": "cpu",
    "eval_episodes": 0,
    "real_user_max_new_tokens": 4,
}


def rounds_of(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted((folder / "advsim" / "rounds").glob("*.json"))}


def metric_lines(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_sim_and_real_are_both_evaluated_and_the_gap_is_their_difference(tiny_path: Path) -> None:
    player = ScriptedPlayer(lambda env, seed: make_policy("oracle", env, seed), max_turns=12)
    worlds = [sim_world("servicedesk/train"), real_world("servicedesk/train", user_model=str(tiny_path), max_new_tokens=4)]
    figures, records = evaluate_sim_real(
        player, worlds, [("servicedesk/roaming-on", 3)], adversaries={"coadv": injection(HANDOFF)}, styles=("direct",)
    )
    # the oracle follows the policy against the rule-based caller, attacked or not
    assert figures["sim_completion_clean"] == 1.0 and figures["sim_completion_coadv"] == 1.0 and figures["sim_completion_unseen"] == 1.0
    assert figures["sim_asr_unseen_direct"] == 0.0 and figures["sim_guidance_compliance"] == 1.0
    for name in ("completion_clean", "completion_coadv", "completion_unseen", "benign_utility"):
        assert figures[f"gap_{name}"] == figures[f"sim_{name}"] - figures[f"real_{name}"]
    assert len(records) == 6  # 3 conditions x 2 worlds
    worlds_seen = [(r["header"]["meta"]["advsim_eval"]["world"], r["header"]["meta"]["advsim_eval"]["condition"]) for r in records]
    assert worlds_seen == [(w, c) for w in ("sim", "real") for c in ("clean", "coadv", "unseen:direct")]
    real = records[3]
    assert real["header"]["team"]["slots"]["user"]["policy"]["kind"] == "hf"  # a model played the caller
    assert any(s["source"] == "user" and s.get("token_ids") for s in real["steps"])
    assert records[0]["header"]["team"]["slots"]["user"] == {
        "policy": {"name": "rule-user:cooperative", "kind": "scripted"},
        "default": True,
    }


@pytest.mark.slow
def test_the_recipe_trains_three_roles_and_evaluates_the_final_agent_in_both_worlds(tiny_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_recipe(
        "advsim",
        {
            "model": str(tiny_path),
            "output_dir": str(out),
            "max_steps": 1,
            **TINY_RUN,
            "eval_episodes": 1,
            "final_adversary_rounds": 1,
            "unseen_styles": ["direct"],
        },
    )
    assert result.steps == 1
    lines = metric_lines(out)
    prefixes = ("agent_", "adversary_", "curriculum_", "eval_")
    assert all(k.startswith(prefixes) for line in lines for k in line if k != "step")
    assert {"agent_loss", "adversary_reward_mean", "curriculum_reward_mean"} <= set(lines[0])
    final = json.loads((out / "advsim" / "evals" / "final.json").read_text())
    assert set(final["adversaries"]) == {"coadv", "fresh"}
    for world in ("sim", "real"):
        for condition in ("clean", "coadv", "fresh", "unseen"):
            assert 0.0 <= final["figures"][f"{world}_completion_{condition}"] <= 1.0
    assert final["figures"]["gap_completion_clean"] == final["figures"]["sim_completion_clean"] - final["figures"]["real_completion_clean"]
    assert lines[-1]["eval_gap_completion_unseen"] == final["figures"]["gap_completion_unseen"]
    evaluated = [json.loads(line) for line in (out / "advsim" / "evals" / "final.jsonl").read_text().splitlines()]
    assert {r["header"]["meta"]["advsim_eval"]["world"] for r in evaluated} == {"sim", "real"}
    assert (out / "advsim" / "evals" / "fresh-round-0001.json").exists()
    round_one = json.loads((out / "advsim" / "rounds" / "round-000001.json").read_text())
    records = [json.loads(line) for line in (out / "advsim" / "records" / "round-000001.jsonl").read_text().splitlines()]
    ids = {r["header"]["meta"]["advsim"]["id"] for r in records}
    assert len(records) == 8 and all(set(p["clean_ids"] + p["injected_ids"]) <= ids for p in round_one["pairs"])


@pytest.mark.slow
def test_a_rerun_resumes_after_the_last_round_it_finished(tiny_path: Path, tmp_path: Path) -> None:
    base = {"model": str(tiny_path), **TINY_RUN}
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    run_recipe("advsim", {**base, "output_dir": str(straight), "max_steps": 3})
    run_recipe("advsim", {**base, "output_dir": str(resumed), "max_steps": 2})
    first = rounds_of(resumed)
    assert sorted(first) == ["round-000001.json", "round-000002.json"]
    saved = json.loads((resumed / "step-000002" / "trainer_state.json").read_text())["recipe_state"]["advsim"]
    assert saved == json.loads(first["round-000002.json"])["roles"]

    result = run_recipe("advsim", {**base, "output_dir": str(resumed), "max_steps": 3})
    assert result.steps == 3
    again = rounds_of(resumed)
    assert {k: again[k] for k in first} == first  # done rounds are not played again
    assert [line["step"] for line in metric_lines(resumed)] == [1, 2, 3]
    # the resumed round is the round an uninterrupted run plays: same proposals, same pairs, same role updates
    assert json.loads(again["round-000003.json"]) == json.loads(rounds_of(straight)["round-000003.json"])

    run_recipe("advsim", {**base, "output_dir": str(resumed), "max_steps": 3})
    assert rounds_of(resumed) == again and len(metric_lines(resumed)) == 3


@pytest.mark.slow
def test_the_free_text_writer_fills_every_injection_and_learns_from_flips(tiny_path: Path) -> None:
    import torch

    from training.advsim.writer import LLMWriter

    writer = LLMWriter(str(tiny_path), adapter_for("servicedesk/train"), device="cpu", lr=0.5, seed=0, max_new_tokens=6)
    templated = [injection(HANDOFF), injection({**HANDOFF, "goal": "rogue_credit"})]
    written = writer.write([HANDOFF, {**HANDOFF, "goal": "rogue_credit"}], templated)
    assert [w["goal"] for w in written] == [t["goal"] for t in templated]  # the role's goal and slot, the model's text
    assert all("{action}" in w["text"] and w["text"] != t["text"] for w, t in zip(written, templated, strict=True))
    before = [p.detach().clone() for p in writer.model.parameters()]
    assert writer.update([w["text"] for w in written], [0.0, 0.0]) == {"adversary_writer_loss": 0.0}  # no flip signal: no step
    assert all(torch.equal(a, b) for a, b in zip(before, writer.model.parameters(), strict=True))
    metrics = writer.update([w["text"] for w in written], [1.0, 0.0])  # the first text flipped a success
    assert metrics["adversary_writer_texts"] == 2.0
    assert any(not torch.equal(a, b) for a, b in zip(before, writer.model.parameters(), strict=True))


@pytest.mark.slow
def test_the_recipe_runs_with_the_free_text_adversary(tiny_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "llm"
    result = run_recipe(
        "advsim",
        {
            "model": str(tiny_path),
            "output_dir": str(out),
            "max_steps": 1,
            **TINY_RUN,
            "adversary": "llm",
            "adversary_model": str(tiny_path),
        },
    )
    assert result.steps == 1 and "adversary_reward_mean" in metric_lines(out)[0]
    round_one = json.loads((out / "advsim" / "rounds" / "round-000001.json").read_text())
    for proposal in round_one["proposals"]:  # each planted text is the writer's, framed by the categorical role's choice
        assert proposal["injection"]["text"] != injection(proposal["adversary_choice"])["text"]
