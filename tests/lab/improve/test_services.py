"""The loop's services end to end on the tiny model: every stage, its lineage, the report, promotion."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from lab.improve.models import ImprovementLoop
from lab.improve.services import failing_episodes, loop_create, loop_promote, loop_run
from lab.live.services import live_events_after

pytestmark = pytest.mark.django_db


def test_a_loop_runs_from_failing_episodes_to_a_promoted_checkpoint_with_lineage(
    project_a: Any, alice: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]
) -> None:
    failing = failing_episodes(clumsy_evaluation)
    assert {e.seed % 2 for e in failing} == {1}
    seen: list[tuple[str, float]] = []
    loop = loop_create(project=project_a, evaluation=clumsy_evaluation, config=loop_config, user=alice, enqueue=False)
    assert (loop.stage, loop.status, loop.episode_ids) == ("select", "queued", sorted(e.pk for e in failing))
    loop = loop_run(loop_id=loop.pk, progress=lambda stage, fraction, message: seen.append((stage, fraction)))
    assert (loop.status, loop.stage, loop.error) == ("finished", "promote", "")
    assert set(loop.stages) == {"select", "diagnose", "dataset", "train", "checkpoint", "report"}
    assert all(v["status"] == "finished" for v in loop.stages.values())
    assert {stage for stage, _ in seen} == {"select", "diagnose", "dataset", "train", "checkpoint", "report"}
    events = live_events_after(stream=f"loop:{loop.pk}", after=0)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)) and {e["kind"] for e in events} == {"stage"}
    assert events[-1]["payload"]["message"] == "report ready: promote the checkpoint if it is better"
    assert [e["payload"]["stage"] for e in events if e["payload"]["message"].endswith(" started")] == [
        "select",
        "diagnose",
        "dataset",
        "train",
        "checkpoint",
        "report",
    ]

    # diagnose: the rule diagnosis of each failure, verified by replay
    job = loop.diagnosis_job
    assert job.episode_ids == loop.episode_ids and job.rule_anchor == "expert"
    assert loop.stages["diagnose"]["verified"] == len(failing) > 0
    # dataset: weighted, hashed, versioned, with the episodes and diagnoses it came from
    dataset = loop.dataset
    data = Path(dataset.path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == dataset.content_hash and dataset.version == 1
    lines = [json.loads(line) for line in data.splitlines()]
    counts = dataset.counts
    assert counts["recovery"] == {"examples": len(failing), "lines": 2 * len(failing), "partial": 0}
    assert counts["successes"]["lines"] == 4 - len(failing) and counts["anchors"] == {"examples": 4, "lines": 2, "partial": 0}
    assert len(lines) == dataset.lines == sum(c["lines"] for c in counts.values())
    assert sum(1 for r in lines if (r["header"].get("meta") or {}).get("view") == "recovery") == 2 * len(failing)
    assert len(dataset.diagnosis_ids) == len(failing)
    assert not {(r["header"]["task"], r["header"]["seed"]) for r in lines} & {("chain", 20), ("chain", 21)}
    # train: the run trained on exactly that file
    run = loop.run
    assert run.dataset_hash == dataset.content_hash and run.dataset_spec == {"file": dataset.path} and run.status == "finished"
    assert sorted(run.episode_ids) == dataset.episode_ids
    # checkpoint: every checkpoint on the dev seeds, the best chosen
    candidates = loop.stages["checkpoint"]["candidates"]
    assert {c["checkpoint"] for c in candidates} == set(run.checkpoints.values_list("pk", flat=True)) and len(candidates) == 2
    assert loop.checkpoint_id == loop.stages["checkpoint"]["chosen"]["checkpoint"]
    for row in candidates:
        evaluation = clumsy_evaluation.__class__.objects.get(pk=row["evaluation"])
        assert (evaluation.seeds, evaluation.checkpoint_id) == ([10, 11], row["checkpoint"])
    # report: test seeds only, paired with the starting agent, per scenario and component
    report = loop.report
    assert loop.baseline_evaluation.agent == loop.agent and loop.baseline_evaluation.seeds == [20, 21]
    assert loop.test_evaluation.checkpoint_id == loop.checkpoint_id and loop.test_evaluation.seeds == [20, 21]
    assert report["pairs"] == 2 and report["metrics"][0] == "composite"
    assert (report["dev_seeds"], report["test_seeds"], report["dev_test_seed_overlap"]) == ([10, 11], [20, 21], 0)
    diff = report["overall"]["composite"]
    means = report["candidate"]["means"]["composite"] - report["baseline"]["means"]["composite"]
    assert diff["mean"] == pytest.approx(means) and diff["n"] == 2
    assert [t["task"] for t in report["per_task"]] == ["chain"]

    agent = loop_promote(loop=loop, user=alice)
    loop.refresh_from_db()
    assert (loop.stage, loop.promoted_agent) == ("done", agent)
    assert agent.kind == "hf" and agent.checkpoint == loop.checkpoint and agent.harness == loop.agent.harness
    assert loop_promote(loop=loop, user=alice) == agent  # promoting twice is the same agent


def test_a_second_loop_gets_the_next_dataset_version(project_a: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]) -> None:
    from lab.improve.datasets import loop_dataset_build

    versions = []
    for _ in range(2):
        loop = loop_create(
            project=project_a, evaluation=clumsy_evaluation, config={**loop_config, "sources": {"successes": 1.0}}, enqueue=False
        )
        versions.append(loop_dataset_build(loop=loop, anchor_evaluation=None).version)
    assert versions == [1, 2]
    assert ImprovementLoop.objects.get(pk=loop.pk).dataset.version == 2


def test_a_loop_cannot_train_from_another_projects_checkpoint_even_one_reported_as_its_own(
    project_a: Any, project_b: Any, clumsy_evaluation: Any, loop_config: dict[str, Any], settings: Any
) -> None:
    from pathlib import Path

    from lab.errors import DomainError
    from lab.improve.services import loop_create
    from lab.runs.models import Checkpoint, TrainingRun

    theirs = Path(settings.PRACTICUM_CHECKPOINT_DIR) / f"project-{project_b.pk}" / "run-1" / "step-000001"
    theirs.mkdir(parents=True)
    (theirs / "config.json").write_text('{"n_embd": 4096, "n_layer": 48}')  # must not even be read
    external = TrainingRun.objects.create(project=project_a, name="ext", recipe="trl", base_model="gpt2", provenance="external")
    Checkpoint.objects.create(run=external, step=1, path=str(theirs))
    for config in (
        {**loop_config, "base_model": str(theirs)},
        {**loop_config, "recipe_config": {**loop_config["recipe_config"], "resume_from": str(theirs)}},
    ):
        with pytest.raises(DomainError) as caught:
            loop_create(project=project_a, evaluation=clumsy_evaluation, config=config, enqueue=False)
        assert caught.value.code == "path_refused"
