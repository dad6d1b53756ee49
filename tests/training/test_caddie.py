"""Caddie (training/recipes/caddie.py): the critic's advantages and masks by hand, its turns in the sampler, a tiny run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

import training.recipes.caddie as caddie
from environments.trajectory import make_step, new_record
from training import make_config, run_recipe
from training.config import ConfigError
from training.credit import group_advantages
from training.data import collate, tokenize_record
from training.losses import grpo_loss
from training.sampling import CriticTurns, critic_trigger

ACTOR_IDS = [41, 42, 43]  # the actor's sampled tokens in the records below: never trained here


def _actor_step(index: int, *, failed: bool = False) -> dict[str, Any]:
    results = [{"call_id": "c", "content": {"error": "no such item"} if failed else {"ok": 1}, "is_error": failed}]
    step = make_step(index=index, source="agent", tool_calls=[{"id": "c", "name": "lookup", "arguments": {}}], results=results)
    step.update(token_ids=list(ACTOR_IDS), logprobs=[-1.0] * 3, prompt_token_ids=[1, 2])
    return step


def _critic_step(index: int, prompt: list[int], advice: list[int]) -> dict[str, Any]:
    step = make_step(index=index, source="agent", role="critic", message="check the owner first")
    step.update(token_ids=advice, logprobs=[-0.5] * len(advice), prompt_token_ids=prompt)
    return step


def _record(reward: float, critic_turns: list[tuple[list[int], list[int]]]) -> dict[str, Any]:
    """alice (the actor) acts, bob (the critic) advises after each of her turns."""
    steps = [make_step(index=0, source="env", message="Find the owner's color.")]
    for prompt, advice in critic_turns:
        steps.append(_actor_step(len(steps)))
        steps.append(_critic_step(len(steps), prompt, advice))
    header = {"env": "toolgym", "task": "chain", "seed": 3, "source": "rollout", "score": {"composite": reward, "passed": reward == 1.0}}
    return new_record(header=header, steps=steps)


def test_each_critic_turn_gets_its_episodes_group_relative_advantage_and_only_its_advice_is_trained() -> None:
    # one group of four: rewards 1, 0, 0, 0 -> mean 0.25, sample std sqrt((0.75² + 3 x 0.25²) / 3) = 0.5
    # -> advantages 1.5, -0.5, -0.5, -0.5; a second group all passed -> 0 each
    records = [
        _record(1.0, [([5, 6], [7, 8, 9]), ([5, 6, 10], [11])]),
        _record(0.0, []),  # the episode ended before the critic spoke: in the baseline, nothing to train
        _record(0.0, [([5], [12, 13])]),
        _record(0.0, [([5], [14])]),
        *[_record(1.0, [([5], [15])]) for _ in range(4)],
    ]
    rewards = torch.tensor([caddie.record_reward(r) for r in records])
    advantages = group_advantages(rewards, [i // 4 for i in range(8)])
    assert advantages.tolist() == pytest.approx([1.5, -0.5, -0.5, -0.5, 0.0, 0.0, 0.0, 0.0], abs=1e-5)

    items = caddie.critic_items(records, advantages, tokenizer=None)  # sampled ids: nothing is re-rendered
    assert [a for _, a in items] == pytest.approx([1.5, 1.5, -0.5, -0.5, 0.0, 0.0, 0.0, 0.0], abs=1e-5)
    first, second = items[0][0], items[1][0]
    assert first.input_ids == [5, 6, 7, 8, 9] and first.mask == [0, 0, 1, 1, 1]
    assert second.input_ids == [5, 6, 10, 11] and second.mask == [0, 0, 0, 1]
    for episode, _ in items:  # the actor's sampled tokens are never in a critic example, let alone trained
        assert all(i not in ACTOR_IDS for i in episode.input_ids)
        assert episode.meta["role"] == "critic"


def test_the_loss_and_its_gradient_sit_on_the_critics_tokens_only() -> None:
    records = [_record(1.0, [([5, 6], [7, 8, 9])]), _record(0.0, [([5, 6, 10], [11, 12])])]
    advantages = group_advantages(torch.tensor([1.0, 0.0]), [0, 0])  # (1 − 0.5) / std 0.7071 = ±0.7071
    items = caddie.critic_items(records, advantages, tokenizer=None)
    batch = collate([e for e, _ in items], pad_id=0)  # input_ids (2, 5): [5 6 7 8 9], [5 6 10 11 12]
    mask = batch["mask"][:, 1:]  # (B, T-1): the positions predicting tokens 2.. of each row
    assert mask.tolist() == [[0, 1, 1, 1], [0, 0, 1, 1]]
    logp = torch.full((2, 4), -1.0, requires_grad=True)  # (B, T-1)
    adv = torch.tensor([a for _, a in items])
    loss, metrics = grpo_loss(logp, logp.detach(), adv, mask, aggregation="token-mean")
    # ratio 1 everywhere: loss = −Σ mask·A / Σ mask = −(3 × 0.7071 − 2 × 0.7071) / 5
    a = 1 / 2**0.5
    assert float(loss.detach()) == pytest.approx(-(3 * a - 2 * a) / 5, abs=1e-5) and metrics["tokens"] == 5
    loss.backward()
    # d loss / d logp = −A / 5 on the critic's tokens, exactly 0 on its prompt (the transcript of the actor's turns)
    torch.testing.assert_close(logp.grad, torch.tensor([[0, -a / 5, -a / 5, -a / 5], [0, 0, a / 5, a / 5]]), atol=1e-6, rtol=0)


def test_the_critic_speaks_on_its_cadence_and_after_a_failed_turn() -> None:
    opening = make_step(index=0, source="env", message="go")
    one = [opening, _actor_step(1)]
    two = [*one, _critic_step(2, [1], [2]), _actor_step(3)]
    failed = [opening, _actor_step(1, failed=True)]
    every_two = CriticTurns(model=None, every=2)
    assert critic_trigger(every_two, one) is None and critic_trigger(every_two, two) == "schedule"  # the critic's own turn is not counted
    assert critic_trigger(every_two, failed) is None
    assert critic_trigger(CriticTurns(model=None, every=2, on_error=True), failed) == "error"
    assert critic_trigger(CriticTurns(model=None, every=1, on_error=True), failed) == "error"  # error wins, as in the runner's Crew
    assert critic_trigger(CriticTurns(model=None, every=1), [opening]) is None  # nothing to advise on yet


def test_config_refuses_a_silent_critic_and_groups_of_one_by_name() -> None:
    with pytest.raises(ConfigError, match="critic_every=0: the critic would never speak") as caught:
        make_config("caddie", {"model": "m", "critic_every": 0})
    assert caught.value.fields == ["critic_every"]
    with pytest.raises(ConfigError, match="group_size=1"):
        make_config("caddie", {"model": "m", "group_size": 1})
    with pytest.raises(ConfigError, match="actor_temperature=-0.5"):
        make_config("caddie", {"model": "m", "actor_temperature": -0.5})
    assert make_config("caddie", {"model": "m", "critic_every": 0, "critic_on_error": True}).critic_every == 0
    assert "actor" in caddie.CaddieConfig.MODEL_PATH_FIELDS  # the lab confines the actor's path like the model's


@pytest.mark.slow
def test_a_tiny_run_trains_the_critic_leaves_the_actor_frozen_and_saves_its_config(
    tiny_path: Path, tokenizer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    frozen: list[Any] = []
    real_load = caddie.load_model

    def load_and_keep(*args: Any, **kwargs: Any) -> Any:
        loaded = real_load(*args, **kwargs)
        frozen.append(loaded[0])
        return loaded

    def reward_from_the_advice(record: dict[str, Any]) -> float:
        # the random tiny actor never passes; a reward read from the critic's sampled ids gives every group a spread
        seen.append(record)
        return sum(t for s in record["steps"] if s.get("role") == "critic" for t in s["token_ids"]) % 7 / 7

    monkeypatch.setattr(caddie, "load_model", load_and_keep)
    monkeypatch.setattr(caddie, "record_reward", reward_from_the_advice)
    config = {
        "model": str(tiny_path),
        "output_dir": str(tmp_path / "run"),
        "task": "toolgym/lookup",
        "max_steps": 1,
        "tasks_per_step": 1,
        "group_size": 2,
        "max_turns": 2,
        "max_new_tokens": 8,
        "critic_max_new_tokens": 6,
        "eval_episodes": 1,
        "eval_every": 0,
        "learning_rate": 1e-2,
        "device": "cpu",
    }
    metrics: dict[str, float] = {}
    result = run_recipe("caddie", config, on_metric=lambda step, name, value: metrics.__setitem__(name, value))
    assert result.steps == 1 and result.final_checkpoint

    # the critic advised after the actor's first turn (not after its last: the episode was over), and the actor's
    # next prompt ids carry the advice as a marked user turn
    record = seen[0]
    assert [s.get("role") for s in record["steps"][1:]] == [None, "critic", None]
    advice, after = record["steps"][2], tokenizer.decode(record["steps"][3]["prompt_token_ids"])
    assert advice["meta"] == {"trigger": "schedule", "advises_step": 1} and advice["prompt_token_ids"]
    assert after.endswith(f"<|im_start|>user\nCritic: {advice['message']}<|im_end|>\n<|im_start|>assistant\n")
    (actor_view,) = tokenize_record(record, tokenizer)  # the actor's sequence: the advice is context, never trained
    trained = [i for i, m in zip(actor_view.input_ids, actor_view.mask, strict=True) if m]
    assert trained == record["steps"][1]["token_ids"] + record["steps"][3]["token_ids"]
    assert metrics["critic_turns"] >= 1 and 0.0 <= metrics["groups_with_signal"] <= 1.0 and metrics["tokens"] > 0

    # only the critic moved: its checkpoint differs from the base, the frozen actor's weights do not
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_path).state_dict()
    trained = AutoModelForCausalLM.from_pretrained(result.final_checkpoint).state_dict()
    assert any(not torch.equal(base[k], trained[k]) for k in base)
    (actor,) = frozen
    assert all(not p.requires_grad for p in actor.parameters())
    assert all(torch.equal(base[k], v) for k, v in actor.state_dict().items())

    saved = json.loads((Path(result.final_checkpoint) / "training_config.json").read_text())
    assert saved["recipe"] == "caddie" and saved["config"]["critic_every"] == 1 and saved["config"]["actor"] == ""
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert "eval_no_critic_pass_rate" in rows[0] and "eval_pass_rate" in rows[0] and "eval_pass_rate" in rows[-1]
