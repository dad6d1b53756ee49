"""PivotOPD: distil the teacher where the student's failed episodes were lost, and on how to recover from it.

Each step the student plays `tasks_per_step × group_size` episodes, as in opd. For up to `max_pivots` FAILED
episodes (not passed; the first failure of each prompt first) the pivotal step is searched (training/pivot_search.py:
a scripted anchor, or the teacher, taking over before and after each agent step). For each pivot found:

- prevention: at the decision that lost the episode, the student learns the GOLD action: what the strong
  continuation that proved the prefix recoverable does there (the anchor's action from the takeover at the pivot;
  the teacher's greedy action with pivot_finder=teacher), placed after the student's own prefix and trained with
  cross-entropy on its tokens (`pivot_target="gold"`, the paper's). `pivot_target="teacher"` keeps the lab's
  earlier variant: the reverse KL to the teacher on the student's own pivot tokens (`loss` = sampled | full, as in
  opd), which moves the student's mistake towards the teacher's distribution but never shows it the right action.
- recovery: the episode is rebuilt right after the pivotal action (the mistake stands), the TEACHER plays the next
  `recovery_turns` turns from there (training.sampling.continue_episodes: the very prompt ids the sampler builds),
  and the student is trained on the teacher's tokens with the forward KL(teacher ‖ student) over the vocabulary
  (top-k + tail with `top_k`). When the pivotal action ended the episode there is nothing to recover from: that
  episode gives prevention only (`pivots_terminal`).

With the gold target each pivot gives two sequences (the student's prefix + the gold action; the student's prefix
through its mistake + the teacher's turns), with the teacher target one sequence with two masks; the loss is
prevention_weight · mean prevention loss + recovery_weight · mean forward KL, each a token mean over the whole step. Successful episodes contribute nothing. A step with no pivot to train on (no failures, or no
pivot found) logs zeros and makes no update, but counts as a step (Trainer.skip_step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from environments.diagnosis.pivotal import PivotalResult, takeover
from environments.policies import make_policy
from environments.records import Record, Step, record_passed, record_score
from training.data import TokenizedEpisode, tokenize_record
from training.engine import Hooks, RunResult
from training.losses import Logits, kl_full
from training.modeling import forward_hidden_logits, gather_logprobs
from training.onpolicy import evaluate, micro_batches, rollouts, should_evaluate, to_device
from training.pivot_search import anchor_pivots, resolve_anchor, runs_of, teacher_pivots
from training.recipes.opd import OPDConfig, distill_loss, start_distillation
from training.sampling import continue_episodes, episode_stats
from training.toolcall_parse import render_tool_call

MODES = ("both", "prevention", "recovery")
PIVOT_TARGETS = ("gold", "teacher")


@dataclass
class PivotOPDConfig(OPDConfig):
    mode: str = "both"
    """both | prevention (the pivot step only) | recovery (forward KL on the teacher's recovery only)."""
    pivot_target: str = "gold"
    """gold (cross-entropy on the taker-over's action at the pivot, after the student's prefix: the paper's) | teacher
    (reverse KL to the teacher on the student's own pivot tokens)."""
    pivot_finder: str = "anchor"
    """anchor (a scripted anchor takes over, environments.diagnosis.pivotal) | teacher (the teacher, greedy)."""
    anchor: str = ""
    """With pivot_finder=anchor: the anchor's name (environments.policies); empty: the environment's default anchor."""
    pivot_seeds: list[int] = field(default_factory=lambda: [0])
    """Anchor seeds; a prefix is recoverable when the anchor passes for any of them (each costs an anchor run)."""
    pivot_search: str = "binary"
    """With the anchor: binary (about log2(turns) runs per episode) | linear (one run per agent step)."""
    max_pivots: int = 8
    """Failed episodes searched per step at most (takeovers cost environment and teacher time)."""
    recovery_turns: int = 2
    """k: the teacher's turns played after the pivotal action (fewer when the episode ends first)."""
    recovery_temperature: float = 0.0
    """Sampling temperature of the teacher's recovery turns (0: greedy)."""
    prevention_weight: float = 1.0
    """Weight of the reverse-KL prevention loss."""
    recovery_weight: float = 1.0
    """Weight of the forward-KL recovery loss."""
    group_size: int = 2
    """Rollouts per prompt."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.mode not in MODES:
            out.append(f"mode={self.mode!r}: must be one of {', '.join(MODES)}")
        if self.pivot_target not in PIVOT_TARGETS:
            out.append(f"pivot_target={self.pivot_target!r}: must be one of {', '.join(PIVOT_TARGETS)}")
        if self.pivot_finder not in ("anchor", "teacher"):
            out.append(f"pivot_finder={self.pivot_finder!r}: must be anchor or teacher")
        elif self.pivot_finder == "anchor":
            _, problem = resolve_anchor(self.task, self.anchor)
            if problem:
                out.append(f"anchor={self.anchor!r}: {problem}")
        if not self.pivot_seeds:
            out.append("pivot_seeds=[]: give at least one anchor seed")
        if self.pivot_search not in ("binary", "linear"):
            out.append(f"pivot_search={self.pivot_search!r}: must be binary or linear")
        for name in ("max_pivots", "recovery_turns"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if self.recovery_temperature < 0:
            out.append(f"recovery_temperature={self.recovery_temperature!r}: must not be negative")
        for name in ("prevention_weight", "recovery_weight"):
            if not getattr(self, name) > 0:
                out.append(f"{name}={getattr(self, name)!r}: must be positive")
        return out

    @property
    def prevents(self) -> bool:
        return self.mode in ("both", "prevention")

    @property
    def recovers(self) -> bool:
        return self.mode in ("both", "recovery")


@dataclass
class PivotSequence:
    episode: TokenizedEpisode
    prevention_mask: list[int]  # 1 on the pivot step's own (student) tokens
    recovery_mask: list[int]  # 1 on the teacher's tokens after the pivot


def pivot_sequences(record: Record, pivot: int, tokenizer: Any, *, prevention: bool = True, recovery: bool = True) -> list[PivotSequence]:
    """Sequences of a record whose step `pivot` is trained for prevention and whose later agent steps (the teacher's)
    for recovery; `prevention` / `recovery` False leaves that mask empty (the gold target's two sequences)."""
    out = []
    for episode in tokenize_record(record, tokenizer):
        turn, mask = episode.turn_of_token, episode.mask
        out.append(
            PivotSequence(
                episode,
                [int(prevention and m == 1 and t == pivot) for m, t in zip(mask, turn, strict=True)],
                [int(recovery and m == 1 and t > pivot) for m, t in zip(mask, turn, strict=True)],
            )
        )
    return out


def gold_records(found: list[tuple[Record, int]], config: PivotOPDConfig, teacher: Any, tokenizer: Any) -> list[dict[str, Any]]:
    """Per (record, pivot): the student's episode through the steps before the pivot, then the gold action at it,
    as the sampler would have recorded it had the student written it (its very prompt ids: `continue_episodes`).
    The gold action is the first move of the takeover that proves the prefix recoverable: the teacher's greedy turn
    with pivot_finder=teacher, else the anchor's (over pivot_seeds until one passes), forced in as routed text."""
    if not found:
        return []
    limits = {"turns": 1, "max_turns": config.max_turns, "max_new_tokens": config.max_new_tokens, "temperature": 0.0}
    if config.pivot_finder == "teacher":
        return continue_episodes(teacher, tokenizer, found, max_prompt_tokens=config.max_prompt_tokens, **limits)
    anchor, _ = resolve_anchor(config.task, config.anchor)

    def factory(env: Any, seed: int) -> Any:
        return make_policy(anchor, env, seed)

    out = []
    for record, pivot in found:
        for seed in config.pivot_seeds:  # never empty (problems)
            branch = takeover(record, pivot, factory, seed)
            if record_passed(branch):
                break
        text = action_text(branch["steps"][pivot])
        (gold,) = continue_episodes(
            None, tokenizer, [(record, pivot)], router=lambda _record, text=text: text, max_prompt_tokens=config.max_prompt_tokens, **limits
        )
        out.append(gold)
    return out


def action_text(step: Step) -> str:
    """A scripted step as the model writes it: its tool calls in the lab's markup (what the parser reads back), or
    its message when it makes none."""
    calls = step.get("tool_calls") or []
    return "".join(render_tool_call(c["name"], c["arguments"]) for c in calls) if calls else str(step.get("message") or "")


def recovery_loss(
    student_logits: Logits, teacher_logits: Logits, mask: torch.Tensor, *, top_k: int
) -> tuple[torch.Tensor, dict[str, float]]:
    """Forward KL(teacher ‖ student) of aligned (B, T, V) logits at the next-token positions of `mask` (B, T)."""
    return kl_full(student_logits[:, :-1], teacher_logits[:, :-1], mask[:, 1:], direction="forward", top_k=top_k or None)


def gold_nll(student_logits: Logits, input_ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean negative log-likelihood of the masked (gold) tokens, next-token aligned, in chunks (never (B, T, V))."""
    logp = gather_logprobs(student_logits[:, :-1], input_ids[:, 1:])
    active = mask[:, 1:]
    return -(logp * active).sum() / active.sum().clamp(min=1.0)


def pivot_loss(student_logits: Logits, batch: dict[str, Any], config: PivotOPDConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """prevention_weight · reverse KL on the pivot tokens + recovery_weight · forward KL on the teacher's tokens.

    `batch["*_share"]` rescales each part so that the micro-batch means the Trainer averages add up to one token
    mean over the whole step (a micro-batch with more of a part's tokens weighs more)."""
    teacher_logits = batch["teacher_logits"]
    total = torch.zeros((), device=batch["input_ids"].device)
    metrics: dict[str, float] = {}
    if config.prevents and batch["prevention_share"] > 0 and config.pivot_target == "gold":
        value = gold_nll(student_logits, batch["input_ids"], batch["prevention_mask"])
        total = total + config.prevention_weight * batch["prevention_share"] * value
        metrics["prevention_gold_nll"] = float(value.detach()) * batch["prevention_share"]
    elif config.prevents and batch["prevention_share"] > 0:
        part = {"input_ids": batch["input_ids"], "mask": batch["prevention_mask"]}
        value, m = distill_loss(student_logits, teacher_logits, part, loss=config.loss, top_k=config.top_k)
        total = total + config.prevention_weight * batch["prevention_share"] * value
        metrics["prevention_reverse_kl"] = m["reverse_kl"] * batch["prevention_share"]
    if config.recovers and batch["recovery_share"] > 0:
        value, m = recovery_loss(student_logits, teacher_logits, batch["recovery_mask"], top_k=config.top_k)
        total = total + config.recovery_weight * batch["recovery_share"] * value
        metrics["recovery_forward_kl"] = m["forward_kl"] * batch["recovery_share"]
    metrics["loss"] = float(total.detach())
    return total, metrics


def _failed_first_of_each_prompt(records: list[Record], config: PivotOPDConfig) -> list[dict[str, Any]]:
    """Up to max_pivots failed records, the first failure of every prompt before any second one (rollouts are
    grouped by prompt, group_size in a row)."""
    failed = [(i % config.group_size, i) for i, r in enumerate(records) if not record_score(r)["passed"]]
    return [records[i] for _, i in sorted(failed)[: config.max_pivots]]


def find_pivots(records: list[Record], config: PivotOPDConfig, teacher: Any, tokenizer: Any) -> list[PivotalResult]:
    if config.pivot_finder == "teacher":
        return teacher_pivots(
            teacher,
            tokenizer,
            records,
            max_turns=config.max_turns,
            max_new_tokens=config.max_new_tokens,
            max_prompt_tokens=config.max_prompt_tokens,
        )
    anchor, _ = resolve_anchor(config.task, config.anchor)
    return anchor_pivots(records, anchor=anchor, seeds=tuple(config.pivot_seeds), search=config.pivot_search)


def training_records(
    found: list[tuple[Record, int]], config: PivotOPDConfig, teacher: Any, tokenizer: Any
) -> tuple[list[dict[str, Any]], int]:
    """Per pivot, the record to train on (student prefix through the pivot, then the teacher's recovery turns when
    recovering) and the number of pivots after which the episode was over (its last step: nothing to recover from)."""
    prefixes = [(record, pivot + 1) for record, pivot in found]
    terminal = sum(1 for record, length in prefixes if length == len(record["steps"]))
    if not config.recovers or not found:
        return [{**record, "steps": record["steps"][:length]} for record, length in prefixes], terminal
    branches = continue_episodes(
        teacher,
        tokenizer,
        prefixes,
        turns=config.recovery_turns,
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=config.recovery_temperature,
        max_prompt_tokens=config.max_prompt_tokens,
    )
    return branches, terminal


def step_sequences(
    found: list[tuple[Record, int]], trained: list[Record], config: PivotOPDConfig, teacher: Any, tokenizer: Any
) -> list[PivotSequence]:
    """A step's training sequences. Teacher target: one per pivot (its `trained` record, both masks). Gold target:
    the gold record's prevention sequence and the `trained` record's recovery sequence, each only when its part is
    trained."""
    if config.pivot_target == "teacher":
        return [s for record, (_, pivot) in zip(trained, found, strict=True) for s in pivot_sequences(record, pivot, tokenizer)]
    out: list[PivotSequence] = []
    if config.prevents:
        for record, (_, pivot) in zip(gold_records(found, config, teacher, tokenizer), found, strict=True):
            out += pivot_sequences(record, pivot, tokenizer, recovery=False)
    if config.recovers:
        for record, (_, pivot) in zip(trained, found, strict=True):
            out += pivot_sequences(record, pivot, tokenizer, prevention=False)
    return out


def _batches(
    sequences: list[PivotSequence], config: PivotOPDConfig, teacher: Any, pad_id: int, device: torch.device
) -> list[dict[str, Any]]:
    chunks = micro_batches(sequences, config.grad_accum)
    totals = {kind: sum(sum(getattr(s, f"{kind}_mask")) for s in sequences) for kind in ("prevention", "recovery")}
    prepared = []
    for chunk in chunks:
        batch: dict[str, Any] = to_device([s.episode for s in chunk], pad_id, device)
        width = batch["input_ids"].shape[1]
        for kind in ("prevention", "recovery"):
            rows = [getattr(s, f"{kind}_mask") for s in chunk]
            batch[f"{kind}_mask"] = torch.tensor([row + [0] * (width - len(row)) for row in rows], dtype=torch.float32, device=device)
            tokens = sum(sum(row) for row in rows)
            batch[f"{kind}_share"] = tokens * len(chunks) / totals[kind] if totals[kind] else 0.0
        with torch.no_grad():
            batch["teacher_logits"] = forward_hidden_logits(teacher, batch["input_ids"], batch["attention_mask"], frozen=True)
        prepared.append(batch)
    return prepared


def run(config: PivotOPDConfig, hooks: Hooks | None = None) -> RunResult:
    trainer, teacher = start_distillation(config, "pivotopd", hooks)
    model, tokenizer, pad_id = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id

    while trainer.step < config.max_steps and not trainer.stopping():
        records = rollouts(trainer, config)
        searched = _failed_first_of_each_prompt(records, config)
        results = find_pivots(searched, config, teacher, tokenizer)
        found = [(record, result.step) for record, result in zip(searched, results, strict=True) if result.step is not None]
        trained, terminal = training_records(found, config, teacher, tokenizer)
        sequences = step_sequences(found, trained, config, teacher, tokenizer)
        counts = {
            "prevention_tokens": float(sum(sum(s.prevention_mask) for s in sequences)),
            "recovery_tokens": float(sum(sum(s.recovery_mask) for s in sequences)),
        }
        used = (counts["prevention_tokens"] if config.prevents else 0) + (counts["recovery_tokens"] if config.recovers else 0)
        if used:
            batches = _batches(sequences, config, teacher, pad_id, trainer.device)
            metrics = trainer.optimize(
                batches, lambda batch: pivot_loss(forward_hidden_logits(model, batch["input_ids"], batch["attention_mask"]), batch, config)
            )
        else:
            metrics = {**trainer.skip_step(), "loss": 0.0}
        metrics.setdefault("prevention_gold_nll" if config.pivot_target == "gold" else "prevention_reverse_kl", 0.0)
        metrics.setdefault("recovery_forward_kl", 0.0)
        metrics.update(counts)
        metrics.update(
            failed_share=sum(1 for r in records if not record_score(r)["passed"]) / len(records),
            pivots_searched=float(len(searched)),
            pivots_found=float(len(found)),
            pivots_terminal=float(terminal),
            pivot_turn_mean=sum(_turn_of(record, pivot) for record, pivot in found) / len(found) if found else 0.0,
            takeover_runs=float(sum(runs_of(result) for result in results)),
            updated=1.0 if used else 0.0,
        )
        metrics.update(episode_stats(records))
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(model, tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()


def _turn_of(record: Record, step_index: int) -> int:
    """1-based agent turn of a step (the sampler's records: its step index)."""
    return sum(1 for s in record["steps"][1 : step_index + 1] if s.get("source") == "agent")
