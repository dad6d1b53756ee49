"""Phantom transfer: does SFT on Phantom's training universes carry over to unseen universes and to other
environments, how do searches grow with hop count, and which kind of question drives what transfers?

    python -m training.experiments phantom_transfer --smoke
    python -m training.experiments phantom_transfer --base base-small      # no teacher needed

Every arm is the sft recipe, with the same steps, batch, learning rate and number of demonstrations (one pass:
max_steps x batch_size episodes), on passed episodes of phantom/mixed-train (training universes, seeds from
30,000: neither the zoo's SFT seeds nor its corpus seeds). Arms differ only in the data (training/phantom_data.py):

- multisearch (the method): the multisearch anchor's episodes on every kind of question; it reads and searches
  with no privileged access, so each demonstrated call follows from what the context shows;
- oracle: the oracle's episodes on the same seeds' questions; it searches each gold article's title, which a
  model cannot know (the demonstrations base-small's own SFT saw, on lookup and bridge);
- many_hops / constraint / comparison: multisearch episodes restricted to chain questions of >= 3 hops, to
  constrained questions, or to comparisons (the ablation of what drives transfer);
- none: the start checkpoint.

An arm's `data` field names its dataset in DATASETS; `prepare_data` (the experiment's prepare) writes it once under
var/experiments/data/ and replaces the name by the file's path, which carries the builder config's hash, so the
run's config hash changes when the data does.

Table: phantom/mixed-test (test universes: no entity name of the training split; 1-4 hops, comparisons and
constraints), greedy, with the score's components (exact match, F1, evidence recall) and the valid-call rate.
Measures per checkpoint (`transfer_measures`, on the first test seeds): searches per episode and exact match by
the question's hop count on phantom/mixed-test (the search-scaling table for models; the same greedy episodes
as the table's first seeds, played again), toolgym lookup and chain pass rate (held-out seeds) and the service
desk's composite and valid-call rate on roaming-on (held-out callers): the other environments.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from environments.records import record_score
from training.experiments import Arm, Evaluation, Experiment, register
from training.phantom_data import PhantomDemoConfig

TRAIN_TASK = "phantom/mixed-train"
TEST_TASK = "phantom/mixed-test"
DATASETS: dict[str, PhantomDemoConfig] = {
    "all": PhantomDemoConfig(task=TRAIN_TASK, anchor="multisearch", questions="all"),
    "oracle": PhantomDemoConfig(task=TRAIN_TASK, anchor="oracle", questions="all"),
    "many_hops": PhantomDemoConfig(task=TRAIN_TASK, anchor="multisearch", questions="many_hops", min_hops=3),
    "constraint": PhantomDemoConfig(task=TRAIN_TASK, anchor="multisearch", questions="constraint"),
    "comparison": PhantomDemoConfig(task=TRAIN_TASK, anchor="multisearch", questions="comparison"),
}
SCALING_SEEDS = 32  # phantom episodes per checkpoint for the by-hops table (~8 per hop count)
TOOLGYM = ("toolgym/lookup", "toolgym/chain")
TOOLGYM_SEEDS = 32
DESK = "servicedesk/roaming-on"
DESK_SEEDS = 8  # calls are 1-3k tokens; base-small's family passes none (training/README.md, desk-small)
DESK_TURNS = 12


def prepare_data(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: the arm's dataset (`data` names a DATASETS entry) as a file -> {"data": path}. As many
    episodes as the run trains on (max_steps x batch_size); the `none` arm has no data and gets nothing."""
    from training.phantom_data import phantom_demonstrations_file

    name = values.get("data")
    if name is None:
        return {}
    if name not in DATASETS:
        raise ValueError(f"data={name!r}: phantom_transfer arms name one of {', '.join(DATASETS)}")
    episodes = int(values.get("max_steps", 1)) * int(values.get("batch_size", 1))
    return {"data": phantom_demonstrations_file(dataclasses.replace(DATASETS[name], episodes=episodes))}


def transfer_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures (module docstring): `phantom_h{N}_searches` and `phantom_h{N}_exact` per hop count N seen,
    `{lookup,chain}_passed`, `desk_composite` and `desk_valid_calls`."""
    import torch

    from environments.phantom.scaling import episode_row, scaling_table
    from training.experiments.runner import load_checkpoint, prompt_style_of
    from training.sampling import rollout_episodes

    style = prompt_style_of(base, values)
    model, tokenizer = load_checkpoint(checkpoint, base)  # a LoRA run's adapter over the base, too
    ev = EXPERIMENT.evaluation
    smoke = len(seeds) < SCALING_SEEDS  # the smoke's few test seeds: measure as few, at the smoke's scale

    def play(task: str, task_seeds: list[int], turns: int, tokens: int) -> list[dict[str, Any]]:
        with torch.no_grad():
            return rollout_episodes(
                model,
                tokenizer,
                [(task, s) for s in task_seeds],
                max_turns=min(turns, 2) if smoke else turns,
                max_new_tokens=min(tokens, 16) if smoke else tokens,
                temperature=0.0,
                style=style,
            )

    out: dict[str, float] = {}
    table = scaling_table(episode_row(r) for r in play(TEST_TASK, seeds[:SCALING_SEEDS], ev.max_turns, ev.max_new_tokens))
    for hops, row in table.items():
        out[f"phantom_h{hops}_searches"] = row["searches"]
        out[f"phantom_h{hops}_exact"] = row["exact_match"]
    held_out = list(range(100_000, 100_000 + min(TOOLGYM_SEEDS, len(seeds))))
    for task in TOOLGYM:
        records = play(task, held_out, 4, 48)
        out[f"{task.split('/')[1]}_passed"] = sum(float(bool(record_score(r)["passed"])) for r in records) / len(records)
    desk = play(DESK, held_out[:DESK_SEEDS], DESK_TURNS, 64)
    out["desk_composite"] = sum(float(record_score(r)["composite"]) for r in desk) / len(desk)
    valid = sum(r["header"]["metrics"]["valid_calls"] for r in desk)
    out["desk_valid_calls"] = valid / max(1, valid + sum(r["header"]["metrics"]["invalid_calls"] for r in desk))
    return out


EXPERIMENT = register(
    Experiment(
        name="phantom_transfer",
        question="Does SFT on Phantom's training universes transfer to unseen universes and to other environments, do "
        "non-privileged multisearch demonstrations transfer better than the oracle's, and which questions drive it "
        "(many hops, constraints or comparisons)?",
        method="multisearch",
        arms=(
            Arm("multisearch", "sft", {"data": "all"}, "multisearch anchor, every kind of question"),
            Arm("oracle", "sft", {"data": "oracle"}, "oracle (searches gold titles), every kind of question"),
            Arm("many_hops", "sft", {"data": "many_hops"}, "multisearch, chain questions of >= 3 hops only"),
            Arm("constraint", "sft", {"data": "constraint"}, "multisearch, constrained questions only"),
            Arm("comparison", "sft", {"data": "comparison"}, "multisearch, comparisons only"),
            Arm("none", "none", {}, "no training: the start checkpoint"),
        ),
        shared={
            "max_steps": 16,  # x batch 8 = 128 demonstrations, one pass
            "batch_size": 8,
            "max_tokens": 3072,  # base-small's tokenizer: 1,161 tokens a multisearch demonstration on average, 1 in 48 comparisons cut
            "lr_schedule": "constant",
            "compact_tools": True,  # a base without a zoo.json (the smoke's tiny model) keeps it; a zoo base's own style wins
            "max_result_chars": 400,
        },
        evaluation=Evaluation(
            task=TEST_TASK, dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=12, max_new_tokens=48, components=True
        ),
        tuning={"learning_rate": (3e-4,)},  # one point (the horizon experiment's choice on base-small), the same for every arm
        measures="training.experiments.phantom_transfer:transfer_measures",
        prepare="training.experiments.phantom_transfer:prepare_data",
        train_seeds=(0, 1, 2),
        smoke={"max_steps": 1, "batch_size": 2, "max_tokens": 768, "eval_episodes": 1},  # one 12-turn episode per arm
        needs_teacher=False,
    )
)
