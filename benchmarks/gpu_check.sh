#!/usr/bin/env bash
# On a CUDA machine: a few bf16 SFT and GRPO steps of a small random-init Qwen3 model, printing tokens/s and
# peak GPU memory; each experiment's arms at Qwen3-1.7B size; a 1-GPU FSDP2 run through torchrun (NCCL) checked
# against the one-process run and the scaling benchmark on CUDA; vLLM rollouts and the vLLM generation pool
# (a dev-mode server reloading pushed snapshots) when the `gpu` extra (vllm) is installed.
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
# 1-GPU FSDP2 through torchrun (NCCL): same losses as the one-process run (bf16: within 2%), its checkpoint loads
"$PY" - <<'PYEOF'
import json, tempfile
from pathlib import Path
from training import run_recipe
from training.tiny import build_tiny_model
from training.scripted import scripted_episodes
from training.evidence.common import write_records
from environments.toolgym.anchors import ExpertPolicy
from transformers import AutoModelForCausalLM
work = Path(tempfile.mkdtemp(prefix="gpu-fsdp-"))
model = str(build_tiny_model(work / "model", hidden_size=512, num_layers=8, num_heads=8, num_kv_heads=4))
demos = str(write_records(work / "demos.jsonl", scripted_episodes(ExpertPolicy(), "toolgym/lookup", range(32))))
base = {"model": model, "data": demos, "max_steps": 4, "batch_size": 8, "grad_accum": 2, "max_tokens": 1024, "learning_rate": 1e-4}
one = run_recipe("sft", {**base, "output_dir": str(work / "one")})
fsdp = run_recipe("sft", {**base, "output_dir": str(work / "fsdp"), "parallel": "fsdp", "processes": 1})
losses = [[json.loads(l)["loss"] for l in (work / name / "metrics.jsonl").read_text().splitlines()] for name in ("one", "fsdp")]
print("fsdp x1 losses", losses[1], "one-process", losses[0])
assert all(abs(a - b) <= 0.02 * abs(a) for a, b in zip(*losses)), losses
AutoModelForCausalLM.from_pretrained(fsdp.final_checkpoint)
print("fsdp x1: ok, checkpoint", fsdp.final_checkpoint)
PYEOF
"$PY" benchmarks/train_scaling.py --device cuda --parallel fsdp --processes 1 --hidden 1024 --layers 8 --batch 8 --seq 1024 --grad-accum 2
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
  # the vLLM generation pool: a dev-mode server on ROOT/current, reloading each pushed snapshot (training/generation_pool.py)
  POOL=$(mktemp -d)
  PORT=$("$PY" -c "from training.launch import free_port; print(free_port())")
  "$PY" - "$POOL" <<'PYEOF'
import sys, torch
from pathlib import Path
from training.generation_pool import publish_snapshot
from training.modeling import load_model
from training.tiny import build_tiny_model
root = Path(sys.argv[1])
for seed in (0, 1):
    build_tiny_model(root / f"seed{seed}", seed=seed, hidden_size=512, num_layers=8, num_heads=8, num_kv_heads=4)
model, tokenizer = load_model(str(root / "seed0"), device=torch.device("cpu"), trainable=False)
publish_snapshot(model, tokenizer, root / "policy", 0)
PYEOF
  VLLM_SERVER_DEV_MODE=1 "$PY" -m vllm.entrypoints.openai.api_server --model "$POOL/policy/current" --served-model-name policy \
    --host 127.0.0.1 --port "$PORT" --gpu-memory-utilization 0.3 --enforce-eager > "$POOL/vllm.log" 2>&1 &
  VLLM_PID=$!
  trap 'kill $VLLM_PID 2>/dev/null || true' EXIT
  for _ in $(seq 1 180); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 2; done
  "$PY" - "$POOL" "http://127.0.0.1:$PORT" <<'PYEOF'
import sys, torch
from pathlib import Path
from training.generation_pool import VLLMServerPool
from training.modeling import load_model
root, url = Path(sys.argv[1]), sys.argv[2]
pool = VLLMServerPool(root / "policy", [url])
jobs = [("toolgym/lookup", s) for s in range(8)]
options = {"max_turns": 2, "max_new_tokens": 32, "temperature": 0.0}
seen = []
for version, folder in enumerate(["seed0", "seed1"]):
    model, tokenizer = load_model(str(root / folder), device=torch.device("cpu"), trainable=False)
    pool.push(model, tokenizer, version=version)  # writes v00000N, moves current, POST /collective_rpc reload_weights
    records = pool.submit(jobs, version=version, seed=0, options=options).result()
    assert {r["header"]["meta"]["policy_version"] for r in records} == {version}
    seen.append([s.get("token_ids") for r in records for s in r["steps"]])
assert seen[0] != seen[1], "the server still samples the old weights after reload_weights"
print("vllm pool: 2 versions pushed and served; greedy samples changed with the weights")
pool.close()
PYEOF
  kill $VLLM_PID 2>/dev/null || true
else
  echo "vllm not installed (the gpu extra): skipping vLLM rollouts and the vLLM pool"
fi
