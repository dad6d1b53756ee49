"""Noise-aware GUI priors on the desktop (issue 45): an agent shown a retrieved past trajectory (a prior) must follow
a right one and reject a wrong one; does training on prior-judging items teach that?

    python -m training.experiments gui-priors --smoke
    python -m training.experiments gui-priors --base smol-base --no-readme     # the full comparison (a bf16 machine)

How a prior reaches the agent: in the system prompt, as text (`prior_block`): "A past trajectory retrieved for a
similar task ..." and one numbered line per call, `name {json arguments}`, submit excluded.

Arms, every one the sft_grpo recipe with rl=False from the same base and the same SFT compute (sft_steps x
sft_batch_size records), on hybridcua's verified GUI records of the train tasks (seeds 0..k-1, drift none/low/high):
- no-priors: SFT on the records as they are (no prior in any prompt).
- priors: SFT on the same records, each with a right prior in its system prompt (its own calls: priors as given,
  always right, so following is all it learns).
- noise-aware: the priors arm's records mixed (the order shuffled by a fixed seed) with environments/desktop/
  explore_synth.py's prior-judging items: a synthesised task, the opening screen and a prior, clean ("right") or
  corrupted by one of the five drift kinds ("wrong"), from the systematic explorer on seeds 1..m (m = min(5, k)).

Evaluation: the table is desktop/test (buy-cheapest, errand) on seeds 1000-1023, no drift and no prior (success,
steps, shell share beside it). `prior_measures` plays the same seeds with a prior, for drift none and high:
- right prior: the GUI solver's calls on this very (task, seed, drift), kept only where they passed;
- wrong prior: the GUI solver's calls on the same task and seed at the other drift level (none <-> high): stale
  for this desktop; kept only where they differ from the right prior.
From each record: `success` (the grade passed); `right prior followed`: the agent's first k calls (name and
arguments) equal the right prior's k calls; `wrong prior rejected`: with j the first call where the wrong prior
departs from the right one, the agent's first j + 1 calls are not the wrong prior's first j + 1 (it did not take
the stale step). Rejection alone is cheap (an agent that ignores priors rejects every one): read it beside
success with a wrong prior and the follow rate.
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

from environments.records import Record, record_score
from training.experiments import QWEN3_1_7B, Arm, Experiment, GpuConfig, register
from training.experiments.hybridcua import DRIFTS, EVAL_TASK, HELD_OUT, LIMITS, MAX_TURNS, SFT_STAGE, SMOKE, SMOKE_SFT

DEMO_SEEDS = 200
DATA = ("gui-priors:none", "gui-priors:given", "gui-priors:noise-aware")
JUDGE_SEEDS = 5  # explore_synth's judging items: the systematic explorer on seeds 1..5 (README: 1,177 items)
JUDGE_BUDGET = 1000


def calls(record: Record) -> list[dict[str, Any]]:
    """The record's calls (name and arguments), submit excluded."""
    return [
        {"name": c["name"], "arguments": c["arguments"]}
        for s in record["steps"]
        if s["source"] == "agent"
        for c in s.get("tool_calls") or []
        if c["name"] != "submit"
    ]


def prior_block(prior: list[dict[str, Any]]) -> str:
    lines = [f"{n}. {c['name']} {json.dumps(c['arguments'], sort_keys=True)}" for n, c in enumerate(prior, 1)]
    return (
        "A past trajectory retrieved for a similar task (the desktop may have changed since: check each step against the "
        "screen before you repeat it):\n" + "\n".join(lines)
    )


def followed(agent: list[dict[str, Any]], prior: list[dict[str, Any]]) -> bool:
    return bool(prior) and agent[: len(prior)] == prior


def rejected(agent: list[dict[str, Any]], wrong: list[dict[str, Any]], right: list[dict[str, Any]]) -> bool:
    """Whether the agent left the wrong prior at or before the first call where it departs from the right one."""
    j = next((i for i, (w, r) in enumerate(zip(wrong, right, strict=False)) if w != r), min(len(wrong), len(right)))
    return agent[: j + 1] != wrong[: j + 1]


def judging_items(seeds: int, budget: int) -> list[dict[str, Any]]:
    from environments.desktop.explore import explore
    from environments.desktop.explore_synth import priors_dataset, synthesise

    items = []
    for seed in range(1, seeds + 1):
        for drift in ("none", "high"):
            items += priors_dataset(synthesise(explore("systematic", seed, drift, budget), seed=seed, drift=drift), seed=seed)
    return items


def data_file(kind: str, seeds: int) -> str:
    """The arm's SFT records on seeds [0, seeds), written once as JSONL under var/ (its name is its content)."""
    from pathlib import Path

    from training.experiments import hybridcua
    from training.zoo.build import var_root

    real = Path(hybridcua.data_file(("gui",), seeds))
    if kind == "gui-priors:none":
        return str(real)
    path = var_root() / "experiments" / "data" / f"{kind.replace(':', '-')}-0-{seeds}.jsonl"
    if not path.exists():
        records = [json.loads(line) for line in real.read_text().splitlines()]
        for r in records:
            harness = r["header"]["harness"]
            harness["system_prompt"] = f"{harness['system_prompt']}\n\n{prior_block(calls(r))}"
        if kind == "gui-priors:noise-aware":
            records += judging_items(min(JUDGE_SEEDS, seeds), min(JUDGE_BUDGET, max(100, 5 * seeds)))
            random.Random(f"gui-priors-{seeds}").shuffle(records)
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(f"{path}.tmp")
        partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records))
        partial.rename(path)  # a file under this name is always complete
    return str(path)


def prepare_data(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the arm's SFT records (its `data` names the arm's kind) -> {"data": path}."""
    assert values.get("data") in DATA, f"gui-priors: data must be one of {DATA}, got {values.get('data')!r}"
    needed = int(values.get("sft_steps", 1)) * int(values.get("sft_batch_size", 1))
    return {"data": data_file(str(values["data"]), min(DEMO_SEEDS, max(1, math.ceil(needed / (3 * len(DRIFTS))))))}


def prior_cases(seeds: list[int]) -> list[tuple[str, int, str, str, list[dict[str, Any]], list[dict[str, Any]]]]:
    """(task id, seed, drift, label, prior, right prior) for every test seed and drift none/high, as the docstring says."""
    from environments.desktop.hybrid import solve
    from training.experiments.runner import evaluation_jobs

    cases = []
    for task_id, seed in evaluation_jobs(EVAL_TASK, seeds):
        task = task_id.split("/", 1)[1]
        played = {d: solve("gui", task, seed, d) for d in ("none", "high")}
        for drift, other in (("none", "high"), ("high", "none")):
            right, stale = calls(played[drift]), calls(played[other])
            if record_score(played[drift]).get("passed"):
                cases.append((task_id, seed, drift, "right", right, right))
                if stale != right:
                    cases.append((task_id, seed, drift, "wrong", stale, right))
    return cases


def prior_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: the checkpoint's greedy play of the test seeds with a right or a wrong prior in its prompt."""
    import torch

    from environments.registry import make
    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.sampling import rollout_episodes, system_prompt_for

    model, tokenizer = load_checkpoint(checkpoint, base)
    sums: dict[str, list[float]] = {}
    for task_id, seed, drift, label, prior, right in prior_cases(seeds):
        options = {"drift": drift} if drift != "none" else {}
        with torch.no_grad():
            (record,) = rollout_episodes(
                model,
                tokenizer,
                [(task_id, seed)],
                max_turns=int(values.get("max_turns", MAX_TURNS)),
                max_new_tokens=int(values.get("max_new_tokens", 96)),
                temperature=0.0,
                system_prompt=f"{system_prompt_for(make(task_id, seed=seed, options=options or None))}\n\n{prior_block(prior)}",
                style=prompt_style_of(base, values),
                max_prompt_tokens=int(values.get("max_prompt_tokens", 4096)),
                env_options=options,
            )
        agent = calls(record)
        sums.setdefault(f"drift {drift} {label} prior success", []).append(float(bool(record_score(record).get("passed"))))
        if label == "right":
            sums.setdefault(f"drift {drift} right prior followed", []).append(float(followed(agent, prior)))
        else:
            sums.setdefault(f"drift {drift} wrong prior rejected", []).append(float(rejected(agent, prior, right)))
    return {name: sum(v) / len(v) for name, v in sorted(sums.items())}


GUI_PRIORS = register(
    Experiment(
        name="gui-priors",
        question="Does SFT on prior-judging items teach an agent to follow a right retrieved trajectory and reject a stale one, "
        "beyond SFT with priors as given and without priors, on held-out desktop tasks with and without drift?",
        method="noise-aware",
        arms=(
            Arm("no-priors", "sft_grpo", {"data": "gui-priors:none", "rl": False}, "SFT on verified GUI records, no prior in the prompt"),
            Arm("priors", "sft_grpo", {"data": "gui-priors:given", "rl": False}, "the same records with a right prior in the prompt"),
            Arm(
                "noise-aware",
                "sft_grpo",
                {"data": "gui-priors:noise-aware", "rl": False},
                "the priors arm's records mixed with prior-judging items (right, or wrong by a drift kind)",
            ),
        ),
        shared={**SFT_STAGE, **LIMITS, "eval_episodes": 8, "eval_every": 0},
        evaluation=HELD_OUT,
        measures="training.experiments.gui_priors:prior_measures",
        prepare="training.experiments.gui_priors:prepare_data",
        train_seeds=(0, 1, 2),
        smoke={**SMOKE_SFT, **SMOKE},
        needs_teacher=False,
        gpu=GpuConfig(architecture=QWEN3_1_7B, overrides={"sft_batch_size": 8, "max_new_tokens": 128, "gradient_checkpointing": True}),
    )
)
