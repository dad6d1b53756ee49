"""Sibyl: selective consultation. The actor learns when to call the runner's `consult` tool, in three stages.

    python -m training sibyl --set model="'PATH'" --set stage1_steps=10 --set stage2_steps=5 --set max_steps=30

- **stage 1** (steps [0, stage1_steps)): consultation-free GRPO (training/recipes/grpo.py); no consult tool.
- **stage 2** (the next stage2_steps): cold start of consulting. The policy plays greedy episodes with the consult tool
  listed; at each of its turns the consultant (an anchor, the task's scripted oracle, or a teacher model) is asked
  what it would do. A turn is a *decisive disagreement* (`decisive`) when the policy's greedy action differs from
  the consultant's AND the policy's mean per-token log-probability of the consultant's action at that state is
  below `disagree_max_logp`: the policy is wrong there and does not even consider the right action, so asking pays.
  At those states an SFT example is built from the very prompt ids the policy saw: a `consult` call, the
  consultant's answer (its tool result: context), then the suggested call (both actor turns trained; the turns
  before the state are context only). A step with no such state is skipped (counted, no update).
- **stage 3** (the remaining steps): consultation-aware GRPO. The consult tool is offered; each consultation costs
  `consult_cost`, which the episode's training reward subtracts (training.data.record_reward reads the header's
  reward = composite - cost x consultations). The `consult` call tokens are the policy's own and are trained like
  any other action; the consultant's answer is a tool result and is masked.

`consult=False` is the never-consult baseline: every step is stage 1 (equal compute, the tool never offered).
Metrics per step: `stage`, GRPO's (stages 1 and 3) or SFT's (stage 2), `consultations_mean` (per episode),
`consult_rate` (consultations per decision: turns that do not follow a consultation), `reward_net_mean`, and in stage 2 `states`, `disagreements`, `disagreement_rate`.
Evaluation (greedy, held-out seeds) offers the consult tool once stage 1 is over and adds `eval_consultations_mean`
and `eval_reward_net_mean`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from environments.core import Env, Policy
from environments.records import Record, Step
from environments.registry import env_meta
from environments.roles import ACTOR, CONSULT, CONSULTANT, step_role
from training.data import TokenizedEpisode, collate, record_reward, tokenize_record
from training.engine import Hooks, RunResult, Trainer, step_generator
from training.modeling import token_logprobs
from training.onpolicy import pick_jobs, should_evaluate, tokenized
from training.recipes.grpo import GRPOConfig, clipped_loss, grpo_advantages, reference_policy, scored_batches, training_reward
from training.recipes.sft import sft_step_loss
from training.sampling import Consultation, Router, continue_episodes, episode_stats, rollout_episodes

CONSULTANTS = ("anchor", "teacher")


@dataclass
class SibylConfig(GRPOConfig):
    MODEL_PATH_FIELDS: ClassVar[tuple[str, ...]] = (*GRPOConfig.MODEL_PATH_FIELDS, "teacher")

    consultant: str = "anchor"
    """Who answers `consult`: anchor (the environment's default anchor, e.g. toolgym's expert) | teacher (the model
    at `teacher`, greedy, prompted as the consultant)."""
    teacher: str = ""
    """from_pretrained path of the teacher model when consultant=teacher."""
    consult_cost: float = 0.05
    """What one consultation costs in stage 3 and evaluation, subtracted from the episode's reward (within [0, 1])."""
    consult: bool = True
    """False: the never-consult baseline: every step is stage-1 GRPO and the consult tool is never offered."""
    stage1_steps: int = 10
    """Steps of consultation-free GRPO first."""
    stage2_steps: int = 5
    """Then steps of SFT on decisive-disagreement states (the rest, up to max_steps, is consultation-aware GRPO)."""
    stage2_episodes: int = 8
    """Greedy episodes per stage-2 step whose states are checked for disagreement (distinct training seeds)."""
    stage2_batch: int = 16
    """Stage-2 examples per micro-batch (all of a step's examples make one optimizer step, averaged over micro-batches)."""
    disagree_max_logp: float = -1.0
    """Stage 2: a state is a decisive disagreement when the greedy action differs from the consultant's and the
    policy's mean per-token log-probability of the consultant's action is below this (nats; -1.0: under ~0.37)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.consultant not in CONSULTANTS:
            out.append(f"consultant={self.consultant!r}: must be one of {', '.join(CONSULTANTS)}")
        if self.consultant == "teacher" and not self.teacher:
            out.append("teacher='': consultant='teacher' needs a from_pretrained path")
        if not 0.0 <= self.consult_cost <= 1.0:
            out.append(f"consult_cost={self.consult_cost!r}: must be within [0, 1] (a share of the composite)")
        for name in ("stage1_steps", "stage2_steps"):
            if getattr(self, name) < 0:
                out.append(f"{name}={getattr(self, name)!r}: must not be negative")
        if self.stage1_steps + self.stage2_steps > self.max_steps:
            out.append(f"stage1_steps + stage2_steps = {self.stage1_steps + self.stage2_steps}: more than max_steps={self.max_steps}")
        for name in ("stage2_episodes", "stage2_batch"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if not self.disagree_max_logp <= 0:
            out.append(f"disagree_max_logp={self.disagree_max_logp!r}: a log-probability threshold must be <= 0")
        if self.max_turns < 2 and self.consult:
            out.append(f"max_turns={self.max_turns!r}: consulting takes a turn and following it another; give at least 2")
        return out


# --- the pieces, pure where they can be --------------------------------------------------------------------------


def stage_of(step: int, config: SibylConfig) -> int:
    """The stage an optimizer step (0-based: the step about to be taken) belongs to."""
    if not config.consult or step < config.stage1_steps:
        return 1
    return 2 if step < config.stage1_steps + config.stage2_steps else 3


def call_text(calls: list[dict[str, Any]]) -> str:
    """Tool calls as the actor writes them (the chat template's form: `<tool_call>{"name": ..., "arguments": ...}`)."""
    return "".join(
        f'<tool_call>{{"name": {json.dumps(c["name"])}, "arguments": {json.dumps(c.get("arguments") or {}, ensure_ascii=False)}}}</tool_call>'
        for c in calls
    )


CONSULT_TEXT = call_text([{"name": CONSULT, "arguments": {}}])


def call_key(calls: list[dict[str, Any]]) -> list[str]:
    """What an action does, for comparing two (names and arguments in order; call ids and spacing do not count)."""
    return [f"{c['name']}:{json.dumps(c.get('arguments') or {}, sort_keys=True)}" for c in calls]


def decisive(policy_calls: list[dict[str, Any]], consultant_calls: list[dict[str, Any]], consultant_logp: float, threshold: float) -> bool:
    """The stage-2 criterion: the consultant suggests something, the policy's greedy action is another, and the policy
    gives the consultant's action a mean per-token log-probability below `threshold`."""
    return bool(consultant_calls) and call_key(policy_calls) != call_key(consultant_calls) and consultant_logp < threshold


@torch.no_grad()
def mean_action_logprobs(model: Any, pad_id: int, prompts: list[list[int]], completions: list[list[int]]) -> list[float]:
    """Per (prompt, completion): the model's mean log-probability of the completion's tokens after the prompt (the
    completion as the actor would write it, its end-of-turn token included)."""
    device = next(model.parameters()).device
    out: list[float] = []
    for start in range(0, len(prompts), 16):  # bounded batches: prompts grow with the episode
        rows = [p + c for p, c in zip(prompts[start : start + 16], completions[start : start + 16], strict=True)]
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [pad_id] * (width - len(r)) for r in rows], device=device)
        attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
        logp = token_logprobs(model, ids, attention)  # (B, T-1): logp[b, t] is of token t+1
        for b, (prompt, completion) in enumerate(zip(prompts[start : start + 16], completions[start : start + 16], strict=True)):
            span = logp[b, len(prompt) - 1 : len(prompt) - 1 + len(completion)]
            out.append(float(span.mean()))
    return out


def actor_turns(record: Record) -> list[dict[str, Any]]:
    return [s for s in record["steps"] if step_role(s) == ACTOR and s.get("source") == "agent"]


def consulted(step: Step) -> bool:
    return CONSULT in [c["name"] for c in step.get("tool_calls") or []]


def suggestion(step: Step) -> list[dict[str, Any]]:
    """The calls a consult result in this actor step suggested ([] when it holds none)."""
    for result in step.get("results") or []:
        content = result.get("content")
        if isinstance(content, dict) and not result.get("is_error"):
            return list(content.get("suggested_calls") or [])
    return []


def decisions(record: Record) -> tuple[int, int]:
    """(consultations, decisions) of a record: a decision is an actor turn that does not follow a consultation (the
    turn after one is the follow), so a rate per decision means the same whoever decides to consult."""
    turns = actor_turns(record)
    follows = sum(1 for before in turns[:-1] if consulted(before))
    return sum(1 for t in turns if consulted(t)), len(turns) - follows


def consult_stats(records: list[Record], prefix: str = "") -> dict[str, float]:
    """consultations_mean (per episode), consult_rate (per decision) and reward_net_mean (reward less costs)."""
    counts = [decisions(r) for r in records]
    n = max(len(records), 1)
    return {
        f"{prefix}consultations_mean": sum(c for c, _ in counts) / n,
        f"{prefix}consult_rate": sum(c for c, _ in counts) / max(sum(d for _, d in counts), 1),
        f"{prefix}reward_net_mean": sum(record_reward(r) or 0.0 for r in records) / n,
    }


def deferral_router(rate: float, salt: int = 0) -> Router:
    """Forced turns: at each decision consult with probability `rate` (a pure function of the episode's seed, its turn
    and `salt`; rate 1 always), and on the turn after a consultation do what the consultant suggested (the model
    acts when it suggested nothing). Stage 2 builds its examples with rate 1; the experiment's baselines use it too."""

    def route(record: Record) -> str | None:
        turns = actor_turns(record)
        if turns and consulted(turns[-1]):
            suggested = suggestion(turns[-1])
            return call_text(suggested) if suggested else None
        if rate >= 1.0 or random.Random(f"{record['header'].get('seed')}:{len(turns)}:{salt}").random() < rate:
            return CONSULT_TEXT
        return None

    return route


def consultation_for(config: SibylConfig, *, cost: float | None = None) -> Consultation:
    """The consult tool as the config sets it: who answers and at what cost."""
    if config.consultant == "teacher":
        from training.policies import policy_from_config

        teacher = {
            "kind": "hf",
            "model": config.teacher,
            "name": "teacher",
            "role": CONSULTANT,
            "sampling": {"temperature": 0.0},
            "harness": {"max_new_tokens": config.max_new_tokens},
        }  # an answer is one action, like the actor's turn

        def make(env: Env, seed: int) -> Policy:
            return policy_from_config(teacher, env, seed)
    else:

        def make(env: Env, seed: int) -> Policy:
            meta = env_meta(env.name)
            assert meta.default_anchor, f"consultant='anchor': {env.name} declares no default anchor to consult"
            return meta.anchors[meta.default_anchor](env, seed)

    return Consultation(consultant=make, cost=config.consult_cost if cost is None else cost)


# --- stage 2: decisive disagreements become consult-then-follow examples ---------------------------------------------


def candidate_states(record: Record) -> list[int]:
    """Step indices of the actor turns where stage 2 may teach consulting: sampled turns that neither consulted nor
    followed a consultation (those already do what it teaches)."""
    turns = actor_turns(record)
    return [
        step["index"]
        for i, step in enumerate(turns)
        if step.get("token_ids") and not consulted(step) and not (i > 0 and consulted(turns[i - 1]))
    ]


def disagreement_examples(
    model: Any, tokenizer: Any, records: list[Record], consultation: Consultation, config: SibylConfig
) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Stage-2 examples from the policy's greedy records: each `candidate_states` state is replayed up to its turn and
    continued with a forced consult and the forced suggested call (`deferral_router(1.0)`), and kept when `decisive`
    (the policy's greedy action being the one the record took there). Each kept record trains only those two turns:
    its `header.meta.recovery.train_from_step` marks the state, so the turns before are context (training.data).
    Returns the examples and the states / disagreements counts."""
    candidates = [(record, index) for record in records for index in candidate_states(record)]
    if not candidates:
        return [], {"states": 0.0, "disagreements": 0.0, "disagreement_rate": 0.0}
    continued = continue_episodes(
        model,
        tokenizer,
        candidates,
        turns=2,
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=1.0,
        max_prompt_tokens=config.max_prompt_tokens,
        consultation=consultation,
        router=deferral_router(1.0),
    )
    built = []
    for (record, index), example in zip(candidates, continued, strict=True):
        steps = example["steps"]
        forced = [s for s in steps[index:] if step_role(s) == ACTOR and (s.get("meta") or {}).get("routed")]
        suggested = suggestion(forced[0]) if forced else []
        if len(forced) == 2 and suggested:  # the episode had a turn left to follow the advice in
            policy_calls = [] if (record["steps"][index].get("meta") or {}).get("invalid_action") else record["steps"][index]["tool_calls"]
            built.append((record["steps"][index]["prompt_token_ids"], suggested, policy_calls, example, index))
    completions = [list(tokenizer(call_text(s), add_special_tokens=False)["input_ids"]) + [tokenizer.eos_token_id] for _, s, *_ in built]
    logps = mean_action_logprobs(model, tokenizer.pad_token_id, [p for p, *_ in built], completions) if built else []
    examples = []
    for (_, suggested, policy_calls, example, index), logp in zip(built, logps, strict=True):
        if decisive(policy_calls, suggested, logp, config.disagree_max_logp):
            example["header"].setdefault("meta", {})["recovery"] = {"train_from_step": index}
            examples.append(example)
    stats = {"states": float(len(candidates)), "disagreements": float(len(examples))}
    stats["disagreement_rate"] = stats["disagreements"] / stats["states"]
    return examples, stats


def example_episodes(examples: list[dict[str, Any]], tokenizer: Any, max_tokens: int) -> list[TokenizedEpisode]:
    """The examples' sequences with at least one trained token (the consult turn and the following turn)."""
    return [e for record in examples for e in tokenize_record(record, tokenizer, max_tokens=max_tokens) if sum(e.mask)]


# --- the run -----------------------------------------------------------------------------------------------------------


def _play(
    trainer: Trainer, config: SibylConfig, jobs: list[tuple[str, int]], temperature: float, consultation: Consultation | None
) -> list[dict[str, Any]]:
    torch.manual_seed(config.seed * 1_000_003 + trainer.step)  # sampling depends only on (seed, step): resumes replay it
    trainer.model.eval()
    records = rollout_episodes(
        trainer.model,
        trainer.tokenizer,
        jobs,
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        temperature=temperature,
        style=config.prompt_style,
        max_prompt_tokens=config.max_prompt_tokens,
        consultation=consultation,
    )
    trainer.model.train()
    return records


def evaluate(trainer: Trainer, config: SibylConfig, consultation: Consultation | None) -> dict[str, float]:
    """Greedy play on the held-out seeds (with the consult tool once stage 1 is over)."""
    jobs = [(config.task, config.eval_seed_start + i) for i in range(config.eval_episodes)]
    records = _play(trainer, config, jobs, 0.0, consultation)
    return {f"eval_{k}": v for k, v in {**episode_stats(records), **consult_stats(records)}.items()}


def grpo_update(trainer: Trainer, config: SibylConfig, records: list[Record], reference: Any) -> dict[str, float]:
    """One clipped-surrogate step on the records with group-relative advantages of their rewards (net of consultation
    costs), as training/recipes/grpo.py takes it; a step whose episodes train no token is skipped."""
    rewards = torch.tensor([training_reward(r, config.reward_component) for r in records])  # net of consultation costs
    advantages, diversity_metrics = grpo_advantages(records, rewards, config)
    items = [(episode, float(advantages[i])) for i, episode in tokenized(records, trainer.tokenizer)]
    if not items:
        return trainer.skip_step()
    prepared = scored_batches(trainer, items, config.grad_accum, reference)
    metrics = trainer.optimize(prepared, clipped_loss(trainer.model, config, entropy=True))
    metrics.update(diversity_metrics)
    metrics["reward_std"] = float(rewards.std())
    return metrics


def sft_update(trainer: Trainer, config: SibylConfig, episodes: list[TokenizedEpisode]) -> dict[str, float]:
    """One SFT step on the stage-2 examples (all of them, in micro-batches of stage2_batch)."""
    pad_id = trainer.tokenizer.pad_token_id

    def loss_fn(items: list[TokenizedEpisode]) -> tuple[torch.Tensor, dict[str, float]]:
        batch = {k: v.to(trainer.device) for k, v in collate(items, pad_id=pad_id).items()}
        return sft_step_loss(trainer.model, batch)

    chunks = [episodes[i : i + config.stage2_batch] for i in range(0, len(episodes), config.stage2_batch)]
    metrics = trainer.optimize(chunks, loss_fn)
    metrics["examples"] = float(len(episodes))
    return metrics


def run(config: SibylConfig, hooks: Hooks | None = None) -> RunResult:
    trainer = Trainer(config, recipe="sibyl", hooks=hooks)
    reference = reference_policy(trainer, config) if config.kl_coef > 0 else None
    consultation = consultation_for(config) if config.consult else None

    def offered(step: int) -> Consultation | None:
        return consultation if stage_of(step, config) > 1 else None

    if trainer.step == 0:
        trainer.log({"stage": 1.0, **evaluate(trainer, config, None)})

    while trainer.step < config.max_steps and not trainer.stopping():
        stage = stage_of(trainer.step, config)
        if stage == 2:
            assert consultation is not None
            draws = torch.randint(config.train_seeds, (config.stage2_episodes,), generator=step_generator(config.seed, trainer.step))
            jobs = [(config.task, config.train_seed_start + d) for d in draws.tolist()]
            records = _play(trainer, config, jobs, 0.0, consultation)
            examples, found = disagreement_examples(trainer.model, trainer.tokenizer, records, consultation, config)
            episodes = example_episodes(examples, trainer.tokenizer, config.max_prompt_tokens + config.max_new_tokens * 2)
            metrics = sft_update(trainer, config, episodes) if episodes else trainer.skip_step()
            metrics.update(found)
        else:
            records = _play(trainer, config, pick_jobs(config, trainer.step), config.temperature, offered(trainer.step))
            metrics = grpo_update(trainer, config, records, reference)
        metrics.update(stage=float(stage), **episode_stats(records), **consult_stats(records))
        if should_evaluate(config, trainer.step):
            metrics.update(evaluate(trainer, config, offered(trainer.step - 1)))
        trainer.log(metrics)
        trainer.maybe_save()
    return trainer.finish()
