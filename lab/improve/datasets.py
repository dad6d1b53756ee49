"""The loop's frozen, versioned training dataset: three weighted sources written to one JSONL file.

    dataset = loop_dataset_build(loop=loop, anchor_evaluation=e)   # once per loop; a re-run returns the stored one

Sources, each a list of canonical trajectory records (what training.data reads):
    recovery    the recovery view (lab.diagnoses.exports) of every verified diagnosis of the loop's diagnosis job:
                the corrected branch, trained from its correction step on (train_from_step)
    successes   the source evaluation's passed episodes
    anchors     the anchor's demonstrations on the environment's training split (an evaluation the stage ran)
A weight w repeats a source's examples: example i is written floor((i+1)·w) − floor(i·w) times, so the source
contributes round-down(n·w) lines spread evenly over its examples (w = 0 leaves it out, 0.5 keeps every other one).
A partial demonstration (one cut short: training.dataset_check.partial_ending) is left out of every source unless
the loop's config says include_partial, as a training run's own dataset leaves it out; counts say how many were.
The file's bytes are hashed (sha256); the training run checks the hash before it reads a line.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max

from environments.records import Record
from lab.diagnoses.exports import diagnoses_export_lines
from lab.diagnoses.models import Diagnosis, Verification
from lab.errors import DomainError
from lab.improve.guard import leakage_refuse, record_key, test_keys
from lab.improve.models import ImprovementLoop, LoopDataset
from lab.rollouts.models import Evaluation
from lab.rollouts.selectors import evaluation_episodes
from lab.runs.paths import project_checkpoint_dir
from lab.trajectories.services import episode_to_record
from lab.trajectories.shared import episodes_with_headers
from training.dataset_check import partial_ending

Example = tuple[Record, int]  # (record, the episode it came from)


def copies(index: int, weight: float) -> int:
    return math.floor((index + 1) * weight + 1e-9) - math.floor(index * weight + 1e-9)


def recovery_examples(loop: ImprovementLoop) -> tuple[list[Example], list[int]]:
    if loop.diagnosis_job is None:
        return [], []
    diagnoses = Diagnosis.objects.filter(attempt__job=loop.diagnosis_job, verification=Verification.VERIFIED)
    examples = []
    for line in diagnoses_export_lines(diagnoses=diagnoses, view="recovery"):
        record = json.loads(line)
        examples.append((record, int((record["header"]["meta"]["recovery"]["diagnosis"] or {}).get("episode") or 0)))
    ids = sorted(d["header"]["meta"]["recovery"]["diagnosis"]["id"] for d, _ in examples)
    return examples, ids


def evaluation_examples(evaluation: Evaluation | None, *, passed_only: bool) -> list[Example]:
    if evaluation is None:
        return []
    episodes = [e for e in evaluation_episodes(evaluation) if e.passed or not passed_only]
    return [(episode_to_record(e, header=header), e.pk) for e, header in episodes_with_headers(episodes)]


def dataset_folder(loop: ImprovementLoop) -> Path:
    return project_checkpoint_dir(loop.project_id) / "loop-datasets"


def loop_dataset_build(*, loop: ImprovementLoop, anchor_evaluation: Evaluation | None) -> LoopDataset:
    """Write, hash and store the dataset; refuse (test_leakage) a line from a task and seed the loop tests on."""
    if loop.dataset is not None:
        return loop.dataset
    weights = loop.config["sources"]
    recovery, diagnosis_ids = recovery_examples(loop)
    sources: dict[str, list[Example]] = {
        "recovery": recovery,
        "successes": evaluation_examples(loop.evaluation, passed_only=True),
        "anchors": evaluation_examples(anchor_evaluation, passed_only=False),
    }
    partial: dict[str, int] = {}
    include_partial = bool(loop.config.get("include_partial", False))  # loops made before the setting leave them out
    for name, examples in sources.items():
        cut = [example for example in examples if partial_ending(example[0])]
        partial[name] = len(cut)
        if cut and not include_partial:
            sources[name] = [example for example in examples if not partial_ending(example[0])]
    tested = test_keys(loop.config)
    for name, examples in sources.items():
        if weights.get(name):
            leakage_refuse(keys=[record_key(r) for r, _ in examples], tested=tested, what=f"the dataset's {name} source", field="sources")
    folder = dataset_folder(loop)
    folder.mkdir(parents=True, exist_ok=True)
    part = folder / f"loop-{loop.pk}.jsonl.part"
    digest, size, lines = hashlib.sha256(), 0, 0
    counts: dict[str, dict[str, int]] = {}
    episode_ids: set[int] = set()
    with open(part, "wb") as handle:
        for name, examples in sources.items():
            written = 0
            for index, (record, episode_id) in enumerate(examples):
                n = copies(index, float(weights.get(name, 0.0)))
                if n:
                    episode_ids.add(episode_id)
                data = (json.dumps(record, sort_keys=True, separators=(",", ":"), default=str) + "\n").encode()
                for _ in range(n):
                    handle.write(data)
                    digest.update(data)
                size, written = size + n * len(data), written + n
            counts[name] = {"examples": len(examples), "lines": written, "partial": partial[name]}
            lines += written
    if not lines:
        part.unlink()
        found = ", ".join(
            f"{name}: {c['examples']} examples at weight {weights.get(name, 0):g}"
            + (f" ({c['partial']} partial left out)" if c["partial"] and not include_partial else "")
            for name, c in counts.items()
        )
        raise DomainError("empty_dataset", f"the dataset would be empty ({found}); raise a weight or pick other episodes", path="sources")
    return _store(
        loop,
        part,
        digest.hexdigest(),
        size=size,
        lines=lines,
        counts=counts,
        episode_ids=sorted(episode_ids),
        diagnosis_ids=diagnosis_ids if weights.get("recovery") else [],
    )


def _store(loop: ImprovementLoop, part: Path, digest: str, *, size: int, **fields: Any) -> LoopDataset:
    for _ in range(5):  # two loops of one project may take the same next version at once: the constraint decides
        version = (LoopDataset.objects.filter(project=loop.project).aggregate(v=Max("version"))["v"] or 0) + 1
        path = part.with_name(f"v{version}-{digest[:16]}.jsonl")
        try:
            with transaction.atomic():
                dataset = LoopDataset.objects.create(
                    project=loop.project,
                    loop=loop,
                    version=version,
                    sources=loop.config["sources"],
                    path=str(path),
                    content_hash=digest,
                    size_bytes=size,
                    **fields,
                )
                ImprovementLoop.objects.filter(pk=loop.pk).update(dataset=dataset)
        except IntegrityError:
            continue
        part.replace(path)
        loop.dataset = dataset
        return dataset
    raise DomainError("conflict", "could not take a dataset version number; try again", status=409)


def dataset_file_check(dataset: LoopDataset) -> bytes:
    """The file's bytes, after checking them against the stored hash."""
    data = Path(dataset.path).read_bytes()
    got = hashlib.sha256(data).hexdigest()
    if got != dataset.content_hash:
        raise DomainError(
            "dataset_changed", f"dataset v{dataset.version} changed on disk: sha256 {got[:12]}… != {dataset.content_hash[:12]}…"
        )
    return data
