"""Creating diagnoses. Every check lives here, so the API, the pages and model/rule diagnosers share it.

    diagnosis_create(episode=e, step_index=3, category="wrong_tool", explanation="...")    # a human's, via the API
    diagnosis_attempt_record(episode=e, answer=answer, origin="model", author_model="qwen")  # a model's or rule's answer
    diagnosis_update(diagnosis=d, user=u, role="expert", changes={"explanation": "..."})    # its author's or an owner's edit

A model or rule answer always leaves a DiagnosisAttempt; it links a Diagnosis only when the answer passed every
check here, so a bad answer (a step past the end, an unknown tool) is recorded as such and never stored as one.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from environments.diagnosis.model_diagnoser import ModelAnswer
from lab.diagnoses.models import CATEGORIES, Diagnosis, DiagnosisAttempt, DiagnosisJob, Origin, Verification
from lab.errors import DomainError, Forbidden
from lab.projects.models import Role
from lab.trajectories.models import Episode

# What a diagnosis says. Verification replays exactly these, so changing any of them voids it.
CONTENT_FIELDS = ("step_index", "category", "explanation", "evidence_steps", "correction", "confidence")


def diagnosis_validate(
    *, episode: Episode, step_index: Any, category: Any, evidence_steps: Any = (), correction: Any = None, confidence: Any = None
) -> None:
    if not isinstance(step_index, int) or isinstance(step_index, bool) or step_index < 0:
        raise DomainError("invalid_step", f"step_index must be a step number, got {step_index!r}", path="step_index")
    if step_index >= episode.step_count:
        raise DomainError(
            "invalid_step", f"episode {episode.pk} has {episode.step_count} steps; step {step_index} does not exist", path="step_index"
        )
    if category not in CATEGORIES:
        raise DomainError("invalid_category", f"{category!r} is not one of {', '.join(CATEGORIES)}", path="category")
    for i, ref in enumerate(evidence_steps or ()):
        if not isinstance(ref, int) or isinstance(ref, bool) or not 0 <= ref < episode.step_count:
            raise DomainError("invalid_step", f"evidence step {ref!r} is not a step of episode {episode.pk}", path=f"evidence_steps[{i}]")
    if correction is not None:
        if (
            not isinstance(correction, dict)
            or not isinstance(correction.get("name"), str)
            or not isinstance(correction.get("arguments", {}), dict)
        ):
            raise DomainError("invalid_correction", "correction must be a tool call {name, arguments}", path="correction")
        extra = set(correction) - {"name", "arguments"}
        if extra:
            raise DomainError("invalid_correction", f"unexpected correction field(s) {sorted(extra)}", path="correction")
    if confidence is not None and (not isinstance(confidence, (int, float)) or not 0.0 <= confidence <= 1.0):
        raise DomainError("invalid_confidence", f"confidence must be in [0, 1], got {confidence!r}", path="confidence")


def diagnosis_create(
    *,
    episode: Episode,
    step_index: int,
    category: str,
    explanation: str,
    origin: str = Origin.HUMAN,
    author: Any = None,
    author_model: str = "",
    evidence_steps: list[int] | None = None,
    correction: dict[str, Any] | None = None,
    confidence: float | None = None,
) -> Diagnosis:
    diagnosis_validate(
        episode=episode,
        step_index=step_index,
        category=category,
        evidence_steps=evidence_steps,
        correction=correction,
        confidence=confidence,
    )
    if not str(explanation).strip():
        raise DomainError("invalid_explanation", "say what went wrong in the explanation", path="explanation")
    return Diagnosis.objects.create(
        episode=episode,
        step_index=step_index,
        category=category,
        explanation=explanation,
        origin=origin,
        author=author if getattr(author, "is_authenticated", False) else None,
        author_model=author_model,
        evidence_steps=list(evidence_steps or []),
        correction=correction,
        confidence=confidence,
    )


def diagnosis_attempt_record(
    *, episode: Episode, answer: ModelAnswer, origin: str, author_model: str, job: DiagnosisJob | None = None
) -> DiagnosisAttempt:
    """Store a model's or rule's answer: as a Diagnosis when it is valid here too, else as a refused attempt."""
    assert origin in (Origin.MODEL, Origin.RULE), f"attempts come from models or rules, not {origin!r}"
    attempt = DiagnosisAttempt(episode=episode, job=job, origin=origin, author_model=author_model[:200], answer=answer.raw)
    if answer.proposal is None:
        attempt.error = answer.error or "no answer"
        attempt.save()
        return attempt
    proposal = answer.proposal
    try:
        attempt.diagnosis = diagnosis_create(
            episode=episode,
            step_index=proposal.step_index,
            category=proposal.category,
            explanation=proposal.explanation,
            origin=origin,
            author_model=author_model,
            evidence_steps=proposal.evidence_steps,
            correction=proposal.correction,
            confidence=proposal.confidence,
        )
    except DomainError as exc:
        attempt.error = f"{exc.details.get('path', '')}: {exc.message}".lstrip(": ")
    attempt.answer = {**answer.raw, "proposal": proposal.as_json()}
    attempt.save()
    return attempt


def diagnosis_may_edit(*, diagnosis: Diagnosis, user: Any, role: str | None) -> bool:
    """Its author, or an owner of its project; model and rule diagnoses have no author, so owners only."""
    if role == Role.OWNER:
        return True
    return role is not None and diagnosis.author_id is not None and diagnosis.author_id == getattr(user, "pk", None)


def diagnosis_update(*, diagnosis: Diagnosis, user: Any, role: str | None, changes: dict[str, Any]) -> Diagnosis:
    """Change what a diagnosis says. `role` is the caller's in the diagnosis's project (checked at the edge).

    A verdict (verified, refuted, failed) was reached on the old content: any change of content clears it, with
    its result and the links to the branches that reached it (the branch episodes stay, recorded as they were).
    """
    if not diagnosis_may_edit(diagnosis=diagnosis, user=user, role=role):
        raise Forbidden("forbidden", f"only its author or a project owner may change diagnosis {diagnosis.pk}", path="diagnosis")
    unknown = sorted(set(changes) - set(CONTENT_FIELDS))
    assert not unknown, f"not content fields of a diagnosis: {unknown}"
    merged = {name: changes.get(name, getattr(diagnosis, name)) for name in CONTENT_FIELDS}
    diagnosis_validate(episode=diagnosis.episode, **{k: v for k, v in merged.items() if k != "explanation"})
    if not str(merged["explanation"]).strip():
        raise DomainError("invalid_explanation", "say what went wrong in the explanation", path="explanation")
    changed = [name for name in CONTENT_FIELDS if merged[name] != getattr(diagnosis, name)]
    if not changed:
        return diagnosis
    with transaction.atomic():
        for name in changed:
            setattr(diagnosis, name, merged[name])
        fields = list(changed)
        if diagnosis.verification != Verification.UNVERIFIED:
            diagnosis.verification, diagnosis.verification_result = Verification.UNVERIFIED, None
            fields += ["verification", "verification_result"]
            diagnosis.child_episodes.clear()
        diagnosis.save(update_fields=fields)
    return diagnosis
