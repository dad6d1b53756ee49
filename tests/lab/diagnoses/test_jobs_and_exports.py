from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest
from django.core.management import call_command

from lab.diagnoses.jobs import diagnosis_job_launch, diagnosis_job_run
from lab.diagnoses.models import Diagnosis
from lab.errors import DomainError
from lab.live.models import LiveEvent
from training.data import tokenize_record


def test_a_batch_job_diagnoses_labels_and_verifies_with_progress_and_a_summary(project_a: Any, store: Any, diagnoser: Any) -> None:
    episodes = [store("ledger/tight"), store("ledger/loose")]
    job = diagnosis_job_launch(
        project=project_a,
        episode_ids=[e.pk for e in episodes],
        agent=diagnoser("ledger-diagnoser-good"),
        pivotal_anchor="ledger-fixer",
        verify=True,
    )
    seen: list[tuple[int, int]] = []
    job = diagnosis_job_run(job_id=job.pk, progress=lambda done, total: seen.append((done, total)))
    assert job.status == "finished" and seen == [(1, 2), (2, 2)]
    row = job.summary["by_category"]["wrong_arguments"]
    # On both tasks "add a 3 at step 1" passes where retrying "add b 3" fails.
    assert row == {
        "diagnoses": 2,
        "verified": 2,
        "refuted": 0,
        "failed": 0,
        "retry_pass_rate": 0.0,
        "correction_pass_rate": 1.0,
        "mean_delta_composite": 1.0,
    }
    assert job.summary["attempts"] == {"total": 2, "accepted": 2, "bad_answers": 0} and job.summary["errors"] == []
    for episode, pivotal in zip(episodes, (1, 3), strict=True):
        episode.refresh_from_db()
        assert episode.meta["pivotal"]["step"] == pivotal
    progress = LiveEvent.objects.filter(stream=f"diagnosis-job:{job.pk}", kind="progress").order_by("seq")
    assert [e.payload["done"] for e in progress] == [0, 1, 2, 2]


def test_bad_answers_count_in_the_summary_and_bad_jobs_are_refused(project_a: Any, tight_episode: Any, diagnoser: Any) -> None:
    job = diagnosis_job_launch(project=project_a, episode_ids=[tight_episode.pk], agent=diagnoser("ledger-diagnoser-past-end"))
    job = diagnosis_job_run(job_id=job.pk)
    assert job.summary["attempts"] == {"total": 1, "accepted": 0, "bad_answers": 1}
    assert job.summary["by_category"] == {}
    with pytest.raises(DomainError, match="no episode"):
        diagnosis_job_launch(project=project_a, episode_ids=[tight_episode.pk, 999_999], rule_anchor="ledger-fixer")
    with pytest.raises(DomainError, match="'oracle-x' is not a policy of ledger"):
        diagnosis_job_launch(project=project_a, episode_ids=[tight_episode.pk], rule_anchor="oracle-x")
    with pytest.raises(DomainError, match="would do nothing"):
        diagnosis_job_launch(project=project_a, episode_ids=[tight_episode.pk], verify=False)


def test_an_unexpected_error_ends_the_job_as_failed_with_the_error(
    project_a: Any, tight_episode: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab.diagnoses import jobs

    def broken(job: Any, episode: Any) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(jobs, "_diagnose_one", broken)
    job = diagnosis_job_launch(project=project_a, episode_ids=[tight_episode.pk], rule_anchor="ledger-fixer")
    job = diagnosis_job_run(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.error == "KeyError: 'a bug'" and job.ended_at is not None


def test_the_manage_command_runs_a_rule_job_prints_the_table_and_exports(project_a: Any, store: Any, tmp_path: Any) -> None:
    store("ledger/loose")
    out, err = io.StringIO(), io.StringIO()
    target = tmp_path / "recovery.jsonl"
    call_command(
        "diagnose",
        "--project",
        "acme",
        "--failed",
        "--rule",
        "ledger-fixer",
        "--verify",
        "--export",
        str(target),
        "--view",
        "recovery",
        stdout=out,
        stderr=err,
    )
    text = out.getvalue()
    assert "premature_end" in text and "100%" in text and "wrote 1 recovery lines" in text
    assert "1/1" in err.getvalue()  # the progress bar
    (line,) = target.read_text().splitlines()
    record = json.loads(line)
    assert (
        record["header"]["meta"]["recovery"]["train_from_step"] == 3 and record["header"]["meta"]["recovery"]["outcome"]["passed"] is True
    )


def test_both_export_views_through_the_api(alice_api: Any, tight_episode: Any, diagnoser: Any, tokenizer: Any) -> None:
    from lab.diagnoses.analysis import diagnosis_propose_model
    from lab.diagnoses.verification import diagnosis_verify

    diagnosis = diagnosis_propose_model(episode=tight_episode, agent=diagnoser("ledger-diagnoser-good")).diagnosis
    diagnosis_verify(diagnosis=diagnosis)
    answer = alice_api.get("/api/v1/diagnoses/export/?view=diagnosis")
    assert answer.status_code == 200
    (line,) = b"".join(answer.streaming_content).decode().splitlines()
    example = json.loads(line)
    assert example["steps"][1]["tool_calls"][0]["arguments"]["step_index"] == 1
    assert example["header"]["meta"]["diagnosis"]["id"] == diagnosis.pk
    (recovery_line,) = b"".join(alice_api.get("/api/v1/diagnoses/export/?view=recovery").streaming_content).decode().splitlines()
    recovery = json.loads(recovery_line)
    assert recovery["header"]["parent"] == {"episode_id": tight_episode.pk, "branch_step": 1}
    assert recovery["header"]["meta"]["recovery"]["retry_outcome"]["passed"] is False
    assert tokenize_record(recovery, tokenizer)[0].agent_spans  # training reads the view as it is
    assert alice_api.get("/api/v1/diagnoses/export/?view=other").status_code == 400


@pytest.mark.slow
def test_a_job_runs_on_a_real_celery_worker_and_reports_through_the_api(
    celery_worker: Any, api: Any, alice: Any, project_a: Any, store: Any
) -> None:
    episode = store("ledger/tight")
    Diagnosis.objects.create(
        episode=episode,
        step_index=1,
        category="wrong_arguments",
        explanation="b, not a",
        correction={"name": "add", "arguments": {"key": "a", "amount": 3}},
    )
    client = api(alice, project_a)
    started = client.post("/api/v1/diagnoses/jobs/", {"episodes": [episode.pk], "verify": True}, format="json")
    assert started.status_code == 202, started.content
    job_id = started.json()["id"]
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        body = client.get(f"/api/v1/diagnoses/jobs/{job_id}/").json()
        if body["status"] == "finished":
            break
        time.sleep(0.2)
    assert body["status"] == "finished" and body["done"] == 1
    assert body["summary"]["by_category"]["all"]["verified"] == 1
    assert [j["id"] for j in client.get("/api/v1/diagnoses/jobs/").json()] == [job_id]
