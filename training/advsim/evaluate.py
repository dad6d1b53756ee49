"""Checkpoint evaluation in the simulator and in the real world, with and without attacks.

    figures, records = evaluate_sim_real(player, [sim, real], jobs, adversaries={"coadv": inj}, styles=("direct", ...))
    figures["sim_completion_clean"], figures["real_completion_unseen"], figures["gap_completion_clean"]

Every held-out (task, seed) is played greedily, guidance on where the world runs it, under each condition: `clean` (no attack), one per
adversary given (`coadv`: the co-trained adversary's most likely injection; `fresh`: an adversary trained
separately against this agent), and `unseen` (each of the attack axis' own styles, a fixed set the co-evolution
never planted; their figures are averaged). Per world and condition: completion (the mean composite) and attack success
rate; per world, benign utility and guidance compliance (environments.attacks.attack_metrics over every row).
`gap_<figure>` is the simulator's figure minus the real world's: the sim-to-real gap as a number.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from environments.attacks import attack_metrics, metric_row
from environments.records import Record, record_score
from environments.registry import task_set
from training.advsim.worlds import Job, Player, World

UNSEEN = "unseen"


def eval_jobs(task_set_name: str, seeds: Sequence[int]) -> list[tuple[str, int]]:
    """(task, seed) per held-out seed: the seed picks the template of the evaluation task set, round robin."""
    specs = task_set(task_set_name)
    return [(specs[seed % len(specs)].id, int(seed)) for seed in seeds]


def conditions(adversaries: dict[str, dict[str, Any]], styles: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """(condition name, extra options): clean, each adversary's injection, each unseen style (named unseen:<style>)."""
    out: list[tuple[str, dict[str, Any]]] = [("clean", {})]
    out += [(name, {"injection": dict(injection)}) for name, injection in adversaries.items()]
    out += [(f"{UNSEEN}:{style}", {"attack": style}) for style in styles]
    return out


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def world_figures(world: str, rows: list[dict[str, Any]], names: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in names:
        mine = [r for r in rows if r["condition"] == name]
        key = name.replace(":", "_")
        out[f"{world}_completion_{key}"] = _mean([r["composite"] for r in mine])
        if name != "clean":
            out[f"{world}_asr_{key}"] = _mean([float(r["goal_reached"]) for r in mine])
    unseen = [r for r in rows if r["condition"].startswith(f"{UNSEEN}:")]
    if unseen:
        out[f"{world}_completion_{UNSEEN}"] = _mean([r["composite"] for r in unseen])
        out[f"{world}_asr_{UNSEEN}"] = _mean([float(r["goal_reached"]) for r in unseen])
    figures = attack_metrics(rows)
    for name in ("benign_utility", "utility_under_attack", "guidance_compliance"):
        if figures[name] is not None:
            out[f"{world}_{name}"] = float(figures[name])
    return out


def evaluate_sim_real(
    player: Player,
    worlds: Sequence[World],
    jobs: list[tuple[str, int]],
    *,
    adversaries: dict[str, dict[str, Any]],
    styles: Sequence[str],
    guidance: bool = True,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Figures per world and condition plus the gaps, and every record played (header.meta.advsim_eval says which)."""
    figures: dict[str, float] = {}
    records: list[Record] = []
    named = conditions(adversaries, styles)
    for world in worlds:
        benign = {"guidance": True} if guidance and world.guidance else {}
        played: list[Job] = [(task, seed, {**benign, **extra}) for _, extra in named for task, seed in jobs]
        names = [name for name, _ in named for _ in jobs]
        out = player.play(played, seeds=[0] * len(played), world=world, greedy=True)
        rows = []
        for name, record in zip(names, out, strict=True):
            record["header"].setdefault("meta", {})["advsim_eval"] = {"world": world.name, "condition": name}
            score = record_score(record)
            rows.append({**metric_row(composite=score["composite"], score=score), "condition": name})
        figures.update(world_figures(world.name, rows, [name for name, _ in named]))
        records += out
    measured = {k.split("_", 1)[1] for k in figures}
    if len(worlds) == 2:
        first, second = worlds[0].name, worlds[1].name
        for name in sorted(measured):
            if f"{first}_{name}" in figures and f"{second}_{name}" in figures:
                figures[f"gap_{name}"] = figures[f"{first}_{name}"] - figures[f"{second}_{name}"]
    return figures, records
