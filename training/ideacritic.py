"""Idea critics as reward models: does a trained critic's screening buy better solutions per verification?

    python -m training.ideacritic --smoke                 # tiny model, a few seconds of training (in the suite)
    python -m training.ideacritic --base base-small       # the full run: tables -> training/README.md (ideacritic markers)

A standalone experiment (like training/aet.py) rather than an `Experiment` of the harness: the harness evaluates a
checkpoint by playing a task as the actor, and a critic does not play; it screens.

Training (per training seed): the ideacritic recipe (training/recipes/ideacritic.py) from the base, SFT then GRPO
on labelled proposals of improve/linear and improve/quadratic, training seeds 0-63.
Evaluation, on held-out seeds (100000-100031) of improve/quadratic (a training task) and improve/costly (the test
task, never trained on): each seed's twelve screening proposals (those of the environment's screened searches) and
a verification budget of k verifications, k in `budgets` (training/idea_screening.py):

- table 1, solution quality per budget: the environment's composite after verifying k proposals chosen by the
  trained critic, at random (a fresh random stream per training seed), or in proposal order (no screening); the
  heuristic critic (environments/improve/ideas.py), the untrained base as a critic and the oracle critic (true
  validation scores: the ceiling of screening) as references; critic - random and critic - in order paired over
  training seeds and test seeds.
- table 2, the critic as a classifier of the same proposals: accuracy, AUC, Brier against the verified labels.
- table 3, reward-model mode: per uncertainty band, the share of proposals sent to real verification and how well
  the routed reward agrees with the verified label (reward >= 0.5 on the label's side; mean |reward - label|).
- table 4, the reward model in policy training: two proposers trained by GRPO from the base (the ideapropose
  recipe, the same steps and samples), one rewarded by the critic with uncertain proposals verified (band 0.1),
  one with every proposal verified; the verifications each paid, and the share of the attainable validation
  gain reached by its greedy proposal on each held-out seed (0 when the answer does not parse).

Cells are mean +- 95% CI over training seeds (t-interval of per-seed means); deterministic arms have one value.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from training.experiments.standard import paired_difference, summarise


@dataclass(frozen=True)
class IdeaCriticSettings:
    train_tasks: tuple[str, ...] = ("improve/linear", "improve/quadratic")
    """Tasks the critic is trained on (the recipe's tasks)."""
    train_seeds: int = 64
    """Training (task) seeds 0..N-1 whose proposals are labelled."""
    eval_tasks: tuple[str, ...] = ("improve/quadratic", "improve/costly")
    """Tasks screened on held-out seeds: a training task and the test task."""
    test_seeds: tuple[int, int] = (100_000, 100_032)
    """[start, stop) of the held-out seeds screened and scored."""
    budgets: tuple[int, ...] = (1, 2, 3, 4, 6)
    """Verification budgets, in verifications (each pays verify_cost of the task)."""
    bands: tuple[float, ...] = (0.0, 0.1, 0.2, 0.3, 0.5)
    """Uncertainty bands of the reward-model mode, around ROUTE_THRESHOLD."""
    training_seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds of the critic (>= 3 in the full run)."""
    max_steps: int = 120
    """Optimizer steps per critic (SFT then GRPO)."""
    sft_steps: int = 80
    """Of which SFT."""
    batch_size: int = 16
    """SFT labelled proposals per step."""
    proposals_per_step: int = 8
    """GRPO proposals per step."""
    group_size: int = 4
    """GRPO answers per proposal."""
    learning_rate: float = 3e-4
    """Learning rate of both phases."""
    label_threshold: float = 0.5
    """Share of the attainable validation gain a proposal must reach to be labelled yes."""
    eval_seeds: int = 8
    """Held-out seeds per training task the recipe's own evaluation scores (seeds 50000+, logged while training)."""
    proposer_steps: int = 30
    """GRPO steps of each proposer (the ideapropose recipe), with the critic's routed reward or every proposal verified."""
    proposer_band: float = 0.1
    """The routed proposer's uncertainty band around P(yes) = 0.5."""
    proposer_seeds_per_step: int = 4
    """(task, seed) prompts per proposer step."""


FULL = IdeaCriticSettings()
SMOKE = IdeaCriticSettings(
    train_tasks=("improve/linear",),
    train_seeds=2,
    eval_tasks=("improve/costly",),
    test_seeds=(100_000, 100_002),
    budgets=(1, 2),
    bands=(0.0, 0.5),
    training_seeds=(0,),
    max_steps=2,
    sft_steps=1,
    batch_size=4,
    proposals_per_step=2,
    group_size=2,
    eval_seeds=1,
    proposer_steps=1,
    proposer_seeds_per_step=1,
)
ROUTE_THRESHOLD = 0.5  # the reward model's decision point: P(yes) = 0.5


def _train(base: str, out: Path, seed: int, settings: IdeaCriticSettings) -> str:
    from training import run_recipe

    values = {
        "model": base,
        "output_dir": str(out),
        "seed": seed,
        "tasks": list(settings.train_tasks),
        "train_seeds": settings.train_seeds,
        "max_steps": settings.max_steps,
        "sft_steps": settings.sft_steps,
        "batch_size": settings.batch_size,
        "proposals_per_step": settings.proposals_per_step,
        "group_size": settings.group_size,
        "learning_rate": settings.learning_rate,
        "label_threshold": settings.label_threshold,
        "eval_seeds": settings.eval_seeds,
    }
    result = run_recipe("ideacritic", values)
    assert result.final_checkpoint, f"ideacritic in {out} saved no checkpoint"
    return result.final_checkpoint


def _proposer(base: str, critic: str, out: Path, seed: int, settings: IdeaCriticSettings) -> tuple[str, float]:
    """Train a proposer (critic "" : every proposal verified); its final checkpoint and the verifications it paid."""
    from training import run_recipe

    values = {
        "model": base,
        "output_dir": str(out),
        "seed": seed,
        "critic": critic,
        "tasks": list(settings.train_tasks),
        "train_seeds": settings.train_seeds,
        "max_steps": settings.proposer_steps,
        "seeds_per_step": settings.proposer_seeds_per_step,
        "group_size": settings.group_size,
        "learning_rate": settings.learning_rate,
        "label_threshold": settings.label_threshold,
        "route_threshold": ROUTE_THRESHOLD,
        "route_band": settings.proposer_band,
    }
    result = run_recipe("ideapropose", values)
    assert result.final_checkpoint, f"ideapropose in {out} saved no checkpoint"
    return result.final_checkpoint, result.last_metrics["verifications_total"]


def _proposer_cells(folder: str, base: str, envs: dict[tuple[str, int], Any], settings: IdeaCriticSettings) -> dict[str, list[float]]:
    """Greedy proposals on the held-out seeds: per seed the share of the attainable validation gain (0 unparsed), parsed."""
    from environments.improve.model import evaluate
    from training.experiments.runner import load_checkpoint
    from training.recipes.ideacritic import normalised_gain, prompt_ids
    from training.recipes.ideapropose import parse_proposal, proposal_prompt
    from training.sampling import generate

    model, tokenizer = load_checkpoint(folder, base)
    prompts = [prompt_ids(tokenizer, proposal_prompt(env.n_features)) for env in envs.values()]
    answers = [
        tokenizer.decode(ids, skip_special_tokens=True)
        for ids, _ in generate(model, tokenizer, prompts, max_new_tokens=32, temperature=0.0)
    ]
    gains, parsed = [], []
    for env, answer in zip(envs.values(), answers, strict=True):
        change = parse_proposal(answer)
        parsed.append(float(change is not None))
        if change is None:
            gains.append(0.0)
            continue
        base_val, reference = evaluate(env.data, env.baseline, "val"), evaluate(env.data, env.reference, "val")
        gains.append(normalised_gain(evaluate(env.data, env.baseline.changed(change), "val"), base_val, reference))
    return {"gain": gains, "parsed": parsed}


def _critic_cells(folder: str, base: str, envs: dict[tuple[str, int], Any], settings: IdeaCriticSettings, pick_seed: int) -> dict[str, Any]:
    """Screening composites per (task, budget), the classification metrics and the routing figures of one model critic."""
    from environments.registry import get_task
    from training.experiments.runner import load_checkpoint
    from training.idea_screening import routed_rewards, screened_search, screening_changes
    from training.recipes.ideacritic import ModelCritic, critic_metrics, verified_proposals

    model, tokenizer = load_checkpoint(folder, base)  # a LoRA adapter over the base, too
    critics = {
        task: ModelCritic(model, tokenizer, n_features=int(get_task(task).spec["n_features"]), threshold=settings.label_threshold)
        for task in settings.eval_tasks
    }
    screening = {task: {str(k): [] for k in settings.budgets} for task in settings.eval_tasks}
    scores, labels = [], []
    for (task, seed), env in envs.items():
        for k in settings.budgets:
            screening[task][str(k)].append(
                screened_search(env, verifications=k, order="critic", critic=critics[task], pick_seed=pick_seed)["composite"]
            )
        proposals = verified_proposals(task, seed, screening_changes(env.n_features, seed), settings.label_threshold)
        scores += critics[task]([p.config for p in proposals])
        labels += [p.label for p in proposals]
    routing = {}
    for band in settings.bands:
        routed = routed_rewards(scores, lambda i: float(labels[i]), threshold=ROUTE_THRESHOLD, band=band)
        routing[str(band)] = {
            "verified": routed.verifications / len(scores),
            "agreement": sum((r >= 0.5) == bool(y) for r, y in zip(routed.rewards, labels, strict=True)) / len(scores),
            "error": sum(abs(r - y) for r, y in zip(routed.rewards, labels, strict=True)) / len(scores),
        }
    return {"screening": screening, "classifier": critic_metrics(scores, labels), "routing": routing}


def _baseline_cells(
    envs: dict[tuple[str, int], Any], settings: IdeaCriticSettings, order: str, critic: str = "", pick_seed: int = 0
) -> dict[str, dict[str, list[float]]]:
    """Screening composites per (task, budget) of a selector that needs no training: in order, random, heuristic, oracle."""
    from environments.improve.ideas import OracleCritic, heuristic_critic
    from training.idea_screening import screened_search

    cells: dict[str, dict[str, list[float]]] = {task: {str(k): [] for k in settings.budgets} for task in settings.eval_tasks}
    for (task, _), env in envs.items():
        scorer = {"heuristic": heuristic_critic, "oracle": OracleCritic(env)}.get(critic)
        for k in settings.budgets:
            cells[task][str(k)].append(screened_search(env, verifications=k, order=order, critic=scorer, pick_seed=pick_seed)["composite"])
    return cells


def run_ideacritic(base: str, out: Path, settings: IdeaCriticSettings, *, progress: bool = True) -> dict[str, Any]:
    """Train every critic, screen and score on the held-out seeds; the raw cells (per arm, training seed, task, budget)."""
    from environments.registry import make

    def say(text: str) -> None:
        if progress:
            print(text, file=sys.stderr, flush=True)

    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    envs = {(task, seed): make(task, seed) for task in settings.eval_tasks for seed in range(*settings.test_seeds)}
    screening: dict[str, dict[int, Any]] = {
        "in_order": {0: _baseline_cells(envs, settings, "in_order")},
        "heuristic": {0: _baseline_cells(envs, settings, "critic", "heuristic")},
        "oracle": {0: _baseline_cells(envs, settings, "critic", "oracle")},
        "random": {},
        "critic": {},
    }
    say("scoring the untrained base as a critic")
    base_cells = _critic_cells(base, base, envs, settings, pick_seed=0)
    screening["base"] = {0: base_cells["screening"]}
    classifier: dict[str, dict[int, Any]] = {"base": {0: base_cells["classifier"]}, "critic": {}}
    routing: dict[int, Any] = {}
    proposers: dict[str, dict[int, Any]] = {}
    for seed in settings.training_seeds:
        say(f"training the critic, seed {seed}")
        folder = _train(base, out / f"critic-seed{seed}", seed, settings)
        cells = _critic_cells(folder, base, envs, settings, pick_seed=seed)
        screening["critic"][seed], classifier["critic"][seed], routing[seed] = cells["screening"], cells["classifier"], cells["routing"]
        screening["random"][seed] = _baseline_cells(envs, settings, "random", pick_seed=seed)
        for arm, critic in (("routed", folder), ("verified", "")):
            say(f"training the {arm} proposer, seed {seed}")
            proposer, paid = _proposer(base, critic, out / f"proposer-{arm}-seed{seed}", seed, settings)
            proposers.setdefault(arm, {})[seed] = {**_proposer_cells(proposer, base, envs, settings), "verifications": paid}
    result = {
        "base": base,
        "settings": asdict(settings),
        "wall_s": round(time.time() - started, 1),
        "screening": screening,
        "classifier": classifier,
        "routing": routing,
        "proposers": proposers,
    }
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return result


def _cell(cells: dict[int, list[float]]) -> str:
    summary = summarise(cells)
    return f"{summary.mean:.3f} ± {summary.ci:.3f}" if summary.seeds > 1 else f"{summary.mean:.3f}"


def _cells(runs: dict[str, Any], task: str, budget: str) -> dict[int, list[float]]:
    """{training seed: composites over the test seeds} of one arm."""
    return {int(s): cells[task][budget] for s, cells in runs.items()}


def _paired(runs: dict[str, Any], seeds: list[int], task: str, budget: str) -> dict[int, list[float]]:
    """As _cells, a deterministic arm's single run standing for every training seed (to pair it with the critic)."""
    return {s: (runs.get(str(s)) or next(iter(runs.values())))[task][budget] for s in seeds}


def tables(result: dict[str, Any]) -> str:
    """The three tables as markdown (module docstring). `result` as read back from result.json (string keys)."""
    result = json.loads(json.dumps(result))  # the same string keys whether fresh or read back
    settings, screening = result["settings"], result["screening"]
    seeds = [int(s) for s in screening["critic"]]
    budgets = [str(k) for k in settings["budgets"]]
    lo, hi = settings["test_seeds"]
    lines = [
        f"Held-out seeds [{lo}, {hi}); composite after k verifications of the twelve screening proposals; "
        f"critic trained on {', '.join(settings['train_tasks'])} ({len(seeds)} training seeds).",
        "",
    ]
    for task in settings["eval_tasks"]:
        lines += [f"| {task} | " + " | ".join(f"k={k}" for k in budgets) + " |", "| --- |" + " --- |" * len(budgets)]
        for arm in ("critic", "random", "in_order", "heuristic", "base", "oracle"):
            lines.append(f"| {arm} | " + " | ".join(_cell(_cells(screening[arm], task, k)) for k in budgets) + " |")
        for other in ("random", "in_order"):
            diffs = [paired_difference(_cells(screening["critic"], task, k), _paired(screening[other], seeds, task, k)) for k in budgets]
            lines.append(f"| critic − {other} | " + " | ".join(f"{d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]" for d in diffs) + " |")
        lines.append("")
    classifier = result["classifier"]
    lines += ["| critic as a classifier | accuracy | AUC | Brier | positive rate |", "| --- | --- | --- | --- | --- |"]
    for arm in ("base", "critic"):
        cells = {int(s): c for s, c in classifier[arm].items()}
        lines.append(
            f"| {arm} | "
            + " | ".join(_cell({s: [c[m]] for s, c in cells.items()}) for m in ("accuracy", "auc", "brier", "positive_rate"))
            + " |"
        )
    routing = {int(s): r for s, r in result["routing"].items()}
    lines += [
        "",
        f"| reward model: band around {ROUTE_THRESHOLD} | verified share | reward agrees with label | mean abs error |",
        "| --- | --- | --- | --- |",
    ]
    for band in settings["bands"]:
        figures = [_cell({s: [r[str(float(band))][m]] for s, r in routing.items()}) for m in ("verified", "agreement", "error")]
        lines.append(f"| {band:g} | " + " | ".join(figures) + " |")
    if result.get("proposers"):
        lines += [
            "",
            "| proposer trained with | verifications paid in training | held-out gain of its greedy proposal | parsed |",
            "| --- | --- | --- | --- |",
        ]
        for arm, by_seed in result["proposers"].items():
            cells = {int(s): c for s, c in by_seed.items()}
            what = f"critic reward, band {settings.get('proposer_band', 0.1):g}" if arm == "routed" else "every proposal verified"
            figures = [
                _cell({s: [c["verifications"]] for s, c in cells.items()}),
                _cell({s: c["gain"] for s, c in cells.items()}),
                _cell({s: c["parsed"] for s, c in cells.items()}),
            ]
            lines.append(f"| {what} | " + " | ".join(figures) + " |")
        routed, verified = result["proposers"].get("routed"), result["proposers"].get("verified")
        if routed and verified:
            diff = paired_difference({int(s): c["gain"] for s, c in routed.items()}, {int(s): c["gain"] for s, c in verified.items()})
            lines.append(
                f"\nrouted − verified gain, paired over training and held-out seeds: {diff.mean:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}]."
            )
    if "base" in result:
        lines += ["", f"Base `{result['base']}`; {result['wall_s'] / 60:.1f} min."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from training.experiments.standalone import standalone_main

    return standalone_main(
        argv, name="ideacritic", description=__doc__.split("\n\n")[0], run=run_ideacritic, tables=tables, smoke=SMOKE, full=FULL
    )


if __name__ == "__main__":
    raise SystemExit(main())
