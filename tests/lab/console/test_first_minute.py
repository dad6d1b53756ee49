"""The first minute in the console: an empty dashboard (and the play page) offers the demo to those who may
launch evaluations, the click launches it once and lands on the dashboard, a read-only role is refused.

Plain `db` tests never reach the commit that enqueues the jobs: the queued rows are what is checked here
(tests/lab/rollouts/test_demo.py runs them in the worker, tests/browser/test_first_minute.py in a browser)."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lab.rollouts.models import Evaluation, RolloutJob

pytestmark = pytest.mark.django_db
BUTTON = 'id="demo-run"'
HTMX = {"HTTP_HX_REQUEST": "true"}


def as_user(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_empty_dashboard_offers_the_demo_only_to_roles_that_may_launch(role_users: dict[str, Any]) -> None:
    for role, offered in (("owner", True), ("researcher", True), ("expert", False), ("viewer", False)):
        html = as_user(role_users[role]).get("/").content.decode()
        assert (BUTTON in html) is offered, role
    html = as_user(role_users["owner"]).get("/").content.decode()
    assert "Run the anchors on storebench/payment-outage" in html and "seeds 61 and 62: 12 episodes" in html
    assert 'action="/evaluations/demo"' in html and 'name="csrfmiddlewaretoken"' in html and 'value="acme"' in html


def test_a_dashboard_with_episodes_offers_no_demo(role_users: dict[str, Any], record_factory: Any) -> None:
    from lab.trajectories.services import episodes_ingest

    episodes_ingest(project=role_users["owner"].memberships.get().project, records=[record_factory()], user=role_users["owner"])
    assert BUTTON not in as_user(role_users["owner"]).get("/").content.decode()


def test_the_click_launches_the_anchors_once_and_lands_on_the_dashboard(role_users: dict[str, Any]) -> None:
    client = as_user(role_users["researcher"])
    first = client.post("/evaluations/demo", {"project": "acme"})
    again = client.post("/evaluations/demo", {"project": "acme"})  # a double click: the same demo, no 500
    assert (first.status_code, first["Location"], again.status_code, again["Location"]) == (302, "/", 302, "/")
    evaluations = Evaluation.objects.order_by("id")
    assert [e.agent.name for e in evaluations] == ["do-nothing", "hardened", "naive-restock", "oracle", "random-valid", "smart-triage"]
    assert {(e.task_set, tuple(e.seeds)) for e in evaluations} == {("storebench/payment-outage", (61, 62))}
    assert RolloutJob.objects.filter(status="queued").count() == 12
    dashboard = client.get("/").content.decode()
    assert BUTTON not in dashboard and dashboard.count("on storebench/payment-outage") == 6  # the six evaluations (one per anchor), running


def test_a_running_evaluation_lists_its_jobs_episodes_as_they_come(role_users: dict[str, Any]) -> None:
    from lab.rollouts.services import rollout_run

    as_user(role_users["owner"]).post("/evaluations/demo", {"project": "acme"})
    evaluation = Evaluation.objects.get(agent__name="naive-restock")
    job = RolloutJob.objects.filter(evaluation=evaluation).order_by("seed").first()
    assert job is not None
    rollout_run(job_id=job.pk)  # one of its two episodes has run; the evaluation is still running
    job.refresh_from_db()
    assert job.episode is not None
    fragment = as_user(role_users["viewer"]).get(f"/evaluations/{evaluation.pk}/", **HTMX).content.decode()
    assert "running" in fragment and f'href="/episodes/{job.episode.pk}/"' in fragment and "No episodes yet" not in fragment


def test_read_only_roles_get_403_and_strangers_404_on_a_forged_post(role_users: dict[str, Any], bob: Any) -> None:
    for role in ("viewer", "expert"):
        response = as_user(role_users[role]).post("/evaluations/demo", {"project": "acme"})
        assert response.status_code == 403 and "may not run evaluations" in response.content.decode(), role
    assert as_user(bob).post("/evaluations/demo", {"project": "acme"}).status_code == 404
    assert as_user(role_users["owner"]).get("/evaluations/demo").status_code == 405
    assert Evaluation.objects.count() == 0


def test_without_a_demo_task_there_is_no_button_and_a_post_answers_404(role_users: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from environments import registry

    monkeypatch.setattr(registry, "list_envs", lambda: [registry.env_meta("toolgym")])
    client = as_user(role_users["owner"])
    assert BUTTON not in client.get("/").content.decode() and BUTTON not in client.get("/play/").content.decode()
    response = client.post("/evaluations/demo", {"project": "acme"})
    assert response.status_code == 404 and "EnvMeta.demo_task" in response.content.decode() and Evaluation.objects.count() == 0


def test_a_post_without_csrf_token_is_refused(role_users: dict[str, Any]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(role_users["owner"])
    assert client.post("/evaluations/demo", {"project": "acme"}).status_code == 403 and Evaluation.objects.count() == 0


def test_the_play_page_offers_the_demo_to_researchers_not_to_experts(role_users: dict[str, Any]) -> None:
    assert BUTTON in as_user(role_users["researcher"]).get("/play/").content.decode()
    assert BUTTON not in as_user(role_users["expert"]).get("/play/").content.decode()


def test_the_polled_dashboard_fragment_carries_the_recent_episodes(role_users: dict[str, Any], record_factory: Any) -> None:
    from lab.trajectories.services import episodes_ingest

    [outcome] = episodes_ingest(project=role_users["owner"].memberships.get().project, records=[record_factory()], user=role_users["owner"])
    fragment = as_user(role_users["viewer"]).get("/", **HTMX).content.decode()
    assert 'id="recent-episodes"' in fragment and f'href="/episodes/{outcome.episode.pk}/"' in fragment and "<h1>" not in fragment


def _card(html: str) -> str:
    return html.split('id="demo-progress"', 1)[1].split("</section>", 1)[0]


def test_the_demo_shows_its_stages_with_the_current_one_named_until_done(
    role_users: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from lab.rollouts.services import rollout_run
    from lab.trajectories.services import episode_append_step, episode_start

    client = as_user(role_users["researcher"])
    client.post("/evaluations/demo", {"project": "acme"})
    card = _card(client.get("/").content.decode())
    assert 'data-stage="queued"' in card and 'hx-trigger="every 1s"' in card and "0 of 12 episodes finished" in card
    assert '<li class="stage-queued current" aria-current="step">Queued</li>' in card and "waiting for a worker" in card

    jobs = list(RolloutJob.objects.select_related("agent", "task", "project").order_by("id"))
    rollout_run(job_id=jobs[0].pk)  # do-nothing on seed 61, to its end
    under_way = jobs[2]  # hardened on seed 61, three steps in
    episode = episode_start(project=under_way.project, task=under_way.task, source="rollout", seed=61, agent=under_way.agent)
    for index in range(3):
        episode_append_step(episode=episode, step={"index": index, "source": "env" if index == 0 else "agent", "message": "m"})
    RolloutJob.objects.filter(pk=under_way.pk).update(status="running", episode=episode)
    with django_assert_max_num_queries(8):
        card = _card(client.get("/evaluations/demo/progress", **HTMX).content.decode())
    assert 'data-stage="running"' in card and 'aria-current="step">Running the anchors</li>' in card
    assert "1 of 12 episodes finished" in card and "hardened on seed 61</a> (step 3)" in card

    now = timezone.now()
    RolloutJob.objects.update(status="finished", ended_at=now)
    Evaluation.objects.update(status="finished", ended_at=now)
    card = _card(client.get("/evaluations/demo/progress", **HTMX).content.decode())
    assert 'data-stage="done"' in card and "hx-trigger" not in card and "12 of 12 episodes finished" in card
    assert "from the click to the last score" in card
    Evaluation.objects.update(ended_at=now - timedelta(hours=1))  # long done: the dashboard forgets it
    assert 'id="demo-progress"' not in client.get("/").content.decode()
