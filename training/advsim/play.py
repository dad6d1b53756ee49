"""One round of co-play: the curriculum's tasks, each played k times clean and k times with the adversary's injection.

    pairs, records = play_pairs(player, proposals, k=4, seed_base=1_000, world=sim, threshold=0.5, tag="r000003")

For each proposal (task variant, environment seed, injection), sample j of both sides runs with sampling seed
seed_base + j on the same task, seed and options but for `options["injection"]`. Every record's header carries
`meta.advsim = {"id", "pair", "side", "sample", "sampling_seed", "partner"}`: its own id, its pair's id, clean or
injected, and the id of the other side's record of the same sample, so each flip is traceable to both runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from environments.records import Record, record_passed
from training.advsim.rewards import curriculum_reward, flip_reward, success_rate
from training.advsim.worlds import Job, Player, World

SIDES = ("clean", "injected")


@dataclass
class Proposal:
    task: str  # task id (a variant the curriculum chose: adapters.py)
    seed: int  # environment seed
    options: dict[str, Any]  # the variant's environment options (the service desk's caller profile; none on StoreBench)
    injection: dict[str, Any]  # the environment's options["injection"]
    curriculum_choice: dict[str, str]
    adversary_choice: dict[str, str]


@dataclass
class PairResult:
    pair: str
    task: str
    seed: int
    options: dict[str, Any]
    injection: dict[str, Any]
    sampling_seeds: list[int]
    clean_ids: list[str]
    injected_ids: list[str]
    clean_passed: list[float]
    injected_passed: list[float]
    clean_rate: float
    injected_rate: float
    flip: float  # the adversary's reward
    curriculum: float  # the curriculum's reward (from the clean side: the task's own difficulty)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def base_options(proposal: Proposal, guidance: bool) -> dict[str, Any]:
    return {**proposal.options, **({"guidance": True} if guidance else {})}


def passed(record: Record) -> float:
    return float(bool(record_passed(record)))


def play_pairs(
    player: Player, proposals: list[Proposal], *, k: int, seed_base: int, world: World, threshold: float, guidance: bool, tag: str
) -> tuple[list[PairResult], list[dict[str, Any]]]:
    """(one PairResult per proposal, every record: clean then injected, proposal-major, sample-minor)."""
    jobs: list[Job] = []
    seeds: list[int] = []
    for side in SIDES:
        for proposal in proposals:
            options = base_options(proposal, guidance and world.guidance)
            if side == "injected":
                options["injection"] = dict(proposal.injection)
            for j in range(k):
                jobs.append((proposal.task, proposal.seed, options))
                seeds.append(seed_base + j)
    records = player.play(jobs, seeds=seeds, world=world, greedy=False)
    assert len(records) == len(jobs), f"the player returned {len(records)} records for {len(jobs)} jobs"
    half = len(proposals) * k
    results = []
    for p, proposal in enumerate(proposals):
        pair = f"{tag}-p{p:02d}"
        sides = {side: records[s * half + p * k : s * half + (p + 1) * k] for s, side in enumerate(SIDES)}
        ids = {side: [f"{pair}-{side}-{j}" for j in range(k)] for side in SIDES}
        for side, other in zip(SIDES, reversed(SIDES), strict=True):
            for j, record in enumerate(sides[side]):
                meta = record["header"].setdefault("meta", {})
                meta["advsim"] = {
                    "id": ids[side][j],
                    "pair": pair,
                    "side": side,
                    "sample": j,
                    "sampling_seed": seed_base + j,
                    "partner": ids[other][j],
                    "world": world.name,
                }
        clean = [passed(r) for r in sides["clean"]]
        injected = [passed(r) for r in sides["injected"]]
        results.append(
            PairResult(
                pair=pair,
                task=proposal.task,
                seed=proposal.seed,
                options=proposal.options,
                injection=proposal.injection,
                sampling_seeds=[seed_base + j for j in range(k)],
                clean_ids=ids["clean"],
                injected_ids=ids["injected"],
                clean_passed=clean,
                injected_passed=injected,
                clean_rate=success_rate(clean),
                injected_rate=success_rate(injected),
                flip=flip_reward(clean, injected, threshold=threshold),
                curriculum=curriculum_reward(clean),
            )
        )
    return results, records
