from __future__ import annotations

import math

import pytest
import torch

from training.losses import HiddenLogits, dense, entropy_bonus, grpo_loss, kl_full, kl_per_position, reverse_kl_sampled, sft_loss
from training.modeling import argmax_hits, gather_logprobs


def test_sft_loss_is_the_weighted_token_mean_of_the_masked_nll():
    logits = torch.tensor([[[0.0, 0.0], [math.log(3.0), 0.0], [5.0, 5.0]]])  # (1, 3, 2)
    labels = torch.tensor([[0, 1, 1]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, metrics = sft_loss(logits, labels, mask)
    expected = (math.log(2.0) + -math.log(0.25)) / 2  # p = 1/2, then 1/4
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert metrics["token_accuracy"] == pytest.approx(0.5)  # argmax picks 0 at both positions: right, then wrong
    weighted, _ = sft_loss(logits, labels, mask, weights=torch.tensor([[2.0, 0.0, 9.0]]))
    assert weighted.item() == pytest.approx(2 * math.log(2.0) / 2, abs=1e-6)


def test_grpo_loss_clips_by_the_sign_of_the_advantage():
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.0]]))  # ratios 1.5, 0.5, 1.0 against old_logp = 0
    old = torch.zeros(1, 3)
    mask = torch.ones(1, 3)
    loss, metrics = grpo_loss(logp, old, torch.tensor([1.0]), mask)
    # A>0: -min(1.5, 1.28) = -1.28; -min(0.5, 0.8) = -0.5; -1.0
    assert loss.item() == pytest.approx((-1.28 - 0.5 - 1.0) / 3, abs=1e-6)
    assert metrics["clip_fraction"] == pytest.approx(1 / 3)
    loss, _ = grpo_loss(logp, old, torch.tensor([-1.0]), mask)
    # A<0: -min(-1.5, -1.28) = 1.5; -min(-0.5, -0.8) = 0.8; 1.0
    assert loss.item() == pytest.approx((1.5 + 0.8 + 1.0) / 3, abs=1e-6)


def test_grpo_gradient_vanishes_on_clipped_tokens():
    logp = torch.log(torch.tensor([[1.5, 1.1]])).requires_grad_(True)
    loss, _ = grpo_loss(logp, torch.zeros(1, 2), torch.tensor([2.0]), torch.ones(1, 2))
    loss.backward()
    # token 0 is clipped (no gradient); token 1: d/dlogp of -(ratio*A)/2 = -ratio*A/2 = -1.1
    assert logp.grad[0, 0].item() == 0.0 and logp.grad[0, 1].item() == pytest.approx(-1.1, abs=1e-6)


def test_grpo_aggregations_and_k3():
    logp = torch.zeros(2, 3)
    adv = torch.tensor([[1.0, 2.0, 3.0], [4.0, 0.0, 0.0]])  # per-token advantages, ratio 1 everywhere
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]])
    token_mean, _ = grpo_loss(logp, logp, adv, mask, aggregation="token-mean")
    seq_mean, _ = grpo_loss(logp, logp, adv, mask, aggregation="seq-mean")
    sum_norm, _ = grpo_loss(logp, logp, adv, mask, aggregation="seq-sum-norm")
    assert token_mean.item() == pytest.approx(-(1 + 2 + 3 + 4) / 4)
    assert seq_mean.item() == pytest.approx(-((1 + 2 + 3) / 3 + 4) / 2)
    assert sum_norm.item() == pytest.approx(-(1 + 2 + 3 + 4) / 6)
    ref = torch.full((2, 3), math.log(2.0))  # ref - logp = log 2: k3 = 2 - log 2 - 1
    with_kl, metrics = grpo_loss(logp, logp, adv, mask, ref_logp=ref, kl_coef=0.1)
    k3 = 2.0 - math.log(2.0) - 1.0
    assert metrics["kl_ref"] == pytest.approx(k3, abs=1e-6)
    assert with_kl.item() == pytest.approx(-(10 / 4) + 0.1 * k3, abs=1e-6)
    with pytest.raises(ValueError, match="aggregation"):
        grpo_loss(logp, logp, adv, mask, aggregation="mean")


def test_reverse_kl_sampled_value_and_gradient():
    logp_s = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    logp_t = torch.tensor([[-1.5, -1.0, -9.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, metrics = reverse_kl_sampled(logp_s, logp_t, mask, weights=torch.tensor([[1.0, 3.0, 1.0]]))
    # k = [0.5, -1.0]; value Σ w·k / Σ m = (0.5 - 3.0) / 2
    assert loss.item() == pytest.approx(-1.25) and metrics["reverse_kl"] == pytest.approx(-0.25)
    loss.backward()
    assert logp_s.grad[0].tolist() == pytest.approx([0.25, -1.5, 0.0])


def _kl(p, q):
    return sum(a * (math.log(a) - math.log(b)) for a, b in zip(p, q, strict=True))


def test_kl_full_matches_hand_computed_divergences():
    p = [0.5, 0.25, 0.25]
    q = [0.25, 0.25, 0.5]
    student = torch.log(torch.tensor([[p, p]]))  # (1, 2, 3)
    teacher = torch.log(torch.tensor([[q, p]]))
    mask = torch.tensor([[1.0, 1.0]])
    reverse, m = kl_full(student, teacher, mask, direction="reverse", chunk_size=1)
    assert reverse.item() == pytest.approx(_kl(p, q) / 2, abs=1e-6) and m["reverse_kl"] == pytest.approx(_kl(p, q) / 2, abs=1e-6)
    forward, _ = kl_full(student, teacher, mask, direction="forward")
    assert forward.item() == pytest.approx(_kl(q, p) / 2, abs=1e-6)
    # top-1 (student's argmax is token 0) with a tail bucket: buckets [0.5, 0.5] vs [0.25, 0.75]
    top1, _ = kl_full(student[:, :1], teacher[:, :1], mask[:, :1], top_k=1)
    assert top1.item() == pytest.approx(_kl([0.5, 0.5], [0.25, 0.75]), abs=1e-5)


def test_kl_full_chunking_does_not_change_value_or_gradient():
    torch.manual_seed(0)
    student = torch.randn(2, 7, 11, requires_grad=True)
    teacher = torch.randn(2, 7, 11)
    mask = (torch.rand(2, 7) > 0.3).float()
    a, _ = kl_full(student, teacher, mask, chunk_size=3)
    (grad_a,) = torch.autograd.grad(a, student)
    b, _ = kl_full(student, teacher, mask, chunk_size=100)
    (grad_b,) = torch.autograd.grad(b, student)
    assert a.item() == pytest.approx(b.item(), abs=1e-6) and torch.allclose(grad_a, grad_b, atol=1e-6)


def test_kl_per_position_is_kl_full_before_aggregation_and_zero_off_the_mask():
    torch.manual_seed(0)
    student, teacher = torch.randn(2, 5, 7), torch.randn(2, 5, 7)
    mask = torch.tensor([[1.0, 1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0, 1.0]])
    per_position = kl_per_position(student, teacher, mask, chunk_size=2)
    _, metrics = kl_full(student, teacher, mask)
    assert float(per_position.sum() / mask.sum()) == pytest.approx(metrics["reverse_kl"], rel=1e-5)
    assert (per_position[mask == 0] == 0).all() and (per_position[mask == 1] > 0).all()
    p = torch.softmax(student[1, 2], -1)
    assert float(per_position[1, 2]) == pytest.approx(float((p * (p.log() - torch.log_softmax(teacher[1, 2], -1))).sum()), rel=1e-5)


class _CountingHead(torch.nn.Linear):
    """An lm_head that remembers how many positions each call mapped."""

    def __init__(self, hidden: int, vocabulary: int) -> None:
        super().__init__(hidden, vocabulary, bias=False)
        self.positions: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.positions.append(x.shape[:-1].numel())
        return super().forward(x)


def test_hidden_logits_give_the_dense_losses_and_gradients_one_chunk_of_logits_at_a_time() -> None:
    torch.manual_seed(0)
    B, T, H, V, chunk = 2, 11, 8, 50, 4
    head = _CountingHead(H, V)
    student_hidden = torch.randn(B, T, H, requires_grad=True)
    teacher_hidden = torch.randn(B, T, H)
    mask = (torch.rand(B, T) > 0.3).float()
    targets = torch.randint(0, V, (B, T))

    def losses(student, teacher):
        kl, _ = kl_full(student, teacher, mask, direction="reverse", top_k=5, chunk_size=chunk)
        forward_kl, _ = kl_full(student, teacher, mask, direction="forward", chunk_size=chunk)
        entropy, _ = entropy_bonus(student, mask, chunk_size=chunk)
        taken = (gather_logprobs(student, targets, chunk_size=chunk) * mask).sum()
        return kl + forward_kl + entropy + taken

    # the same head serves the teacher (self-distillation): the teacher must send it no gradient
    hidden_total = losses(HiddenLogits(student_hidden, head), HiddenLogits(teacher_hidden, head, frozen=True))
    hidden_total.backward()
    grads = (student_hidden.grad.clone(), head.weight.grad.clone())
    assert max(head.positions) <= B * chunk  # never more than one chunk's logits at a time, forward or backward
    student_hidden.grad, head.weight.grad = None, None

    dense_total = losses(head(student_hidden), head(teacher_hidden).detach())
    dense_total.backward()
    assert float(hidden_total) == pytest.approx(float(dense_total), abs=1e-5)
    assert torch.allclose(grads[0], student_hidden.grad, atol=1e-5) and torch.allclose(grads[1], head.weight.grad, atol=1e-5)

    student, teacher = HiddenLogits(student_hidden, head), HiddenLogits(teacher_hidden, head, frozen=True)
    assert torch.allclose(kl_per_position(student, teacher, mask), kl_per_position(dense(student), dense(teacher), mask), atol=1e-5)
    assert torch.equal(argmax_hits(student, targets), dense(student).argmax(-1) == targets)
    assert student[:, :-1].shape == (B, T - 1, V) and not teacher.requires_grad
