"""How an episode's score was made, for the viewer: each component, each rubric item and policy check, passed or
failed with its reason, and the step that holds the evidence where one can be found.

An environment records its score as header.score = {composite, passed, components, termination_reason, details}
(environments.core.Score). `details` is each environment's own; the shapes read here are those the environments
write:

    items               [{id, kind, ok, why, evidence: [...]}]   a rubric (the workdesk)
    violations          [text]                                   policy checks broken (the service desk)
    gates               [text]                                   conditions that refused the deliverable (the workdesk)
    missing_statements  [name]                                   what the caller had to be told and was not
    differing           [...]                                    records that differ from the expected end state

A component's reason is what the environment declares of it (environments.meta.ScoreComponent: what it measures,
its weight in the composite or the sub-score it enters), and its evidence the tools that move it.

A score whose termination_reason is None was taken before the environment ended (environments.core.Score): no
grade, whatever its components measured; nor is there one when an ended episode has no score at all. The explanation then says so in words, naming why the episode ended (the
record's termination_reason) and the step that would have graded it (EnvMeta.graded_by), and its lines are values,
never a pass or a fail.

Any other detail is shown as a fact (name: value, shortened). The evidence step of a line is the first step whose
tool calls mention one of its evidence strings (a path, a record id, the tool a violation names), so a reader can
jump to where the agent read or wrote it; none is claimed where nothing matches.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from environments.meta import ScoreComponent

MAX_LINES = 60  # a rubric of hundreds of items shows its first 60 and says how many more
MAX_FACT_CHARS = 160
CHECK_LISTS = {  # details key -> (what a line of it is, whether it is a failure)
    "violations": "policy",
    "gates": "gate",
    "missing_statements": "statement not made",
    "differing": "state differs",
}
# How an episode that the environment never graded ended, by the record's termination_reason ({noun}: session or
# episode); a reason not listed reads "the {noun} ended (reason)".
ENDED = {
    "agent_stop": "the {noun} ended",
    "abandoned": "the {noun} was abandoned",
    "max_steps": "the {noun} reached its step cap",
    "too_many_errors": "the harness stopped the {noun} after repeated invalid actions",
    "timeout": "the {noun} timed out",
    "context_window_exceeded": "the {noun} outgrew the model's context",
    "cancelled": "a person stopped the {noun}",
    "agent_error": "the {noun} ended on a policy error",
    "infrastructure_error": "the {noun} ended on a worker or service failure",
    "unexpected_error": "the {noun} ended on an unexpected error",
}


@dataclass
class Line:
    kind: str  # "component", "rubric", "policy", ...
    name: str
    ok: bool | None  # None: a value, neither pass nor fail
    value: str = ""
    reason: str = ""
    evidence: list[str] = field(default_factory=list)
    step: int | None = None


@dataclass
class Explanation:
    lines: list[Line]
    facts: list[tuple[str, str]]
    more: int  # lines left out past MAX_LINES
    termination_reason: str = ""
    ungraded: str = ""  # "No grade: the session ended without submit." when the environment never graded it

    @property
    def empty(self) -> bool:
        return not self.lines and not self.facts and not self.ungraded


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_FACT_CHARS else text[: MAX_FACT_CHARS - 1] + "…"


def component_reason(component: ScoreComponent | None, number: float | None) -> str:
    """What a component measures and what its value adds to the sum it enters, in words; "" when undeclared."""
    if component is None:
        return ""
    if component.weight is None or number is None:
        return component.measures
    return f"{component.measures}; weight {component.weight:g} in {component.of}: adds {component.weight * number:.3f}"


def no_grade(ended: str, *, graded_by: str = "", session: bool = False) -> str:
    """The sentence for a score the environment never graded: why the episode ended (a termination reason) and,
    when the environment declares it, the step that grades one."""
    noun = "session" if session else "episode"
    how = ENDED.get(ended, "the {noun} ended" + (f" ({ended})" if ended else "")).format(noun=noun)
    return f"No grade: {how} without {graded_by}." if graded_by else f"No grade: {how} before the environment graded it."


def explain(
    score: dict[str, Any] | None,
    tool_names: frozenset[str] | set[str] = frozenset(),
    components: Mapping[str, ScoreComponent] | None = None,
    *,
    ended: str = "",
    graded_by: str = "",
    session: bool = False,
) -> Explanation:
    """The lines and facts of a stored score (module docstring); `components` is the environment's declaration of
    its score components (EnvMeta.score_components). `ended` is the record's termination_reason, `graded_by` the
    environment's EnvMeta.graded_by, `session` whether a person played it: they word a score that is no grade.
    Evidence steps are found by `with_evidence_steps`."""
    score = score or {}
    # The key is there, and None, only in a score an environment wrote before it ended; a foreign score lacks it. An
    # ended episode with no score at all (a session abandoned while idle) has no grade either.
    graded = ("termination_reason" not in score or score["termination_reason"] is not None) if score else not ended
    raw_details = score.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    components = components or {}
    lines: list[Line] = []
    for name, value in sorted((score.get("components") or {}).items()):
        number = float(value) if isinstance(value, int | float) else None
        declared = components.get(name)
        # Pass or fail only for a check: a measure that happens to be 0 (a training reward, a share) is a value.
        binary = number in (0.0, 1.0) if declared is None or declared.check is None else declared.check and number is not None
        binary = binary and graded
        moved_by = [tool for tool in declared.moved_by if tool in tool_names] if declared else []
        lines.append(
            Line(
                "component",
                name,
                bool(number) if binary else None,
                "" if number is None else f"{number:.3f}",
                component_reason(declared, number),
                moved_by,
            )
        )
    for item in details.get("items") or []:
        if isinstance(item, dict):
            evidence = [str(e) for e in item.get("evidence") or [] if str(e)][:5]
            lines.append(
                Line(
                    "rubric",
                    str(item.get("id", "?")),
                    bool(item.get("ok")) if graded else None,
                    str(item.get("kind", "")),
                    _short(item.get("why", "")),
                    evidence,
                )
            )
    for key, kind in CHECK_LISTS.items():
        for entry in details.get(key) or []:
            text = _short(entry)
            first = text.split(" ", 1)[0]
            lines.append(Line(kind, text, False if graded else None, evidence=[first] if first in tool_names else []))
    shown = {"items", *CHECK_LISTS, "attack"}
    facts = [(name, _short(value)) for name, value in sorted(details.items()) if name not in shown and value not in (None, "", [], {})]
    ungraded = "" if graded else no_grade(ended, graded_by=graded_by, session=session)
    return Explanation(lines[:MAX_LINES], facts, max(0, len(lines) - MAX_LINES), str(score.get("termination_reason") or ""), ungraded)


def with_evidence_steps(explanation: Explanation, first_step: Any) -> Explanation:
    """Each line's step: `first_step(texts) -> {text: step index}` (a selector over the episode's tool calls)."""
    wanted = sorted({e for line in explanation.lines for e in line.evidence})
    found = first_step(wanted) if wanted else {}
    for line in explanation.lines:
        steps = [found[e] for e in line.evidence if e in found]
        line.step = min(steps) if steps else None
    return explanation
