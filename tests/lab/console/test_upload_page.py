"""The console's upload page (issue 44): the API's import service, budgets, messages and write roles, from a form."""

from __future__ import annotations

import html
import io
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from lab.trajectories import imports
from lab.trajectories.models import Episode, ImportJob

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "ingest" / "fixtures"
CHAT = (FIXTURES / "openai_chat.jsonl").read_bytes()


def _file(data: bytes, name: str = "chat.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def _api(client: Any, key: str, data: bytes, name: str, fmt: str = "auto") -> Any:
    return client.post(f"/api/v1/episodes/import/?format={fmt}", {"file": _file(data, name)}, headers={"Authorization": f"Bearer {key}"})


def _refusal(response: Any) -> str:
    return html.unescape(
        response.content.decode().split('id="upload-error"')[1].split('<p class="error"')[1].split(">", 1)[1].split("</p>")[0]
    )


def test_the_page_is_in_the_navigation_and_offers_the_form_to_writers_only(login: Any, role_users: dict[str, Any]) -> None:
    owner = login(role_users["owner"]).get("/").content.decode()
    assert '<a href="/uploads/">Upload</a>' in owner
    page = login(role_users["researcher"]).get("/uploads/").content.decode()
    assert 'id="upload-form"' in page and 'enctype="multipart/form-data"' in page and 'data-upload="upload-result"' in page
    assert all(f">{fmt}</option>" in page for fmt in imports.FORMATS)
    viewer = login(role_users["viewer"]).get("/uploads/").content.decode()
    assert 'id="upload-form"' not in viewer and 'id="upload-refused"' in viewer


def test_a_viewer_may_not_upload_and_is_told_as_the_api_tells_them(
    client: Any, login: Any, role_users: dict[str, Any], key_for: Any, project_a: Any
) -> None:
    api = _api(client, key_for(role_users["viewer"], project_a), CHAT, "chat.jsonl")
    response = login(role_users["viewer"]).post("/uploads/new", {"project": "acme", "file": _file(CHAT)})
    assert (api.status_code, response.status_code) == (403, 403)
    assert api.json()["error"]["message"] == "A viewer may not upload episodes; ask a project owner for a higher role."
    assert html.escape(api.json()["error"]["message"], quote=True).replace("&#x27;", "&#x27;") in response.content.decode()
    assert not ImportJob.objects.exists()


def test_another_projects_slug_is_not_found(login: Any, alice: Any, project_b: Any) -> None:
    response = login(alice).post("/uploads/new", {"project": "bravo", "file": _file(CHAT)})
    assert response.status_code == 404 and "No project &#x27;bravo&#x27; that you can see." in response.content.decode()


def test_a_posted_file_becomes_an_import_job_whose_page_links_the_episodes(login: Any, alice: Any, project_a: Any) -> None:
    client = login(alice)
    response = client.post("/uploads/new", {"project": "acme", "format": "auto", "file": _file(CHAT)})
    job = ImportJob.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/uploads/{job.pk}/"
    assert (job.project, job.created_by, job.format, job.provenance, job.filename) == (project_a, alice, "auto", "upload", "chat.jsonl")
    queued = client.get(f"/uploads/{job.pk}/").content.decode()
    assert 'hx-trigger="every 1s"' in queued and 'data-status="queued"' in queued
    imports.import_job_run(job_id=job.pk)
    page = client.get(f"/uploads/{job.pk}/").content.decode()
    episodes = list(Episode.objects.filter(project=project_a).order_by("pk"))
    assert len(episodes) == 2 and 'hx-trigger="every 1s"' not in page
    assert '<span class="tag" id="import-state">imported</span>' in page and "2 new episodes, 0 already stored · format openai" in page
    assert all(f'<a href="/episodes/{e.pk}/">Episode {e.pk}</a>' in page for e in episodes)
    assert f'<a href="/uploads/{job.pk}/">#{job.pk}</a>' in client.get("/uploads/").content.decode()


def test_an_htmx_post_answers_the_jobs_status_fragment(login: Any, alice: Any) -> None:
    response = login(alice).post("/uploads/new", {"file": _file(CHAT)}, headers={"HX-Request": "true"})
    job = ImportJob.objects.get()
    text = response.content.decode()
    assert response.status_code == 202 and text.startswith('<div id="upload-result">') and "<html" not in text
    assert f'hx-get="/uploads/{job.pk}/"' in text


def test_a_bad_record_is_refused_with_the_apis_message_naming_the_line_and_field(
    client: Any, login: Any, alice: Any, key_for: Any, project_a: Any
) -> None:
    lines = CHAT.decode().splitlines()
    broken = json.loads(lines[1])
    broken["messages"][0]["role"] = "wizard"
    data = "\n".join([lines[0], json.dumps(broken)]).encode()
    api = _api(client, key_for(alice, project_a), data, "chat.jsonl")
    response = login(alice).post("/uploads/new", {"project": "acme", "file": _file(data)})
    assert (api.status_code, response.status_code) == (400, 400)
    message = api.json()["error"]["message"]
    assert message.startswith("record 1 in chat.jsonl, field messages[0].role: unknown role 'wizard'") and _refusal(response) == message
    assert 'data-code="invalid_upload"' in response.content.decode() and 'id="upload-form"' in response.content.decode()
    assert not ImportJob.objects.exists()


def test_the_byte_budget_answers_413_as_the_api_does(
    client: Any, login: Any, alice: Any, key_for: Any, project_a: Any, settings: Any
) -> None:
    settings.PRACTICUM_MAX_UPLOAD_BYTES = 1000
    data = CHAT + b"\n" * 2000
    api = _api(client, key_for(alice, project_a), data, "chat.jsonl")
    response = login(alice).post("/uploads/new", {"project": "acme", "file": _file(data)}, headers={"HX-Request": "true"})
    assert (api.status_code, response.status_code) == (413, 413)
    assert api.json()["error"]["message"].startswith("the upload is ") and api.json()["error"]["message"].endswith("; the limit is 1000")
    assert _refusal(response).startswith("the upload is ") and _refusal(response).endswith("; the limit is 1000")


def test_the_expansion_ratio_budget_answers_413_with_the_importers_message(
    client: Any, login: Any, alice: Any, key_for: Any, project_a: Any, settings: Any
) -> None:
    settings.PRACTICUM_MAX_EXPANSION_RATIO = 2
    settings.PRACTICUM_EXPANSION_FLOOR_BYTES = 0
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("chat.jsonl", CHAT * 50)
    data = buffer.getvalue()
    api = _api(client, key_for(alice, project_a), data, "runs.zip")
    response = login(alice).post("/uploads/new", {"project": "acme", "file": _file(data, "runs.zip")})
    assert (api.status_code, response.status_code) == (413, 413)
    assert "expansion ratio limit" in api.json()["error"]["message"] and _refusal(response) == api.json()["error"]["message"]


def test_no_file_is_a_field_message_not_an_error_page(login: Any, alice: Any) -> None:
    response = login(alice).post("/uploads/new", {"project": "acme"})
    assert response.status_code == 400 and "choose a file to upload (or drag one onto the page)" in response.content.decode()
