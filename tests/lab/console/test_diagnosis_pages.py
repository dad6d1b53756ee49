"""Diagnosis jobs and analysis in the console: the job form makes the service's job or refuses field by field,
the job page shows the before/after table of a job run inline, exports stream both JSONL views, and the viewer
shows the pivotal step and the graph credit. Episodes are real runs of the tiny ledger environment.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from lab.diagnoses.analysis import episode_label_pivotal, episode_step_credit
from lab.diagnoses.jobs import diagnosis_job_run
from lab.diagnoses.models import DiagnosisJob
from lab.trajectories.models import AgentConfig, Episode
from tests.environments.diagnosis.conftest import play
from tests.lab.diagnoses.conftest import GOOD_ANSWER  # noqa: F401  (importing registers the ledger diagnosers)

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def as_user(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def ledger(project_a: Any, role_users: dict[str, Any]) -> dict[str, Episode]:
    """Two failed ledger episodes (the stubborn policy's wrong key) and a passed one, in project A."""
    from lab.trajectories.services import episodes_ingest

    records = [play("ledger/tight", "ledger-stubborn"), play("ledger/loose", "ledger-stubborn"), play("ledger/tight", "ledger-fixer")]
    tight, loose, passed = (o.episode for o in episodes_ingest(project=project_a, records=records, user=role_users["owner"]))
    assert (tight.passed, loose.passed, passed.passed) == (False, False, True)
    return {"tight": tight, "loose": loose, "passed": passed}


@pytest.fixture
def good_agent(project_a: Any) -> AgentConfig:
    return AgentConfig.objects.create(project=project_a, name="ledger-diagnoser-good", kind="scripted", model="ledger-diagnoser-good")


def _job_post(ledger: dict[str, Episode], **fields: Any) -> dict[str, Any]:
    return {
        "project": "acme",
        "episodes": [ledger["tight"].pk, ledger["loose"].pk],
        "diagnoser": "agent:ledger-diagnoser-good",
        "pivotal_anchor": "ledger-fixer",
        "verify": "on",
        **fields,
    }


# --- the job form -------------------------------------------------------------------------------------------------


def test_the_form_offers_only_failed_episodes_filtered_by_task(
    role_users: dict[str, Any], ledger: dict[str, Episode], good_agent: AgentConfig
) -> None:
    page = as_user(role_users["researcher"]).get("/diagnoses/jobs/", {"project": "acme"}).content.decode()
    offered = {e.pk for e in ledger.values() if f'name="episodes" value="{e.pk}"' in page}
    assert offered == {ledger["tight"].pk, ledger["loose"].pk}
    assert 'value="agent:ledger-diagnoser-good"' in page and 'value="rule:ledger-fixer"' in page and "data-select-all" in page
    fragment = as_user(role_users["researcher"]).get("/diagnoses/jobs/", {"project": "acme", "task": "ledger/loose"}, **HTMX)
    body = fragment.content.decode()
    assert fragment.status_code == 200 and "<html" not in body
    assert f'value="{ledger["loose"].pk}"' in body and f'value="{ledger["tight"].pk}"' not in body


def test_the_form_creates_a_model_job_with_the_chosen_fields(
    role_users: dict[str, Any], ledger: dict[str, Episode], good_agent: AgentConfig
) -> None:
    response = as_user(role_users["researcher"]).post("/diagnoses/jobs/", _job_post(ledger))
    job = DiagnosisJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/diagnoses/jobs/{job.pk}/"
    assert job.episode_ids == [ledger["tight"].pk, ledger["loose"].pk] and job.total == 2
    assert (job.agent, job.rule_anchor, job.pivotal_anchor, job.verify, job.status) == (good_agent, "", "ledger-fixer", True, "queued")
    assert job.created_by == role_users["researcher"]


def test_the_form_creates_a_rule_job_without_verification(role_users: dict[str, Any], ledger: dict[str, Episode]) -> None:
    response = as_user(role_users["owner"]).post(
        "/diagnoses/jobs/", _job_post(ledger, diagnoser="rule:ledger-fixer", pivotal_anchor="", verify="")
    )
    job = DiagnosisJob.objects.get()
    assert response.status_code == 302 and (job.agent, job.rule_anchor, job.pivotal_anchor, job.verify) == (None, "ledger-fixer", "", False)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"episodes": []}, "select at least one episode"),
        ({"episodes": ["x1"]}, "&#x27;x1&#x27; is not an episode id"),
        ({"diagnoser": "agent:nobody"}, "no agent &#x27;nobody&#x27; in project acme"),
        ({"diagnoser": "magic"}, "choose an agent or a rule"),
        ({"pivotal_anchor": "oracle-x"}, "&#x27;oracle-x&#x27; is not a policy of ledger"),
        ({"diagnoser": "", "pivotal_anchor": "", "verify": ""}, "the job would do nothing"),
        ({"episodes": [999_999]}, "no episode(s) [999999] in project acme"),
    ],
)
def test_bad_input_shows_the_error_and_creates_nothing(
    role_users: dict[str, Any], ledger: dict[str, Episode], good_agent: AgentConfig, fields: dict[str, Any], message: str
) -> None:
    response = as_user(role_users["researcher"]).post("/diagnoses/jobs/", _job_post(ledger, **fields))
    assert response.status_code == 400 and message in response.content.decode()
    assert DiagnosisJob.objects.count() == 0
    if "episodes" not in fields:  # the refused form keeps the selection
        assert f'value="{ledger["tight"].pk}" id="pick-{ledger["tight"].pk}" checked' in response.content.decode()


def test_episodes_of_another_project_are_refused(role_users: dict[str, Any], ledger: dict[str, Episode], project_b: Any) -> None:
    from lab.trajectories.services import episodes_ingest

    foreign = episodes_ingest(project=project_b, records=[play("ledger/tight", "ledger-stubborn")])[0].episode
    response = as_user(role_users["owner"]).post(
        "/diagnoses/jobs/", _job_post(ledger, episodes=[foreign.pk], diagnoser="rule:ledger-fixer")
    )
    assert response.status_code == 400 and f"no episode(s) [{foreign.pk}] in project acme" in response.content.decode()
    assert DiagnosisJob.objects.count() == 0


@pytest.mark.parametrize(("role", "status"), [("owner", 302), ("researcher", 302), ("expert", 403), ("viewer", 403)])
def test_only_owners_and_researchers_start_jobs_as_in_the_api(
    role_users: dict[str, Any], ledger: dict[str, Episode], role: str, status: int
) -> None:
    response = as_user(role_users[role]).post("/diagnoses/jobs/", _job_post(ledger, diagnoser="rule:ledger-fixer"))
    assert response.status_code == status and DiagnosisJob.objects.count() == (1 if status == 302 else 0)


def test_another_projects_user_gets_404_and_csrf_is_enforced(bob: Any, role_users: dict[str, Any], ledger: dict[str, Episode]) -> None:
    assert as_user(bob).post("/diagnoses/jobs/", _job_post(ledger, diagnoser="rule:ledger-fixer")).status_code == 404
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(role_users["owner"])
    assert strict.post("/diagnoses/jobs/", _job_post(ledger, diagnoser="rule:ledger-fixer")).status_code == 403
    assert DiagnosisJob.objects.count() == 0


# --- the job page and exports ---------------------------------------------------------------------------------------


@pytest.fixture
def finished_job(role_users: dict[str, Any], ledger: dict[str, Episode], good_agent: AgentConfig) -> DiagnosisJob:
    as_user(role_users["researcher"]).post("/diagnoses/jobs/", _job_post(ledger))
    return diagnosis_job_run(job_id=DiagnosisJob.objects.get().pk)


def test_a_queued_job_page_polls_and_a_finished_one_shows_the_before_after_table(
    role_users: dict[str, Any], ledger: dict[str, Episode], good_agent: AgentConfig
) -> None:
    client = as_user(role_users["viewer"])
    as_user(role_users["researcher"]).post("/diagnoses/jobs/", _job_post(ledger))
    job = DiagnosisJob.objects.get()
    queued = client.get(f"/diagnoses/jobs/{job.pk}/").content.decode()
    assert 'hx-trigger="every 2s"' in queued and "0/2 episodes" in queued
    job = diagnosis_job_run(job_id=job.pk)
    fragment = client.get(f"/diagnoses/jobs/{job.pk}/", **HTMX).content.decode()
    assert "<html" not in fragment and "every 2s" not in fragment and "2/2 episodes" in fragment
    # The summary's row for wrong_arguments: 2 diagnoses, both verified; retries never pass, corrections always do.
    row = fragment.split('data-category="wrong_arguments"')[1].split("</tr>")[0]
    cells = [c.split("</td>")[0] for c in row.split("<td>")[1:]]
    assert cells == ["2", "2", "0", "0", "0.0%", "100.0%", "+1.000"]
    assert "2 total · 2 accepted" in fragment and ">0 bad</span>" in fragment


def test_the_job_page_lists_diagnoses_with_their_replays(
    finished_job: DiagnosisJob, role_users: dict[str, Any], ledger: dict[str, Episode]
) -> None:
    page = as_user(role_users["viewer"]).get(f"/diagnoses/jobs/{finished_job.pk}/").content.decode()
    for diagnosis in (
        finished_job.attempts.get(episode=ledger["tight"]).diagnosis,
        finished_job.attempts.get(episode=ledger["loose"]).diagnosis,
    ):
        result = diagnosis.verification_result
        row = page.split(f'id="diagnosis-{diagnosis.pk}"')[1].split("</tr>")[0]
        assert f'href="/episodes/{diagnosis.episode_id}/?at=1#step-1"' in row and "wrong_arguments" in row and "verified" in row
        assert f"{result['corrected_episode']}</a> (corrected)" in row and f"{result['retry_episode']}</a> (retry)" in row
        assert "1.000 passed" in row and "0.000 failed" in row
    assert f"/diagnoses/jobs/{finished_job.pk}/export?view=recovery" in page
    assert as_user(role_users["viewer"]).get("/diagnoses/jobs/").content.decode().count(f'href="/diagnoses/jobs/{finished_job.pk}/"') == 1


def test_the_exports_stream_both_views_of_the_jobs_diagnoses(
    finished_job: DiagnosisJob, role_users: dict[str, Any], ledger: dict[str, Episode]
) -> None:
    client = as_user(role_users["viewer"])
    lines = b"".join(client.get(f"/diagnoses/jobs/{finished_job.pk}/export?view=diagnosis").streaming_content).decode().splitlines()
    examples = [json.loads(line) for line in lines]
    assert sorted(e["header"]["meta"]["diagnosis"]["episode"] for e in examples) == sorted([ledger["tight"].pk, ledger["loose"].pk])
    recovery = client.get(f"/diagnoses/jobs/{finished_job.pk}/export?view=recovery")
    assert recovery["Content-Disposition"] == f'attachment; filename="diagnosis-job-{finished_job.pk}-recovery.jsonl"'
    parents = sorted(
        json.loads(line)["header"]["parent"]["episode_id"] for line in b"".join(recovery.streaming_content).decode().splitlines()
    )
    assert parents == sorted([ledger["tight"].pk, ledger["loose"].pk])
    assert client.get(f"/diagnoses/jobs/{finished_job.pk}/export?view=other").status_code == 400


def test_another_projects_user_cannot_see_a_job(finished_job: DiagnosisJob, bob: Any) -> None:
    assert as_user(bob).get(f"/diagnoses/jobs/{finished_job.pk}/").status_code == 404
    assert as_user(bob).get(f"/diagnoses/jobs/{finished_job.pk}/export?view=diagnosis").status_code == 404
    assert f"/diagnoses/jobs/{finished_job.pk}/" not in as_user(bob).get("/diagnoses/jobs/").content.decode()


# --- the viewer: pivotal step and credit ----------------------------------------------------------------------------


def test_the_viewer_labels_the_pivotal_step_and_shows_credit(role_users: dict[str, Any], ledger: dict[str, Episode]) -> None:
    episode = ledger["tight"]
    episode_label_pivotal(episode=episode, anchor="ledger-fixer")
    page = as_user(role_users["viewer"]).get(f"/episodes/{episode.pk}/").content.decode()
    assert 'href="?at=1#step-1">pivotal step 1</a>' in page
    step_one = page.split('id="step-1"')[1].split("</header>")[0]
    assert "pivotal-badge" in step_one and "pivotal-badge" not in page.split('id="step-0"')[1].split("</header>")[0]
    credit = {row["index"]: row["credit"] for row in episode_step_credit(episode=episode)["credit"]}
    assert abs(sum(credit.values()) - 1.0) < 1e-9
    for index, value in credit.items():
        header = page.split(f'id="step-{index}"')[1].split("</header>")[0]
        assert f'credit-value">{value * 100:.1f}%' in header
    best = max(credit, key=lambda i: (credit[i], -i))
    assert f'href="?at={best}#step-{best}">#{best} ({credit[best] * 100:.1f}%)</a>' in page.split('id="important-steps"')[1]
    assert 'id="pivotal-form"' not in page  # a viewer may not label


@pytest.mark.parametrize(("role", "status"), [("owner", 302), ("researcher", 302), ("expert", 302), ("viewer", 403)])
def test_computing_the_pivotal_step_from_the_viewer(role_users: dict[str, Any], ledger: dict[str, Episode], role: str, status: int) -> None:
    episode = ledger["tight"]
    response = as_user(role_users[role]).post(f"/episodes/{episode.pk}/pivotal", {"anchor": "ledger-fixer"})
    episode.refresh_from_db()
    assert response.status_code == status
    if status == 302:
        assert response["Location"] == f"/episodes/{episode.pk}/?at=1#step-1"
        assert (episode.meta["pivotal"]["step"], episode.meta["pivotal"]["anchor"]) == (1, "ledger-fixer")
    else:
        assert "pivotal" not in episode.meta


def test_the_pivotal_button_is_refused_for_passed_episodes_other_projects_and_without_csrf(
    bob: Any, role_users: dict[str, Any], ledger: dict[str, Episode]
) -> None:
    owner = as_user(role_users["owner"])
    assert 'id="pivotal-form"' in owner.get(f"/episodes/{ledger['tight'].pk}/").content.decode()
    assert 'id="pivotal-form"' not in owner.get(f"/episodes/{ledger['passed'].pk}/").content.decode()
    passed = owner.post(f"/episodes/{ledger['passed'].pk}/pivotal", {"anchor": "ledger-fixer"})
    assert passed.status_code == 400 and "passed; pivotal mistakes are looked for in failed episodes" in passed.content.decode()
    unknown = owner.post(f"/episodes/{ledger['tight'].pk}/pivotal", {"anchor": "oracle-x"})
    assert unknown.status_code == 400 and "&#x27;oracle-x&#x27; is not a policy of ledger" in unknown.content.decode()
    assert as_user(bob).post(f"/episodes/{ledger['tight'].pk}/pivotal", {"anchor": "ledger-fixer"}).status_code == 404
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(role_users["owner"])
    assert strict.post(f"/episodes/{ledger['tight'].pk}/pivotal", {"anchor": "ledger-fixer"}).status_code == 403
    ledger["tight"].refresh_from_db()
    assert "pivotal" not in ledger["tight"].meta


def test_a_long_episodes_pivotal_step_is_computed_by_a_job(
    role_users: dict[str, Any], ledger: dict[str, Episode], monkeypatch: Any
) -> None:
    from lab.console.views import viewer_analysis

    monkeypatch.setattr(viewer_analysis, "PIVOTAL_INLINE_STEPS", 1)
    episode = ledger["tight"]
    response = as_user(role_users["expert"]).post(f"/episodes/{episode.pk}/pivotal", {"anchor": "ledger-fixer"})
    job = DiagnosisJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/diagnoses/jobs/{job.pk}/"
    assert (job.episode_ids, job.agent, job.rule_anchor, job.pivotal_anchor, job.verify) == ([episode.pk], None, "", "ledger-fixer", False)
    diagnosis_job_run(job_id=job.pk)
    episode.refresh_from_db()
    assert episode.meta["pivotal"]["step"] == 1
