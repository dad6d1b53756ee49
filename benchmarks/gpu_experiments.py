"""Each experiment's arms at a real model's size on CUDA: tokens/s, step time and peak memory per arm.

    .venv/bin/python benchmarks/gpu_experiments.py              # every registered experiment with a GpuConfig
    .venv/bin/python benchmarks/gpu_experiments.py graphopd     # one of them

No weights can be downloaded here, so the model is randomly initialised with the experiment's GpuConfig
architecture (Qwen3-1.7B) and the tiny tokenizer (the model's vocabulary may exceed the tokenizer's: sampled
ids past it decode to nothing, which only makes the tool calls invalid). The student and the teacher are two
such models (seeds 0 and 1). Rewards mean nothing here; throughput and memory do. Exits 0 with a message
when no CUDA device exists.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def build_random_model(folder: Path, architecture: dict[str, Any], seed: int) -> Path:
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig, Qwen3Config

    from training.tiny import build_tokenizer

    tokenizer = build_tokenizer()
    config = Qwen3Config(**architecture, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    torch.manual_seed(seed)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    torch.cuda.empty_cache()
    return folder


def arm_config(experiment: Any, arm: Any, student: Path, teacher: Path, work: Path, *, prepare: Any = None) -> dict[str, Any]:
    """The arm's recipe config for the GPU run: shared + arm + first grid point + GPU overrides (+ what the
    experiment's `prepare` makes, as the runner adds it; `prepare` replaces that function), restricted to the fields
    the arm's recipe has (an SFT-family recipe has no `task` or `eval_seed_start`)."""
    import dataclasses

    from training import recipe_config_class
    from training.experiments.runner import grid_points

    gpu = experiment.gpu
    config = {**experiment.shared, **arm.overrides, **grid_points(experiment.tuning)[0], **gpu.overrides}
    config.update(model=str(student), max_steps=gpu.steps, eval_every=0, eval_episodes=1, output_dir=str(work / arm.name))
    config["eval_seed_start"] = experiment.evaluation.dev_seeds[0]
    config.setdefault("task", experiment.evaluation.task)  # an experiment that trains on other tasks keeps them (storebench-loop)
    if experiment.needs_teacher:
        config["teacher"] = str(teacher)
    if experiment.prepare:
        from training.experiments.runner import dotted_function

        config.update((prepare or dotted_function(experiment.prepare))(experiment, config))
    known = {f.name for f in dataclasses.fields(recipe_config_class(arm.recipe))}
    return {name: value for name, value in config.items() if name in known}


def run_arm(experiment: Any, arm: Any, student: Path, teacher: Path, work: Path) -> str:
    import torch

    from training import run_recipe

    config = arm_config(experiment, arm, student, teacher, work)
    step_started: dict[int, float] = {}
    tokens: list[float] = []

    def on_metric(step: int, name: str, value: float) -> None:
        step_started.setdefault(step, time.perf_counter())
        if name == "tokens":
            tokens.append(value * config.get("grad_accum", 1))

    torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    result = run_recipe(arm.recipe, config, on_metric=on_metric)
    torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    shutil.rmtree(work / arm.name, ignore_errors=True)  # a 1.7B checkpoint per arm is not worth the disk
    marks = [step_started[s] for s in sorted(step_started)]
    step_s = (marks[-1] - marks[0]) / max(len(marks) - 1, 1)
    peak = torch.cuda.max_memory_allocated() / 2**30
    return (
        f"{experiment.name}/{arm.name}: {result.steps} steps in {seconds:.1f}s | step {step_s:.1f}s | "
        f"trained tokens/s {sum(tokens) / seconds:,.0f} | peak memory {peak:.1f} GiB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("name", nargs="?", default="", help="one experiment (default: all with a GpuConfig)")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("gpu_experiments: no CUDA device; nothing to measure", file=sys.stderr)
        return 0
    from training.experiments import get, load_all

    chosen = [get(args.name)] if args.name else [e for e in load_all().values() if e.gpu is not None]
    work = Path(tempfile.mkdtemp(prefix="gpu-experiments-"))
    try:
        for experiment in chosen:
            assert experiment.gpu is not None, f"{experiment.name} has no GpuConfig"
            student = build_random_model(work / f"{experiment.name}-student", experiment.gpu.architecture, seed=0)
            teacher = build_random_model(work / f"{experiment.name}-teacher", experiment.gpu.architecture, seed=1)
            print(
                f"{experiment.name}: {torch.cuda.get_device_name(0)}, {experiment.gpu.architecture.get('num_hidden_layers')} layers, bf16"
            )
            for arm in experiment.arms:
                if arm.recipe == "none":  # evaluates the start checkpoint: nothing to train or measure
                    continue
                print(run_arm(experiment, arm, student, teacher, work), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
