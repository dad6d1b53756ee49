"""AET (error to training): a diagnoser fine-tuned on verified diagnoses, and an actor trained on repairs.

    python -m training.aet --smoke                 # <= 30 s on the tiny model (in the suite)
    python -m training.aet --base base-small       # the full run: both tables -> training/README.md (aet markers)

Data (training/diagnoser_eval.py): the weak policy plays toolgym/chain on training seeds; its failing episodes are
labelled by the rule diagnoser and kept where replay verifies the correction. Those give the two views: the
diagnosis view (trajectory -> pivotal step + correction, training/diagnosis_view.py) and the recovery view (the
corrected branch, trained from its `train_from_step` mark). Held-out failing episodes, labelled the same way from
held-out seeds, score the diagnosers; held-out seeds score the actors.

Tables, each mean +- 95% CI over training seeds (the rule diagnoser and the untrained base are one deterministic
"seed" each: no interval):
- diagnoser: rule diagnoser, untrained base, fine-tuned (sft view=diagnosis): exact-step agreement with the labels,
  replay pass rate of the first proposal's correction, share of answers that parse;
- actor: untrained base, repair (sft on the recovery views whose corrected branch passed: loss from the mark only),
  success-only (sft on the weak policy's passing episodes), success + repair (both sets in one file, each record
  trained as its kind is): success on held-out seeds, and each against success-only paired over the same seeds.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from environments.records import Record, record_score
from training.experiments.standard import paired_difference, summarise

TASK = "toolgym/chain"


@dataclass(frozen=True)
class AETSettings:
    data_seeds: tuple[int, int] = (0, 96)
    """[start, stop) of the training episode seeds the views are made from."""
    diagnoser_test_seeds: tuple[int, int] = (100_000, 100_064)
    """[start, stop) of held-out episode seeds; their failing, verified episodes score the diagnosers."""
    actor_test_seeds: tuple[int, int] = (200_000, 200_064)
    """[start, stop) of held-out seeds the actors play greedily."""
    training_seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds of every fine-tuned arm (>= 3 in the full run)."""
    max_steps: int = 24
    """SFT optimizer steps per run (the same for every arm)."""
    batch_size: int = 8
    """SFT episodes per step."""
    learning_rate: float = 3e-4
    """SFT learning rate."""
    max_tokens: int = 1024
    """SFT truncation."""
    max_turns: int = 6
    """Agent turns per held-out actor episode."""
    max_new_tokens: int = 48
    """Token limit of one actor turn and of one diagnoser answer."""


FULL = AETSettings()
SMOKE = AETSettings(
    data_seeds=(0, 16),
    diagnoser_test_seeds=(100_000, 100_006),
    actor_test_seeds=(200_000, 200_003),
    training_seeds=(0,),
    max_steps=1,
    batch_size=2,
    max_tokens=2048,
    max_turns=2,
    max_new_tokens=8,
)


def _write(path: Path, records: list[Record]) -> str:
    path.write_text("".join(json.dumps(r, default=str) + "\n" for r in records))
    return str(path)


def _sft(base: str, data: str, out: Path, seed: int, settings: AETSettings, **extra: Any) -> str:
    from training import run_recipe
    from training.zoo import prompt_style_for

    style = prompt_style_for(base)
    values = {
        "model": base,
        "data": data,
        "output_dir": str(out),
        "seed": seed,
        "max_steps": settings.max_steps,
        "batch_size": settings.batch_size,
        "learning_rate": settings.learning_rate,
        "max_tokens": settings.max_tokens,
        "compact_tools": style.compact_tools,
        "max_result_chars": style.max_result_chars,
        **extra,
    }
    result = run_recipe("sft", values)
    assert result.final_checkpoint, f"sft in {out} saved no checkpoint"
    return result.final_checkpoint


def _load(folder: str) -> tuple[Any, Any]:
    from training.modeling import load_model

    return load_model(folder, trainable=False)


def _diagnoser_cells(folder: str, items: list[Any], settings: AETSettings) -> list[dict[str, float]]:
    import torch

    from training.diagnoser_eval import generate_answers, score_answers

    model, tokenizer = _load(folder)
    with torch.no_grad():
        answers = generate_answers(model, tokenizer, items, max_new_tokens=max(settings.max_new_tokens, 8))
    return score_answers(items, answers)


def _actor_passes(folder: str, base: str, settings: AETSettings) -> list[float]:
    import torch

    from training.sampling import rollout_episodes
    from training.zoo import manifest, prompt_style_for

    model, tokenizer = _load(folder)
    limit = int((manifest(base).get("prompt_style") or {}).get("max_prompt_tokens") or 4096)
    jobs = [(TASK, s) for s in range(*settings.actor_test_seeds)]
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            jobs,
            max_turns=settings.max_turns,
            max_new_tokens=settings.max_new_tokens,
            temperature=0.0,
            style=prompt_style_for(base),
            max_prompt_tokens=limit,
        )
    return [float(bool(record_score(r)["passed"])) for r in records]


def run_aet(base: str, out: Path, settings: AETSettings, *, progress: bool = True) -> dict[str, Any]:
    """Make the data, train every arm on every training seed, evaluate; the raw cells (per seed, per episode)."""
    from training.diagnoser_eval import aet_data, rule_scores

    def say(text: str) -> None:
        if progress:
            print(text, file=sys.stderr, flush=True)

    out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    train = aet_data(TASK, range(*settings.data_seeds))
    held = aet_data(TASK, range(*settings.diagnoser_test_seeds))
    assert train.labelled and held.labelled, "no verified failing episodes: widen the seed ranges"
    files = {
        "diagnosis": _write(out / "diagnosis.jsonl", train.diagnosis_records),
        "recovery": _write(out / "recovery.jsonl", train.recovery_records),
        "episodes": _write(out / "episodes.jsonl", train.episodes),
        "both": _write(out / "success_and_repair.jsonl", train.episodes + train.recovery_records),
    }
    say(
        f"data: {len(train.episodes)} episodes, {len(train.success_records)} passed, {len(train.labelled)} verified diagnoses; "
        f"held out: {len(held.labelled)} verified failing episodes"
    )
    diagnoser: dict[str, dict[int, list[dict[str, float]]]] = {
        "rule": {0: rule_scores(held.labelled)},
        "base": {0: _diagnoser_cells(base, held.labelled, settings)},
        "fine-tuned": {},
    }
    actor: dict[str, dict[int, list[float]]] = {
        "base": {0: _actor_passes(base, base, settings)},
        "repair": {},
        "success-only": {},
        "success + repair": {},
    }
    for seed in settings.training_seeds:
        say(f"training seed {seed}")
        folder = _sft(base, files["diagnosis"], out / f"diagnoser-seed{seed}", seed, settings, view="diagnosis")
        diagnoser["fine-tuned"][seed] = _diagnoser_cells(folder, held.labelled, settings)
        folder = _sft(base, files["recovery"], out / f"repair-seed{seed}", seed, settings, passed_only=True)
        actor["repair"][seed] = _actor_passes(folder, base, settings)
        folder = _sft(base, files["episodes"], out / f"success-seed{seed}", seed, settings, passed_only=True)
        actor["success-only"][seed] = _actor_passes(folder, base, settings)
        folder = _sft(base, files["both"], out / f"both-seed{seed}", seed, settings, passed_only=True)
        actor["success + repair"][seed] = _actor_passes(folder, base, settings)
    result = {
        "base": base,
        "settings": asdict(settings),
        "wall_s": round(time.time() - started, 1),
        "data": {
            "episodes": len(train.episodes),
            "passed": len(train.success_records),
            "verified": len(train.labelled),
            "unlabelled": train.unlabelled,
            "held_out_verified": len(held.labelled),
        },
        "diagnoser": diagnoser,
        "actor": actor,
    }
    (out / "result.json").write_text(json.dumps(result, indent=1))
    return result


def _cell(cells: dict[int, list[float]]) -> str:
    summary = summarise(cells)
    return f"{summary.mean:.3f} ± {summary.ci:.3f}" if summary.seeds > 1 else f"{summary.mean:.3f}"


def tables(result: dict[str, Any]) -> str:
    """Both tables as markdown (cells: mean ± 95% CI over training seeds; one value where there is one seed)."""
    data = result["data"]
    lines = [
        f"Data: {data['episodes']} weak-policy episodes of {TASK} on training seeds, {data['passed']} passed, "
        f"{data['verified']} failing ones with a replay-verified rule diagnosis; {data['held_out_verified']} held-out failing "
        "episodes score the diagnosers.",
        "",
        "| diagnoser | exact-step agreement | replay pass of first correction | answers parsed | training seeds |",
        "| --- | --- | --- | --- | --- |",
    ]
    for arm, by_seed in result["diagnoser"].items():
        column = {
            name: {int(s): [c[name] for c in cells] for s, cells in by_seed.items()} for name in ("agreement", "replay_pass", "parsed")
        }
        lines.append(
            f"| {arm} | {_cell(column['agreement'])} | {_cell(column['replay_pass'])} | {_cell(column['parsed'])} | {len(by_seed)} |"
        )
    lines += ["", "| actor | success on held-out seeds | training seeds |", "| --- | --- | --- |"]
    actor = {arm: {int(s): v for s, v in cells.items()} for arm, cells in result["actor"].items()}
    for arm, cells in actor.items():
        lines.append(f"| {arm} | {_cell(cells)} | {len(cells)} |")
    lines.append("")
    for arm in [a for a in actor if a not in ("base", "success-only")]:
        diff = paired_difference(actor[arm], actor["success-only"])
        lines.append(
            f"{arm} − success-only, paired over seeds and held-out episodes: {diff.mean:+.3f} [{diff.low:+.3f}, {diff.high:+.3f}].  "
        )
    lines[-1] = lines[-1].rstrip()
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from training.experiments.standalone import standalone_main

    return standalone_main(argv, name="aet", description=__doc__.split("\n\n")[0], run=run_aet, tables=tables, smoke=SMOKE, full=FULL)


if __name__ == "__main__":
    raise SystemExit(main())
