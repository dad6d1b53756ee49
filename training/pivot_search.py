"""Pivotal steps of sampled episodes, found by a scripted anchor or by the teacher model taking over.

    results = anchor_pivots(records, anchor="expert", seeds=(0,))                  # environments.diagnosis.pivotal
    results = teacher_pivots(teacher, tokenizer, records, max_turns=4, ...)          # greedy takeover from each cut
    results[0].step      # the agent step whose action lost the episode, or None (results[0].reason says why)

A pivot is the last agent step k such that a strong continuation taking over before k still passes and one
taking over after k does not (environments/diagnosis/pivotal.py). The anchor search is find_pivotal_step itself.
The teacher search plays every cut of every record in one batched `continue_episodes` call (a linear search: one
greedy teacher episode per agent step plus the end) and applies the same rule, so its results have the same shape
(`PivotalResult`, `anchor="teacher"`, one run per cut in `checks`).
"""

from __future__ import annotations

from typing import Any

from environments.core import Env, EnvError, Policy
from environments.diagnosis.pivotal import PivotalResult, find_pivotal_step
from environments.diagnosis.taxonomy import AGENT_SOURCES
from environments.policies import make_policy, policy_names
from environments.records import Record, record_score
from environments.registry import env_meta
from training.sampling import continue_episodes

TEACHER = "teacher"


def resolve_anchor(task_id: str, anchor: str) -> tuple[str, str | None]:
    """(anchor name, problem): `anchor`, or the environment's default anchor when it is empty."""
    env_name = task_id.split("/", 1)[0]
    try:
        name = anchor or env_meta(env_name).default_anchor
        known = policy_names(env_name)
    except EnvError as exc:
        return anchor, str(exc)
    if not name:
        return name, f"{env_name} declares no default anchor; name one ({', '.join(known) or 'it has none'}) or use pivot_finder='teacher'"
    if name not in known:
        return name, f"no anchor {name!r} for {env_name}; choose one of {', '.join(known) or '(none registered)'}"
    return name, None


def anchor_pivots(records: list[Record], *, anchor: str, seeds: tuple[int, ...], search: str = "binary") -> list[PivotalResult]:
    """find_pivotal_step for each record with the scripted anchor `anchor` (resolved by resolve_anchor)."""

    def factory(env: Env, seed: int) -> Policy:
        return make_policy(anchor, env, seed)

    return [find_pivotal_step(record, anchor_factory=factory, seeds=seeds, search=search) for record in records]


def _cuts(record: Record) -> list[int]:
    """Prefix lengths a takeover starts from: before each agent step, and after the last step."""
    agents = [s["index"] for s in record["steps"] if s.get("source") in AGENT_SOURCES and s["index"] >= 1]
    return [*agents, len(record["steps"])] if agents else []


def teacher_pivots(
    model: Any,
    tokenizer: Any,
    records: list[Record],
    *,
    max_turns: int,
    max_new_tokens: int,
    max_prompt_tokens: int,
) -> list[PivotalResult]:
    """The teacher model, greedy, takes over from every cut of every record (the sampler's records only)."""
    prefixes = [(record, cut) for record in records for cut in _cuts(record)]
    played = continue_episodes(
        model, tokenizer, prefixes, max_turns=max_turns, max_new_tokens=max_new_tokens, temperature=0.0, max_prompt_tokens=max_prompt_tokens
    )
    outcome = {(id(record), cut): record_score(branch) for (record, cut), branch in zip(prefixes, played, strict=True)}
    results = []
    for record in records:
        result = PivotalResult(step=None, reason="found", anchor=TEACHER, seeds=())
        cuts = _cuts(record)
        for cut in cuts:
            score = outcome[(id(record), cut)]
            result.checks[cut] = {"passed": bool(score["passed"]), "composites": [round(float(score["composite"]), 6)]}
        passed = [result.checks[cut]["passed"] for cut in cuts]
        if not cuts:
            result.reason = "no_agent_steps"
        elif not passed[0]:
            result.reason = "anchor_cannot_pass"  # the same reason names as the anchor search: the taker-over cannot pass
        elif passed[-1]:
            result.reason = "recoverable_at_end"
        else:
            lost = passed.index(False)
            result.step = cuts[lost - 1]
        results.append(result)
    return results


def runs_of(result: PivotalResult) -> int:
    """Takeover episodes a search played."""
    return sum(len(check["composites"]) for check in result.checks.values())
