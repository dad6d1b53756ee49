"""SFT steps on the real model: packed micro-batches against right-padded ones, one process per arm.

    python benchmarks/sft.py [--model var/models/smollm2-135m-instruct] [--steps 8] [--batch 4] [--max-tokens 1536]

The data is smol-base's training demonstrations (toolgym, Phantom, StoreBench-short, the service desk; made here by
training.zoo.build.demonstrations, about 30 s, or read from --data). Each arm runs the SFT recipe as the zoo runs it
(LoRA r16 on every linear layer, bf16 autocast where the CPU has it, the same seed, so the same episodes each step)
in its own process, so that its peak RSS is its own. Printed per arm: trained-sequence tokens read per second over
the steps after the first (input_tokens / wall), the rows' tokens per second including padding, peak RSS, and the
share of the machine's bf16 matmul rate (6 x parameters x tokens/s, the usual training estimate).

    padded   training.data.collate: every episode right-padded to the micro-batch's longest
    packed   training.data.collate_packed: episodes end to end in rows as long as the longest (the default)
    trl      TRL's SFTTrainer (the dev extra) on the same tokenized episodes (input_ids, labels -100 where our mask is
             0), the same LoRA, batch, learning rate and bf16 autocast on CPU; its own data order and padding collator
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

REPO = Path(__file__).resolve().parents[1]
ARMS = ("padded", "packed", "trl")


def demonstrations(path: Path) -> Path:
    if not path.exists():
        from training.zoo.build import demonstrations as make
        from training.zoo.specs import get_spec

        records = make(get_spec("smol-base"))
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def parameter_count(folder: Path) -> int:
    from math import prod

    from safetensors import safe_open

    with safe_open(str(folder / "model.safetensors"), framework="pt") as weights:
        return sum(prod(weights.get_slice(name).get_shape()) for name in weights.keys())  # noqa: SIM118 (not a dict)


def run_trl(args: argparse.Namespace) -> None:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    from training.data import read_records
    from training.recipes.sft import SFTConfig as OurConfig
    from training.recipes.sft import training_pairs

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    ours = OurConfig(model=args.model, data=args.data, max_tokens=args.max_tokens, compact_tools=True, max_result_chars=600)
    episodes = [e for _, e in training_pairs(read_records(args.data), tokenizer, ours)]
    rows = {
        "input_ids": [e.input_ids for e in episodes],
        "labels": [[t if m else -100 for t, m in zip(e.input_ids, e.mask, strict=True)] for e in episodes],
    }
    stamps: dict[int, float] = {}
    read: dict[int, int] = {}

    class Clock(TrainerCallback):
        def on_step_end(self, _args: Any, state: Any, _control: Any, **_kw: Any) -> None:
            stamps[state.global_step] = time.perf_counter()

    config = SFTConfig(
        output_dir=tempfile.mkdtemp(),
        max_steps=args.steps,
        per_device_train_batch_size=args.batch,
        learning_rate=3e-4,
        lr_scheduler_type="constant",
        bf16=True,
        use_cpu=True,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        max_length=args.max_tokens,
        seed=0,
        dataloader_num_workers=0,
        gradient_checkpointing=False,
    )
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    lora = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear", task_type="CAUSAL_LM")
    trainer = SFTTrainer(
        model=model, args=config, train_dataset=Dataset.from_dict(rows), processing_class=tokenizer, peft_config=lora, callbacks=[Clock()]
    )
    collate = trainer.data_collator

    def counting(examples: list[dict[str, Any]]) -> Any:
        read[len(read) + 1] = sum(len(e["input_ids"]) for e in examples)
        return collate(examples)

    trainer.data_collator = counting
    trainer.train()
    wall = stamps[args.steps] - stamps[1]
    tokens = sum(n for step, n in read.items() if 1 < step <= args.steps)
    print(
        json.dumps(
            {
                "arm": "trl",
                "wall_s": wall,
                "steps": args.steps - 1,
                "tokens_per_s": tokens / wall,
                "loss": next(float(h["loss"]) for h in reversed(trainer.state.log_history) if "loss" in h),
                "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                "threads": torch.get_num_threads(),
            }
        )
    )


def run_arm(arm: str, args: argparse.Namespace) -> None:
    import torch

    from training import run_recipe

    stamps: dict[int, float] = {}
    out = Path(tempfile.mkdtemp())
    config = {
        "model": args.model,
        "data": args.data,
        "max_steps": args.steps,
        "batch_size": args.batch,
        "max_tokens": args.max_tokens,
        "learning_rate": 3e-4,
        "lora_r": 16,
        "lora_alpha": 32,
        "cpu_bf16": True,
        "compact_tools": True,
        "max_result_chars": 600,
        "seed": 0,
        "device": "cpu",
        "pack": arm == "packed",
        "output_dir": str(out),
    }
    run_recipe("sft", config, on_metric=lambda step, name, value: stamps.setdefault(step, time.perf_counter()))
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
    timed = [r for r in rows if r["step"] > 1]
    wall = stamps[args.steps] - stamps[1]
    tokens = sum(r["input_tokens"] for r in timed)
    print(
        json.dumps(
            {
                "arm": arm,
                "wall_s": wall,
                "steps": len(timed),
                "tokens_per_s": tokens / wall,
                "loss": rows[-1]["loss"],
                "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                "threads": torch.get_num_threads(),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(REPO / "var/models/smollm2-135m-instruct"))
    parser.add_argument("--data", default=str(REPO / "var/bench/smol-base-demos.jsonl"))
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=1536)
    parser.add_argument("--arm", choices=ARMS, help="run one arm in this process (the parent runs each this way)")
    args = parser.parse_args()
    if args.arm:
        run_trl(args) if args.arm == "trl" else run_arm(args.arm, args)
        return
    Path(args.data).parent.mkdir(parents=True, exist_ok=True)
    demonstrations(Path(args.data))

    import torch

    from benchmarks.engine import matmul_rate
    from training.decode import bf16_supported

    params = parameter_count(Path(args.model))
    rate = matmul_rate(torch.bfloat16 if bf16_supported() else torch.float32)
    print(
        f"machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; matmul rate now {rate / 1e9:.1f} GFLOP/s; "
        f"{args.steps} steps of {args.batch} episodes cut to {args.max_tokens} tokens, LoRA r16, bf16 autocast"
    )
    results = {}
    for arm in ARMS:
        command = [
            sys.executable,
            __file__,
            "--arm",
            arm,
            "--model",
            args.model,
            "--data",
            args.data,
            "--steps",
            str(args.steps),
            "--batch",
            str(args.batch),
            "--max-tokens",
            str(args.max_tokens),
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
        lines = [line for line in done.stdout.splitlines() if line.startswith('{"arm"')]
        if not lines:
            print(f"{arm}: failed\n{done.stderr[-2000:]}")
            continue
        results[arm] = json.loads(lines[-1])
        r = results[arm]
        print(
            f"   {arm:<7} {r['tokens_per_s']:7.1f} tokens/s  peak RSS {r['peak_rss_gb']:.2f} GB  "
            f"({6 * params * r['tokens_per_s'] / rate:.1%} of the matmul rate; {r['steps']} timed steps, {r['wall_s']:.0f} s, "
            f"last loss {r['loss']:.3f}, {r['threads']} threads)"
        )
    for other in ("padded", "trl"):
        if "packed" in results and other in results:
            print(
                f"   packed / {other} = {results['packed']['tokens_per_s'] / results[other]['tokens_per_s']:.2f}x tokens/s, "
                f"{results['packed']['peak_rss_gb'] / results[other]['peak_rss_gb']:.2f}x peak RSS"
            )


if __name__ == "__main__":
    main()
