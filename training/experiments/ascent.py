"""Does online test-time training (ASCENT) improve an agent along a stream of related tasks, and after it?

Three arms of training/recipes/ascent.py from one base, on the same stream (one attempt per task, greedy):
ascent distils each verified attempt from the frozen base given that attempt as privileged context into the
LoRA weights; sft takes cross-entropy steps on the same cleaned verified attempts (identical data, only the loss
differs); none plays the stream without adapting. The none arm runs the recipe with `update="none"` rather than
`recipe="none"` so that it has a stream curve too; its adapter stays at LoRA's zero initialisation, so its
held-out evaluation is the start checkpoint's. The table is the held-out evaluation after the stream; the
stream curve (`stream_passed`, `stream_pass_rate`, `stream_turns` per position) is in each run's metrics.jsonl,
and `python -m training.experiments.ascent [OUT]` prints it by stream quarter, mean +- CI over training seeds.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from environments.stats import ci95
from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

ASCENT = register(
    Experiment(
        name="ascent",
        question="Does distilling each verified attempt of a task stream into LoRA weights raise success along the stream and on held-out tasks, beyond online SFT on the same attempts?",
        method="ascent",
        arms=(
            Arm(
                "ascent",
                "ascent",
                {"update": "distill"},
                "forward KL to the frozen base shown the verified trajectory, after each verified task",
            ),
            Arm("sft", "ascent", {"update": "sft"}, "naive online SFT: cross-entropy on the same cleaned verified attempts"),
            Arm("none", "ascent", {"update": "none"}, "no adaptation: the same stream, played by the start checkpoint"),
        ),
        shared={
            "task": "toolgym/chain",
            "max_steps": 128,  # the stream: 128 tasks, one attempt each
            "train_seed_start": 0,
            "train_seeds": 1000,
            "temperature": 0.0,
            "steps_per_task": 4,
            "lora_r": 16,
            "lora_alpha": 32,
            "max_turns": 6,
            "max_new_tokens": 64,
        },
        evaluation=Evaluation(
            task="toolgym/chain", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_128), max_turns=6, max_new_tokens=64
        ),
        tuning={"learning_rate": (1e-3,)},  # one point, the same for every arm (LoRA, few updates: a high rate)
        train_seeds=(0, 1, 2),  # each seed draws its own stream order from the training seeds
        smoke={
            "max_steps": 3,
            "train_seeds": 8,
            "steps_per_task": 1,
            "lora_r": 4,
            "max_turns": 2,
            "max_new_tokens": 16,
            "eval_episodes": 1,
        },
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # bf16 base 3.4 GB, shared by student and teacher (the teacher is the base with the adapter disabled);
            # one trajectory of ~2k tokens: two (T, 151936) logit tensors, the KL in fp32 chunks: a few GB. A random
            # model never verifies, so the check exercises the attempts and the evaluation, not the update.
            overrides={"max_new_tokens": 128, "lora_r": 16, "steps_per_task": 4, "gradient_checkpointing": True},
            steps=3,
        ),
    )
)


def stream_table(out: Path, parts: int = 4) -> str:
    """Markdown: each arm's pass rate, reward and turns per task in each part of the stream (tasks in stream order),
    mean +- 95% CI over training seeds, read from the runs of `out`/experiment.json (the last full run's)."""
    result = json.loads((out / "experiment.json").read_text())
    lines = [
        "| arm | " + " | ".join(f"tasks {p + 1}/{parts}: pass, reward, turns" for p in range(parts)) + " |",
        "| --- |" + " --- |" * parts,
    ]
    for name, arm in result["arms"].items():
        per_seed: list[list[dict[str, float]]] = []  # seed -> its stream positions
        for run in arm["runs"]:
            rows = [
                json.loads(line) for line in (Path(run["checkpoint"]).parent / "metrics.jsonl").read_text().splitlines() if line.strip()
            ]
            per_seed.append([row for row in rows if "stream_passed" in row])
        cells = []
        for part in range(parts):
            figures = []
            for key in ("stream_passed", "stream_reward", "stream_turns"):
                means = []
                for stream in per_seed:
                    size = len(stream) // parts
                    chunk = stream[part * size : (part + 1) * size]
                    means.append(sum(row[key] for row in chunk) / max(len(chunk), 1))
                figures.append(f"{sum(means) / len(means):.2f} ± {ci95(means):.2f}")
            cells.append(", ".join(figures))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(stream_table(Path(sys.argv[1] if len(sys.argv) > 1 else "var/experiments/ascent")))
