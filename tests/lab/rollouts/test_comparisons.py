"""Comparisons of role configurations: launch (service, API, console), paired figures vs the base, per-role
statistics from the stored headers, permissions and refused input."""

from __future__ import annotations

from typing import Any

import pytest

from lab.rollouts.aggregate import paired
from lab.rollouts.comparisons import comparison_launch, comparison_summary
from lab.rollouts.evaluations import evaluation_aggregate, evaluation_compare
from lab.rollouts.models import Comparison, Evaluation, RolloutJob
from lab.rollouts.services import rollout_run

pytestmark = pytest.mark.django_db
TASK = "storebench/payment-outage"


def _run(comparison: Comparison) -> None:
    for job in RolloutJob.objects.filter(evaluation__comparisons=comparison).order_by("pk"):
        rollout_run(job_id=job.pk)


@pytest.mark.slow
def test_a_comparison_evaluates_each_variant_on_the_base_seeds_and_pairs_it_with_the_base(project_a: Any) -> None:
    comparison = comparison_launch(
        project=project_a, base="do-nothing", variants=["naive-restock", "smart-triage"], task_set=TASK, seeds=[0, 1, 2], enqueue=False
    )
    assert [v["name"] for v in comparison.variants] == ["do-nothing", "naive-restock", "smart-triage"]
    assert all(v["team"] == {} for v in comparison.variants) and comparison.evaluations.count() == 3
    assert {(e.task_set, tuple(e.seeds)) for e in comparison.evaluations.all()} == {(TASK, (0, 1, 2))}
    assert not comparison_summary(comparison=comparison)["finished"]
    _run(comparison)
    summary = comparison_summary(comparison=comparison)
    assert summary["finished"] and [v["base"] for v in summary["variants"]] == [True, False, False]
    base, _, smart = summary["variants"]
    evaluations = {e.agent.name: e for e in Evaluation.objects.filter(comparisons=comparison)}
    expected = paired(evaluations["smart-triage"].aggregate["rows"], evaluations["do-nothing"].aggregate["rows"])
    assert smart["vs_base"] == expected and smart["vs_base"]["pairs"] == 3 and "vs_base" not in base
    composites = [r["composite"] for r in evaluations["smart-triage"].aggregate["rows"]]
    assert smart["vs_base"]["composite_diff"]["mean"] == pytest.approx(sum(composites) / 3 - base["composite"])
    assert (
        smart["vs_base"]["composite_diff"]["low"] < smart["vs_base"]["composite_diff"]["mean"] < smart["vs_base"]["composite_diff"]["high"]
    )
    assert smart["roles"]["consultations"]["mean"] == 0.0


@pytest.mark.slow
def test_per_role_statistics_come_from_the_stored_headers(project_a: Any, client: Any, role_users: dict[str, Any]) -> None:
    comparison = comparison_launch(
        project=project_a, base="do-nothing", variants=["naive-restock"], task_set=TASK, seeds=[0, 1], enqueue=False
    )
    _run(comparison)
    evaluation = Evaluation.objects.get(comparisons=comparison, agent__name="naive-restock")
    for i, episode in enumerate(evaluation.episodes.order_by("seed")):
        header = episode.meta["header"]
        header["team"] = {"consultant": {"policy": {"name": "oracle"}, "cost": 0.05}}
        header["roles"] = {
            "actor": {"turns": 10 + i, "tokens": 0, "cost": 0.0, "calls": 0},
            "consultant": {"turns": 2 * i, "tokens": 0, "cost": 0.1 * i, "calls": 2 * i},
        }
        episode.save(update_fields=["meta"])
    roles = evaluation_aggregate(evaluation)["roles"]
    assert roles["roles"]["actor"] == {"episodes": 2, "turns": 10.5, "tokens": 0.0, "cost": 0.0}
    assert roles["roles"]["consultant"]["cost"] == pytest.approx(0.05) and roles["consultations"]["mean"] == 1.0
    assert [b["consultations"] for b in roles["success_by_consultations"]] == [0, 2]
    summary = comparison_summary(comparison=comparison)
    assert summary["variants"][1]["team"] == {"consultant": {"policy": {"name": "oracle"}, "cost": 0.05}}
    evaluation.aggregate = evaluation_aggregate(evaluation)  # as the last job's end computes it, after the headers above
    evaluation.save(update_fields=["aggregate"])
    base = Evaluation.objects.get(comparisons=comparison, agent__name="do-nothing")
    compared = evaluation_compare(a=evaluation, b=base)
    assert compared["a"]["team"]["consultant"]["cost"] == 0.05 and compared["b"]["team"] == {}
    assert compared["a"]["roles"]["roles"]["consultant"]["episodes"] == 2 and compared["b"]["roles"]["roles"] == {}
    client.force_login(role_users["viewer"])
    html = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert 'id="evaluation-roles"' in html and "role-consultant" in html and "Success by consultations per episode" in html


def test_the_api_launches_and_reads_a_comparison(alice_api: Any, project_a: Any) -> None:
    body = {"base": "do-nothing", "variants": ["naive-restock"], "task_set": TASK, "seeds": [0, 1]}
    response = alice_api.post("/api/v1/comparisons/", body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert [v["name"] for v in data["variants"]] == ["do-nothing", "naive-restock"] and data["finished"] is False
    read = alice_api.get(f"/api/v1/comparisons/{data['id']}/").json()
    assert read["variants"][1]["vs_base"]["pairs"] == 0 and read["seeds"] == [0, 1]
    assert [c["id"] for c in alice_api.get("/api/v1/comparisons/").json()] == [data["id"]]


def test_a_viewer_cannot_launch_and_another_project_sees_nothing(
    api: Any, role_users: dict[str, Any], project_a: Any, bob: Any, project_b: Any, client: Any
) -> None:
    body = {"base": "do-nothing", "variants": ["naive-restock"], "task_set": TASK, "seeds": [0]}
    assert api(role_users["viewer"], project_a).post("/api/v1/comparisons/", body, format="json").status_code == 403
    client.force_login(role_users["viewer"])
    form = {"project": "acme", "base": "do-nothing", "variants": "naive-restock", "task_set": TASK, "seeds": "0"}
    assert client.post("/evaluations/comparisons/new", form).status_code == 403
    assert not Comparison.objects.exists()
    comparison = comparison_launch(
        project=project_a, base="do-nothing", variants=["naive-restock"], task_set=TASK, seeds=[0], enqueue=False
    )
    assert api(bob, project_b).get(f"/api/v1/comparisons/{comparison.pk}/").status_code == 404
    assert api(bob, project_b).get("/api/v1/comparisons/").json() == []
    client.force_login(bob)
    assert client.get(f"/evaluations/comparisons/{comparison.pk}/").status_code == 404


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"variants": []}, "variants"),
        ({"variants": "naive-restock"}, "variants"),
        ({"variants": ["do-nothing"]}, "variants"),
        ({"variants": ["naive-restock", "naive-restock"]}, "variants"),
        ({"variants": ["no-such-agent"]}, None),
        ({"task_set": "storebench/nope"}, None),
        ({"seeds": [0, 0]}, None),
        ({"base": ""}, "base"),
        ({"variants": [{"team": {}}]}, "variants"),
    ],
)
def test_bad_launches_are_refused_with_a_message_never_a_500(alice_api: Any, change: dict[str, Any], field: str | None) -> None:
    body = {"base": "do-nothing", "variants": ["naive-restock"], "task_set": TASK, "seeds": [0], **change}
    response = alice_api.post("/api/v1/comparisons/", body, format="json")
    assert 400 <= response.status_code < 500, response.content
    assert field is None or field in response.content.decode()
    assert not Comparison.objects.exists() and not Evaluation.objects.exists()


@pytest.mark.slow
def test_the_console_launches_a_comparison_and_shows_it(client: Any, role_users: dict[str, Any], project_a: Any) -> None:
    client.force_login(role_users["researcher"])
    page = client.get("/evaluations/").content.decode()
    assert 'id="comparison-form"' in page
    form = {"project": "acme", "base": "do-nothing", "variants": "naive-restock\nsmart-triage", "task_set": TASK, "seeds": "0,1"}
    response = client.post("/evaluations/comparisons/new", form)
    assert response.status_code == 302
    comparison = Comparison.objects.get()
    assert response["Location"] == f"/evaluations/comparisons/{comparison.pk}/"
    _run(comparison)
    html = client.get(response["Location"]).content.decode()
    assert 'id="comparison-table"' in html and "smart-triage" in html and "n=2" in html and 'id="comparison-roles"' in html
    refused = client.post("/evaluations/comparisons/new", {**form, "variants": "nobody-here"})
    assert refused.status_code == 400 and "nobody-here" in refused.content.decode()


def test_a_comparison_above_the_job_cap_is_refused_before_anything_is_created(alice_api: Any, project_a: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_COMPARISON_JOBS = 50
    body = {"base": "do-nothing", "variants": ["naive-restock", "smart-triage"], "task_set": TASK, "seeds": list(range(20))}
    response = alice_api.post("/api/v1/comparisons/", body, format="json")
    assert response.status_code == 400 and response.json()["error"]["code"] == "too_many_jobs"
    assert "60 jobs (3 agents x 1 tasks x 20 seeds); at most 50" in response.json()["error"]["message"]
    assert not Comparison.objects.exists() and not Evaluation.objects.exists() and not RolloutJob.objects.exists()


def test_the_console_shows_the_job_count_before_launching(client: Any, role_users: dict[str, Any], project_a: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_COMPARISON_JOBS = 50
    client.force_login(role_users["researcher"])
    form = {"project": "acme", "base": "do-nothing", "variants": "naive-restock", "task_set": TASK, "seeds": "0-4", "preview": "1"}
    preview = client.post("/evaluations/comparisons/new", form)
    assert preview.status_code == 200 and "10 jobs (2 agents x 1 tasks x 5 seeds)" in preview.content.decode()
    assert not Comparison.objects.exists() and not RolloutJob.objects.exists()
    refused = client.post("/evaluations/comparisons/new", {**form, "seeds": "0-99"})
    assert refused.status_code == 400 and "200 jobs" in refused.content.decode() and "at most 50" in refused.content.decode()
