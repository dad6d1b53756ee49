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

Utility on the options desk (`desk_measures`, beside the probe measures): the same choice probabilities on the
desk's own probes (optionsdesk/probe-insurance and probe-deal: a protective put at the chain's premium, a certain
share against the risky spread, stakes in credits of $100 over the desk's $1,000,000), their fitted a, and the
desk utility under the constitution's a: the expected certainty equivalent of the model's choice (Σ_k q_k CE_a(k),
credits, mean over probes) and the utility it gives up against the constitution's own choice (max_k CE_a(k) minus
that). And the certainty equivalent under a of the P&L of DESK_EPISODES greedy 10-day out-of-sample trading
episodes (optionsdesk/oos-short), each episode an equally likely outcome: what a desk run by the checkpoint is worth
to a CARA owner (0 for a model that never trades, negative for one that trades badly).
"""

from __future__ import annotations

from typing import Any

from environments.records import record_score
from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

TRAIN_TASK = "riskprobe/train-mix"
EVAL_TASK = "riskprobe/eval"  # mixed (dev split) and deal (test split): families the training never showed
DESK_PROBE_TASKS = ("optionsdesk/probe-insurance", "optionsdesk/probe-deal")
DESK_PROBES = 32  # desk probes per checkpoint (the first test seeds, alternating the two tasks)
DESK_TRADING_TASK = "optionsdesk/oos-short"
DESK_EPISODES = 8  # greedy trading episodes per checkpoint (the first test seeds; each up to DESK_MAX_TURNS turns)
DESK_MAX_TURNS = 24


def choice_decisions(model: Any, tokenizer: Any, jobs: list[tuple[str, int]], style: Any) -> list[tuple[Any, list[float]]]:
    """(probe, choice probabilities over its options) per (task, seed) job, read at the probe's first prompt."""
    import torch

    from environments.registry import make
    from environments.riskprobe.anchors import posed_probe
    from training.recipes.constitution import choice_logprobs
    from training.sampling import rollout_episodes

    with torch.no_grad():  # one generated token is enough to record the first prompt's ids
        records = rollout_episodes(model, tokenizer, jobs, max_turns=1, max_new_tokens=1, temperature=0.0, style=style)
        out = []
        for (task, seed), record in zip(jobs, records, strict=True):
            probe = posed_probe(make(task, seed))  # riskprobe's probes and the options desk's alike
            prompt = list(record["steps"][1]["prompt_token_ids"])
            out.append((probe, torch.softmax(choice_logprobs(model, tokenizer, prompt, probe.names), 0).tolist()))
    return out


def choice_utility(chosen: list[tuple[Any, list[float]]], a: float) -> tuple[float, float]:
    """(mean over probes of the choice's expected certainty equivalent Σ_k q_k CE_a(k), mean of max_k CE_a(k) minus it),
    in the probes' credits."""
    from environments.riskprobe.cara import certainty_equivalent

    values, gaps = [], []
    for probe, q in chosen:
        ce = [certainty_equivalent(a, lottery) for _, lottery in probe.options]
        values.append(sum(w * c for w, c in zip(q, ce, strict=True)))
        gaps.append(max(ce) - values[-1])
    return sum(values) / len(values), sum(gaps) / len(gaps)


def pnl_certainty_equivalent(pnls: list[float], a: float) -> float:
    """CE_a of the P&Ls (credits) taken as equally likely outcomes."""
    from environments.riskprobe.cara import certainty_equivalent

    return certainty_equivalent(a, tuple((1 / len(pnls), x) for x in pnls))


def desk_measures(model: Any, tokenizer: Any, style: Any, seeds: list[int], a: float) -> dict[str, float]:
    """The options-desk measures of the module docstring for one checkpoint."""
    import torch

    from environments.optionsdesk.probes import DOLLARS_PER_CREDIT
    from environments.optionsdesk.world import CAPITAL
    from environments.riskprobe.fit import Decision, fit_cara
    from training.sampling import rollout_episodes

    jobs = [(DESK_PROBE_TASKS[i % len(DESK_PROBE_TASKS)], s) for i, s in enumerate(seeds[:DESK_PROBES])]
    chosen = choice_decisions(model, tokenizer, jobs, style)
    fit = fit_cara([Decision(tuple(lottery for _, lottery in probe.options), tuple(q)) for probe, q in chosen])
    utility, gap = choice_utility(chosen, a)
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            [(DESK_TRADING_TASK, s) for s in seeds[:DESK_EPISODES]],
            max_turns=DESK_MAX_TURNS,
            max_new_tokens=48,
            temperature=0.0,
            style=style,
        )
    pnls = [float(record_score(r)["components"]["total_return"]) * CAPITAL / DOLLARS_PER_CREDIT for r in records]
    return {
        "desk fitted a": fit.a,
        "desk a 95% low": fit.low,
        "desk a 95% high": fit.high,
        "desk consistency": fit.consistency,
        "desk choice CE (credits)": utility,
        "desk CE given up (credits)": gap,
        "desk trading P&L CE (credits)": pnl_certainty_equivalent(pnls, a),
    }


def constitution_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: the fitted a (95% interval), consistency and P(the constitution's first choice) on EVAL_TASK,
    and the options-desk measures (desk_measures)."""
    from environments.riskprobe.anchors import CONSTITUTION_A
    from environments.riskprobe.fit import Decision, fit_cara
    from training.experiments.runner import evaluation_jobs, load_checkpoint, prompt_style_of
    from training.recipes.constitution import option_values

    model, tokenizer = load_checkpoint(checkpoint, base)
    style = prompt_style_of(base, values)
    chosen = choice_decisions(model, tokenizer, evaluation_jobs(EVAL_TASK, seeds), style)
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
        **desk_measures(model, tokenizer, style, seeds, a),
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
            Arm(
                "choice_flat",
                "constitution",
                {"loss": "choice", "base_temperature": 4.0},
                "the choice arm with the base flattened first (τ = 4), so the teacher can move off the base's favourite",
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
