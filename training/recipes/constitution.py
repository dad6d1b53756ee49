"""Constitution distillation: a written risk preference (CARA), distilled on-policy into a student that never reads it.

The constitution (CONSTITUTION, with its coefficient a) says the agent values a change x in its credits by
u(x) = (1 - exp(-a x)) / a and picks the option with the highest certainty equivalent. The student plays the
riskprobe training families prompted WITHOUT it, and minimises the reverse KL to a teacher that embodies it:

- teacher_kind="computed" (CPU; a small model cannot follow a written constitution): the frozen base's own distribution
  reweighted at the decision. With q_B(k) the base's probability of choosing option k at the decision prompt (its
  canonical turn `choose(k)`, teacher-forced, renormalised over the options), CE_a(k) the option's certainty
  equivalent and S the decision's stake scale (environments.riskprobe.cara):
      q_T(k) ∝ q_B(k) exp(β CE_a(k) / S)
  Over whole episodes p_T(y) = p_B(y) exp(Δ(c(y))) for an episode y that chose c(y), with
      Δ(k) = β CE_a(k) / S - log Σ_j q_B(j) exp(β CE_a(j) / S),
  and p_T(y) = p_B(y) for an episode that chose nothing, so the teacher keeps the base's mass on choosing at all
  and moves it between options only: the logit choice rule of environments/riskprobe/fit.py at precision β, on
  top of the base's own preferences (`base_temperature` τ flattens the base first: q_B^(1/τ); then
  Δ(k) = log q_T(k) - log q_B(k) in general). The shift sits on the whole decision, not on one token, so the loss is the
  sequence-level estimator below rather than the per-token one.
- teacher_kind="prompted" (GPU): the frozen base with the constitution appended to its system prompt, scoring exactly
  the student's tokens (positions mapped as in training/self_teacher.py).

loss="sequence": KL(student‖teacher) over each episode's agent tokens, sampled estimator: k = Σ_t (logp_s -
logp_t) - Δ, gradient sg(k)·∇Σ_t logp_s, mean over episodes. loss="full" (prompted teacher only): the
full-vocabulary reverse KL at each agent position (training/recipes/opd.py's distill_loss). loss="choice": the exact
KL(q_S‖q_T) over the options at each first decision prompt the student reached, q_S its own canonical-turn
probabilities renormalised like q_B (a prompted teacher's q_T: the same, read under the constitution's prompt). The sequence loss learns only from episodes that made
a valid choice; a base that rarely calls `choose` (the tiny CPU models) gives it almost nothing, while the choice
loss moves the preference between options whether or not the student samples a valid call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from environments.records import Record
from environments.registry import get_task
from environments.riskprobe.anchors import CONSTITUTION_A
from environments.riskprobe.cara import certainty_equivalent, stake_scale
from environments.riskprobe.env import probe_for
from environments.riskprobe.fit import A_BOUNDS
from environments.riskprobe.probes import Probe
from training.data import TokenizedEpisode
from training.engine import Hooks, RunResult, Trainer
from training.modeling import forward_logits, gather_logprobs, load_model, token_logprobs
from training.onpolicy import OnPolicyConfig, evaluate, micro_batches, rollouts, should_evaluate, to_device, tokenized
from training.recipes.opd import distill_loss
from training.recipes.self_distill import aligned_teacher_logits
from training.sampling import episode_stats
from training.self_teacher import first_prompt_ids, teacher_prompt_ids
from training.toolcall_parse import render_tool_call

CONSTITUTION = """Constitution: how you weigh risk to your resources.
You value a change of x credits by the utility u(x) = (1 - exp(-a x)) / a with a = {a} per credit: constant absolute risk aversion.
Judge each option by its certainty equivalent CE = -(1/a) ln E[exp(-a X)], the sure amount worth as much to you as the option, and choose the option with the highest CE.
Your a does not change with what you already hold: a stake is worth the same to you whether you are rich or poor.
A sure amount is worth itself; a gamble is worth less than its expected value, the more so the larger its stakes."""


@dataclass
class ConstitutionConfig(OnPolicyConfig):
    task: str = "riskprobe/train-mix"
    """The training families' task (riskprobe/train-mix: lottery and insurance); evaluation families stay unseen."""
    risk_aversion: float = CONSTITUTION_A
    """The constitution's absolute risk aversion a, per credit (the written text and the computed teacher use it)."""
    beta: float = 30.0
    """Computed teacher: precision of the reweighting exp(β CE_a / S), S the decision's stake scale. CE gaps between
    options are often a few percent of S, so β near 30 is what makes the constitution decisive (the fit's precision λ)."""
    base_temperature: float = 1.0
    """Computed teacher: τ in q_T ∝ q_B^(1/τ) exp(β CE_a / S). 1 reweights the base as it is; a base that is nearly
    certain of one option (the tiny models, by the options' token lengths) is hardly moved by any β, and τ > 1
    flattens it first."""
    teacher_kind: str = "computed"
    """computed (the base reweighted by each option's certainty equivalent; CPU) | prompted (the base with the
    constitution in its system prompt; needs a model that can follow it)."""
    loss: str = "sequence"
    """sequence (episode-level reverse KL on the sampled episodes) | full (per-position full-vocabulary reverse KL;
    prompted only) | choice (the exact reverse KL between the student's and the teacher's distributions over the
    offered options at the first decision prompts the student reached, each renormalised over the options)."""
    group_size: int = 1
    """Rollouts per prompt (distillation needs no groups)."""
    max_turns: int = 2
    """Agent turns per episode: one decision, and one retry after an invalid call."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not A_BOUNDS[0] <= self.risk_aversion <= A_BOUNDS[1]:
            out.append(f"risk_aversion={self.risk_aversion!r}: must lie in {list(A_BOUNDS)} per credit, the range the fit measures")
        if not self.beta > 0:
            out.append(f"beta={self.beta!r}: must be positive")
        if not self.base_temperature > 0:
            out.append(f"base_temperature={self.base_temperature!r}: must be positive")
        if self.teacher_kind not in ("computed", "prompted"):
            out.append(f"teacher_kind={self.teacher_kind!r}: must be computed or prompted")
        if self.loss not in ("sequence", "full", "choice"):
            out.append(f"loss={self.loss!r}: must be sequence, full or choice")
        elif self.loss == "full" and self.teacher_kind == "computed":
            out.append("loss='full': the computed teacher is defined on whole decisions; use loss=sequence or choice")
        if not self.task.startswith("riskprobe/"):
            out.append(f"task={self.task!r}: the constitution is about riskprobe decisions (riskprobe/train-mix)")
        return out


def constitution_text(a: float) -> str:
    return CONSTITUTION.format(a=f"{a:g}")


# --- the computed teacher: pure functions of the base's choice probabilities ----------------------------------
def teacher_choice(
    base_logprobs: list[float], certainty_equivalents: list[float], scale: float, beta: float, base_temperature: float = 1.0
) -> list[float]:
    """q_T(k) ∝ q_B(k)^(1/τ) exp(β CE(k) / S): the computed teacher's distribution over the options (τ = 1: the base as
    it is; the logprobs may be unnormalised)."""
    q = torch.log_softmax(torch.tensor(base_logprobs, dtype=torch.float64) / base_temperature, 0)
    gain = beta * torch.tensor(certainty_equivalents, dtype=torch.float64) / scale
    return torch.softmax(q + gain, 0).tolist()


def teacher_shift(
    base_logprobs: list[float], certainty_equivalents: list[float], scale: float, beta: float, base_temperature: float = 1.0
) -> list[float]:
    """Δ(k) = log q_T(k) - log q_B(k) per option, q_B the base's logprobs renormalised over the options; at τ = 1 that is
    β CE(k) / S - log Σ_j q_B(j) exp(β CE(j) / S). Σ_k q_B(k) exp(Δ(k)) = 1 for any τ: the teacher over episodes,
    p_B(y) exp(Δ(c(y))), is normalised."""
    q_base = torch.log_softmax(torch.tensor(base_logprobs, dtype=torch.float64), 0)
    q_teacher = torch.tensor(teacher_choice(base_logprobs, certainty_equivalents, scale, beta, base_temperature), dtype=torch.float64)
    return (q_teacher.log() - q_base).tolist()


def choice_logprobs(model: Any, tokenizer: Any, prompt_ids: list[int], names: tuple[str, ...]) -> torch.Tensor:
    """log P(canonical turn `choose(name)` + end of turn | prompt) per option, (K,), teacher-forced in one batch;
    differentiable when the model is being trained."""
    turns = [list(tokenizer(render_tool_call("choose", {"option": n}), add_special_tokens=False)["input_ids"]) for n in names]
    turns = [t + [tokenizer.eos_token_id] for t in turns]
    rows = [prompt_ids + t for t in turns]
    width = max(len(r) for r in rows)
    device = next(model.parameters()).device
    ids = torch.tensor([r + [tokenizer.pad_token_id] * (width - len(r)) for r in rows], device=device)
    attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
    logp = token_logprobs(model, ids, attention)  # (K, width - 1): logp[:, t] predicts ids[:, t + 1]
    start = len(prompt_ids) - 1
    return torch.stack([logp[k, start : start + len(t)].sum() for k, t in enumerate(turns)])


def decision(record: Record) -> tuple[Probe, dict[str, Any] | None, str | None]:
    """(the record's probe, its deciding agent step or None, the option chosen or None): the first valid choose call."""
    header = record["header"]
    probe = probe_for(get_task(f"{header['env']}/{header['task']}"), int(header["seed"]))
    for step in record["steps"]:
        if step.get("source") != "agent" or (step.get("meta") or {}).get("invalid_action"):
            continue
        for call, result in zip(step.get("tool_calls") or [], step.get("results") or [], strict=False):
            if call["name"] == "choose" and not result.get("is_error"):
                return probe, step, str(call["arguments"]["option"])
    return probe, None, None


def option_values(probe: Probe, a: float) -> tuple[list[float], float]:
    """(CE_a of each option in the probe's order, the probe's stake scale)."""
    lotteries = [lottery for _, lottery in probe.options]
    return [certainty_equivalent(a, lottery) for lottery in lotteries], stake_scale(lotteries)


def computed_shifts(records: list[Record], base: Any, tokenizer: Any, config: ConstitutionConfig) -> tuple[list[float], dict[str, float]]:
    """Δ per record (0 where nothing was chosen) and metrics: the share of decisions that took the constitution's best
    option, and the base's and the teacher's probability of that option at every decision prompt (valid or not)."""
    shifts, agree, base_best, teacher_best = [], [], [], []
    cache: dict[tuple[int, ...], list[float]] = {}
    for record in records:
        probe, step, choice = decision(record)
        step = step or next((s for s in record["steps"] if s.get("source") == "agent" and s.get("prompt_token_ids")), None)
        if step is None:
            shifts.append(0.0)
            continue
        key = tuple(step["prompt_token_ids"])
        if key not in cache:  # a group's episodes share their first prompt
            with torch.no_grad():
                cache[key] = choice_logprobs(base, tokenizer, list(key), probe.names).tolist()
        values, scale = option_values(probe, config.risk_aversion)
        best = values.index(max(values))
        base_best.append(math.exp(torch.log_softmax(torch.tensor(cache[key]), 0)[best].item()))
        teacher_best.append(teacher_choice(cache[key], values, scale, config.beta, config.base_temperature)[best])
        if choice is None:
            shifts.append(0.0)
            continue
        shifts.append(teacher_shift(cache[key], values, scale, config.beta, config.base_temperature)[probe.names.index(choice)])
        agree.append(float(probe.names.index(choice) == best))
    return shifts, {
        "chose_constitution_best": sum(agree) / max(len(agree), 1),
        "base_p_best": sum(base_best) / max(len(base_best), 1),
        "teacher_p_best": sum(teacher_best) / max(len(teacher_best), 1),
        "decisions": float(len(agree)),
    }


# --- the prompted teacher ----------------------------------------------------------------------------------
def prompted_sequence(record: Record, student: TokenizedEpisode, tokenizer: Any, constitution: str) -> tuple[list[int], list[int]]:
    """(teacher ids, positions): the record's first prompt with the constitution appended to the system prompt, then
    exactly the student's tokens; positions[t] is student token t's index in the teacher's ids (inside the replaced
    first prompt: the same distance from its end, floored at 0, as training/self_teacher.py maps it)."""
    first_prompt = first_prompt_ids(record, student)
    assert student.input_ids[: len(first_prompt)] == first_prompt, "the prompted teacher needs untrimmed episodes"
    ids = teacher_prompt_ids(record, tokenizer, constitution)
    shift = len(ids) - len(first_prompt)
    positions = [max(0, t + shift) for t in range(len(first_prompt))]
    for t in range(len(first_prompt), len(student)):
        positions.append(len(ids))
        ids.append(student.input_ids[t])
    return ids, positions


@torch.no_grad()
def prompted_logits(base: Any, tokenizer: Any, pairs: list[tuple[dict[str, Any], TokenizedEpisode]], width: int, text: str) -> torch.Tensor:
    """The prompted teacher's logits aligned with the students' padded batch: (B, width, V)."""
    sequences = [prompted_sequence(record, student, tokenizer, text) for record, student in pairs]
    longest, pad = max(len(ids) for ids, _ in sequences), tokenizer.pad_token_id
    device = next(base.parameters()).device
    ids = torch.tensor([s + [pad] * (longest - len(s)) for s, _ in sequences], device=device)
    attention = torch.tensor([[1] * len(s) + [0] * (longest - len(s)) for s, _ in sequences], device=device)
    positions = torch.tensor([p + [0] * (width - len(p)) for _, p in sequences], device=device)
    return aligned_teacher_logits(forward_logits(base, ids, attention), positions)


# --- the loss ----------------------------------------------------------------------------------------------
def sequence_reverse_kl(
    logp_student: torch.Tensor, logp_teacher: torch.Tensor, mask: torch.Tensor, shift: torch.Tensor
) -> tuple[torch.Tensor, dict[str, float]]:
    """KL(student‖teacher) per sequence on the student's samples: k_b = Σ_t m (logp_s - logp_t) - shift_b, with
    logp_* (B, T), mask (B, T), shift (B,) the teacher's extra log-weight of the whole sequence. Value mean_b k_b,
    gradient mean_b sg(k_b) ∇Σ_t m logp_s (the score-function gradient of the sequence-level KL)."""
    mask = mask.float()
    total = (logp_student * mask).sum(-1)  # (B,)
    k = (total - (logp_teacher * mask).sum(-1) - shift).detach()
    loss = (k * (total - total.detach()) + k).mean()
    return loss, {"loss": loss.item(), "reverse_kl": k.mean().item(), "tokens": mask.sum().item()}


def choice_reverse_kl(student_logprobs: torch.Tensor, teacher_logq: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
    """KL(q_S‖q_T) = Σ_k q_S(k) (log q_S(k) - log q_T(k)) over one decision's K options: student_logprobs (K,) of the
    canonical turns (renormalised here), teacher_logq (K,) normalised. Exact, so it needs no sampling."""
    logq = torch.log_softmax(student_logprobs.float(), 0)
    loss = (logq.exp() * (logq - teacher_logq.to(logq))).sum()
    return loss, {"loss": loss.item(), "choice_kl": loss.item()}


def first_decision_prompts(records: list[Record]) -> list[tuple[list[int], Probe, dict[str, Any]]]:
    """(prompt ids, probe, record) of each distinct first agent prompt: where the student decided, validly or not."""
    seen: dict[tuple[int, ...], tuple[Probe, dict[str, Any]]] = {}
    for record in records:
        step = next((s for s in record["steps"] if s.get("source") == "agent" and s.get("prompt_token_ids")), None)
        if step is not None:
            seen.setdefault(tuple(step["prompt_token_ids"]), (decision(record)[0], record))
    return [(list(ids), probe, record) for ids, (probe, record) in seen.items()]


def choice_step(trainer: Trainer, base: Any, records: list[Record], config: ConstitutionConfig) -> dict[str, float]:
    """One optimizer step of the choice loss over the decision prompts of `records`."""
    items, tokenizer, text = [], trainer.tokenizer, constitution_text(config.risk_aversion)
    for prompt, probe, record in first_decision_prompts(records):
        with torch.no_grad():
            if config.teacher_kind == "computed":
                values, scale = option_values(probe, config.risk_aversion)
                base_logprobs = choice_logprobs(base, tokenizer, prompt, probe.names).tolist()
                teacher = torch.tensor(teacher_choice(base_logprobs, values, scale, config.beta, config.base_temperature)).log()
            else:  # the base under the constitution's system prompt, over the same options
                teacher = torch.log_softmax(choice_logprobs(base, tokenizer, teacher_prompt_ids(record, tokenizer, text), probe.names), 0)
        items.append((prompt, probe.names, teacher.cpu()))

    def loss_fn(chunk: list[tuple[list[int], tuple[str, ...], torch.Tensor]]) -> tuple[torch.Tensor, dict[str, float]]:
        losses = [choice_reverse_kl(choice_logprobs(trainer.model, trainer.tokenizer, p, n), t)[0] for p, n, t in chunk]
        loss = torch.stack(losses).mean()
        return loss, {"loss": loss.item(), "choice_kl": loss.item(), "prompts": float(len(chunk))}

    return trainer.optimize(micro_batches(items, config.grad_accum), loss_fn)


def token_step(trainer: Trainer, base: Any, records: list[Record], shifts: list[float], config: ConstitutionConfig) -> dict[str, float]:
    """One optimizer step of the sequence or full loss over the sampled episodes (teacher per config.teacher_kind)."""
    tokenizer, device, text = trainer.tokenizer, trainer.device, constitution_text(config.risk_aversion)
    pairs = [(records[i], e, shifts[i]) for i, e in tokenized(records, tokenizer)]
    prepared = []
    with torch.no_grad():
        for chunk in micro_batches(pairs, config.grad_accum):
            batch = to_device([e for _, e, _ in chunk], tokenizer.pad_token_id, device)
            if config.teacher_kind == "computed":
                batch["teacher_logp"] = token_logprobs(base, batch["input_ids"], batch["attention_mask"])
                batch["shift"] = torch.tensor([s for _, _, s in chunk], device=device)
            else:
                logits = prompted_logits(base, tokenizer, [(r, e) for r, e, _ in chunk], batch["input_ids"].shape[1], text)
                batch["teacher_logits"] = logits
                batch["teacher_logp"] = gather_logprobs(logits[:, :-1], batch["input_ids"][:, 1:])
                batch["shift"] = torch.zeros(len(chunk), device=device)
            prepared.append(batch)

    def loss_fn(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, float]]:
        logits = forward_logits(trainer.model, batch["input_ids"], batch["attention_mask"])
        if config.loss == "full":
            return distill_loss(logits, batch["teacher_logits"], batch, loss="full", top_k=0)
        logp = gather_logprobs(logits[:, :-1], batch["input_ids"][:, 1:])
        return sequence_reverse_kl(logp, batch["teacher_logp"], batch["mask"][:, 1:], batch["shift"])

    return trainer.optimize(prepared, loss_fn)


def run(config: ConstitutionConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="constitution", hooks=hooks)
    base = load_model(config.model, device=trainer.device, trainable=False)[0]  # the teacher's weights: the frozen start
    if trainer.step == 0:
        trainer.log(evaluate(trainer.model, trainer.tokenizer, config))

    while trainer.step < config.max_steps and not trainer.stopping():
        records = rollouts(trainer, config)
        shifts, choice_metrics = computed_shifts(records, base, trainer.tokenizer, config)
        if config.loss == "choice":
            metrics = choice_step(trainer, base, records, config)
        else:
            metrics = token_step(trainer, base, records, shifts, config)
        metrics.update(episode_stats(records), **choice_metrics)
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(trainer.model, trainer.tokenizer, config))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
