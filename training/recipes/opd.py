"""On-policy distillation: the student samples whole episodes, the teacher scores the student's tokens.

Each step the student plays `tasks_per_step × group_size` episodes; the teacher (a frozen model sharing the
student's tokenizer) runs over the same token ids, and the student minimises the per-token reverse KL to it on
its own agent tokens. `loss = "sampled"` uses the sampled-token estimator (logp_s − logp_t on the taken token,
a policy gradient with advantage −k); `loss = "full"` uses the full-vocabulary reverse KL at each position
(or its top-k version with a tail bucket). Rewards are logged but not optimised: the teacher is the signal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from training.config_fields import DistillLossFields
from training.engine import Hooks, RunResult, Trainer
from training.losses import Logits, kl_full, reverse_kl_sampled
from training.modeling import check_same_vocabulary, forward_hidden_logits, gather_logprobs, load_model
from training.onpolicy import OnPolicyConfig, evaluate, micro_batches, rollouts, should_evaluate, to_device, tokenized
from training.sampling import episode_stats


@dataclass
class OPDConfig(DistillLossFields, OnPolicyConfig):
    MODEL_PATH_FIELDS: ClassVar[tuple[str, ...]] = (*OnPolicyConfig.MODEL_PATH_FIELDS, "teacher")

    teacher: str = ""
    """`from_pretrained` path of the teacher; it must share the student's tokenizer."""
    group_size: int = 1
    """Rollouts per prompt (distillation needs no groups)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not self.teacher:
            out.append("teacher='': give the teacher's from_pretrained path")
        return out


def distill_loss(
    student_logits: Logits, teacher_logits: Logits, batch: dict[str, Any], *, loss: str, top_k: int
) -> tuple[torch.Tensor, dict[str, float]]:
    """Reverse KL of aligned (B, T, V) logits (tensors or HiddenLogits) on the batch's agent tokens (next-token
    positions)."""
    targets, mask = batch["input_ids"][:, 1:], batch["mask"][:, 1:]
    logp_s = gather_logprobs(student_logits[:, :-1], targets)
    logp_t = gather_logprobs(teacher_logits[:, :-1], targets)
    if loss == "sampled":
        return reverse_kl_sampled(logp_s, logp_t, mask)
    value, metrics = kl_full(student_logits[:, :-1], teacher_logits[:, :-1], mask, direction="reverse", top_k=top_k or None)
    metrics["sampled_reverse_kl"] = float(((logp_s - logp_t).detach() * mask).sum() / mask.sum().clamp(min=1))
    return value, metrics


def start_distillation(config: OPDConfig, recipe: str, hooks: Hooks | None) -> tuple[Trainer, Any]:
    """The trainer and the frozen teacher (same vocabulary, checked); a fresh run logs its starting evaluation."""
    trainer = Trainer(config, recipe=recipe, hooks=hooks)
    teacher, teacher_tokenizer = load_model(config.teacher, device=trainer.device, trainable=False)
    check_same_vocabulary(trainer.tokenizer, teacher_tokenizer)
    if trainer.step == 0:
        trainer.log(evaluate(trainer.model, trainer.tokenizer, config))
    return trainer, teacher


def run(config: OPDConfig, hooks: Hooks | None = None) -> RunResult:
    trainer, teacher = start_distillation(config, "opd", hooks)
    model, tokenizer, pad_id = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id

    while trainer.step < config.max_steps and not trainer.stopping():
        records = rollouts(trainer, config)
        episodes = [e for _, e in tokenized(records, tokenizer)]
        prepared = []
        with torch.no_grad():
            for chunk in micro_batches(episodes, config.grad_accum):
                batch = to_device(chunk, pad_id, trainer.device)
                # the teacher's final hidden states, not its (B, T, V) logits: the loss makes a chunk's logits at a time
                batch["teacher_logits"] = forward_hidden_logits(teacher, batch["input_ids"], batch["attention_mask"], frozen=True)
                prepared.append(batch)

        def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
            logits = forward_hidden_logits(model, batch["input_ids"], batch["attention_mask"])
            return distill_loss(logits, batch["teacher_logits"], batch, loss=config.loss, top_k=config.top_k)

        metrics = trainer.optimize(prepared, loss_fn)
        metrics.update(episode_stats(records))
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(model, tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
