"""Idea critic: an LLM taught to predict, before any verification is paid for, whether a proposal will pay off.

The ground is environments/improve, where proposing a config is free and verifying one costs budget. Training data
is generated from the environment: on each training (task, seed), `proposals_per_seed` random configs (the kind
the screened searches propose) are verified once each (the validation R^2 the `verify` tool would return) and
labelled

    gain  = clip((val(config) - val(baseline)) / (val(reference) - val(baseline)), 0, 1)   # share of the attainable
    label = "yes" if gain >= label_threshold else "no"

The critic reads a one-message prompt (the config as a change from the baseline, `critic_prompt`) and answers one
word. Its score is the answer's two-way probability, computed from full answer sequences (answer + end-of-turn):

    score = P(yes) = sigmoid(logp("yes") - logp("no"))        # logp summed over each answer's tokens

Two phases, in one run of `max_steps` optimizer steps:
1. SFT (steps [0, sft_steps)): cross-entropy on the label's tokens, `batch_size` labelled proposals per micro-batch.
2. GRPO (steps [sft_steps, max_steps)): `proposals_per_step` proposals, `group_size` sampled answers each; the
   reward is agreement with the real verification, 1 when the parsed verdict equals the label, else 0 (an answer
   that parses as neither is wrong); group-relative advantages and the clipped surrogate (training/losses.py) on
   the answer tokens, with the policy's own log-probabilities before the update as `old_logp` (ratio 1 at start).
sft_steps >= max_steps is SFT alone; sft_steps = 0 is GRPO from the start model. The agreement reward pays for the
right verdict, not for a calibrated probability: GRPO sharpens P(yes) toward 0 or 1 (tiny model, lr 3e-3, after
70 SFT steps: eval_brier 0.24 -> 0.39 and eval_auc 0.63 -> 0.42 over 30 GRPO steps, one run), which the reward-model
mode's band around 0.5 reads; screening reads only the ranking. The optimizer (and its Adam moments) carries over from
SFT into GRPO.

Held-out proposals (eval seeds, disjoint from training) are scored at the start, every `eval_every` steps and at
the end: eval_accuracy (score >= 0.5 vs label), eval_auc (a positive outranks a negative; what screening needs),
eval_brier (mean (score - label)^2). Labelling the training and evaluation proposals pays one verification each;
that cost sits outside any episode's budget and is logged as `labels_verified`.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from environments.core import EnvError
from environments.improve.anchors import random_config
from environments.improve.model import Config, evaluate
from environments.registry import get_task, make
from training.config import TrainConfig
from training.config_fields import ClipFields, SamplingFields, TrainSeedFields
from training.credit import group_advantages
from training.data import TokenizedEpisode, collate, encode_text, render_chat
from training.engine import Hooks, RunResult, Trainer, batch_indices
from training.losses import grpo_loss, sft_loss
from training.modeling import forward_logits, gather_logprobs, token_logprobs
from training.sampling import generate

ANSWERS = ("no", "yes")  # index = label


@dataclass(frozen=True)
class Proposal:
    task: str  # task id, "improve/quadratic"
    seed: int
    n_features: int
    config: dict[str, Any]  # Config.to_json()
    score: float  # its verified validation R^2
    gain: float  # share of the attainable validation gain, in [0, 1]
    label: int  # 1: gain >= the label threshold


def normalised_gain(score: float, baseline: float, reference: float) -> float:
    """(score - baseline) / (reference - baseline) clipped to [0, 1]; 0 when the reference does not beat the baseline."""
    span = reference - baseline
    return 0.0 if span <= 1e-9 else min(1.0, max(0.0, (score - baseline) / span))


def improve_task_problem(task: str) -> str | None:
    """Why `task` cannot be used (unknown, or not an improve task), or None."""
    try:
        env = get_task(task).env
    except EnvError as exc:
        return str(exc)
    return None if env == "improve" else f"{task} is not an improve task (the critic judges improve proposals)"


def label_of(gain: float, threshold: float) -> int:
    return int(gain >= threshold)


def verified_proposals(task: str, seed: int, configs: list[dict[str, Any]], threshold: float) -> list[Proposal]:
    """Each config (a change from the baseline, as `propose` takes it) verified on the validation split and labelled."""
    env = make(task, seed)
    data, base_config = env.data, env.baseline  # type: ignore[attr-defined]
    baseline, reference = evaluate(data, base_config, "val"), evaluate(data, env.reference, "val")  # type: ignore[attr-defined]
    out = []
    for change in configs:
        config: Config = base_config.changed(change)
        score = evaluate(data, config, "val")
        gain = normalised_gain(score, baseline, reference)
        out.append(Proposal(task, seed, env.n_features, config.to_json(), score, gain, label_of(gain, threshold)))  # type: ignore[attr-defined]
    return out


def proposals_for(tasks: list[str], seeds: range, per_seed: int, threshold: float) -> list[Proposal]:
    """`per_seed` random configs per (task, seed), from a stream of their own (not the screened searches' stream)."""
    out = []
    for task in tasks:
        n_features = int(get_task(task).spec["n_features"])
        for seed in seeds:
            rng = random.Random(f"ideacritic/proposals/{task}/{seed}")
            out += verified_proposals(task, seed, [random_config(rng, n_features) for _ in range(per_seed)], threshold)
    return out


def critic_prompt(config: dict[str, Any], n_features: int, threshold: float) -> str:
    """What the critic reads: the proposal against the fixed baseline, and the question its label answers."""
    features = "all" if len(config["features"]) == n_features else ",".join(str(f) for f in config["features"])
    return (
        f"Idea critic. A linear model over {n_features} features is tuned from lr=0.001 reg=0.1 epochs=5 degree=1 features=all. "
        f"Proposal: lr={config['lr']:g} reg={config['reg']:g} epochs={config['epochs']} degree={config['degree']} features={features}. "
        f"Will it reach {threshold:g} of the attainable validation gain? Answer yes or no."
    )


def prompt_ids(tokenizer: Any, text: str) -> list[int]:
    return encode_text(tokenizer, render_chat(tokenizer, [{"role": "user", "content": text}], None, generation_prompt=True))


def answer_ids(tokenizer: Any, answer: str) -> list[int]:
    """The answer's tokens up to and including end-of-turn: what is trained and what is scored."""
    return encode_text(tokenizer, answer) + [tokenizer.eos_token_id]


def answered(prompt: list[int], answer: list[int]) -> TokenizedEpisode:
    """prompt + answer with only the answer's tokens in the mask."""
    episode = TokenizedEpisode([], [], [], [], [], [], [])
    episode.append(prompt, trained=False, env=True, step=0)
    episode.append(answer, trained=True, env=False, step=1)
    return episode


def parse_verdict(text: str) -> int | None:
    """1 for an answer whose first word is yes, 0 for no, None otherwise (case and trailing punctuation ignored)."""
    words = text.strip().lower().split()
    word = words[0].strip(".,!:;\"'") if words else ""
    return ANSWERS.index(word) if word in ANSWERS else None


def agreement_rewards(verdicts: list[int | None], labels: list[int]) -> torch.Tensor:
    """(N,): 1.0 where the verdict equals the verified label, else 0.0 (an unparsed verdict disagrees)."""
    assert len(verdicts) == len(labels), f"{len(verdicts)} verdicts for {len(labels)} labels"
    return torch.tensor([float(v is not None and v == y) for v, y in zip(verdicts, labels, strict=True)])


def yes_probability(logp_yes: torch.Tensor, logp_no: torch.Tensor) -> torch.Tensor:
    """P(yes) within {yes, no}: exp(a) / (exp(a) + exp(b)) = sigmoid(a - b), for summed answer log-probabilities (N,)."""
    return torch.sigmoid(logp_yes - logp_no)


@torch.no_grad()
def critic_scores(model: Any, tokenizer: Any, prompts: list[str], *, batch: int = 32) -> list[float]:
    """P(yes) of each prompt (module docstring): two teacher-forced sequences per prompt, no sampling."""
    model.eval()
    device = next(model.parameters()).device
    yes, no = answer_ids(tokenizer, ANSWERS[1]), answer_ids(tokenizer, ANSWERS[0])
    out: list[float] = []
    for start in range(0, len(prompts), batch):
        episodes = [answered(prompt_ids(tokenizer, p), a) for p in prompts[start : start + batch] for a in (yes, no)]
        tensors = {k: v.to(device) for k, v in collate(episodes, pad_id=tokenizer.pad_token_id).items()}
        logp = token_logprobs(model, tensors["input_ids"], tensors["attention_mask"]).float()  # (2n, T-1)
        summed = (logp * tensors["mask"][:, 1:]).sum(-1).view(-1, 2)  # (n, 2): yes, no
        out += yes_probability(summed[:, 0], summed[:, 1]).cpu().tolist()
    return out


class ModelCritic:
    """A trained critic as an idea critic (environments/improve/ideas.py): configs -> P(yes), for one task's feature
    count; scores are memoised by config, so screening the same proposals under many budgets scores them once."""

    def __init__(self, model: Any, tokenizer: Any, *, n_features: int, threshold: float) -> None:
        self.model, self.tokenizer, self.n_features, self.threshold = model, tokenizer, n_features, threshold
        self.cache: dict[str, float] = {}

    def __call__(self, configs: Sequence[dict[str, Any]]) -> list[float]:
        keys = [json.dumps(c, sort_keys=True) for c in configs]
        missing = list(dict.fromkeys(k for k in keys if k not in self.cache))
        prompts = [critic_prompt(json.loads(k), self.n_features, self.threshold) for k in missing]
        self.cache.update(zip(missing, critic_scores(self.model, self.tokenizer, prompts) if prompts else [], strict=True))
        return [self.cache[k] for k in keys]


def critic_metrics(scores: list[float], labels: list[int]) -> dict[str, float]:
    """accuracy (score >= 0.5 vs label), auc (share of positive-negative pairs ordered right, ties half; 0.5 without
    both classes), brier (mean squared error of the score), positive_rate (share of labels that are 1)."""
    assert scores and len(scores) == len(labels), f"{len(scores)} scores for {len(labels)} labels"
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    pairs = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return {
        "accuracy": sum((s >= 0.5) == bool(y) for s, y in zip(scores, labels, strict=True)) / len(scores),
        "auc": pairs / (len(pos) * len(neg)) if pos and neg else 0.5,
        "brier": sum((s - y) ** 2 for s, y in zip(scores, labels, strict=True)) / len(scores),
        "positive_rate": len(pos) / len(scores),
    }


@dataclass
class IdeaCriticConfig(ClipFields, SamplingFields, TrainSeedFields, TrainConfig):
    MIN_GROUP_SIZE: ClassVar[int] = 2  # GRPO's group of answers

    tasks: list[str] = field(default_factory=lambda: ["improve/linear", "improve/quadratic"])
    """improve tasks whose proposals are verified and labelled for training (and for the held-out evaluation)."""
    train_seeds: int = 64
    """Training seeds per task; each gives proposals_per_seed labelled proposals."""
    proposals_per_seed: int = 12
    """Random proposals verified and labelled per (task, seed)."""
    label_threshold: float = 0.5
    """A proposal is labelled yes when it reaches this share of the attainable validation gain (baseline 0, reference 1)."""
    sft_steps: int = 60
    """Steps of SFT on the labels before GRPO takes over (>= max_steps: SFT only; 0: GRPO only)."""
    batch_size: int = 16
    """SFT: labelled proposals per micro-batch."""
    proposals_per_step: int = 8
    """GRPO: proposals per micro-batch, each answered group_size times."""
    group_size: int = 4
    """GRPO: sampled answers per proposal (the group of the group-relative advantage)."""
    max_new_tokens: int = 4
    """GRPO: token limit of a sampled answer."""
    eval_seed_start: int = 50_000
    """First held-out seed of the evaluation proposals (keep the range disjoint from training)."""
    eval_seeds: int = 8
    """Held-out seeds per task whose proposals score the critic."""
    eval_every: int = 0
    """Evaluate every N steps (0: only at the start and the end)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not self.tasks:
            out.append("tasks=[]: name at least one improve task")
        out += [f"tasks={self.tasks!r}: {why}" for t in self.tasks if (why := improve_task_problem(t))]
        for name in ("proposals_per_seed", "batch_size", "proposals_per_step", "eval_seeds"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        for name in ("eval_seed_start", "sft_steps", "eval_every"):
            if getattr(self, name) < 0:
                out.append(f"{name}={getattr(self, name)!r}: must not be negative")
        if not 0.0 < self.label_threshold <= 1.0:
            out.append(f"label_threshold={self.label_threshold!r}: must be in (0, 1]")
        train_end, eval_end = self.train_seed_start + self.train_seeds, self.eval_seed_start + self.eval_seeds
        if self.train_seed_start < eval_end and self.eval_seed_start < train_end:
            out.append(
                f"eval_seed_start={self.eval_seed_start!r}: evaluation seeds [{self.eval_seed_start}, {eval_end}) overlap training "
                f"seeds [{self.train_seed_start}, {train_end})"
            )
        return out


def evaluate_critic(model: Any, tokenizer: Any, held: list[Proposal], threshold: float) -> dict[str, float]:
    scores = critic_scores(model, tokenizer, [critic_prompt(p.config, p.n_features, threshold) for p in held])
    return {f"eval_{k}": v for k, v in critic_metrics(scores, [p.label for p in held]).items()}


def grpo_batch(trainer: Trainer, chosen: list[Proposal], config: IdeaCriticConfig) -> tuple[dict[str, torch.Tensor], dict[str, float]]:
    """Sample group_size answers per proposal, reward agreement, and build the batch with advantages and old_logp."""
    tokenizer = trainer.tokenizer
    prompts = [prompt_ids(tokenizer, critic_prompt(p.config, p.n_features, config.label_threshold)) for p in chosen]
    repeated = [prompt for prompt in prompts for _ in range(config.group_size)]
    samples = generate(trainer.model, tokenizer, repeated, max_new_tokens=config.max_new_tokens, temperature=config.temperature)
    verdicts = [parse_verdict(tokenizer.decode(ids, skip_special_tokens=True)) for ids, _ in samples]
    rewards = agreement_rewards(verdicts, [p.label for p in chosen for _ in range(config.group_size)])
    advantages = group_advantages(rewards, [i // config.group_size for i in range(len(repeated))])
    episodes = [answered(prompt, ids) for prompt, (ids, _) in zip(repeated, samples, strict=True)]
    batch = {k: v.to(trainer.device) for k, v in collate(episodes, pad_id=tokenizer.pad_token_id).items()}
    batch["advantages"] = advantages.to(trainer.device)
    with torch.no_grad():  # the policy before this update: the ratio starts at exactly 1
        batch["old_logp"] = token_logprobs(trainer.model, batch["input_ids"], batch["attention_mask"])
    stats = {
        "agreement": float(rewards.mean()),
        "verdict_parsed": sum(v is not None for v in verdicts) / len(verdicts),
        "reward_std": float(rewards.std()),
    }
    return batch, stats


def run(config: IdeaCriticConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="ideacritic", hooks=hooks)
    model, tokenizer, pad_id = trainer.model, trainer.tokenizer, trainer.tokenizer.pad_token_id
    train_seeds = range(config.train_seed_start, config.train_seed_start + config.train_seeds)
    train = proposals_for(config.tasks, train_seeds, config.proposals_per_seed, config.label_threshold)
    held = proposals_for(
        config.tasks,
        range(config.eval_seed_start, config.eval_seed_start + config.eval_seeds),
        config.proposals_per_seed,
        config.label_threshold,
    )
    examples = [
        answered(
            prompt_ids(tokenizer, critic_prompt(p.config, p.n_features, config.label_threshold)), answer_ids(tokenizer, ANSWERS[p.label])
        )
        for p in train
    ]
    fixed = {"labels_verified": float(len(train) + len(held)), "label_positive_rate": sum(p.label for p in train) / len(train)}
    if trainer.step == 0:
        trainer.log({**evaluate_critic(model, tokenizer, held, config.label_threshold), **fixed})

    def sft_fn(items: list[TokenizedEpisode]) -> tuple[torch.Tensor, dict[str, float]]:
        batch = {k: v.to(trainer.device) for k, v in collate(items, pad_id=pad_id).items()}
        logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])[:, :-1]  # (B, T-1, V)
        return sft_loss(logits, batch["input_ids"][:, 1:], batch["mask"][:, 1:])

    def grpo_fn(item: tuple[dict[str, torch.Tensor], dict[str, float]]) -> tuple[torch.Tensor, dict[str, float]]:
        batch, stats = item
        logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])[:, :-1]  # (B, T-1, V)
        logp = gather_logprobs(logits, batch["input_ids"][:, 1:])  # (B, T-1)
        loss, metrics = grpo_loss(
            logp, batch["old_logp"], batch["advantages"], batch["mask"][:, 1:], clip_low=config.clip_low, clip_high=config.clip_high
        )
        return loss, {**metrics, **stats}

    while trainer.step < config.max_steps and not trainer.stopping():
        draws = [trainer.step * config.grad_accum + accum for accum in range(config.grad_accum)]
        if trainer.step < config.sft_steps:
            micro = [[examples[i] for i in batch_indices(len(examples), config.batch_size, config.seed, d)] for d in draws]
            metrics = {**trainer.optimize(micro, sft_fn), "phase_grpo": 0.0}
        else:
            model.eval()  # sampling and old_logp without dropout; optimize() switches back to train
            batches = [
                grpo_batch(trainer, [train[i] for i in batch_indices(len(train), config.proposals_per_step, config.seed + 1, d)], config)
                for d in draws
            ]
            metrics = {**trainer.optimize(batches, grpo_fn), "phase_grpo": 1.0}
        last = trainer.step >= config.max_steps
        if last or (config.eval_every and trainer.step % config.eval_every == 0):
            metrics.update(evaluate_critic(model, tokenizer, held, config.label_threshold))
        trainer.log({**metrics, **fixed})
        trainer.maybe_save()
    return trainer.finish()


__all__ = ["IdeaCriticConfig", "ModelCritic", "Proposal", "critic_metrics", "critic_prompt", "critic_scores", "proposals_for", "run"]
