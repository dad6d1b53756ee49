"""The decode engine (training.decode) against plain HF generate on tiny Llama and Qwen3 models."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import torch

from training.config import ConfigError
from training.decode import DecodeEngine, check_token_budget, kv_bytes_per_token
from training.sampling import hf_generate, rollout_episodes

EOS = 2


class _Tok:
    """Just what generate needs of a tokenizer."""

    eos_token_id = EOS
    pad_token_id = 0


@pytest.fixture(scope="module")
def llama() -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        initializer_range=0.3,
        eos_token_id=EOS,
        pad_token_id=0,
        bos_token_id=1,
    )
    return LlamaForCausalLM(config).eval()


@pytest.fixture(scope="module")
def qwen3() -> Any:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(1)
    config = Qwen3Config(
        vocab_size=300,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        initializer_range=0.3,
        eos_token_id=EOS,
        pad_token_id=0,
    )
    return Qwen3ForCausalLM(config).eval()


def _prompts(lengths: list[int], seed: int = 0) -> list[list[int]]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 300, (n,), generator=g).tolist() for n in lengths]


def _greedy(model: Any, prompt: list[int], n: int) -> list[int]:
    [(ids, _)] = hf_generate(model, _Tok(), [prompt], max_new_tokens=n, temperature=0)
    return ids


@pytest.mark.parametrize("name", ["llama", "qwen3"])
def test_continuous_batching_gives_the_tokens_of_plain_greedy_generate(name: str, request: Any) -> None:
    model = request.getfixturevalue(name)
    prompts = _prompts([3, 41, 9, 77, 18, 5])
    expected = [_greedy(model, p, 20) for p in prompts]
    assert len({tuple(e) for e in expected}) == len(expected) and all(len(set(e)) > 2 for e in expected)  # varied output
    # two running at a time and a prefill chunk of 7: sequences are admitted while others decode, prompts span steps
    engine = DecodeEngine(model, eos_id=EOS, max_batch=2, prefill_chunk=7)
    got = engine.generate([engine.session() for _ in prompts], prompts, max_new_tokens=20, temperature=0)
    assert [ids for ids, _ in got] == expected
    # no padding: every forward fed only real tokens (each prompt once, each sampled token but the last once)
    assert engine.stats["fed_tokens"] == sum(len(p) for p in prompts) + sum(len(e) - 1 for e in expected)


@pytest.mark.parametrize("name", ["llama", "qwen3"])
def test_the_cache_kept_across_turns_prefills_only_the_new_tokens_and_changes_nothing(name: str, request: Any) -> None:
    model = request.getfixturevalue(name)
    engine = DecodeEngine(model, eos_id=EOS)
    sessions = [engine.session(), engine.session()]
    prompts = _prompts([12, 30], seed=3)
    for turn in range(4):
        fed_before = engine.stats["fed_tokens"]
        cached = [len(s) for s in sessions]
        got = engine.generate(sessions, prompts, max_new_tokens=8, temperature=0)
        for prompt, (ids, _) in zip(prompts, got, strict=True):
            assert ids == _greedy(model, prompt, 8), f"turn {turn}"
        if turn:  # only the tool result's tokens (and the turn's last sampled token) were prefilled
            assert engine.stats["fed_tokens"] - fed_before == sum(len(p) - c for p, c in zip(prompts, cached, strict=True)) + sum(
                len(ids) - 1 for ids, _ in got
            )
        tool_results = _prompts([5 + turn, 11 - turn], seed=10 + turn)
        prompts = [p + ids + result for p, (ids, _), result in zip(prompts, got, tool_results, strict=True)]
    # a prompt that does not extend the cache keeps only the shared prefix
    edited = prompts[0][:20] + [7, 8, 9]
    [(ids, _)] = engine.generate([sessions[0]], [edited], max_new_tokens=8, temperature=0)
    assert ids == _greedy(model, edited, 8)


def test_a_forked_group_prompt_is_prefilled_once_and_every_branch_matches_generate(llama: Any) -> None:
    engine = DecodeEngine(llama, eos_id=EOS)
    [shared] = _prompts([50], seed=5)
    parent = engine.session()
    engine.prefill(parent, shared)
    assert engine.stats["fed_tokens"] == 50
    children = engine.fork(parent, 3)
    branches = [shared + tail for tail in _prompts([2, 6, 4], seed=6)]
    got = engine.generate(children, branches, max_new_tokens=12, temperature=0)
    assert [ids for ids, _ in got] == [_greedy(llama, b, 12) for b in branches]
    assert engine.stats["reused_tokens"] == 3 * 50
    assert parent.ids == shared  # the children's turns left the parent's cache alone


def test_sampled_logprobs_equal_a_full_forward_within_1e_4(qwen3: Any) -> None:
    engine = DecodeEngine(qwen3, eos_id=EOS, max_batch=3, prefill_chunk=16)
    prompts = _prompts([7, 33, 20], seed=8)
    torch.manual_seed(0)
    got = engine.generate([engine.session() for _ in prompts], prompts, max_new_tokens=16, temperature=0.7)
    for prompt, (ids, logprobs) in zip(prompts, got, strict=True):
        full = torch.tensor([prompt + ids])
        with torch.no_grad():
            logits = qwen3(full).logits[0, len(prompt) - 1 : -1].float() / 0.7
        expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids)[:, None]).squeeze(-1)
        assert torch.allclose(torch.tensor(logprobs), expected, atol=1e-4), (logprobs, expected.tolist())


def test_a_small_budget_applies_back_pressure_and_drops_idle_caches_not_results(llama: Any) -> None:
    prompts = _prompts([20, 25, 30, 22], seed=9)
    engine = DecodeEngine(llama, eos_id=EOS, token_budget=70)  # room for two sequences at once (prompt + 10 new)
    idle = engine.session()
    engine.prefill(idle, _prompts([15], seed=11)[0])
    seen = []
    real_step = engine.step

    def step() -> Any:
        out = real_step()
        seen.append(len(engine.running) + len(out))
        return out

    engine.step = step  # type: ignore[method-assign]
    got = engine.generate([engine.session() for _ in prompts], prompts, max_new_tokens=10, temperature=0)
    assert [ids for ids, _ in got] == [_greedy(llama, p, 10) for p in prompts]
    assert max(seen) == 2 and engine.stats["dropped_caches"] >= 1 and len(idle) == 0
    with pytest.raises(ValueError, match="token_budget 70"):
        engine.submit(engine.session(), prompts[0] * 4, max_new_tokens=10, temperature=0)


def test_a_budget_beyond_memory_is_refused_with_the_figure_that_fits(llama: Any) -> None:
    per_token = kv_bytes_per_token(llama)
    assert per_token == 2 * 2 * 2 * 16 * 4  # layers x (k, v) x kv heads x head dim x fp32
    with pytest.raises(ValueError, match=r"token_budget 1,000,000,000,000 needs .* GiB .* tokens fit in 50% of the available memory"):
        DecodeEngine(llama, eos_id=EOS, token_budget=10**12)
    with pytest.raises(ValueError, match="smaller than one sequence"):
        check_token_budget(llama, 100, max_sequence=4096 + 64)


def test_a_folder_budget_is_checked_from_its_config_and_a_run_budget_reaches_the_engines(llama: Any, tmp_path: Any) -> None:
    from training import decode
    from training.onpolicy import OnPolicyConfig

    llama.config.save_pretrained(tmp_path)  # config.json only: nothing is loaded to check a run's budget
    assert decode.folder_token_budget_problem(tmp_path, 4096) is None
    problem = decode.folder_token_budget_problem(tmp_path, 10**12)
    assert problem and "tokens fit in 50% of the available memory" in problem
    try:
        decode.set_run_token_budget(5000)
        assert decode.engine_for(llama, type("T", (), {"eos_token_id": EOS})()).token_budget == 5000
    finally:
        decode.set_run_token_budget(0)
    assert decode.engine_for(llama, type("T", (), {"eos_token_id": EOS})()).token_budget >= 4096  # the memory default
    with pytest.raises(ConfigError, match=r"decode_token_budget=100: must be 0 or hold one sequence"):
        OnPolicyConfig(decode_token_budget=100)


def test_rollouts_through_the_engine_record_what_hf_generate_records(tiny_path: Any, monkeypatch: Any) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_path).eval()
    jobs = [("toolgym/lookup", 1), ("toolgym/lookup", 1), ("toolgym/lookup", 2)]
    engine = rollout_episodes(model, tokenizer, jobs, max_turns=3, max_new_tokens=12, temperature=0)
    monkeypatch.setenv("PRACTICUM_DECODE_ENGINE", "0")
    plain = rollout_episodes(model, tokenizer, jobs, max_turns=3, max_new_tokens=12, temperature=0)
    for a, b in zip(engine, plain, strict=True):
        agent = [(s["prompt_token_ids"], s["token_ids"]) for s in a["steps"][1:]]
        assert agent == [(s["prompt_token_ids"], s["token_ids"]) for s in b["steps"][1:]] and len(agent) == 3
        for sa, sb in zip(a["steps"][1:], b["steps"][1:], strict=True):
            assert sa["logprobs"] == pytest.approx(sb["logprobs"], abs=1e-4)


def test_an_environment_that_raises_ends_only_its_episode_and_frees_its_cache(tiny_path: Any, monkeypatch: Any) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    import training.sampling as sampling

    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    model = AutoModelForCausalLM.from_pretrained(tiny_path).eval()
    real_make = sampling.make

    def make(task: str, seed: int, **kwargs: Any) -> Any:
        env = real_make(task, seed, **kwargs)
        if seed == 7:
            env.step = lambda call: (_ for _ in ()).throw(RuntimeError("the warehouse database is gone"))
        return env

    monkeypatch.setattr(sampling, "make", make)
    engines: list[Any] = []
    real_engine_for = sampling.engine_for
    monkeypatch.setattr(sampling, "engine_for", lambda *a, **k: engines.append(real_engine_for(*a, **k)) or engines[-1])
    call = '<tool_call>{"name": "lookup", "arguments": {"item": "box"}}</tool_call>'
    jobs = [("toolgym/lookup", 6), ("toolgym/lookup", 7), ("toolgym/lookup", 8)]
    # the first turn is a forced valid call (so the broken environment's step is reached), the others are sampled
    records = rollout_episodes(
        model,
        tokenizer,
        jobs,
        max_turns=3,
        max_new_tokens=8,
        temperature=1.0,
        router=lambda record: call if len(record["steps"]) == 1 else None,
    )
    broken = records[1]["header"]
    assert broken["termination_reason"] == "env_error" and broken["termination_cause"]["message"] == "the warehouse database is gone"
    assert broken["score"]["composite"] == 0.0 and len(records[1]["steps"]) == 1
    for record in (records[0], records[2]):
        assert record["header"]["termination_reason"] != "env_error" and len(record["steps"]) >= 2
    assert len(engines) == 1 and engines[0].stats["sampled_tokens"] > 0
    assert all(len(s) == 0 and s.kv is None for s in engines[0].sessions)  # every cache released when its episode ended


REAL_MODEL = Path(os.environ.get("PRACTICUM_SMOLLM2", Path(__file__).resolve().parents[2] / "var/models/smollm2-135m-instruct"))


@pytest.mark.slow
@pytest.mark.skipif(not (REAL_MODEL / "config.json").exists(), reason="SmolLM2-135M-Instruct is not in the model store")
def test_on_the_real_model_the_engine_samples_what_generate_does_over_two_turns() -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(REAL_MODEL)
    model = AutoModelForCausalLM.from_pretrained(REAL_MODEL, dtype=torch.float32).eval()  # fp32: exact argmax ties aside
    chats = [
        [{"role": "user", "content": "Name three colours."}],
        [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "What is 2 + 2? Then say why."}],
    ]
    prompts = [tokenizer.apply_chat_template(c, add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"] for c in chats]
    engine = DecodeEngine(model, eos_id=tokenizer.eos_token_id)
    sessions = [engine.session() for _ in prompts]
    for _turn in range(2):
        got = engine.generate(sessions, prompts, max_new_tokens=12, temperature=0)
        expected = hf_generate(model, tokenizer, prompts, max_new_tokens=12, temperature=0)
        assert [ids for ids, _ in got] == [ids for ids, _ in expected]
        for (_, a), (_, b) in zip(got, expected, strict=True):
            assert a == pytest.approx(b, abs=1e-3)
        follow = tokenizer("<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n", add_special_tokens=False)["input_ids"]
        prompts = [
            p + ids + ([] if ids[-1] == tokenizer.eos_token_id else [tokenizer.eos_token_id]) + follow
            for p, (ids, _) in zip(prompts, got, strict=True)
        ]
