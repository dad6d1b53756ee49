"""RAISED: injection-robust self-distillation. The student, shown a trajectory with planted instructions, matches
what the starting model does on the clean version of the same trajectory.

Each step draws `pairs_per_step` (template, seed, attack style, guidance) jobs from the training split; the anchor
plays each seed clean and attacked (training/raised/pairs.py: same actions, different tool results). The teacher is the
frozen starting model (or the live weights, without gradient) given the CLEAN context only; it scores the anchor's
action tokens. The student sees the injected variant and, weighted by `clean_coef`, the clean one, and minimises
the reverse KL to the clean-context teacher on its action tokens, matched turn by turn (align_turns). Because the
teacher is the model itself, what it learnt to do with legitimate guidance (a billing reference on the account) is
kept, while the planted instruction is taught to change nothing.

`variant = "advsft"` is the baseline: cross-entropy on the anchor's actions in the injected contexts (no teacher).
The attack figures (benign utility, utility under attack, ASR, guidance compliance) and output drift come from
`evaluate_attacks` (training/raised/evaluate.py), the experiment's extra metrics.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from environments.registry import task_set
from training.config import TrainConfig
from training.config_fields import HeldOutEvalFields, PromptStyleFields, TeacherWeightsFields, TopKFields
from training.data import TokenizedEpisode, collate
from training.engine import Hooks, RunResult, Trainer, step_generator
from training.losses import sft_loss
from training.modeling import forward_logits, load_model
from training.onpolicy import micro_batches
from training.raised.evaluate import evaluate_attacks
from training.raised.pairs import Pair, align_turns, anchor_pair, injection_seen, tokenized_pair
from training.recipes.opd import distill_loss

STYLES = ("direct", "authority", "tool_aware")
MAX_DRAWS_PER_PAIR = 10  # about half of the service desk's draws plant where the oracle reads


@dataclass
class RaisedConfig(TopKFields, TeacherWeightsFields, HeldOutEvalFields, TrainConfig, PromptStyleFields):
    variant: str = "raised"
    """raised (KL to the clean-context teacher on clean and injected variants) | advsft (cross-entropy on injected)."""
    task_set: str = "servicedesk/train"
    """Training task set (an environment with an attack axis); pairs are drawn from its templates."""
    anchor: str = "oracle"
    """The scripted anchor whose trajectories give the actions (it must ignore planted instructions)."""
    styles: list[str] = field(default_factory=lambda: list(STYLES))
    """Attack styles of the injected variants, drawn uniformly."""
    guidance_share: float = 0.5
    """Share of pairs with benign guidance on (in both variants)."""
    pairs_per_step: int = 4
    """(clean, injected) pairs per optimizer step."""
    require_seen: bool = True
    """Keep only pairs whose planted text reaches the context (the others teach nothing about injections)."""
    teacher_weights: str = "frozen"
    clean_coef: float = 1.0
    """Weight of the student's clean-variant KL (anchors it to the teacher where nothing was injected)."""
    max_tokens: int = 4096
    """Sequences are cut to this many tokens (turns cut away carry no loss)."""
    compact_tools: bool = True
    """Prompt style: tools as one `name(args)` line each in the system prompt (on by default here: the service
    desk's JSON schemas alone would fill a small model's context)."""
    eval_task_set: str = "servicedesk/dev"
    """Task set of the held-out attack evaluation (dev for tuning; the experiment's test runs use servicedesk/test)."""
    eval_episodes: int = 8
    """Held-out seeds per evaluation, each played unattacked and once per style (0: no evaluation during training)."""
    eval_max_turns: int = 30
    """Agent steps per evaluation episode."""
    max_new_tokens: int = 96
    """Token limit of one agent turn in evaluation."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.variant not in ("raised", "advsft"):
            out.append(f"variant={self.variant!r}: must be raised or advsft")
        if bad := [s for s in self.styles if s not in STYLES] or ([] if self.styles else ["(none)"]):
            out.append(f"styles={self.styles!r}: {bad} not attack styles; choose from {list(STYLES)}")
        if not 0.0 <= self.guidance_share <= 1.0:
            out.append(f"guidance_share={self.guidance_share!r}: must be in [0, 1]")
        for name in ("pairs_per_step", "eval_max_turns", "max_new_tokens", "max_tokens"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if self.clean_coef < 0:
            out.append(f"clean_coef={self.clean_coef!r}: must not be negative")
        return out


def step_pairs(config: RaisedConfig, step: int) -> tuple[list[Pair], dict[str, float]]:
    """The step's pairs (a pure function of seed and step, so a resume replays it) and how many draws were dropped:
    `unpaired` (the anchor acted differently under attack) and `unseen` (with require_seen: the planted text never
    reached the context, as when the anchor never opens the knowledge base)."""
    specs = task_set(config.task_set)
    rng = step_generator(config.seed, step)
    pairs: list[Pair] = []
    dropped = {"unpaired": 0.0, "unseen": 0.0}
    for _ in range(MAX_DRAWS_PER_PAIR * config.pairs_per_step):
        if len(pairs) == config.pairs_per_step:
            break
        template = int(torch.randint(len(specs), (1,), generator=rng))
        seed = config.train_seed_start + int(torch.randint(config.train_seeds, (1,), generator=rng))
        style = config.styles[int(torch.randint(len(config.styles), (1,), generator=rng))]
        guidance = bool(torch.rand((), generator=rng) < config.guidance_share)
        pair = anchor_pair(specs[template].id, seed, style=style, guidance=guidance, anchor=config.anchor)
        if pair is None:
            dropped["unpaired"] += 1
        elif config.require_seen and not injection_seen(pair):
            dropped["unseen"] += 1
        else:
            pairs.append(pair)
    assert pairs, f"step {step}: no usable pair in {MAX_DRAWS_PER_PAIR * config.pairs_per_step} draws of {config.task_set}"
    return pairs, dropped


def pair_batch(pairs: list[tuple[TokenizedEpisode, TokenizedEpisode]], pad_id: int, *, with_clean: bool) -> dict[str, torch.Tensor]:
    """Student rows (the injected variants, then the clean ones when `with_clean`) and the teacher's clean rows.

    teacher_row (S,) and teacher_index (S, T) say which teacher logits stand for each student position; the
    teacher rows are built from the clean episodes alone, so no injected token ever reaches the teacher."""
    students = [injected for _, injected in pairs] + ([clean for clean, _ in pairs] if with_clean else [])
    rows = list(range(len(pairs))) * (2 if with_clean else 1)
    batch = collate(students, pad_id=pad_id)
    width = batch["input_ids"].shape[1]
    index, mask = [], []
    for student, row in zip(students, rows, strict=True):
        positions, action_mask = align_turns(student, pairs[row][0])
        pad = width - len(positions)
        index.append(positions + [positions[-1]] * pad)
        mask.append(action_mask + [0] * pad)
    teacher = collate([clean for clean, _ in pairs], pad_id=pad_id)
    batch.update(
        mask=torch.tensor(mask, dtype=torch.float32),
        injected_rows=torch.tensor([1.0] * len(pairs) + [0.0] * (len(students) - len(pairs))),
        teacher_row=torch.tensor(rows),
        teacher_index=torch.tensor(index),
        teacher_input_ids=teacher["input_ids"],
        teacher_attention_mask=teacher["attention_mask"],
    )
    return batch


def gather_teacher(teacher_logits: torch.Tensor, rows: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(S, T, V): row s, position t holds teacher_logits[rows[s], index[s, t]]."""
    picked = teacher_logits[rows]  # (S, T_teacher, V)
    return picked.gather(1, index.unsqueeze(-1).expand(-1, -1, picked.shape[-1]))


def raised_loss(
    student_logits: torch.Tensor, teacher_logits: torch.Tensor, batch: dict[str, Any], config: RaisedConfig
) -> tuple[torch.Tensor, dict[str, float]]:
    """KL on the injected rows + clean_coef x KL on the clean rows; both reverse KL(student ‖ clean-context teacher),
    each a token mean over its own rows (pair_batch puts the injected rows first)."""
    n_injected = int(batch["injected_rows"].sum())

    def rows(part: slice) -> tuple[torch.Tensor, dict[str, float]]:
        sliced = {"input_ids": batch["input_ids"][part], "mask": batch["mask"][part]}
        return distill_loss(student_logits[part], teacher_logits[part], sliced, loss="full", top_k=config.top_k)

    loss, metrics_i = rows(slice(0, n_injected))
    metrics = {f"{k}_injected": v for k, v in metrics_i.items() if k != "loss"}
    if n_injected < student_logits.shape[0]:
        loss_c, metrics_c = rows(slice(n_injected, None))
        metrics.update({f"{k}_clean": v for k, v in metrics_c.items() if k != "loss"})
        loss = loss + config.clean_coef * loss_c
    metrics["loss"] = float(loss.detach())
    return loss, metrics


def run(config: RaisedConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="raised", hooks=hooks)
    model, tokenizer, device = trainer.model, trainer.tokenizer, trainer.device
    start_model = load_model(config.model, device=device, trainable=False)[0]  # the drift reference (and frozen teacher)
    eval_seeds = range(config.eval_seed_start, config.eval_seed_start + config.eval_episodes)
    if trainer.step == 0 and config.eval_episodes:
        trainer.log({f"eval_{k}": v for k, v in evaluate_attacks(model, tokenizer, config, eval_seeds, reference=start_model).items()})

    while trainer.step < config.max_steps and not trainer.stopping():
        pairs, dropped = step_pairs(config, trainer.step)
        tokenized = [tokenized_pair(p, tokenizer, style=config.prompt_style, max_tokens=config.max_tokens) for p in pairs]
        prepared = []
        with_clean = config.variant == "raised" and config.clean_coef > 0
        for chunk in micro_batches(tokenized, config.grad_accum):
            batch = {k: v.to(device) for k, v in pair_batch(chunk, tokenizer.pad_token_id, with_clean=with_clean).items()}
            if config.variant == "raised":
                with torch.no_grad():
                    teacher = start_model if config.teacher_weights == "frozen" else model
                    logits = forward_logits(teacher, batch["teacher_input_ids"], batch["teacher_attention_mask"])
                    batch["teacher_logits"] = gather_teacher(logits, batch["teacher_row"], batch["teacher_index"])
            prepared.append(batch)

        def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
            logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])
            if config.variant == "raised":
                return raised_loss(logits, batch["teacher_logits"], batch, config)
            injected = batch["mask"][:, 1:] * batch["injected_rows"].unsqueeze(1)  # the anchor's actions in injected contexts
            return sft_loss(logits[:, :-1], batch["input_ids"][:, 1:], injected)

        metrics = trainer.optimize(prepared, loss_fn)
        visible = sum(clean.input_ids != injected.input_ids for clean, injected in tokenized)
        metrics.update(pairs=float(len(pairs)), injection_visible=visible / max(len(tokenized), 1), **dropped)
        last = trainer.step == config.max_steps
        if config.eval_episodes and (last or (config.eval_every and trainer.step % config.eval_every == 0)):
            figures = evaluate_attacks(model, tokenizer, config, eval_seeds, reference=start_model)
            metrics.update({f"eval_{k}": v for k, v in figures.items()})
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()


__all__ = ["RaisedConfig", "evaluate_attacks", "run", "align_turns", "pair_batch", "gather_teacher", "raised_loss"]
