"""The decode engine (training/decode.py) against HF generate on the real model: one run, same model, same prompts.

    python benchmarks/engine.py [--model var/models/smollm2-135m-instruct] [--new-tokens 64] [--turns 20]
    python benchmarks/engine.py --grpo-turns 6 --gradient-checkpointing [--grad-accum 8]

1. Decode throughput, 8 concurrent StoreBench-short episodes (their opening prompts, compact tool listing as the
   SmolLM2 zoo entry samples them): HF generate one sequence at a time, HF generate batched (left-padded), the engine
   (continuous batching). Every sequence samples exactly --new-tokens tokens (no early end-of-turn), temperature 1;
   the clock covers the prefill and the decode, as a rollout turn does. Targets: engine >= 5x one-at-a-time, >= 1.5x batched.
   Where the prompts are one (a GRPO group: the same scenario's opening), "engine, forked" prefills it once and forks it,
   as the sampler does.
2. A --turns-turn episode with scripted tool results (each turn samples 32 tokens, then a fixed ~60-token tool result
   and the next generation prompt are appended): the engine keeping its cache vs re-prefilling the whole history
   every turn (HF generate, as training.sampling did). Target >= 3x at the last turn.
3. The physical limit: this machine's measured bf16 and fp32 matmul rate now (a 512x576 @ 576x1536 product, the
   model's MLP shape), and each decode figure's share of it (2 x parameters x tokens/s).

   `--compile` adds "engine, torch.compile": each decoder layer's MLP compiled (inductor, dynamic shapes: the
   engine's ragged batch changes the row count every step; the attention loop over sessions cannot be traced as one
   graph), timed alternately with the eager engine (two repeats each), its compile time printed apart.

4. `--grpo-turns N [--gradient-checkpointing]` runs one GRPO step through the recipe instead (StoreBench-short, group
   of 8, LoRA r16, fp32 on CPU): wall time, peak RSS, and the step's on-policy check.

Threads: every figure runs with torch threads = training.decode.free_cores() at the start (printed), the setting
the engine itself uses: on a shared machine a thread waiting for a busy core stalls each matmul by ~6 ms.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.data import PromptStyle  # noqa: E402
from training.decode import DecodeEngine, bf16_supported, free_cores  # noqa: E402
from training.sampling import _group_sessions, _render, _start  # noqa: E402

TASK = "storebench-short/cold-snap-2d"
NO_EOS = -1  # throughput runs sample every token up to the limit


def matmul_rate(dtype: torch.dtype, seconds: float = 2.0) -> float:
    a = torch.randn(512, 576, dtype=dtype)
    b = torch.randn(576, 1536, dtype=dtype)
    for _ in range(3):
        a @ b
    n, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        a @ b
        n += 1
    return 2 * 512 * 576 * 1536 * n / (time.perf_counter() - started)


def hf_one(model: torch.nn.Module, prompt: list[int], new: int, pad_id: int) -> list[int]:
    out = model.generate(
        input_ids=torch.tensor([prompt]),
        attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
        max_new_tokens=new,
        min_new_tokens=new,
        do_sample=True,
        top_k=0,
        top_p=1.0,
        temperature=1.0,
        pad_token_id=pad_id,
    )
    return out[0, len(prompt) :].tolist()


def hf_batched(model: torch.nn.Module, prompts: list[list[int]], new: int, pad_id: int) -> None:
    width = max(map(len, prompts))
    ids = torch.tensor([[pad_id] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=new,
        min_new_tokens=new,
        do_sample=True,
        top_k=0,
        top_p=1.0,
        temperature=1.0,
        pad_token_id=pad_id,
    )


def timed(fn: object) -> float:
    started = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(Path(__file__).resolve().parents[1] / "var/models/smollm2-135m-instruct"))
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--grpo-turns", type=int, default=0, help="instead: one GRPO step (group of 8, LoRA r16) of this many turns")
    parser.add_argument("--grpo-task", default=TASK, help="the GRPO step's task (default: the StoreBench-short scenario)")
    parser.add_argument("--gradient-checkpointing", action="store_true")
    parser.add_argument("--compile", action="store_true", help="also time the engine with torch.compile'd MLPs")
    parser.add_argument("--grad-accum", type=int, default=1, help="GRPO: the group's episodes in this many micro-batches (peak memory)")
    args = parser.parse_args()
    if args.grpo_turns:
        grpo_step(args.model, args.grpo_turns, args.gradient_checkpointing, args.grad_accum, args.grpo_task)
        return
    from transformers import AutoModelForCausalLM, AutoTokenizer

    threads = free_cores()
    torch.set_num_threads(threads)
    dtype = torch.bfloat16 if bf16_supported() else torch.float32
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, torch threads {threads}, "
        f"cpu capability {torch.backends.cpu.get_cpu_capability()}, bf16 native {bf16_supported()}; torch {torch.__version__}"
    )
    rates = {"bf16": matmul_rate(torch.bfloat16), "fp32": matmul_rate(torch.float32)}
    print(f"matmul rate now: bf16 {rates['bf16'] / 1e9:.1f} GFLOP/s, fp32 {rates['fp32'] / 1e9:.1f} GFLOP/s")
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=dtype).eval()
    params = sum(p.numel() for p in model.parameters())
    rate = rates["bf16" if dtype == torch.bfloat16 else "fp32"]
    style = PromptStyle(compact_tools=True, max_result_chars=600)
    prompts = [_start(TASK, seed, tokenizer, None, style, 40).prompt_ids for seed in range(args.episodes)]
    new = args.new_tokens
    print(
        f"model: {Path(args.model).name}, {params / 1e6:.1f}M parameters, {dtype}; {len(prompts)} prompts of "
        f"{min(map(len, prompts))}-{max(map(len, prompts))} tokens ({TASK}, {len(set(map(tuple, prompts)))} distinct), "
        f"{new} new tokens each"
    )

    def share(tok_s: float) -> str:
        return f"{2 * params * tok_s / rate:.1%} of the matmul rate"

    torch.manual_seed(0)
    figures: dict[str, float] = {}
    with torch.inference_mode():
        hf_one(model, prompts[0][:64], 4, tokenizer.pad_token_id)  # warm-up
        total = new * len(prompts)
        figures["hf one-at-a-time"] = total / timed(lambda: [hf_one(model, p, new, tokenizer.pad_token_id) for p in prompts])
        figures["hf batched"] = total / timed(lambda: hf_batched(model, prompts, new, tokenizer.pad_token_id))
        engine = DecodeEngine(model, eos_id=NO_EOS)
        figures["engine"] = total / timed(
            lambda: engine.generate([engine.session() for _ in prompts], prompts, max_new_tokens=new, temperature=1.0)
        )
        if len(set(map(tuple, prompts))) < len(prompts):  # a GRPO group: the sampler prefills the shared prompt once and forks it
            figures["engine, forked"] = total / timed(
                lambda: engine.generate(_group_sessions(engine, prompts), prompts, max_new_tokens=new, temperature=1.0)
            )
    if args.compile:
        figures.update(compiled_figures(model, prompts, new))
    print(f"\n1. decode, {len(prompts)} concurrent episodes (prefill + {new} tokens each), tokens/s:")
    for name, value in figures.items():
        print(f"   {name:<18} {value:7.1f}  ({share(value)})")
    print(
        f"   engine / one-at-a-time = {figures['engine'] / figures['hf one-at-a-time']:.2f}x (target 5x); "
        f"engine / batched = {figures['engine'] / figures['hf batched']:.2f}x (target 1.5x)"
    )

    # 2. one long episode: scripted tool results appended after each turn
    live = _start(TASK, 0, tokenizer, None, style, 40)
    result = '{"ok": true, "day": 1, "orders_fulfilled": 12, "stock": {"scarf": 40, "boots": 7}, "cash": 18250.5, "note": "done"}'
    closed = _render(tokenizer, [*live.messages, {"role": "assistant", "content": "x"}], [], False)
    following = _render(tokenizer, [*live.messages, {"role": "assistant", "content": "x"}, {"role": "tool", "content": result}], [], True)
    tool_ids = list(tokenizer(following[len(closed) :], add_special_tokens=False)["input_ids"])
    turn_new = 32
    engine = DecodeEngine(model, eos_id=NO_EOS)
    session = engine.session()
    cached_times, plain_times = [], []
    prompt = list(live.prompt_ids)
    with torch.inference_mode():
        for _ in range(args.turns):
            started = time.perf_counter()
            [(ids, _)] = engine.generate([session], [prompt], max_new_tokens=turn_new, temperature=1.0)
            cached_times.append(time.perf_counter() - started)
            plain_times.append(timed(lambda p=prompt: hf_one(model, p, turn_new, tokenizer.pad_token_id)))
            prompt = prompt + ids + [tokenizer.eos_token_id] + tool_ids
    print(
        f"\n2. one {args.turns}-turn episode ({turn_new} sampled + {len(tool_ids) + 1} scripted tokens a turn; "
        f"{len(live.prompt_ids)} -> {len(prompt)} tokens of context), seconds per turn:"
    )
    for turn in sorted({0, args.turns // 2 - 1, args.turns - 1}):
        print(
            f"   turn {turn + 1:>2}: engine (cache kept) {cached_times[turn]:6.2f}   re-prefill (HF generate) {plain_times[turn]:6.2f}   "
            f"= {plain_times[turn] / cached_times[turn]:.2f}x"
        )
    print(
        f"   whole episode: engine {sum(cached_times):.1f} s, re-prefill {sum(plain_times):.1f} s = "
        f"{sum(plain_times) / sum(cached_times):.2f}x; at turn {args.turns}: {plain_times[-1] / cached_times[-1]:.2f}x (target 3x)"
    )


def compiled_figures(model: torch.nn.Module, prompts: list[list[int]], new: int) -> dict[str, float]:
    """Decode tokens/s of the eager engine and of the engine with every layer's MLP under torch.compile, timed
    alternately (eager, compiled, eager, compiled: a busy spell falls on both); the model is left eager."""
    engine = DecodeEngine(model, eos_id=NO_EOS)
    eager = [layer.mlp for layer in engine.layers]
    compiled = [torch.compile(mlp, dynamic=True) for mlp in eager]

    def use(mlps: list[torch.nn.Module]) -> None:
        for layer, mlp in zip(engine.layers, mlps, strict=True):
            layer.mlp = mlp

    def run() -> float:
        return (
            new
            * len(prompts)
            / timed(lambda: engine.generate([engine.session() for _ in prompts], prompts, max_new_tokens=new, temperature=1.0))
        )

    figures: dict[str, list[float]] = {"engine (eager, alternating)": [], "engine, torch.compile": []}
    with torch.inference_mode():
        use(compiled)
        started = time.perf_counter()
        engine.generate([engine.session() for _ in prompts[:2]], [p[:64] for p in prompts[:2]], max_new_tokens=4, temperature=1.0)
        print(f"torch.compile: first use (tracing and compiling 30 MLPs, 2 shapes) {time.perf_counter() - started:.1f} s")
        for _ in range(2):
            use(eager)
            figures["engine (eager, alternating)"].append(run())
            use(compiled)
            figures["engine, torch.compile"].append(run())
    use(eager)
    return {name: sum(values) / len(values) for name, values in figures.items()}


def grpo_step(model: str, turns: int, gradient_checkpointing: bool, grad_accum: int = 1, task: str = TASK) -> None:
    """One GRPO step on `task` (StoreBench-short by default) through the recipe (a 1-episode greedy evaluation before and after included):
    wall time, this process's peak RSS, and the step's on-policy check."""
    import json
    import resource
    import tempfile

    from training import run_recipe

    out = Path(tempfile.mkdtemp())
    config = {
        "model": model,
        "task": task,
        "tasks_per_step": 1,
        "group_size": 8,
        "max_turns": turns,
        "max_new_tokens": 64,
        "eval_episodes": 1,
        "eval_every": 0,
        "max_steps": 1,
        "lora_r": 16,
        "gradient_checkpointing": gradient_checkpointing,
        "grad_accum": grad_accum,
        "compact_tools": True,
        "max_result_chars": 600,
        "output_dir": str(out),
    }
    started = time.perf_counter()
    run_recipe("grpo", config)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(
        f"GRPO step ({task}, up to {turns} turns, group of 8 in {grad_accum} micro-batches, LoRA r16, gradient checkpointing {gradient_checkpointing}): "
        f"{time.perf_counter() - started:.0f} s with two 1-episode evaluations, peak RSS {peak:.2f} GB"
    )
    row = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    print(
        {k: row[k] for k in ("tokens", "onpolicy_logprob_diff", "onpolicy_kl", "turns_mean") if k in row}, f"load {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    main()
