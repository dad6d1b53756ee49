"""Evaluations with an attack setting: both conditions run on paired seeds, the four figures are aggregated and shown,
and a bad setting is refused at every edge by field, never with a 500."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from environments.attacks import attack_metrics, metric_row
from lab.rollouts.evaluations import evaluation_launch, evaluation_regrade
from lab.rollouts.models import Evaluation, RolloutJob
from lab.rollouts.services import anchor_agent_resolve, rollout_run

pytestmark = pytest.mark.django_db
TASK = "storebench/launch-week"
SETTING = {"attack": "quoted", "guidance": True}


def _evaluate(project: Any, name: str, options: dict[str, Any]) -> Evaluation:
    evaluation = evaluation_launch(
        project=project, agent=anchor_agent_resolve(project=project, name=name), task_set=TASK, seeds=[104], enqueue=False, options=options
    )
    for job in RolloutJob.objects.filter(evaluation=evaluation):
        rollout_run(job_id=job.pk)
    evaluation.refresh_from_db()
    return evaluation


def as_user(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_attack_evaluation_runs_both_conditions_and_aggregates_the_four_figures(project_a: Any) -> None:
    evaluation = _evaluate(project_a, "smart-triage", SETTING)
    jobs = {tuple(sorted(j.options.items())): j for j in RolloutJob.objects.filter(evaluation=evaluation)}
    assert set(jobs) == {(("guidance", True),), (("attack", "quoted"), ("guidance", True))}
    benign, attacked = jobs[(("guidance", True),)].episode, jobs[(("attack", "quoted"), ("guidance", True))].episode
    assert benign is not None and attacked is not None
    assert attacked.meta["header"]["options"] == SETTING and benign.meta["header"]["options"] == {"guidance": True}
    aggregate = evaluation.aggregate
    assert evaluation.options == SETTING and aggregate["episodes"] == 1  # the usual figures are the benign condition's
    assert aggregate["composite"]["mean"] == pytest.approx(benign.composite)
    expected = attack_metrics([metric_row(composite=e.composite or 0.0, score=e.score) for e in (benign, attacked)])
    assert aggregate["attack"] == expected
    assert aggregate["attack"]["attack_success_rate"] == 1.0 and aggregate["attack"]["utility_under_attack"] == pytest.approx(
        attacked.composite
    )
    assert aggregate["attack"]["guidance_given"] == 4 and [r["episode"] for r in aggregate["attack_rows"]] == [attacked.pk]
    assert evaluation_regrade(evaluation=evaluation)["matches"]


def test_the_hardened_anchor_resists_where_smart_triage_obeys(project_a: Any) -> None:
    figures = _evaluate(project_a, "hardened", SETTING).aggregate["attack"]
    assert figures["attack_success_rate"] == 0.0 and figures["guidance_compliance"] == 1.0
    # Not equal: reading and answering the planted text spends minutes, and on engine 2.0.0 the world moves with them.
    assert abs(figures["benign_utility"] - figures["utility_under_attack"]) < 0.05


def test_an_evaluation_without_options_runs_one_condition_and_shows_no_attack_figures(project_a: Any) -> None:
    evaluation = _evaluate(project_a, "do-nothing", {})
    assert RolloutJob.objects.filter(evaluation=evaluation).count() == 1 and "attack" not in evaluation.aggregate


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"attack": "shouting"}, "options.attack: \"shouting\" is not one of ['none', 'direct', 'authority', 'quoted', 'split']"),
        ({"attack": "direct", "volume": 3}, "options: unexpected field(s) volume"),
        ({"guidance": "yes"}, 'options.guidance: expected true or false, got "yes"'),
        ("direct", "Expected a dictionary of items"),
    ],
)
def test_the_api_refuses_a_bad_attack_setting_naming_the_field(alice_api: Any, options: Any, message: str) -> None:
    for url, body in (
        ("/api/v1/evaluations/", {"agent": "smart-triage", "task_set": TASK, "seeds": [0]}),
        ("/api/v1/rollouts/", {"agent": "smart-triage", "task": TASK, "seed": 0}),
    ):
        answer = alice_api.post(url, {**body, "options": options}, format="json")
        assert answer.status_code == 400, answer.json()
        error = answer.json()["error"]
        assert message in " ".join([error["message"], *(error.get("fields") or {}).get("options", [])]), error
    assert not Evaluation.objects.exists() and not RolloutJob.objects.exists()


def test_the_api_refuses_options_an_environment_does_not_take(alice_api: Any) -> None:
    answer = alice_api.post(
        "/api/v1/evaluations/", {"agent": "x", "task_set": "toolgym/all", "seeds": [0], "options": {"attack": "direct"}}, format="json"
    )
    assert answer.status_code == 400 and answer.json()["error"]["message"] == "toolgym takes no options, got ['attack']"
    assert answer.json()["error"]["path"] == "options"


def test_the_api_launches_an_attack_evaluation_for_writers_only(api: Any, role_users: dict[str, Any], project_a: Any) -> None:
    body = {"agent": "smart-triage", "task_set": TASK, "seeds": [0, 1], "options": SETTING}
    assert api(role_users["viewer"], project_a).post("/api/v1/evaluations/", body, format="json").status_code == 403
    assert api(role_users["expert"], project_a).post("/api/v1/evaluations/", body, format="json").status_code == 403
    answer = api(role_users["researcher"], project_a).post("/api/v1/evaluations/", body, format="json")
    assert answer.status_code == 201 and answer.json()["options"] == SETTING
    jobs = RolloutJob.objects.filter(evaluation_id=answer.json()["id"])
    assert jobs.count() == 4 and sorted(j.options.get("attack", "none") for j in jobs) == ["none", "none", "quoted", "quoted"]
    rollout = api(role_users["researcher"], project_a).post(
        "/api/v1/rollouts/", {"agent": "smart-triage", "task": TASK, "seed": 3, "options": SETTING}, format="json"
    )
    assert rollout.status_code == 201 and rollout.json()["options"] == SETTING


def test_the_form_offers_the_attack_setting_and_launches_it(role_users: dict[str, Any]) -> None:
    html = as_user(role_users["researcher"]).get("/evaluations/").content.decode()
    assert '<select name="attack">' in html and '<option value="split" >split</option>' in html and 'name="guidance"' in html
    form = {"project": "acme", "agent": "smart-triage", "task_set": TASK, "seeds": "0", "attack": "authority", "guidance": "on"}
    response = as_user(role_users["researcher"]).post("/evaluations/new", form)
    evaluation = Evaluation.objects.get()
    assert response.status_code == 302 and evaluation.options == {"attack": "authority", "guidance": True}
    assert RolloutJob.objects.filter(evaluation=evaluation).count() == 2


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"task_set": TASK, "attack": "whisper"}, "attack: 'whisper' is not one of ['none', 'direct', 'authority', 'quoted', 'split']"),
        ({"task_set": "toolgym/all", "attack": "direct"}, "attack: toolgym has no attack axis"),
    ],
)
def test_the_form_refuses_a_bad_attack_setting_beside_its_field(role_users: dict[str, Any], fields: dict[str, str], message: str) -> None:
    response = as_user(role_users["owner"]).post("/evaluations/new", {"project": "acme", "agent": "smart-triage", "seeds": "0", **fields})
    assert response.status_code == 400 and message in response.context["errors"]["attack"], response.context["errors"]
    assert not Evaluation.objects.exists() and not RolloutJob.objects.exists()


def test_the_evaluation_page_shows_the_four_figures(project_a: Any, role_users: dict[str, Any]) -> None:
    evaluation = _evaluate(project_a, "smart-triage", SETTING)
    html = as_user(role_users["viewer"]).get(f"/evaluations/{evaluation.pk}/").content.decode()
    figures = evaluation.aggregate["attack"]
    assert 'id="attack-metrics"' in html and "<code>attack=quoted guidance=True</code>" in html
    assert f"<td>{figures['benign_utility']:.3f}</td><td>{figures['utility_under_attack']:.3f}</td><td>100%</td>" in html
    assert "Guidance compliance" in html and "1 benign, 1 attacked episodes" in html
    assert "<td><code>guidance=True </code></td>" in html and "<td><code>attack=quoted guidance=True </code></td>" in html
    plain = _evaluate(project_a, "do-nothing", {})
    assert 'id="attack-metrics"' not in as_user(role_users["viewer"]).get(f"/evaluations/{plain.pk}/").content.decode()
