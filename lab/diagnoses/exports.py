"""Diagnosis datasets as JSONL, in the two views of environments.diagnosis.exports.

    for line in diagnoses_export_lines(diagnoses=qs, view="diagnosis"): ...   # prefix -> diagnosis
    for line in diagnoses_export_lines(diagnoses=qs, view="recovery"): ...    # prefix + correction -> continuation

The recovery view needs a verified corrected branch; diagnoses without one are skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from environments.core import EnvError
from environments.diagnosis.exports import diagnosis_example, recovery_example
from environments.records import Header, Record
from environments.registry import make
from lab.diagnoses.analysis import record_tools
from lab.diagnoses.models import Diagnosis, Verification
from lab.errors import DomainError
from lab.trajectories.models import Episode
from lab.trajectories.services import episode_to_record
from lab.trajectories.shared import episodes_with_headers

VIEWS = ("diagnosis", "recovery")


def diagnosis_as_dict(diagnosis: Diagnosis) -> dict[str, Any]:
    return {
        "id": diagnosis.pk,
        "episode": diagnosis.episode_id,
        "step_index": diagnosis.step_index,
        "category": diagnosis.category,
        "explanation": diagnosis.explanation,
        "correction": diagnosis.correction,
        "evidence_steps": diagnosis.evidence_steps,
        "confidence": diagnosis.confidence,
        "origin": diagnosis.origin,
        "verification": diagnosis.verification,
    }


def _line(record: Record) -> bytes:
    return (json.dumps(record, separators=(",", ":"), default=str) + "\n").encode()


def _tools(record: Record) -> list[Any]:
    tools = record_tools(record)
    if tools:
        return tools
    try:
        return make(f"{record['header']['env']}/{record['header']['task']}", seed=int(record["header"].get("seed") or 0)).tools()
    except EnvError:
        return []


def diagnoses_export_lines(*, diagnoses: QuerySet[Diagnosis], view: str) -> Iterator[bytes]:
    """The JSONL lines of `view`; a bad view is refused here, before any line is produced."""
    if view not in VIEWS:
        raise DomainError("unknown_view", f"view={view!r}; use diagnosis or recovery", path="view")
    return _lines(diagnoses, view)


def _lines(diagnoses: QuerySet[Diagnosis], view: str) -> Iterator[bytes]:
    cache: dict[int, Record] = {}

    def record_of(episode: Episode, header: Header) -> Record:
        if episode.pk not in cache:
            cache.clear()  # diagnoses come ordered by episode: keep one record in memory at a time
            cache[episode.pk] = episode_to_record(episode, header=header)
        return cache[episode.pk]

    diagnosed = diagnoses.select_related("episode").order_by("episode_id", "id").iterator(chunk_size=200)
    for diagnosis, header in episodes_with_headers(diagnosed, episode=lambda diagnosis: diagnosis.episode):
        data = diagnosis_as_dict(diagnosis)
        if view == "diagnosis":
            record = record_of(diagnosis.episode, header)
            yield _line(diagnosis_example(record, data, env_tools=_tools(record)))
            continue
        result = diagnosis.verification_result or {}
        if diagnosis.verification != Verification.VERIFIED or not result.get("corrected_episode"):
            continue
        children = {e.pk: e for e in Episode.objects.filter(pk__in=[result["corrected_episode"], result.get("retry_episode")])}
        corrected = children.get(result["corrected_episode"])
        if corrected is None:
            continue
        retry = children.get(int(result.get("retry_episode") or 0))
        yield _line(recovery_example(episode_to_record(corrected), data, retry=episode_to_record(retry) if retry else None))
