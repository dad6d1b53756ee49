"""SFT on selected agent episodes, with a supervision horizon and selective long-horizon refinement.

Reads canonical records (JSONL), keeps the selected ones (score threshold, passed only), tokenizes them with
exact agent masks, and trains cross-entropy on the agent's own tokens. With `horizon_tokens` set, every
episode is cut to its first N tokens; with `horizon_turns`, to the end of its first N agent turns (the same cut
whatever the tokenizer). With `refine_fraction` (or `refine_count`) as well, the run has two phases: up to
`warm_start_steps` it trains on the short prefixes; then it scores each episode's continuation past its prefix
under the warm-started model, picks episodes by `refine_select` (the most likely continuations, the least likely
ones, or a seeded random draw) and refines on those in full.

Equal compute: with `token_budget` the run ends when its compute tokens would pass the budget. Compute tokens are
the tokens every optimizer step reads (forward and backward, padding not counted) plus a third of the tokens the
refinement selection scores (forward only: ~2N FLOPs a token against ~6N for a training token). The last step
keeps as many of its episodes, in order, as fit, so runs with one budget end less than one episode below it
(above it only if the selection's scoring alone passes it). Logged per step: input_tokens, compute_tokens, refining (0/1), refine_selected_share.

With `role` set to another role than the actor (`python -m training sft --role critic`), the examples are
that role's own turns from team records (training/role_views.py): one per turn, its prompt what the role saw,
its trained tokens its own; `min_score` then keeps the turns whose reward (the outcome the actor reached, or
with `turn_horizon` the actor's next steps' success) is high enough, so a critic learns only from advice that
was followed by success.

A recovery view (the diagnosis export's corrected branch) is trained from its `train_from_step` mark only
(training/data.py). With `view="diagnosis"` the recipe trains a diagnoser: it keeps the diagnosis-view records and
supervises only their compact answer, the pivotal step and the correction (training/diagnosis_view.py).
PG-SFT (`turn_weighting="info_gain"`): each actor turn's token loss is weighted by the turn's information gain,
how much the privileged context (the outcome self-teacher's hindsight note: score and every environment
response) raises the START model's likelihood of the demonstrated turn, computed once before training and
normalised so each episode's total weight is SFT's (training/info_gain.py documents the choices). `kl_coef` adds
kl_coef x KL(model || start model), full vocabulary, on the trained tokens, logged as `kl_to_start`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from environments.records import Record, header_score
from environments.roles import ACTOR, ROLE_NAME
from training.config import TrainConfig
from training.config_fields import EpisodeDataFields, PromptStyleFields, ReferenceKLFields
from training.credit import REFINE_RULES, continuation_logprob, horizon, select_for_refinement, turns_end
from training.data import TokenizedEpisode, collate, collate_packed, read_records
from training.diagnosis_view import DIAGNOSIS_VIEW, as_diagnoser_record
from training.engine import Hooks, RunResult, Trainer, batch_indices
from training.info_gain import weigh_by_info_gain
from training.losses import kl_full, sft_loss, sft_loss_from_logprobs
from training.modeling import forward_logits, load_model, token_logprobs_and_hits
from training.role_views import tokenize_role

SCORING_COST = 1 / 3  # compute of a forward-only token relative to a trained one (forward + backward)
SFT_VIEWS = ("as_is", DIAGNOSIS_VIEW)


@dataclass
class SFTConfig(ReferenceKLFields, EpisodeDataFields, TrainConfig, PromptStyleFields):
    DISTRIBUTED: ClassVar[bool] = True

    pack: bool = True
    """Pack a micro-batch's episodes end to end into rows as long as its longest episode (training.data.collate_packed):
    the same tokens and the same loss without the padding. Off with kl_coef (its KL reads right-padded rows)."""
    min_score: float | None = None
    """Keep only episodes whose score composite is at least this (None keeps all)."""
    passed_only: bool = False
    """Keep only episodes whose score says passed."""
    horizon_tokens: int = 0
    """Supervision horizon: train on the first N tokens of each episode (0: whole episodes)."""
    horizon_turns: int = 0
    """Supervision horizon in agent turns: train on each episode up to the end of its N-th agent turn (0: off; one of
    horizon_tokens and horizon_turns). Not turn_horizon, which sets other roles' turn rewards."""
    refine_fraction: float = 0.0
    """Selective refinement: after warm_start_steps, refine in full on this fraction of the episodes, picked by refine_select."""
    refine_select: str = "likely"
    """Which episodes refinement picks, by the warm-started model's mean log-likelihood of each one's continuation past
    its horizon: likely (highest), unlikely (lowest: the later turns it gets most wrong), random (seeded control)."""
    refine_count: int = 0
    """Like refine_fraction, as a count of episodes (use one of the two)."""
    warm_start_steps: int = 0
    """Steps on horizon prefixes before the refinement selection."""
    token_budget: int = 0
    """Equal compute: end the run before its compute tokens (tokens read by training steps + a third of those the
    refinement scores) pass this; 0: max_steps alone ends it."""
    role: str = "actor"
    """Whose turns to train: actor (other roles' turns are context only), critic, consultant, or any role of the records."""
    turn_horizon: int = 0
    """Roles other than the actor: a turn's reward is the actor's success over its next N steps (0: the episode's outcome)."""
    view: str = "as_is"
    """as_is: records as written (a recovery view trains from its `train_from_step` mark either way); diagnosis: keep
    only diagnosis-view records and train a diagnoser on the compact answer (training/diagnosis_view.py)."""
    turn_weighting: str = "uniform"
    """uniform (every trained token alike) | info_gain (PG-SFT: each actor turn weighted by how much the outcome note
    raises the start model's likelihood of it; computed once before training; training/info_gain.py)."""
    info_gain_temperature: float = 0.5
    """info_gain: temperature of the softmax over an episode's turns, in nats of mean per-token gain (higher: flatter)."""
    info_gain_floor: float = 0.2
    """info_gain: share of the weight every turn keeps (w = floor + (1 - floor) x softmax part; 1 gives uniform)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if not ROLE_NAME.fullmatch(self.role):
            out.append(f"role={self.role!r}: must be a role name such as actor, critic or consultant")
        if self.turn_horizon < 0:
            out.append(f"turn_horizon={self.turn_horizon!r}: must not be negative")
        if self.turn_horizon and self.role == ACTOR:
            out.append(f"turn_horizon={self.turn_horizon!r}: rewards turns of other roles; the actor is trained on whole episodes")
        if self.view not in SFT_VIEWS:
            out.append(f"view={self.view!r}: must be one of {', '.join(SFT_VIEWS)}")
        if self.view == DIAGNOSIS_VIEW and self.role != ACTOR:
            out.append(f"role={self.role!r}: a diagnoser is trained on its own answer turn; leave role=actor with view=diagnosis")
        if self.turn_weighting not in ("uniform", "info_gain"):
            out.append(f"turn_weighting={self.turn_weighting!r}: must be uniform or info_gain")
        if self.turn_weighting == "info_gain" and self.role != ACTOR:
            out.append(f"turn_weighting='info_gain': weighs the actor's turns; role={self.role!r} is not the actor")
        if not self.info_gain_temperature > 0:
            out.append(f"info_gain_temperature={self.info_gain_temperature!r}: must be positive")
        if not 0.0 <= self.info_gain_floor <= 1.0:
            out.append(f"info_gain_floor={self.info_gain_floor!r}: must be in [0, 1]")
        if self.horizon_tokens < 0:
            out.append(f"horizon_tokens={self.horizon_tokens!r}: must not be negative")
        if not 0.0 <= self.refine_fraction <= 1.0:
            out.append(f"refine_fraction={self.refine_fraction!r}: must be in [0, 1]")
        if self.refine_fraction and self.refine_count:
            out.append(f"refine_fraction={self.refine_fraction!r} and refine_count={self.refine_count!r}: give only one")
        if self.horizon_turns < 0:
            out.append(f"horizon_turns={self.horizon_turns!r}: must not be negative")
        if self.horizon_tokens and self.horizon_turns:
            out.append(f"horizon_tokens={self.horizon_tokens!r} and horizon_turns={self.horizon_turns!r}: give only one")
        if self.refine_select not in REFINE_RULES:
            out.append(f"refine_select={self.refine_select!r}: must be one of {', '.join(REFINE_RULES)}")
        if self.token_budget < 0:
            out.append(f"token_budget={self.token_budget!r}: must not be negative")
        if self.token_budget and self.parallel != "none":
            out.append(f"token_budget={self.token_budget!r}: cuts steps to uneven micro-batch counts; use it with parallel='none'")
        refining = bool(self.refine_fraction or self.refine_count)
        if refining and not (self.horizon_tokens or self.horizon_turns):
            out.append("horizon_tokens=0: selective refinement needs a horizon (horizon_tokens or horizon_turns) to warm-start on")
        if refining and not 0 < self.warm_start_steps < self.max_steps:
            out.append(
                f"warm_start_steps={self.warm_start_steps!r}: must be between 1 and max_steps-1 ({self.max_steps - 1}) when refining"
            )
        return out

    @property
    def refining(self) -> bool:
        return bool(self.refine_fraction or self.refine_count)

    def prefix_length(self, episode: TokenizedEpisode) -> int:
        """Where the supervision horizon cuts this episode (its whole length without one)."""
        if self.horizon_turns:
            return turns_end(episode, self.horizon_turns)
        return min(self.horizon_tokens, len(episode)) if self.horizon_tokens else len(episode)


def select_records(records: list[Record], config: SFTConfig) -> list[dict[str, Any]]:
    if config.view == DIAGNOSIS_VIEW:  # a diagnosis record's score is the failed episode's: no score selection
        return [as_diagnoser_record(r) for r in records if ((r.get("header") or {}).get("meta") or {}).get("view") == DIAGNOSIS_VIEW]
    kept = []
    for record in records:
        score = header_score(record.get("header", {}))
        if config.passed_only and not score.get("passed"):
            continue
        if config.role == ACTOR and config.min_score is not None and score.get("composite", 0.0) < config.min_score:
            continue
        kept.append(record)
    return kept


def training_pairs(records: list[Record], tokenizer: Any, config: SFTConfig) -> list[tuple[dict[str, Any], TokenizedEpisode]]:
    """(record, example) for the selected role's examples with at least one trained token (turns filtered by
    min_score for other roles)."""
    pairs = []
    for record in records:
        for episode in tokenize_role(
            record, tokenizer, role=config.role, max_tokens=config.max_tokens, horizon=config.turn_horizon, style=config.prompt_style
        ):
            low = config.role != ACTOR and config.min_score is not None and (episode.reward is None or episode.reward < config.min_score)
            if sum(episode.mask) and not low:
                pairs.append((record, episode))
    return pairs


def no_pairs_reason(records: list[Record], tokenizer: Any, config: SFTConfig) -> str:
    """Why `training_pairs` found nothing in `records`, in words a person can act on. A long episode (a 500-step
    StoreBench run) is cut at max_tokens before its first turn: the dataset check, which has no tokenizer, keeps it."""
    firsts = [
        episode.mask.index(1)
        for record in records
        for episode in tokenize_role(record, tokenizer, role=config.role, horizon=config.turn_horizon, style=config.prompt_style)
        if 1 in episode.mask
    ]
    each = "the episode is" if len(records) == 1 else f"each of the {len(records)} episodes is"
    if firsts and min(firsts) >= config.max_tokens:
        return (
            f"{each} cut at max_tokens={config.max_tokens} before its first {config.role} turn "
            f"(the earliest starts at token {min(firsts)}): raise max_tokens past it, or train on shorter episodes"
        )
    none = "the episode has" if len(records) == 1 else f"none of the {len(records)} episodes has"
    return f"{none} a {config.role} token to train on (min_score={config.min_score})"


def within_budget(micro: list[list[TokenizedEpisode]], tokens_left: float) -> list[list[TokenizedEpisode]]:
    """The step's micro-batches cut to the episodes, in order, whose tokens fit in `tokens_left` ([] when none does)."""
    kept: list[list[TokenizedEpisode]] = []
    for batch in micro:
        fitting: list[TokenizedEpisode] = []
        for episode in batch:
            if len(episode) > tokens_left:
                return kept + ([fitting] if fitting else [])
            fitting.append(episode)
            tokens_left -= len(episode)
        kept.append(fitting)
    return kept


def sft_step_loss(model: Any, batch: dict[str, Any], reference: Any = None, kl_coef: float = 0.0) -> tuple[Any, dict[str, float]]:
    """Next-token cross-entropy on the batch's trained tokens (weighted), plus kl_coef x KL(model || reference) per
    trained token (unweighted) when a reference model is given: the loss the SFT recipe optimizes. Without the KL
    (which needs both full distributions) only the taken tokens' log-probabilities are computed, in chunks, over
    packed rows when the batch has position_ids (training.data.collate_packed)."""
    if reference is None:
        logprobs, hits = token_logprobs_and_hits(
            model, batch["input_ids"], batch.get("attention_mask"), position_ids=batch.get("position_ids")
        )
        return sft_loss_from_logprobs(logprobs, hits, batch["mask"][:, 1:], batch["weights"][:, 1:])
    logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])
    loss, metrics = sft_loss(logits[:, :-1], batch["input_ids"][:, 1:], batch["mask"][:, 1:], batch["weights"][:, 1:])
    with torch.no_grad():
        start = forward_logits(reference, batch["input_ids"], batch["attention_mask"])
    kl, kl_metrics = kl_full(logits[:, :-1], start[:, :-1], batch["mask"][:, 1:], direction="reverse")
    loss = loss + kl_coef * kl
    metrics.update(loss=float(loss.detach()), kl_to_start=kl_metrics["reverse_kl"])
    return loss, metrics


def run(config: SFTConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="sft", hooks=hooks)
    tokenizer, pad_id = trainer.tokenizer, trainer.tokenizer.pad_token_id
    records = select_records(read_records(config.data), config)
    assert records, f"no episodes left in {config.data} after selection (min_score={config.min_score}, passed_only={config.passed_only})"
    pairs = training_pairs(records, tokenizer, config)
    if not pairs:
        raise ValueError(f"no {config.role} turns to train on in {config.data}: {no_pairs_reason(records, tokenizer, config)}")
    episodes, weighting = [episode for _, episode in pairs], {}
    # the start model: the reference of the KL, and where the information gains are taken (a resumed run reloads it)
    resumed_info_gain = config.turn_weighting == "info_gain" and trainer.step > 0
    reference = load_model(config.model, device=trainer.device, trainable=False)[0] if config.kl_coef or resumed_info_gain else None
    if config.turn_weighting == "info_gain":
        start = reference if reference is not None else trainer.model
        episodes, weighting = weigh_by_info_gain(
            start,
            tokenizer,
            pairs,
            style=config.prompt_style,
            temperature=config.info_gain_temperature,
            floor=config.info_gain_floor,
            batch_size=max(8, config.batch_size),
        )
    prefixes = [config.prefix_length(e) for e in episodes]
    short = [horizon(e, n) for e, n in zip(episodes, prefixes, strict=True)]
    state = trainer.state  # kept in checkpoints: a resumed run keeps its selection and its compute so far
    state.setdefault("compute_tokens", 0.0)

    def training_set() -> list[TokenizedEpisode]:
        if not config.refining or trainer.step < config.warm_start_steps:
            return short
        if "refine_selection" not in state:  # computed once at the switch
            scores = continuation_logprob(trainer.model, episodes, prefixes, pad_id=pad_id)
            state["refine_selection"] = select_for_refinement(
                scores,
                rule=config.refine_select,
                fraction=config.refine_fraction or None,
                count=config.refine_count or None,
                seed=config.seed,
            )
            state["compute_tokens"] += SCORING_COST * sum(len(e) for e in episodes)
            assert state["refine_selection"], f"no episode continues past its horizon in {config.data}: nothing to refine on"
        return [episodes[i] for i in state["refine_selection"]]

    def loss_fn(items: list[TokenizedEpisode]) -> tuple[Any, dict[str, float]]:
        packed = config.pack and not config.kl_coef  # the KL compares full distributions over right-padded rows
        batch = {k: v.to(trainer.device) for k, v in (collate_packed if packed else collate)(items, pad_id=pad_id).items()}
        return sft_step_loss(trainer.model, batch, reference if config.kl_coef else None, config.kl_coef)

    while trainer.step < config.max_steps and not trainer.stopping():
        pool = training_set()
        micro = []
        for accum in range(config.grad_accum):
            indices = batch_indices(len(pool), config.batch_size, config.seed, trainer.step * config.grad_accum + accum)
            micro.append([pool[i] for i in indices])
        if config.token_budget:
            micro = within_budget(micro, config.token_budget - state["compute_tokens"])
            if not micro:
                break  # the budget is spent: not one more episode fits
        read = sum(len(e) for batch in micro for e in batch)
        metrics = trainer.optimize(micro, loss_fn)
        state["compute_tokens"] += read
        selected = len(state.get("refine_selection", []))
        metrics.update(
            episodes_in_pool=float(len(pool)),
            input_tokens=float(read),
            compute_tokens=state["compute_tokens"],
            refining=float(config.refining and trainer.step > config.warm_start_steps),
            refine_selected_share=selected / len(episodes),
        )
        metrics.update(weighting)  # the turn weights' distribution, the same every step (taken once, before training)
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
