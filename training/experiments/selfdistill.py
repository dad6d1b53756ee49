"""The self-distillation family of issue 18, part A: SELF and coached self-distillation.

    python -m training.experiments self-lookup --smoke          # SELF vs SDPO vs GRPO on toolgym/lookup
    python -m training.experiments self-servicedesk --smoke     # the same on the service desk (roaming-on)
    python -m training.experiments coached --smoke              # coached vs outcome-conditioned vs no training
    python -m training.experiments NAME --base PATH             # the full comparison -> training/README.md

Every arm learns from its own episodes; the teacher is the policy itself given privileged context (self_distill's
`teacher_context`, training/self_teacher.py), so no `--teacher` is read. Every arm plays the same rollouts per
step (tasks_per_step x group_size in `shared`), the same steps and the same learning-rate grid.

- self-lookup / self-servicedesk: does modelling the environment's responses (SELF: feedback-conditioned teacher
  + feedback-modeling loss) add to self-distillation from the same teacher (sdpo), and does either beat GRPO on
  the score alone? The service desk is a conversation: its responses are mostly the rule user's replies
  (training.sampling lets the environment's RuleUser answer every spoken turn).
- coached: is a teacher that reads the coach's notes (what the user was about to need, at the turn that could
  have anticipated it) a better signal than one that reads the outcome? "none" evaluates the start checkpoint.

The service desk's held-out split here is by seed (other customers, other records) on one training template;
generalisation to the dev/test templates is not measured (an on-policy config plays one task).
Sizing: the service desk's first prompt is ~514 tokens with the compact prompt style (24 tools by name) and ~5.4k
with full JSON schemas (tiny tokenizer), so `max_prompt_tokens` is 8192 and a zoo base should be compact.
"""

from __future__ import annotations

from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

SELF = {"teacher_context": "feedback", "feedback_modeling": True, "feedback_coef": 0.1}
SDPO = {"teacher_context": "feedback", "feedback_modeling": False}
GRPO: dict[str, Any] = {}  # clip 0.2/0.28, no KL: the recipe's defaults
ROLLOUTS = {"temperature": 1.0, "train_seed_start": 0, "train_seeds": 1000, "eval_episodes": 8, "eval_every": 0}
TUNING: dict[str, tuple[Any, ...]] = {"learning_rate": (2e-5, 2e-4)}  # the same two points for every arm, chosen on dev seeds
# The self-teacher's (B, T, V) logits of a whole step are held until the update (as in opd): at Qwen's 152k vocabulary
# that is rollouts x T x 152k x 2 bytes, ~12 GB for 64 lookup episodes (T ~600) and ~29 GB for 32 service-desk calls
# (T ~3k), hence fewer calls per step there. Not measured on a GPU yet.
GPU_OVERRIDES = {"tasks_per_step": 16, "group_size": 4, "grad_accum": 4, "gradient_checkpointing": True}


def self_arms() -> tuple[Arm, ...]:
    return (
        Arm("self", "self_distill", SELF, "feedback-conditioned self-teacher (reverse KL) + 0.1 x NLL of the environment's responses"),
        Arm("sdpo", "self_distill", SDPO, "the same self-teacher alone: reverse KL to the policy given the environment's responses"),
        Arm("grpo", "grpo", GRPO, "GRPO on the environment's score, groups of the same rollouts"),
        Arm("none", "none", {}, "no training: the start checkpoint (what every arm moved from)"),
    )


register(
    Experiment(
        name="self-lookup",
        question="Does training the policy to predict the environment's responses (SELF) add to self-distillation from a "
        "feedback-conditioned self-teacher, and do both beat GRPO, on toolgym/lookup at equal rollouts and steps?",
        method="self",
        arms=self_arms(),
        shared={
            "task": "toolgym/lookup",
            "max_steps": 8,  # sized to this session's CPU (2 shared cores): each run ~1 min
            "tasks_per_step": 4,
            "group_size": 4,
            "max_turns": 4,
            "max_new_tokens": 48,
            **ROLLOUTS,
        },
        evaluation=Evaluation(
            task="toolgym/lookup", dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48
        ),
        tuning=TUNING,
        smoke={"max_steps": 2, "tasks_per_step": 2, "group_size": 2, "max_new_tokens": 16, "eval_episodes": 4},
        needs_teacher=False,
        gpu=GpuConfig(architecture=QWEN3_1_7B, overrides={**GPU_OVERRIDES, "max_new_tokens": 128, "max_prompt_tokens": 2048}, steps=3),
    )
)

DESK = "servicedesk/roaming-on"  # a training template: a short call (identify, verify, confirm, act), 7 oracle turns
DESK_SHARED = {
    "task": DESK,
    "max_steps": 6,  # sized to this session's CPU: a call is ~10 turns of up to 96 tokens
    "tasks_per_step": 2,
    "group_size": 4,
    "max_turns": 10,
    "max_new_tokens": 96,
    "max_prompt_tokens": 8192,
    "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
    "max_result_chars": 300,
    **ROLLOUTS,
}
DESK_EVAL = Evaluation(
    task=DESK, dev_seeds=(50_000, 50_016), test_seeds=(100_000, 100_032), max_turns=10, max_new_tokens=96, components=True
)
DESK_SMOKE = {"max_steps": 1, "tasks_per_step": 1, "group_size": 2, "max_turns": 2, "max_new_tokens": 8, "eval_episodes": 2}
DESK_GPU = GpuConfig(
    architecture=QWEN3_1_7B, overrides={**GPU_OVERRIDES, "tasks_per_step": 8, "grad_accum": 8, "max_new_tokens": 192}, steps=3
)

register(
    Experiment(
        name="self-servicedesk",
        question="Does SELF (feedback-conditioned self-teacher + feedback modelling) beat the self-teacher alone and GRPO on "
        "the service desk, where the environment's responses are mostly the caller's replies?",
        method="self",
        arms=self_arms(),
        shared=DESK_SHARED,
        evaluation=DESK_EVAL,
        tuning={"learning_rate": (2e-4,)},  # one point: every call scores 0 at the start, so dev seeds cannot choose
        smoke=DESK_SMOKE,
        needs_teacher=False,
        gpu=DESK_GPU,
    )
)

register(
    Experiment(
        name="coached",
        question="On the service desk, does a self-teacher conditioned on the rule coach's notes (at the turns they anticipate) "
        "teach more than one conditioned on the outcome, and more than no training?",
        method="coached",
        arms=(
            Arm(
                "coached",
                "self_distill",
                {"teacher_context": "coach", "coach": "rule-coach"},
                "self-teacher given the coach's notes, each before the turn it anticipates",
            ),
            Arm("outcome", "self_distill", {"teacher_context": "outcome"}, "self-teacher given the outcome and every response (hindsight)"),
            Arm("none", "none", {}, "no training: the start checkpoint"),
        ),
        shared=DESK_SHARED,
        evaluation=DESK_EVAL,
        tuning={"learning_rate": (2e-4,)},  # one point: every call scores 0 at the start, so dev seeds cannot choose
        smoke=DESK_SMOKE,
        needs_teacher=False,
        gpu=DESK_GPU,
    )
)
