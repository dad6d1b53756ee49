"""Constitution distillation (issue 21): is a written CARA risk preference, distilled on-policy into a student that
never reads it, visible in the student's choices on decisions the training never showed?

    python -m training.experiments constitution --smoke
    python -m training.experiments constitution --base PATH     # the full comparison -> training/README.md

Every arm starts from the same base. Training plays riskprobe/train-mix (lottery and insurance decisions);
everything reported is measured on riskprobe/eval, the mixed-gamble and deal-or-gamble families, on held-out seeds.
- constitution: the constitution recipe, computed teacher (the frozen base reweighted by exp(β CE_a / S) at the
  decision), episode-level reverse KL on the student's own sampled episodes.
- choice: the same teacher, the exact reverse KL over the offered options at the student's decision prompts (what
  a base that seldom makes a valid call still learns from).
- choice_flat: the same with base_temperature 4: a base nearly certain of one option (the tiny models prefer the
  option whose name tokenizes shortest) leaves the τ = 1 teacher almost where the base is, whatever β.
- none: the base itself.

The table's reward is the environment's composite, the share of held-out probes answered with a valid choice (a
risk preference has no right answer). `constitution_measures` adds, per checkpoint: the fitted absolute risk
aversion a (per credit) with its 95% profile-likelihood interval, the consistency of the choices with any single a,
and the mean probability of the option the constitution ranks first. Choices are the checkpoint's probabilities of
each option's canonical `choose` turn at the probe's first prompt, renormalised over the options (so a model that
rarely produces a valid call still has a measurable preference); the fit is environments/riskprobe/fit.py.

Not measured yet: utility on the options desk (environments/optionsdesk/, landing separately). The hook is this
module's `constitution_measures`: once that environment exists, add the certainty equivalent under the
constitution's a of each held-out options-desk episode's P&L beside the probe measures.
"""

from __future__ import annotations

from typing import Any

from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

TRAIN_TASK = "riskprobe/train-mix"
EVAL_TASK = "riskprobe/eval"  # mixed (dev split) and deal (test split): families the training never showed


def choice_decisions(model: Any, tokenizer: Any, jobs: list[tuple[str, int]], style: Any) -> list[tuple[Any, list[float]]]:
    """(probe, choice probabilities over its options) per (task, seed) job, read at the probe's first prompt."""
    import torch

    from environments.registry import get_task
    from environments.riskprobe.env import probe_for
    from training.recipes.constitution import choice_logprobs
    from training.sampling import rollout_episodes

    with torch.no_grad():  # one generated token is enough to record the first prompt's ids
        records = rollout_episodes(model, tokenizer, jobs, max_turns=1, max_new_tokens=1, temperature=0.0, style=style)
        out = []
        for (task, seed), record in zip(jobs, records, strict=True):
            probe = probe_for(get_task(task), seed)
            prompt = list(record["steps"][1]["prompt_token_ids"])
            out.append((probe, torch.softmax(choice_logprobs(model, tokenizer, prompt, probe.names), 0).tolist()))
    return out


def constitution_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: the fitted a (95% interval), consistency and P(the constitution's first choice) on EVAL_TASK."""
    from environments.riskprobe.anchors import CONSTITUTION_A
    from environments.riskprobe.fit import Decision, fit_cara
    from training.experiments.runner import evaluation_jobs, load_checkpoint, prompt_style_of
    from training.recipes.constitution import option_values

    model, tokenizer = load_checkpoint(checkpoint, base)
    chosen = choice_decisions(model, tokenizer, evaluation_jobs(EVAL_TASK, seeds), prompt_style_of(base, values))
    fit = fit_cara([Decision(tuple(lottery for _, lottery in probe.options), tuple(q)) for probe, q in chosen])
    a = float(values.get("risk_aversion", CONSTITUTION_A))
    first = [q[(v := option_values(probe, a)[0]).index(max(v))] for probe, q in chosen]
    return {
        "fitted a (per credit)": fit.a,
        "a 95% low": fit.low,
        "a 95% high": fit.high,
        "consistency": fit.consistency,
        "choice precision": fit.precision,
        "P(constitution's choice)": sum(first) / len(first),
    }


EXPERIMENT = register(
    Experiment(
        name="constitution",
        question="Does distilling a written CARA constitution (a = 0.002 per credit) on-policy into a student that never "
        "reads it move the student's fitted risk aversion towards a, consistently, on decision families the training "
        "never showed (mixed gambles, deal or gamble), compared with the base?",
        method="constitution",
        arms=(
            Arm("constitution", "constitution", {"loss": "sequence"}, "computed teacher, episode-level reverse KL on sampled episodes"),
            Arm(
                "choice", "constitution", {"loss": "choice"}, "computed teacher, exact reverse KL over the options at the decision prompts"
            ),
            Arm("none", "none", {}, "no training: the base"),
        ),
        shared={
            "task": TRAIN_TASK,
            "risk_aversion": 0.002,
            "beta": 30.0,
            "teacher_kind": "computed",
            "max_steps": 20,  # sized to this session's CPU (2 shared cores): each run a few minutes
            "tasks_per_step": 8,
            "group_size": 2,
            "learning_rate": 1e-4,  # one point, no grid: dev reward here is only the share of valid calls
            "max_turns": 2,
            "max_new_tokens": 48,
            "temperature": 1.0,
            "train_seed_start": 0,
            "train_seeds": 1000,
            "eval_episodes": 8,
            "eval_every": 0,
        },
        evaluation=Evaluation(task=EVAL_TASK, dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_128), max_turns=2, max_new_tokens=48),
        measures="training.experiments.constitution:constitution_measures",
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 1, "tasks_per_step": 2, "group_size": 1, "max_turns": 1, "max_new_tokens": 24, "eval_episodes": 2},
        needs_teacher=False,
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            overrides={
                "teacher_kind": "prompted",
                "tasks_per_step": 16,
                "group_size": 2,
                "gradient_checkpointing": True,
                "max_new_tokens": 128,
            },
        ),
    )
)
