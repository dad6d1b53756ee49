"""Error-to-training data and figures: failing episodes of a scripted weak policy, labelled by the rule diagnoser and
verified by replay; diagnoser answers scored against those labels and by replaying their corrections.

    data = aet_data("toolgym/chain", range(0, 96))        # deterministic: the episode seeds alone decide it
    data.diagnosis_records, data.recovery_records, data.success_records, data.labelled
    scores = score_answers(data.labelled, ["{...}", ...])  # [{"agreement", "replay_pass", "parsed"}] per episode

The weak policy (`WeakExpert`) is the toolgym expert with one scripted mistake an episode seed may draw: a wrong
colour answered, an answer without the lookup, a wrong item looked up and its colour believed, or three wrong
lookups that spend the call budget (the only mistake whose pivotal step is not the last). Its behaviour is a
function of the episode seed and the history, so a branch from any step continues it exactly as the lab's
verification continues an episode with the episode's own policy.

A label is the rule diagnosis (environments.diagnosis.rules: the pivotal step, the anchor's first state-changing
call as the correction) kept only when replay verifies it (environments.diagnosis.branching.verify_correction: the
corrected branch beats the original-action retry). A diagnoser's first proposal scores agreement 1 when its step
equals the label's, and replay_pass 1 when the branch that applies its correction at its step, continued by the weak
policy, passes; an unparseable answer or an impossible step scores 0 on both.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from environments.core import Action, Env, EnvError, Policy, ToolCall, ToolSpec
from environments.diagnosis.branching import verify_correction
from environments.diagnosis.exports import recovery_example
from environments.diagnosis.rules import rule_diagnose
from environments.records import Record, Step, record_passed
from environments.registry import make
from environments.runner import run_episode
from environments.toolgym.anchors import ExpertPolicy, _results
from environments.toolgym.world import COLORS, ITEMS
from training.diagnosis_view import diagnoser_record, parse_diagnosis_answer
from training.sampling import system_prompt_for

MISTAKES = ("none", "wrong_color", "skip_lookup", "wrong_item", "dither")
MISTAKE_WEIGHTS = (0.35, 0.15, 0.15, 0.15, 0.2)
DITHER_LOOKUPS = 3  # wrong lookups that leave too few of chain's 5 calls for lookup + answer


def mistake_for(seed: int) -> str:
    """The mistake the weak policy makes on episode `seed` ("none": it plays like the expert)."""
    return random.Random(f"aet:{seed}").choices(MISTAKES, weights=MISTAKE_WEIGHTS)[0]


class WeakExpert(Policy):
    """The toolgym expert with the episode seed's scripted mistake (see the module docstring)."""

    name = "toolgym-weak"

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.mistake = mistake_for(seed)
        self.expert = ExpertPolicy()

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "scripted", "mistake": self.mistake}

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        action = self.expert.act(history, tools)
        call = action.tool_calls[0] if action.tool_calls else None
        if call is None or self.mistake == "none":
            return action
        rng = random.Random(f"aet:{self.seed}:{self.mistake}")
        lookups = [c["arguments"].get("item") for s in history for c in s.get("tool_calls") or [] if c.get("name") == "lookup"]

        def do(name: str, **arguments: str) -> Action:
            return Action(tool_calls=[ToolCall(name, arguments, call.id)])

        if call.name == "answer" and self.mistake == "wrong_color":
            return do("answer", color=rng.choice([c for c in COLORS if c != call.arguments["color"]]))
        if call.name != "lookup":
            return action
        target = call.arguments["item"]
        wrong = [item for item in ITEMS if item != target]
        rng.shuffle(wrong)
        if self.mistake == "skip_lookup" and not lookups:
            return do("answer", color=rng.choice(COLORS))
        if self.mistake == "dither" and len(lookups) < DITHER_LOOKUPS and target not in lookups:
            return do("lookup", item=wrong[len(lookups)])
        if self.mistake == "wrong_item" and target not in lookups:
            if not lookups:
                return do("lookup", item=wrong[0])
            believed = next((r["color"] for r in _results(history) if r.get("item") == lookups[-1] and "color" in r), None)
            if believed is not None:
                return do("answer", color=believed)
        return action


def weak_factory(env: Env, _seed: int) -> Policy:
    """The verification continuation: the episode's own weak policy (its behaviour follows the episode seed)."""
    return WeakExpert(env.seed)


def anchor_factory(_env: Env, _seed: int) -> Policy:
    return ExpertPolicy()


def weak_episode(task_id: str, seed: int) -> dict[str, Any]:
    env = make(task_id, seed)
    return run_episode(env, WeakExpert(seed), harness={"system_prompt": system_prompt_for(env)})


@dataclass
class Labelled:
    record: Record  # the failing episode
    diagnosis: dict[str, Any]  # the verified rule diagnosis (step_index, category, explanation, correction, ...)


@dataclass
class AETData:
    episodes: list[dict[str, Any]] = field(default_factory=list)  # every weak episode, passed or not
    labelled: list[Labelled] = field(default_factory=list)  # failing episodes with a verified rule diagnosis
    diagnosis_records: list[Record] = field(default_factory=list)  # diagnoser SFT data (diagnosis view)
    recovery_records: list[Record] = field(default_factory=list)  # corrected branches, marked from the step
    unlabelled: int = 0  # failing episodes without a verified rule diagnosis

    @property
    def success_records(self) -> list[dict[str, Any]]:
        return [r for r in self.episodes if record_passed(r)]


def label(record: Record) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the rule diagnosis, the recovery record) when the rule finds a pivotal step and replay verifies its correction."""
    answer = rule_diagnose(record, anchor_factory=anchor_factory)
    if answer.proposal is None:
        return None
    diagnosis = answer.proposal.as_json()
    outcome = verify_correction(
        record, step_index=diagnosis["step_index"], correction=diagnosis["correction"], policy_factory=weak_factory, continuation_seed=0
    )
    if not outcome.verified:
        return None
    return diagnosis, recovery_example(outcome.corrected.record, diagnosis, retry=outcome.retry.record)


def aet_data(task_id: str, seeds: range | list[int]) -> AETData:
    """Weak episodes of `seeds`, their verified labels, and both training views (deterministic in the seeds)."""
    data = AETData()
    for seed in seeds:
        record = weak_episode(task_id, seed)
        data.episodes.append(record)
        if record_passed(record):
            continue
        found = label(record)
        if found is None:
            data.unlabelled += 1
            continue
        diagnosis, recovery = found
        data.labelled.append(Labelled(record, diagnosis))
        data.diagnosis_records.append(diagnoser_record(record, diagnosis))
        data.recovery_records.append(recovery)
    return data


def replay_passes(record: Record, step_index: int, correction: dict[str, Any]) -> bool:
    """Whether the branch applying `correction` at `step_index`, continued by the weak policy, passes."""
    try:
        outcome = verify_correction(record, step_index=step_index, correction=correction, policy_factory=weak_factory, continuation_seed=0)
    except EnvError:  # not an agent step of this episode: the proposal cannot be replayed
        return False
    return outcome.corrected.passed


def score_proposal(item: Labelled, step_index: int | None, correction: dict[str, Any] | None) -> dict[str, float]:
    if step_index is None or correction is None:
        return {"agreement": 0.0, "replay_pass": 0.0, "parsed": 0.0}
    return {
        "agreement": float(step_index == item.diagnosis["step_index"]),
        "replay_pass": float(replay_passes(item.record, step_index, correction)),
        "parsed": 1.0,
    }


def score_answers(items: list[Labelled], answers: list[str]) -> list[dict[str, float]]:
    """Each model answer's first proposal scored against its episode's label (module docstring)."""
    assert len(items) == len(answers), f"{len(answers)} answers for {len(items)} episodes"
    scores = []
    for item, text in zip(items, answers, strict=True):
        parsed = parse_diagnosis_answer(text)
        scores.append(score_proposal(item, parsed.step_index, parsed.correction))
    return scores


def rule_scores(items: list[Labelled]) -> list[dict[str, float]]:
    """The rule diagnoser run afresh on each episode (its agreement is 1 wherever it is deterministic: it made the labels)."""
    scores = []
    for item in items:
        proposal = rule_diagnose(item.record, anchor_factory=anchor_factory).proposal
        scores.append(score_proposal(item, proposal.step_index if proposal else None, proposal.correction if proposal else None))
    return scores


def generate_answers(model: Any, tokenizer: Any, items: list[Labelled], *, max_new_tokens: int = 64, batch: int = 16) -> list[str]:
    """Greedy answers of a model to each episode's diagnoser prompt (the prompt it is trained on)."""
    from training.data import encode_text, render_chat
    from training.diagnosis_view import diagnoser_prompt
    from training.sampling import generate

    answers: list[str] = []
    for start in range(0, len(items), batch):
        prompts = [
            encode_text(
                tokenizer, render_chat(tokenizer, [{"role": "user", "content": diagnoser_prompt(i.record)}], None, generation_prompt=True)
            )
            for i in items[start : start + batch]
        ]
        for ids, _ in generate(model, tokenizer, prompts, max_new_tokens=max_new_tokens, temperature=0.0):
            answers.append(tokenizer.decode(ids, skip_special_tokens=True))
    return answers
