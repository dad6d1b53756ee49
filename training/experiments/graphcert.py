"""GraphCert: does GRPO on the certified evidence rubric beat GRPO on the outcome alone?

    python -m training.experiments graphcert --smoke
    python -m training.experiments graphcert --base PATH          # base-small; no teacher needed

Two arms of training/recipes/grpo.py from one base on graphcert/lookup-train (Phantom knowledge-graph questions
with a verified certificate, environments/graphcert/), identical but for the reward each rollout is trained on:
`rubric` (the method; reward_component="rubric": half exact match, half the F1 of the cited edges against the
certificate, so a rollout that found and cited the proof but misnamed the answer still earns, and one that cites
everything it saw earns less than one that cites the proof) and `outcome` (the composite: exact match only).
The table's reward is the test task's composite, exact match, so the rubric arm is judged on the outcome it
was not directly trained for; the components (evidence precision, recall, F1, rubric) are reported beside it,
which is where a rubric-trained policy should differ first. Test: graphcert/lookup-test (test universes: no
entity name in common with training), greedy, 64 seeds.

Warm start (`prepare_start`): base-small has never seen the graph tools (greedy on lookup-dev it calls Phantom's
`search` every turn: valid-call rate 0), so GRPO from it would see reward 0 in every group under either reward
and compare nothing. Both arms therefore start from the same checkpoint: the base after WARM_STEPS_PER_STEP x
max_steps SFT steps on graphwalk demonstrations of graphcert/lookup-train (seeds DEMO_SEEDS: one in each of 256
universes, disjoint from the GRPO seeds), built once per (base, steps) and cached under var/experiments/graphcert/.
The demonstrations span many universes on purpose: a warm start on 64 seeds of one universe (the first version)
learned that universe's ids and names and cited them on the test universe (exact match and evidence F1 0.00).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

TRAIN_TASK = "graphcert/lookup-train"
# graphwalk demonstrations: one seed in each of 256 training universes (a universe is 100 consecutive seeds), so the
# warm start learns the tool protocol, not one universe's names; GRPO draws from seeds 0-999 (universes 0-9)
DEMO_SEEDS = range(20_000, 20_000 + 100 * 256, 100)
WARM_STEPS_PER_STEP = 16  # SFT steps before GRPO, per GRPO step: 128 for the full run (two passes), 32 for the smoke
WARM_BATCH = 4
WARM_LEARNING_RATE = 5e-4


def prepare_start(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: {"model": the warm-started checkpoint} (module docstring), the same for every arm."""
    from environments.policies import make_policy
    from environments.registry import make
    from environments.runner import run_episode
    from training import run_recipe
    from training.experiments.runner import prompt_style_of
    from training.zoo.build import var_root

    steps = WARM_STEPS_PER_STEP * int(values.get("max_steps", 1))
    prompt = prompt_style_of(values["model"], values)  # the base's own style (zoo.json), as the GRPO runs will use
    style = {"compact_tools": prompt.compact_tools, "max_result_chars": prompt.max_result_chars}
    key = {"model": str(values["model"]), "steps": steps, "seeds": [DEMO_SEEDS.start, DEMO_SEEDS.stop, DEMO_SEEDS.step], **style}
    folder = var_root() / "experiments" / "graphcert" / f"warm-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:10]}"
    done = folder / "start.json"
    if not done.exists():
        records = []
        for seed in DEMO_SEEDS:
            env = make(TRAIN_TASK, seed)
            records.append(run_episode(env, make_policy("graphwalk", env, seed)))
        folder.mkdir(parents=True, exist_ok=True)
        data = folder / "demonstrations.jsonl"
        data.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        config = {
            "model": str(values["model"]),
            "data": str(data),
            "max_steps": steps,
            "batch_size": WARM_BATCH,
            "max_tokens": 1024,
            "learning_rate": WARM_LEARNING_RATE,
            "seed": 0,
            "output_dir": str(folder / "sft"),
            **style,
        }
        run = run_recipe("sft", config)
        done.write_text(json.dumps({"checkpoint": run.final_checkpoint, **key}))  # written last: a complete start
    return {"model": json.loads(done.read_text())["checkpoint"]}


EXPERIMENT = register(
    Experiment(
        name="graphcert",
        question="Does GRPO with the certified evidence rubric as its reward beat GRPO on exact match alone, on held-out "
        "graph questions' exact match and on the precision and recall of the evidence the policy cites?",
        method="rubric",
        arms=(
            Arm("rubric", "grpo", {"reward_component": "rubric"}, "GRPO on 0.5 x exact match + 0.5 x evidence F1 against the certificate"),
            Arm("outcome", "grpo", {"reward_component": ""}, "GRPO on exact match alone (the task's composite)"),
        ),
        shared={
            "task": "graphcert/lookup-train",
            "max_steps": 8,  # sized to this session's CPU (2 shared cores)
            "tasks_per_step": 4,
            "group_size": 4,
            "temperature": 1.0,
            "max_turns": 4,  # the one-hop proof is lookup, node or neighbours, answer
            "max_new_tokens": 64,  # an answer call with two cited edges is ~40 tokens
            "train_seed_start": 0,
            "train_seeds": 1000,
            "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
            "max_result_chars": 600,
        },
        evaluation=Evaluation(
            task="graphcert/lookup-test",
            dev_seeds=(50_000, 50_032),
            test_seeds=(100_000, 100_064),
            max_turns=4,
            max_new_tokens=64,
            components=True,
        ),
        tuning={"learning_rate": (2e-5, 2e-4)},  # the same two points for every arm, chosen on dev seeds
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 2, "tasks_per_step": 2, "group_size": 2, "max_new_tokens": 24, "max_turns": 3, "eval_episodes": 4},
        needs_teacher=False,
        prepare="training.experiments.graphcert:prepare_start",
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={"tasks_per_step": 16, "group_size": 4, "grad_accum": 4, "max_new_tokens": 128, "gradient_checkpointing": True},
            steps=3,
        ),
    )
)
