"""The pivotal step of one episode on request: computed now for a short episode, by a pivotal-only diagnosis job
for a long one, so a page or API request never blocks for long.

    outcome = episode_pivotal_find(episode=e, anchor="ledger-fixer", user=u, inline_max_steps=400)
    outcome.label   # the label stored in episode.meta["pivotal"] when it ran inline, else None
    outcome.job     # the queued DiagnosisJob otherwise (enqueued on commit), else None
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lab.diagnoses.analysis import episode_label_pivotal
from lab.diagnoses.jobs import diagnosis_job_launch
from lab.diagnoses.models import DiagnosisJob
from lab.trajectories.models import Episode


@dataclass(frozen=True)
class PivotalOutcome:
    label: dict[str, Any] | None = None
    job: DiagnosisJob | None = None


def episode_pivotal_find(*, episode: Episode, anchor: str, user: Any, inline_max_steps: int) -> PivotalOutcome:
    """Label the pivotal step now when the episode has at most `inline_max_steps` steps (the caller's latency
    budget: a binary search of anchor continuations, about a second at a few hundred steps), else create a
    pivotal-only job over it (diagnosis_job_launch queues it once the transaction commits)."""
    if episode.step_count > inline_max_steps:
        job = diagnosis_job_launch(project=episode.project, episode_ids=[episode.pk], pivotal_anchor=anchor, verify=False, user=user)
        return PivotalOutcome(job=job)
    return PivotalOutcome(label=episode_label_pivotal(episode=episode, anchor=anchor))
