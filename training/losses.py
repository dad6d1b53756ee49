"""Loss functions: pure, tensors in, (scalar loss, metrics) out. No hidden state.

Shapes: logp, old_logp, ref_logp, mask, weights: (B, T); logits: (B, T, V) aligned with labels (B, T), i.e.
logits[b, t] is the prediction for labels[b, t] (callers shift for next-token prediction). `mask` is 1 on
trained tokens. Unless said otherwise a loss is a token mean: sum over active tokens / number of active tokens,
with `weights` scaling each token's contribution (and not the denominator).

Where a loss compares whole next-token distributions (`kl_full`, `kl_per_position`, `entropy_bonus`), its logits
may be a `HiddenLogits`: the final hidden states (B, T, H) and the head that maps them, so that a chunk's logits
exist only while that chunk is computed (in backward too). For a 49k vocabulary and H = 576 that is 85x less memory
than a (B, T, V) tensor held between a teacher's forward and the student's update.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

Metrics = dict[str, float]
AGGREGATIONS = ("token-mean", "seq-mean", "seq-sum-norm")


class HiddenLogits:
    """Logits (B, T, V) held as hidden states (B, T, H) and the head (H -> V) that makes them on demand.

    Indexing along the batch and time axes indexes the hidden states (`x[:, :-1]`); `logits(piece)` maps a piece of
    them. `frozen` heads (a teacher's) map under no_grad, so a teacher that shares the student's weights (self-
    distillation) never sends a gradient into them."""

    def __init__(self, hidden: torch.Tensor, head: Callable[[torch.Tensor], torch.Tensor], *, frozen: bool = False) -> None:
        assert hidden.dim() == 3, f"hidden states are (B, T, H), got {tuple(hidden.shape)}"
        self.hidden, self.head, self.frozen = hidden, head, frozen

    @property
    def shape(self) -> tuple[int, int, int]:
        vocabulary = int(self.head.weight.shape[0])  # type: ignore[attr-defined]  # an nn.Linear (lm_head)
        return int(self.hidden.shape[0]), int(self.hidden.shape[1]), vocabulary

    @property
    def requires_grad(self) -> bool:
        return self.hidden.requires_grad and not self.frozen

    def __getitem__(self, index: object) -> HiddenLogits:
        return HiddenLogits(self.hidden[index], self.head, frozen=self.frozen)  # type: ignore[index]

    def detach(self) -> HiddenLogits:
        return HiddenLogits(self.hidden.detach(), self.head, frozen=True)

    def logits(self, piece: torch.Tensor) -> torch.Tensor:
        """The logits of a piece of these hidden states (..., H) -> (..., V)."""
        if self.frozen:
            with torch.no_grad():
                return self.head(piece)
        return self.head(piece)


Logits = torch.Tensor | HiddenLogits
"""A loss's logits: a (B, T, V) tensor, or hidden states and their head (see HiddenLogits)."""


def dense(logits: Logits) -> torch.Tensor:
    """The whole (B, T, V) tensor (for checks and small batches: this is the memory HiddenLogits saves)."""
    return logits.logits(logits.hidden) if isinstance(logits, HiddenLogits) else logits


def _piece(logits: Logits, index: object) -> torch.Tensor:
    """The tensor a chunk is computed from: the logits' own slice, or the hidden states' slice."""
    return logits.hidden[index] if isinstance(logits, HiddenLogits) else logits[index]  # type: ignore[index]


def _as_logits(logits: Logits, piece: torch.Tensor) -> torch.Tensor:
    return logits.logits(piece) if isinstance(logits, HiddenLogits) else piece


def chunked(rows: Callable[..., torch.Tensor], *sources: Logits, chunk_size: int = 256) -> torch.Tensor:
    """(B, T): `rows` applied to the logits of each source, `chunk_size` positions at a time, the chunks joined on
    T. A chunk whose first source needs a gradient is checkpointed: its logits (from a HiddenLogits, made inside)
    are freed after forward and made again in backward, so only one chunk's (B, chunk, V) exists at a time."""
    first = sources[0]
    pieces = []
    for start in range(0, first.shape[1], chunk_size):
        window = (slice(None), slice(start, start + chunk_size))
        inputs = [_piece(source, window) for source in sources]

        def apply(*tensors: torch.Tensor) -> torch.Tensor:
            return rows(*(_as_logits(source, t) for source, t in zip(sources, tensors, strict=True)))

        needs_grad = first.requires_grad and torch.is_grad_enabled()
        pieces.append(checkpoint(apply, *inputs, use_reentrant=False) if needs_grad else apply(*inputs))
    return torch.cat(pieces, dim=1)


def _active(mask: torch.Tensor) -> torch.Tensor:
    return mask.sum().clamp(min=1.0)


def _weighted(mask: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    return mask if weights is None else mask * weights


def sft_loss(
    logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, Metrics]:
    """Cross-entropy on the masked tokens: Σ m·w·nll / Σ m."""
    nll = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none").view_as(mask)  # (B, T)
    mask = mask.float()
    loss = (nll * _weighted(mask, weights)).sum() / _active(mask)
    correct = (logits.argmax(-1) == labels).float()
    return loss, {
        "loss": loss.item(),
        "nll": ((nll * mask).sum() / _active(mask)).item(),
        "token_accuracy": ((correct * mask).sum() / _active(mask)).item(),
        "tokens": mask.sum().item(),
    }


def sft_loss_from_logprobs(
    logprobs: torch.Tensor, hits: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, Metrics]:
    """sft_loss from the taken tokens' log-probabilities (training.modeling.token_logprobs_and_hits, in chunks) and
    whether each was the argmax: the same loss and metrics without a (B, T, V) logits tensor."""
    nll = -logprobs.float()
    mask = mask.float()
    loss = (nll * _weighted(mask, weights)).sum() / _active(mask)
    return loss, {
        "loss": loss.item(),
        "nll": ((nll.detach() * mask).sum() / _active(mask)).item(),
        "token_accuracy": ((hits.float() * mask).sum() / _active(mask)).item(),
        "tokens": mask.sum().item(),
    }


def _aggregate(per_token: torch.Tensor, mask: torch.Tensor, aggregation: str) -> torch.Tensor:
    if aggregation == "token-mean":
        return (per_token * mask).sum() / _active(mask)
    if aggregation == "seq-mean":
        per_seq = (per_token * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)  # (B,)
        has_tokens = (mask.sum(-1) > 0).float()
        return (per_seq * has_tokens).sum() / has_tokens.sum().clamp(min=1.0)
    if aggregation == "seq-sum-norm":
        return (per_token * mask).sum() / mask.numel()
    raise ValueError(f"aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")


def grpo_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    ref_logp: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    aggregation: str = "token-mean",
) -> tuple[torch.Tensor, Metrics]:
    """Clipped surrogate −min(ρA, clip(ρ, 1−clip_low, 1+clip_high)A), ρ = exp(logp − old_logp), plus kl_coef·k3.

    `advantages` is (B,) per sequence or (B, T) per token. k3 = exp(ref − logp) − (ref − logp) − 1.
    """
    mask = mask.float()
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages  # (B, 1) or (B, T)
    ratio = torch.exp(logp - old_logp)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * adv
    per_token = -torch.minimum(unclipped, clipped)
    metrics: Metrics = {}
    if ref_logp is not None:
        delta = ref_logp - logp
        k3 = torch.exp(delta) - delta - 1.0
        metrics["kl_ref"] = ((k3 * mask).sum() / _active(mask)).item()
        per_token = per_token + kl_coef * k3
    loss = _aggregate(per_token, mask, aggregation)
    was_clipped = (clipped < unclipped).float()  # the min picked the clipped branch
    metrics.update(
        loss=loss.item(),
        clip_fraction=((was_clipped * mask).sum() / _active(mask)).item(),
        ratio_mean=((ratio * mask).sum() / _active(mask)).item(),
        tokens=mask.sum().item(),
    )
    return loss, metrics


def reverse_kl_sampled(
    logp_student: torch.Tensor, logp_teacher: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None
) -> tuple[torch.Tensor, Metrics]:
    """KL(student‖teacher) estimated on the student's own sampled tokens: k_t = logp_s − logp_t.

    The value is the weighted token mean of k_t; the gradient is the score-function one,
    Σ m·w·sg(k_t)·∇logp_s / Σ m (equivalently, a policy gradient with per-token advantage −k_t).
    The teacher gets no gradient.
    """
    mask = mask.float()
    k = (logp_student - logp_teacher).detach()
    surrogate = k * (logp_student - logp_student.detach()) + k  # value k, gradient k·∇logp_s
    loss = (surrogate * _weighted(mask, weights)).sum() / _active(mask)
    return loss, {"loss": loss.item(), "reverse_kl": ((k * mask).sum() / _active(mask)).item(), "tokens": mask.sum().item()}


def _kl_rows(student: torch.Tensor, teacher: torch.Tensor, direction: str, top_k: int | None) -> torch.Tensor:
    """Per-position KL for a chunk: student/teacher logits (N, V) -> (N,)."""
    logp_s = F.log_softmax(student.float(), dim=-1)
    logp_t = F.log_softmax(teacher.float(), dim=-1)
    if top_k is not None:
        index = logp_s.topk(top_k, dim=-1).indices  # the student's top-k, gathered from both distributions
        top_s, top_t = logp_s.gather(-1, index), logp_t.gather(-1, index)
        tail_s = torch.log1p(-top_s.exp().sum(-1).clamp(max=1.0 - 1e-6)).unsqueeze(-1)  # log(1 − Σ p) of the rest
        tail_t = torch.log1p(-top_t.exp().sum(-1).clamp(max=1.0 - 1e-6)).unsqueeze(-1)
        logp_s, logp_t = torch.cat([top_s, tail_s], -1), torch.cat([top_t, tail_t], -1)
    if direction == "reverse":
        return (logp_s.exp() * (logp_s - logp_t)).sum(-1)
    return (logp_t.exp() * (logp_t - logp_s)).sum(-1)


def kl_full(
    student_logits: Logits,
    teacher_logits: Logits,
    mask: torch.Tensor,
    direction: str = "reverse",
    top_k: int | None = None,
    weights: torch.Tensor | None = None,
    chunk_size: int = 256,
) -> tuple[torch.Tensor, Metrics]:
    """Full-vocabulary KL per token ("reverse": KL(student‖teacher), "forward": KL(teacher‖student)).

    With `top_k`, the divergence is over the student's top-k tokens plus one tail bucket holding the remaining
    mass. Computed in chunks of `chunk_size` positions, each recomputed in backward (activation checkpointing),
    so only one chunk's fp32 softmax is alive at a time even for a 150k vocabulary (and, from HiddenLogits, only
    one chunk's logits). The teacher gets no gradient.
    """
    if direction not in ("reverse", "forward"):
        raise ValueError(f"direction must be 'reverse' or 'forward', got {direction!r}")
    assert tuple(student_logits.shape) == tuple(teacher_logits.shape), (
        f"student {tuple(student_logits.shape)} vs teacher {tuple(teacher_logits.shape)}"
    )
    mask = mask.float()
    per_token = chunked(
        lambda s, t: _kl_rows(s, t, direction, top_k), student_logits, teacher_logits.detach(), chunk_size=chunk_size
    )  # (B, T)
    loss = (per_token * _weighted(mask, weights)).sum() / _active(mask)
    return loss, {
        "loss": loss.item(),
        f"{direction}_kl": ((per_token.detach() * mask).sum() / _active(mask)).item(),
        "tokens": mask.sum().item(),
    }


@torch.no_grad()
def kl_per_position(
    student_logits: Logits, teacher_logits: Logits, mask: torch.Tensor, direction: str = "reverse", chunk_size: int = 256
) -> torch.Tensor:
    """Full-vocabulary KL at each active position of aligned (B, T, V) logits, as a (B, T) tensor with 0 where
    `mask` is 0. No gradient; only `chunk_size` active positions' fp32 softmax is alive at a time."""
    assert tuple(student_logits.shape) == tuple(teacher_logits.shape), (
        f"student {tuple(student_logits.shape)} vs teacher {tuple(teacher_logits.shape)}"
    )
    out = torch.zeros(mask.shape, dtype=torch.float32, device=mask.device)
    rows, cols = mask.bool().nonzero(as_tuple=True)
    for start in range(0, rows.numel(), chunk_size):
        r, c = rows[start : start + chunk_size], cols[start : start + chunk_size]
        student = _as_logits(student_logits, _piece(student_logits, (r, c)))
        teacher = _as_logits(teacher_logits, _piece(teacher_logits, (r, c)))
        out[r, c] = _kl_rows(student, teacher, direction, None)
    return out


def _entropy_rows(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of softmax(logits) over the last axis, in fp32: logsumexp(z) − Σ p·z."""
    z = logits.float()
    return torch.logsumexp(z, dim=-1) - (F.softmax(z, dim=-1) * z).sum(-1)


def entropy_bonus(
    logits: Logits, mask: torch.Tensor, aggregation: str = "token-mean", chunk_size: int = 256
) -> tuple[torch.Tensor, Metrics]:
    """−H, the entropy of the policy's next-token distribution at the masked (action) positions, aggregated as in
    `grpo_loss` (add coef·this to a loss to reward entropy). logits (B, T, V) aligned with mask (B, T).

    Chunked over T with activation checkpointing, so only one chunk's fp32 softmax is alive at a time."""
    mask = mask.float()
    entropy = chunked(_entropy_rows, logits, chunk_size=chunk_size)  # (B, T)
    loss = -_aggregate(entropy, mask, aggregation)
    return loss, {"entropy": ((entropy.detach() * mask).sum() / _active(mask)).item()}


def entropy_term(entropy: torch.Tensor, mask: torch.Tensor, aggregation: str = "token-mean") -> tuple[torch.Tensor, Metrics]:
    """`entropy_bonus` from per-position entropies (B, T) already computed (training.modeling.logprobs_and_entropy)."""
    mask = mask.float()
    return -_aggregate(entropy, mask, aggregation), {"entropy": ((entropy.detach() * mask).sum() / _active(mask)).item()}


ONPOLICY_WARN_DIFF = 0.1
"""Mean |sampler logprob - trainer logprob| above which a run's on-policy check warns (bf16 sampling against an
fp32 trainer stays well under it; a sampler that plays another model, temperature or template does not)."""


def onpolicy_check(sampled: torch.Tensor, recomputed: torch.Tensor, mask: torch.Tensor) -> tuple[float, float, int]:
    """Over the positions where `mask` is set and the sampler's logprob is known (not nan): the sum of
    |sampled - recomputed|, the sum of the k3 estimate of KL(sampler || trainer) (r - 1 - log r, r = p_trainer / p_sampler,
    the tokens drawn from the sampler) and their count."""
    known = ~torch.isnan(sampled) & (mask > 0)
    s, t = sampled[known].double(), recomputed[known].double()
    log_ratio = t - s
    return float((s - t).abs().sum()), float((log_ratio.exp() - 1 - log_ratio).sum()), int(known.sum())
