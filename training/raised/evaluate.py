"""RAISED's measurements: the attack axis' four figures from greedy play, and output drift from the start model.

    figures = evaluate_attacks(model, tokenizer, config, seeds=range(100_000, 100_008))
    # {"benign_utility", "utility_under_attack", "attack_success_rate", "guidance_compliance", "output_drift", ...}

Each held-out (task, seed) is played greedily once unattacked and once per attack style, guidance on in every
condition (environments.attack_eval.conditions), and the rows go through environments.attacks.attack_metrics.
Output drift is the mean KL(model ‖ start model) per action token of the anchor's clean trajectories of the same
seeds: how far training moved the model's answers on benign prompts.

The model plays through `ModelPolicy`: the LLM harness (training.policies) with two differences a conversational
environment needs. Its prompt is rendered by `training.data.record_messages`, the same function that renders the
training pairs, so the model is evaluated on exactly the contexts it was trained on; and an answer without a tool
call is a message to the caller (the service desk's agent speaks as often as it calls tools), not an invalid action.
"""

from __future__ import annotations

from typing import Any

import torch

from environments.attack_eval import conditions
from environments.attacks import attack_metrics, metric_row
from environments.core import Action, Env
from environments.records import Step, record_score
from environments.registry import env_meta, make, task_set
from training.data import PromptStyle, collate, record_messages
from training.losses import kl_full
from training.modeling import forward_logits
from training.policies.harness import Completion, HarnessConfig
from training.policies.hf import TemplatePolicy
from training.raised.pairs import Pair, tokenized_pair
from training.sampling import system_prompt_for
from training.scripted import anchor_episode


class ModelPolicy(TemplatePolicy):
    """A model in memory (the one being trained) as a greedy actor; renders its context as the training data does."""

    kind = "hf"

    def __init__(self, *, env: Env, seed: int, model: Any, tokenizer: Any, style: PromptStyle, max_new_tokens: int) -> None:
        # the sampler's system prompt, as in the training pairs and the zoo's service-desk demonstrations
        harness = HarnessConfig(max_new_tokens=max_new_tokens, max_context_tokens=1 << 20, system_prompt=system_prompt_for(env))
        super().__init__(env=env, seed=seed, name="raised-eval", model="in-memory", harness=harness)
        self.model_obj, self.tokenizer, self.style = model, tokenizer, style

    def render(
        self, history: list[Step], *, window_turns: int, summary: str, status: str, system_prompt: str | None = None
    ) -> list[dict[str, Any]]:
        record = {"header": {"tools": [t.openai_schema() for t in self.env.tools()]}, "steps": history}
        messages = record_messages(record, system_prompt=self.system_prompt if system_prompt is None else system_prompt, style=self.style)
        return [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        # the tools are already in the system message when the style lists them compactly (record_messages did it)
        return super().prompt_ids(messages, self.style.template_tools(tools) or [])

    def generate_ids(self, prompt_ids: list[int], *, seed: int) -> tuple[list[int], list[float]]:
        from training.sampling import generate

        [(ids, logprobs)] = generate(
            self.model_obj, self.tokenizer, [prompt_ids], max_new_tokens=self.harness.max_new_tokens, temperature=0.0
        )
        return list(ids), [float(x) for x in logprobs]

    def to_action(self, completion: Completion, index: int) -> Action:
        action = super().to_action(completion, index)
        if action.error is not None and not action.tool_calls and completion.text.strip() and "<tool_call>" not in completion.text:
            return Action(
                message=completion.text.strip(),
                token_ids=action.token_ids,
                logprobs=action.logprobs,
                prompt_token_ids=action.prompt_token_ids,
                meta=action.meta,
            )
        return action


def eval_jobs(config: Any, seeds: Any) -> list[tuple[str, int]]:
    """(task, seed) per held-out seed: the seed picks the template of the evaluation task set, round robin."""
    specs = task_set(config.eval_task_set)
    return [(specs[seed % len(specs)].id, int(seed)) for seed in seeds]


def greedy_rows(model: Any, tokenizer: Any, config: Any, seeds: Any) -> list[dict[str, Any]]:
    from environments.runner import run_episode

    rows = []
    jobs = eval_jobs(config, seeds)
    axis = env_meta(make(jobs[0][0], jobs[0][1]).name).attacks
    for task, seed in jobs:
        for options in conditions(axis, list(config.styles)):
            env = make(task, seed, options=options)
            policy = ModelPolicy(
                env=env, seed=seed, model=model, tokenizer=tokenizer, style=config.prompt_style, max_new_tokens=config.max_new_tokens
            )
            record = run_episode(env, policy, max_steps=config.eval_max_turns)
            score = record_score(record)
            rows.append({**metric_row(composite=score["composite"], score=score), "style": axis.style_of(options)})
    return rows


@torch.no_grad()
def output_drift(model: Any, reference: Any, tokenizer: Any, config: Any, seeds: Any) -> float:
    """Mean KL(model ‖ reference) per action token of the anchor's clean play of the held-out seeds."""
    device = next(model.parameters()).device
    total, tokens = 0.0, 0.0
    for task, seed in eval_jobs(config, seeds):
        record = anchor_episode(config.anchor, task, seed, options={"guidance": True})
        clean, _ = tokenized_pair(
            Pair(task, seed, "none", True, record, record), tokenizer, style=config.prompt_style, max_tokens=config.max_tokens
        )
        batch = {k: v.to(device) for k, v in collate([clean], pad_id=tokenizer.pad_token_id).items()}
        logits = forward_logits(model, batch["input_ids"], batch["attention_mask"])
        ref = forward_logits(reference, batch["input_ids"], batch["attention_mask"])
        _, metrics = kl_full(logits[:, :-1], ref[:, :-1], batch["mask"][:, 1:], direction="reverse")
        total += metrics["reverse_kl"] * metrics["tokens"]
        tokens += metrics["tokens"]
    return total / max(tokens, 1.0)


def evaluate_attacks(model: Any, tokenizer: Any, config: Any, seeds: Any, *, reference: Any = None) -> dict[str, float]:
    """The experiment's extra metrics on held-out `seeds`: attack_metrics over greedy play, plus output_drift.

    `reference` is the starting model (loaded from config.model when not given). None-valued figures (no attacked
    episode, no guidance given) are left out, so every value is a float."""
    from training.modeling import load_model

    seeds = [int(s) for s in seeds]  # read twice below: a generator would be empty the second time
    assert seeds, "evaluate_attacks needs at least one held-out seed"
    was_training = model.training
    model.eval()
    figures = attack_metrics(greedy_rows(model, tokenizer, config, seeds))
    if reference is None:
        reference = load_model(config.model, device=next(model.parameters()).device, trainable=False)[0]
    figures["output_drift"] = output_drift(model, reference, tokenizer, config, seeds)
    model.train(was_training)
    return {k: float(v) for k, v in figures.items() if v is not None}
