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
"""

from __future__ import annotations

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

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
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={"tasks_per_step": 16, "group_size": 4, "grad_accum": 4, "max_new_tokens": 128, "gradient_checkpointing": True},
            steps=3,
        ),
    )
)
