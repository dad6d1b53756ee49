"""External runs (lab.runs.external): created, reported into, cancelled as a flag and finished through the API."""

from __future__ import annotations

import time
from typing import Any

import pytest
from rest_framework.test import APIClient

from lab.live.models import LiveEvent
from lab.runs.models import Checkpoint, RunMetric, TrainingRun


def _start(client: Any, **body: Any) -> Any:
    return client.post(
        "/api/v1/runs/external/", {"name": "trl sft", "recipe": "trl-sft", "base_model": "Qwen/Qwen3-0.6B", **body}, format="json"
    )


def _report(client: Any, run_id: int, metrics: Any, **extra: Any) -> Any:
    return client.post(f"/api/v1/runs/{run_id}/metrics/", {"metrics": metrics, **extra}, format="json")


@pytest.mark.django_db
def test_it_starts_a_running_run_in_the_tier_of_the_key(alice: Any, project_a: Any, alice_api: Any) -> None:
    from lab.projects.services import api_key_issue

    response = _start(alice_api, config={"lr": 1e-5})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["status"], body["provenance"], body["recipe"], body["config"]) == ("running", "upload", "trl-sft", {"lr": 1e-5})
    flagged = APIClient()
    flagged.credentials(HTTP_AUTHORIZATION=f"Bearer {api_key_issue(project=project_a, user=alice, name='trl', external=True)[1]}")
    assert _start(flagged).json()["provenance"] == "external"
    assert TrainingRun.objects.get(pk=body["id"]).started_at is not None


@pytest.mark.django_db
def test_reported_metrics_become_the_same_rows_and_live_events_as_a_native_run(alice_api: Any) -> None:
    run_id = _start(alice_api).json()["id"]
    points = [{"step": 1, "values": {"loss": 2.0, "lr": 0.1}}, {"step": 2, "values": {"loss": 1.5}}]
    answer = _report(alice_api, run_id, points, progress=0.25).json()
    assert answer == {"recorded": 3, "status": "running", "should_stop": False}
    assert alice_api.get(f"/api/v1/runs/{run_id}/metrics/").json() == {
        "loss": {"steps": [1, 2], "values": [2.0, 1.5]},
        "lr": {"steps": [1], "values": [0.1]},
    }
    events = list(LiveEvent.objects.filter(stream=f"run:{run_id}").order_by("seq").values_list("kind", "payload"))
    assert [kind for kind, _ in events] == ["status", "metric", "metric", "metric", "progress"]
    assert events[-1][1] == {"progress": 0.25, "step": 2}
    # A batch resent because its answer was lost adds nothing twice.
    assert _report(alice_api, run_id, points).json()["recorded"] == 0
    assert RunMetric.objects.filter(run_id=run_id).count() == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("metrics", "extra", "field"),
    [
        ([], {}, "metrics"),
        ("loss", {}, "metrics"),
        ([{"step": -1, "values": {"loss": 1.0}}], {}, "metrics[0].step"),
        ([{"step": True, "values": {"loss": 1.0}}], {}, "metrics[0].step"),
        ([{"step": 1, "values": {}}], {}, "metrics[0]"),
        ([{"step": 1, "values": {"loss": "low"}}], {}, "metrics[0].values.loss"),
        ([{"step": 1, "values": {"x" * 65: 1.0}}], {}, "metrics[0].values." + "x" * 65),
        ([{"step": 1, "values": {"loss": 1.0}}], {"progress": 1.5}, "progress"),
    ],
)
def test_it_answers_a_bad_report_with_400_naming_the_field(alice_api: Any, metrics: Any, extra: dict[str, Any], field: str) -> None:
    run_id = _start(alice_api).json()["id"]
    response = _report(alice_api, run_id, metrics, **extra)
    assert response.status_code == 400, response.json()
    assert response.json()["error"]["fields"] == [field]
    assert not RunMetric.objects.exists()


@pytest.mark.django_db
def test_a_cancel_from_the_console_is_a_flag_the_trainer_reads_and_its_finish_keeps(alice: Any, alice_api: Any, client: Any) -> None:
    run_id = _start(alice_api).json()["id"]
    client.force_login(alice)
    assert client.post(f"/runs/{run_id}/cancel").status_code == 302
    answer = _report(alice_api, run_id, [{"step": 7, "values": {"loss": 0.5}}]).json()
    assert answer == {"recorded": 1, "status": "cancelled", "should_stop": True}  # its last steps still land
    finished = alice_api.post(f"/api/v1/runs/{run_id}/finish/", {"status": "finished"}, format="json").json()
    assert finished["status"] == "cancelled" and finished["ended_at"] is not None


@pytest.mark.django_db
def test_a_finished_run_takes_no_more_reports_and_a_repeated_finish_changes_nothing(alice_api: Any) -> None:
    run_id = _start(alice_api).json()["id"]
    first = alice_api.post(f"/api/v1/runs/{run_id}/finish/", {"status": "finished"}, format="json").json()
    assert (first["status"], first["progress"]) == ("finished", 1.0)
    again = alice_api.post(f"/api/v1/runs/{run_id}/finish/", {"status": "failed", "error": "late"}, format="json").json()
    assert (again["status"], again["error"], again["ended_at"]) == ("finished", "", first["ended_at"])
    refused = _report(alice_api, run_id, [{"step": 1, "values": {"loss": 1.0}}])
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "run_ended")
    bad = alice_api.post(f"/api/v1/runs/{_start(alice_api).json()['id']}/finish/", {"status": "cancelled"}, format="json")
    assert (bad.status_code, bad.json()["error"]["fields"]) == (400, ["status"])


@pytest.mark.django_db
def test_checkpoints_carry_the_trainers_results_and_cannot_be_evaluated_here(alice_api: Any) -> None:
    run_id = _start(alice_api).json()["id"]
    body = {"step": 100, "path": "s3://bucket/ckpt-100", "eval_results": {"toolgym/lookup": 0.8}}
    assert alice_api.post(f"/api/v1/runs/{run_id}/checkpoints/", body, format="json").status_code == 201
    body["eval_results"] = {"toolgym/lookup": 0.9}  # the same step again updates it
    alice_api.post(f"/api/v1/runs/{run_id}/checkpoints/", body, format="json")
    assert list(Checkpoint.objects.filter(run_id=run_id).values_list("step", "eval_results")) == [(100, {"toolgym/lookup": 0.9})]
    refused = alice_api.post(f"/api/v1/runs/{run_id}/evaluate-checkpoint/", {"task_set": "toolgym/lookup", "seeds": [0]}, format="json")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "external_checkpoint")


@pytest.mark.django_db
def test_only_writers_of_the_runs_project_report_and_native_runs_take_no_reports(
    role_users: dict[str, Any], project_a: Any, api: Any, bob: Any, project_b: Any
) -> None:
    run_id = _start(api(role_users["owner"], project_a)).json()["id"]
    point = [{"step": 1, "values": {"loss": 1.0}}]
    assert _report(api(role_users["viewer"], project_a), run_id, point).status_code == 403
    assert _start(api(role_users["expert"], project_a)).status_code == 403
    assert _report(api(bob, project_b), run_id, point).status_code == 404
    native = TrainingRun.objects.create(project=project_a, name="native", recipe="sft", base_model="m", status="running")
    refused = _report(api(role_users["researcher"], project_a), native.pk, point)
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "not_external")


@pytest.mark.django_db
def test_the_run_pages_show_the_tier_and_hide_evaluate_for_external_checkpoints(alice: Any, alice_api: Any, client: Any) -> None:
    run_id = _start(alice_api).json()["id"]
    alice_api.post(f"/api/v1/runs/{run_id}/checkpoints/", {"step": 5, "path": "elsewhere"}, format="json")
    client.force_login(alice)
    page = client.get(f"/runs/{run_id}/").content.decode()
    assert '<span class="tag provenance-upload">upload</span>' in page and "trained elsewhere" in page
    assert "Evaluate</th>" not in page and f'ws-connect="/ws/runs/{run_id}/' in page  # live, like a native run
    assert '<span class="tag provenance-upload">upload</span>' in client.get("/runs/").content.decode()


# --- bounds on metric ingestion: rows and bytes per report, rows per minute per run --------------------------------


@pytest.mark.django_db
def test_a_report_of_100k_metric_rows_is_refused_413_before_anything_is_written(alice_api: Any, settings: Any) -> None:
    run_id = _start(alice_api).json()["id"]
    points = [{"step": s, "values": {f"m{i}": 1.0 for i in range(100)}} for s in range(1000)]  # within the per-point caps
    started = time.perf_counter()
    response = _report(alice_api, run_id, points)
    assert time.perf_counter() - started < 5.0
    assert (response.status_code, response.json()["error"]["code"]) == (413, "too_large")
    assert f"at most {settings.PRACTICUM_METRIC_ROWS_PER_REPORT} values per report" in response.json()["error"]["message"]
    assert not RunMetric.objects.filter(run_id=run_id).exists()


@pytest.mark.django_db
def test_a_report_body_over_the_byte_limit_is_refused_413(alice_api: Any, settings: Any) -> None:
    settings.PRACTICUM_METRIC_REPORT_BYTES = 2048
    run_id = _start(alice_api).json()["id"]
    response = _report(alice_api, run_id, [{"step": 1, "values": {"loss": 1.0}}], padding="x" * 4096)
    assert (response.status_code, response.json()["error"]["code"]) == (413, "too_large")
    assert "at most 2048 bytes" in response.json()["error"]["message"]


@pytest.mark.django_db
def test_metric_rows_are_rate_limited_per_run_with_retry_after(alice_api: Any, settings: Any, monkeypatch: Any) -> None:
    settings.PRACTICUM_METRIC_ROWS_PER_MINUTE = 300
    monkeypatch.setattr("lab.projects.throttle.time.time", lambda: 6_000_030.0)  # mid-window: no minute ends during the test
    first, second = _start(alice_api).json()["id"], _start(alice_api).json()["id"]
    batch = [{"step": s, "values": {"a": 1.0, "b": 2.0}} for s in range(100)]  # 200 rows
    assert _report(alice_api, first, batch).status_code == 200
    limited = _report(alice_api, first, [{"step": 100 + s, "values": {"a": 1.0, "b": 2.0}} for s in range(100)])
    assert (limited.status_code, limited.json()["error"]["code"]) == (429, "rate_limited")
    assert 1 <= int(limited["Retry-After"]) <= 60
    assert RunMetric.objects.filter(run_id=first).count() == 200  # the refused batch wrote nothing
    assert _report(alice_api, second, batch).status_code == 200  # the budget is per run
