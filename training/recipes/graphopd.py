"""GraphOPD: on-policy distillation that trains, in each rollout, only its most informative agent steps.

Every step the student plays its rollouts and the teacher scores the student's own tokens, as in OPD
(training/recipes/opd.py). Before the update each agent step of each rollout gets two scores:

- structural credit: the stationary credit of the step in the rollout's dependency graph
  (environments.diagnosis.credit_graph: an edge i -> j when step j read state that step i wrote, from the
  environment's own events), a measure of how much of the rest of the episode was built on the step;
- divergence: the mean over the step's tokens of the full-vocabulary reverse KL(student || teacher) at each
  position, teacher logits on the student's ids (exact and >= 0, unlike the noisy sampled estimate
  logp_student - logp_teacher of a single token), i.e. how far the teacher disagrees with that step.

Within each rollout, ceil(keep_fraction x agent steps) steps with the highest selection score keep their
tokens in the loss mask; the others are masked out. Every arm runs the same forwards and backwards (student
no-grad forward, teacher forward, student forward + backward): only the mask differs, so `selection = "all"`
is plain OPD at the same compute.

Deterministic rules. Ties go to the earlier step. A rollout whose events give no graph edges has no
structure to rank by: `graphopd` then ranks by divergence alone, `graph` falls back to the `random` choice
(so on such rollouts the graph arm is exactly the random baseline). `random` draws its steps with a
generator seeded from (seed, optimizer step) and the rollout's position in the batch.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch

from environments.diagnosis.credit_graph import dependency_graph, stationary_credit
from environments.records import Record
from training.engine import Hooks, RunResult, step_generator
from training.losses import kl_per_position
from training.modeling import forward_hidden_logits
from training.onpolicy import evaluate, micro_batches, rollouts, should_evaluate, to_device, tokenized
from training.recipes.opd import OPDConfig, distill_loss, start_distillation
from training.sampling import episode_stats

SELECTIONS = ("graphopd", "divergence", "graph", "random", "all")


@dataclass
class GraphOPDConfig(OPDConfig):
    selection: str = "graphopd"
    """Which steps of each rollout are trained: graphopd (fused credit and divergence) | divergence | graph |
    random (the same number of steps, at random) | all (plain OPD)."""
    keep_fraction: float = 0.5
    """Share of each rollout's agent steps kept: ceil(keep_fraction x steps). 0.5 keeps 2 of 3 steps on the
    3-turn toolgym tasks (and 1 of 2): one third of the signal is dropped, the least informative step, where
    1/3 would leave a single step and make the arms differ mostly in how much they train."""
    fusion: str = "rank"
    """How graphopd fuses the two scores: rank (mean of the within-rollout normalised ranks; the default: it
    needs no common scale between a probability-like credit and an unbounded KL) | product
    (credit / max credit x clamped divergence / its max) | mix:<alpha> (alpha x min-max credit + (1 - alpha)
    x min-max divergence)."""
    damping: float = 0.85
    """Damping of the credit walk (environments.diagnosis.credit_graph.stationary_credit)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.selection not in SELECTIONS:
            out.append(f"selection={self.selection!r}: must be one of {', '.join(SELECTIONS)}")
        if not 0.0 < self.keep_fraction <= 1.0:
            out.append(f"keep_fraction={self.keep_fraction!r}: must be in (0, 1]")
        if not 0.0 <= self.damping < 1.0:
            out.append(f"damping={self.damping!r}: must be in [0, 1)")
        if self.fusion not in ("rank", "product") and mix_alpha(self.fusion) is None:
            out.append(f"fusion={self.fusion!r}: must be rank, product or mix:<alpha> with alpha in [0, 1]")
        return out


def mix_alpha(fusion: str) -> float | None:
    """alpha of "mix:<alpha>", or None when `fusion` is not a valid mix."""
    name, _, value = fusion.partition(":")
    try:
        alpha = float(value)
    except ValueError:
        return None
    return alpha if name == "mix" and 0.0 <= alpha <= 1.0 else None


def normalised_ranks(values: dict[int, float]) -> dict[int, float]:
    """Ranks in [0, 1] (0 the smallest; tied values share their average rank; a single step gets 1)."""
    order = sorted(values.values())
    if len(order) == 1:
        return {k: 1.0 for k in values}
    positions: dict[float, list[int]] = defaultdict(list)
    for i, v in enumerate(order):
        positions[v].append(i)
    return {k: (sum(positions[v]) / len(positions[v])) / (len(order) - 1) for k, v in values.items()}


def _min_max(values: dict[int, float]) -> dict[int, float]:
    low, high = min(values.values()), max(values.values())
    return {k: (v - low) / (high - low) if high > low else 0.0 for k, v in values.items()}


def fuse(credit: dict[int, float], divergence: dict[int, float], fusion: str) -> dict[int, float]:
    """The graphopd score of each step (keys of `divergence`; credit defined on the same steps)."""
    if fusion == "rank":
        rc, rd = normalised_ranks(credit), normalised_ranks(divergence)
        return {k: (rc[k] + rd[k]) / 2 for k in divergence}
    if fusion == "product":
        top_c = max(credit.values()) or 1.0
        clamped = {k: max(v, 0.0) for k, v in divergence.items()}
        top_d = max(clamped.values()) or 1.0
        return {k: (credit[k] / top_c) * (clamped[k] / top_d) for k in divergence}
    alpha = mix_alpha(fusion)
    assert alpha is not None, f"unknown fusion {fusion!r}"
    mc, md = _min_max(credit), _min_max(divergence)
    return {k: alpha * mc[k] + (1 - alpha) * md[k] for k in divergence}


def keep_count(steps: int, keep_fraction: float) -> int:
    return min(steps, math.ceil(keep_fraction * steps - 1e-9))


def top_by(scores: dict[int, float], count: int) -> set[int]:
    """The `count` highest-scoring steps; ties go to the earlier step."""
    return set(sorted(scores, key=lambda k: (-scores[k], k))[:count])


def select_steps(
    divergence: dict[int, float],
    credit: dict[int, float] | None,
    *,
    selection: str,
    keep_fraction: float,
    fusion: str,
    generator: torch.Generator,
) -> set[int]:
    """The kept steps of one rollout. `divergence` {step: mean per-token divergence} names the rollout's trained
    steps; `credit` is their graph credit, None when the rollout's graph has no edges (see the module docstring)."""
    steps = sorted(divergence)
    count = keep_count(len(steps), keep_fraction)
    # drawn for every rollout and every selection, so all arms consume the generator alike
    shuffled = [steps[i] for i in torch.randperm(len(steps), generator=generator).tolist()]
    if selection == "all":
        return set(steps)
    if selection == "random" or (selection == "graph" and credit is None):
        return set(shuffled[:count])
    if selection == "divergence" or (selection == "graphopd" and credit is None):
        return top_by(divergence, count)
    assert credit is not None
    if selection == "graph":
        return top_by({k: credit[k] for k in steps}, count)
    return top_by(fuse({k: credit[k] for k in steps}, divergence, fusion), count)


def rollout_credit(record: Record, damping: float) -> tuple[dict[int, float] | None, set[int]]:
    """(credit per agent step or None without edges, the steps whose writes a later step read)."""
    graph = dependency_graph(record["steps"], env=(record.get("header") or {}).get("env"))
    if not graph.edges:
        return None, set()
    return stationary_credit(graph, damping=damping), {i for i, _ in graph.edges}


def step_divergence_sums(kl: torch.Tensor, spans: list[list[tuple[int, int, int]]]) -> list[dict[int, tuple[float, int]]]:
    """Per row, {step: (sum of per-token divergence, tokens)}. `kl` (B, T-1) is aligned with next-token targets,
    so the token at position p is scored at p - 1; `spans` are each row's (step, start, end) agent spans."""
    out = []
    for row, row_spans in enumerate(spans):
        sums: dict[int, tuple[float, int]] = {}
        for step, start, end in row_spans:
            total, count = sums.get(step, (0.0, 0))
            sums[step] = (total + float(kl[row, start - 1 : end - 1].sum()), count + end - start)
        out.append(sums)
    return out


def choose_steps(
    records: list[Record], sums: dict[int, dict[int, list[float]]], config: GraphOPDConfig, generator: torch.Generator
) -> tuple[dict[int, set[int]], dict[str, float]]:
    """The kept steps of each rollout ({record index: steps}) from its per-step divergence sums, and what to log:
    kept share of steps, mean divergence of kept and dropped steps, share of kept steps whose writes were read."""
    kept: dict[int, set[int]] = {}
    kept_div: list[float] = []
    dropped_div: list[float] = []
    credited = 0
    for index in sorted(sums):  # record order: the random generator is consumed identically by every arm
        divergence = {step: total / max(count, 1) for step, (total, count) in sums[index].items()}
        credit, writers = rollout_credit(records[index], config.damping)
        chosen = select_steps(
            divergence, credit, selection=config.selection, keep_fraction=config.keep_fraction, fusion=config.fusion, generator=generator
        )
        kept[index] = chosen
        kept_div += [divergence[s] for s in chosen]
        dropped_div += [divergence[s] for s in divergence if s not in chosen]
        credited += len(chosen & writers)
    count = len(kept_div)
    return kept, {
        "kept_share": count / max(count + len(dropped_div), 1),
        "divergence_kept": sum(kept_div) / max(count, 1),
        "divergence_dropped": sum(dropped_div) / max(len(dropped_div), 1),
        "kept_graph_credited_share": credited / max(count, 1),
    }


def run(config: GraphOPDConfig, hooks: Hooks | None = None) -> RunResult:
    trainer, teacher = start_distillation(config, "graphopd", hooks)
    model, tokenizer, pad_id = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id

    while trainer.step < config.max_steps and not trainer.stopping():
        records = rollouts(trainer, config)
        pairs = tokenized(records, tokenizer)
        prepared, owners = [], []  # owners[b][row] = record index of that row
        sums: dict[int, dict[int, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0]))
        with torch.no_grad():
            model.eval()
            for chunk in micro_batches(pairs, config.grad_accum):
                batch = to_device([e for _, e in chunk], pad_id, trainer.device)
                batch["teacher_logits"] = forward_hidden_logits(teacher, batch["input_ids"], batch["attention_mask"], frozen=True)
                student = forward_hidden_logits(model, batch["input_ids"], batch["attention_mask"])
                kl = kl_per_position(student[:, :-1], batch["teacher_logits"][:, :-1], batch["mask"][:, 1:])  # (B, T-1)
                del student
                for (index, _), per_step in zip(chunk, step_divergence_sums(kl, [e.agent_spans for _, e in chunk]), strict=True):
                    for step, (total, count) in per_step.items():
                        sums[index][step][0] += total
                        sums[index][step][1] += count
                prepared.append(batch)
                owners.append(chunk)
            model.train()

        kept, selection_metrics = choose_steps(records, sums, config, step_generator(config.seed, trainer.step))
        for batch, chunk in zip(prepared, owners, strict=True):
            select = torch.zeros_like(batch["mask"])  # (B, T)
            for row, (index, episode) in enumerate(chunk):
                for step, begin, stop in episode.agent_spans:
                    if step in kept[index]:
                        select[row, begin:stop] = 1.0
            batch["all_tokens"] = batch["mask"].sum()
            batch["mask"] = batch["mask"] * select

        def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
            logits = forward_hidden_logits(model, batch["input_ids"], batch["attention_mask"])
            loss, metrics = distill_loss(logits, batch["teacher_logits"], batch, loss=config.loss, top_k=config.top_k)
            metrics["agent_tokens"] = float(batch["all_tokens"])
            return loss, metrics

        metrics = trainer.optimize(prepared, loss_fn)
        metrics.update(selection_metrics)
        metrics.update(episode_stats(records))
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(model, tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
