#!/usr/bin/env bash
# On a CUDA machine: a few bf16 SFT and GRPO steps of a small random-init Qwen3 model, printing tokens/s and
# peak GPU memory; each experiment's arms at Qwen3-1.7B size; and vLLM rollouts when the `gpu` extra (vllm) is installed.
#   bash benchmarks/gpu_check.sh            (from the repository root; PYTHON defaults to .venv/bin/python)
set -euo pipefail
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONPATH=${PYTHONPATH:-}:$(pwd)
"$PY" - <<'PYEOF'
import json, tempfile, time
from pathlib import Path
import torch
assert torch.cuda.is_available(), "gpu_check.sh needs a CUDA device"
from training import run_recipe
from training.tiny import build_tiny_model
from training.scripted import scripted_episodes
from training.evidence.common import write_records
from environments.toolgym.anchors import ExpertPolicy

work = Path(tempfile.mkdtemp(prefix="gpu-check-"))
model = str(build_tiny_model(work / "model", hidden_size=512, num_layers=8, num_heads=8, num_kv_heads=4))
print("device:", torch.cuda.get_device_name(0), "| model params:", sum(p.numel() for p in __import__("transformers").AutoModelForCausalLM.from_pretrained(model).parameters()))
demos = str(write_records(work / "demos.jsonl", scripted_episodes(ExpertPolicy(), "toolgym/lookup", range(256))))

def timed(recipe, config, token_key):
    torch.cuda.reset_peak_memory_stats()
    rows = []
    start = time.perf_counter()
    result = run_recipe(recipe, config, on_metric=lambda s, n, v: rows.append((s, n, v)))
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    tokens = sum(v for s, n, v in rows if n == token_key)
    peak = torch.cuda.max_memory_allocated() / 2**30
    print(f"{recipe}: {result.steps} steps in {seconds:.1f}s | trained tokens/s {tokens * config.get('grad_accum', 1) / seconds:,.0f} | peak memory {peak:.2f} GiB | dtype bf16")
    return result

timed("sft", {"model": model, "data": demos, "max_steps": 20, "batch_size": 32, "max_tokens": 1024, "learning_rate": 1e-4, "output_dir": str(work / "sft")}, "tokens")
timed("grpo", {"model": model, "task": "toolgym/lookup", "max_steps": 3, "tasks_per_step": 8, "group_size": 8, "max_new_tokens": 48, "eval_episodes": 8, "eval_every": 0, "output_dir": str(work / "grpo")}, "tokens")
PYEOF
"$PY" benchmarks/train_overhead.py --device cuda --steps 20 --batch 16 --seq 1024
# every experiment's arms at Qwen3-1.7B size (random weights): tokens/s, step time, peak memory per arm
"$PY" benchmarks/gpu_experiments.py
if "$PY" -c "import vllm" 2>/dev/null; then
  "$PY" - <<'PYEOF'
import tempfile, time
from pathlib import Path
from vllm import LLM, SamplingParams
from training.tiny import build_tiny_model
path = str(build_tiny_model(Path(tempfile.mkdtemp()) / "m", hidden_size=512, num_layers=8, num_heads=8, num_kv_heads=4))
llm = LLM(model=path, dtype="bfloat16", gpu_memory_utilization=0.3)
prompts = ["<|im_start|>user\nWhat is the color of the lamp?<|im_end|>\n<|im_start|>assistant\n"] * 256
start = time.perf_counter()
outs = llm.generate(prompts, SamplingParams(max_tokens=64, temperature=1.0))
n = sum(len(o.outputs[0].token_ids) for o in outs)
print(f"vllm: {n} tokens in {time.perf_counter() - start:.2f}s = {n / (time.perf_counter() - start):,.0f} tokens/s")
PYEOF
else
  echo "vllm not installed (the gpu extra): skipping vLLM rollouts"
fi
