"""Provenance tiers: set by the server from how an episode arrived, never by what its payload says."""

from __future__ import annotations

import json
from importlib import import_module
from io import StringIO
from typing import Any

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from rest_framework.test import APIClient

from lab.projects.models import ApiKey
from lab.projects.services import api_key_issue
from lab.rollouts.services import anchor_agent_resolve
from lab.trajectories.imports import import_job_run
from lab.trajectories.models import AgentConfig, AgentKind, Episode, Provenance
from lab.trajectories.services import episode_start, episodes_ingest, task_resolve

pytestmark = pytest.mark.django_db


def _post(client: Any, payload: Any) -> Any:
    return client.post("/api/v1/episodes/", data=json.dumps(payload), content_type="application/json")


def _client(raw_key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw_key}")
    return client


def test_the_servers_own_recorders_store_recorded_episodes(project_a: Any, alice: Any) -> None:
    task = task_resolve(project=project_a, env="toyenv", key="toy-task")
    for source in ("rollout", "human", "branch"):
        episode = episode_start(project=project_a, task=task, source=source, seed=1, user=alice)
        assert (Episode.objects.get(pk=episode.pk).provenance, episode.source) == ("recorded", source)


def test_an_upload_claiming_a_server_source_is_stored_as_an_upload_with_the_claim(alice_api: Any, record_factory: Any) -> None:
    for claimed in ("rollout", "human", "branch"):
        response = _post(alice_api, record_factory(steps=2, seed=hash(claimed) % 1000, source=claimed))
        assert response.status_code == 201
        body = response.json()["episodes"][0]
        assert body["provenance"] == "upload"
        episode = Episode.objects.get(pk=body["id"])
        assert (episode.source, episode.provenance, episode.meta["claimed_source"]) == ("upload", "upload", claimed)
        shown = alice_api.get(f"/api/v1/episodes/{episode.pk}/").json()
        assert (shown["source"], shown["provenance"], shown["claimed_source"]) == ("upload", "upload", claimed)


def test_an_anchor_source_is_refused_by_the_schema_with_its_path(alice_api: Any, record_factory: Any) -> None:
    response = _post(alice_api, record_factory(steps=1, source="anchor"))
    assert response.status_code == 400
    assert response.json()["error"]["path"] == "header.source" and not Episode.objects.exists()


def test_an_upload_naming_an_anchor_or_a_human_is_not_attached_to_them(alice_api: Any, project_a: Any, record_factory: Any) -> None:
    anchor = anchor_agent_resolve(project=project_a, name="smart-triage")
    human = AgentConfig.objects.create(project=project_a, name="human:erin", kind=AgentKind.HUMAN)
    uploads = [
        record_factory(steps=1, seed=1, policy={"name": "smart-triage"}),
        record_factory(steps=1, seed=2, policy={"name": "human:erin"}),
        record_factory(steps=1, seed=3, policy={"name": "new-anchor", "kind": "scripted"}),
        record_factory(steps=1, seed=4, policy={"name": "someone", "kind": "human"}),
    ]
    ids = [_post(alice_api, record).json()["episodes"][0]["id"] for record in uploads]
    stored = list(Episode.objects.filter(pk__in=ids).order_by("seed"))
    assert [e.agent_id for e in stored] == [None] * 4
    assert [e.meta["claimed_agent"] for e in stored] == ["smart-triage", "human:erin", "new-anchor", "someone"]
    assert not anchor.episodes.exists() and not human.episodes.exists()
    assert not AgentConfig.objects.filter(name__in=["new-anchor", "someone"]).exists()  # no scripted or human config made


def test_an_uploaded_policy_becomes_an_external_agent_whatever_kind_it_claims(alice_api: Any, record_factory: Any) -> None:
    episode_id = _post(alice_api, record_factory(steps=1, policy={"name": "my-gpt", "kind": "openai"})).json()["episodes"][0]["id"]
    episode = Episode.objects.select_related("agent").get(pk=episode_id)
    assert (episode.agent.name, episode.agent.kind) == ("my-gpt", "external")
    assert "claimed_agent" not in episode.meta


def test_only_a_key_the_operator_flagged_stores_external_episodes(alice: Any, project_a: Any, record_factory: Any) -> None:
    _, plain = api_key_issue(project=project_a, user=alice, name="laptop")
    _, flagged = api_key_issue(project=project_a, user=alice, name="harness", external=True)
    by_plain = _post(_client(plain), record_factory(steps=1, seed=1)).json()["episodes"][0]
    by_flagged = _post(_client(flagged), record_factory(steps=1, seed=2, source="rollout")).json()["episodes"][0]
    assert (by_plain["provenance"], by_flagged["provenance"]) == ("upload", "external")
    external = Episode.objects.get(pk=by_flagged["id"])
    assert (external.provenance, external.source, external.meta["claimed_source"]) == ("external", "upload", "rollout")


def test_a_file_import_through_a_flagged_key_is_external(alice: Any, project_a: Any, record_factory: Any) -> None:
    _, flagged = api_key_issue(project=project_a, user=alice, name="trainer", external=True)
    upload = SimpleUploadedFile("run.json", json.dumps([record_factory(steps=2, seed=5)]).encode(), content_type="application/json")
    response = _client(flagged).post("/api/v1/episodes/import/", {"file": upload}, format="multipart")
    assert response.status_code == 202 and response.json()["provenance"] == "external"
    job = import_job_run(job_id=response.json()["id"])  # the Celery job's body, run here
    assert job.status == "finished" and Episode.objects.get(pk=job.episode_ids[0]).provenance == "external"


def test_the_create_api_key_command_flags_external_keys_only_when_asked(alice: Any, project_a: Any) -> None:
    call_command("create_api_key", project_a.slug, alice.username, "--name", "ci", stdout=StringIO())
    call_command("create_api_key", project_a.slug, alice.username, "--name", "harness", "--external", stdout=StringIO())
    assert dict(ApiKey.objects.values_list("name", "external")) == {"ci": False, "harness": True}


def test_the_episode_list_filters_by_provenance(alice_api: Any, project_a: Any, alice: Any, record_factory: Any) -> None:
    uploaded = _post(alice_api, record_factory(steps=1, seed=1)).json()["episodes"][0]["id"]
    [external] = episodes_ingest(project=project_a, records=[record_factory(steps=1, seed=2)], provenance=Provenance.EXTERNAL)
    recorded = episode_start(
        project=project_a, task=task_resolve(project=project_a, env="toyenv", key="toy-task"), source="rollout", seed=3
    )

    def ids(query: str) -> set[int]:
        response = alice_api.get(f"/api/v1/episodes/?provenance={query}")
        assert response.status_code == 200, response.json()
        return {row["id"] for row in response.json()["results"]}

    assert ids("recorded") == {recorded.pk}
    assert ids("upload") == {uploaded}
    assert ids("external,upload") == {uploaded, external.episode.pk}
    refused = alice_api.get("/api/v1/episodes/?provenance=rollout")
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid_filter" and "'rollout'" in refused.json()["error"]["message"]


def test_the_migration_classifies_existing_rows_from_how_they_arrived(project_a: Any, alice: Any, record_factory: Any) -> None:
    task = task_resolve(project=project_a, env="toyenv", key="toy-task")
    rollout = episode_start(project=project_a, task=task, source="rollout", seed=1)
    branch = episode_start(project=project_a, task=task, source="branch", seed=1, parent=rollout, branch_step=0)
    anchor = anchor_agent_resolve(project=project_a, name="smart-triage")
    [old_upload] = episodes_ingest(project=project_a, records=[record_factory(steps=1, seed=2)])
    # Rows as the old code stored them: every field from the header, and no tier yet.
    Episode.objects.filter(pk=old_upload.episode.pk).update(source="rollout", parent=rollout, branch_step=0, agent=anchor)
    Episode.objects.update(provenance="upload")
    import_module("lab.trajectories.migrations.0004_episode_provenance").classify(apps, None)
    assert dict(Episode.objects.values_list("pk", "provenance")) == {
        rollout.pk: "recorded",
        branch.pk: "recorded",
        old_upload.episode.pk: "upload",
    }
    upload = Episode.objects.get(pk=old_upload.episode.pk)
    assert (upload.source, upload.parent_id, upload.agent_id) == ("upload", None, None)
    assert upload.meta["claimed_source"] == "rollout" and upload.meta["claimed_agent"] == "smart-triage"
    assert upload.meta["claimed_parent"] == {"episode_id": rollout.pk, "branch_step": 0}
    assert Episode.objects.get(pk=branch.pk).parent_id == rollout.pk  # the server's own branch keeps its parent


def test_the_dataset_export_filters_by_provenance_and_names_it(alice_api: Any, project_a: Any, record_factory: Any) -> None:
    _post(alice_api, record_factory(steps=1, seed=1))
    [recorded] = episodes_ingest(project=project_a, records=[record_factory(steps=1, seed=2)], provenance=Provenance.RECORDED)
    everything = b"".join(alice_api.get("/api/v1/datasets/export").streaming_content).splitlines()
    assert sorted(json.loads(line)["metadata"]["provenance"] for line in everything) == ["recorded", "upload"]
    only = b"".join(alice_api.get("/api/v1/datasets/export?provenance=recorded").streaming_content).splitlines()
    assert [json.loads(line)["metadata"]["episode_id"] for line in only] == [recorded.episode.pk]


def test_an_upload_cannot_take_an_anchors_or_a_players_name_before_the_server_uses_it(
    alice_api: Any, project_a: Any, record_factory: Any
) -> None:
    for seed, name in enumerate(["smart-triage", "human:zoe"]):
        episode_id = _post(alice_api, record_factory(steps=1, seed=seed, policy={"name": name})).json()["episodes"][0]["id"]
        assert Episode.objects.get(pk=episode_id).meta["claimed_agent"] == name
    assert not AgentConfig.objects.filter(name__in=["smart-triage", "human:zoe"]).exists()
    assert anchor_agent_resolve(project=project_a, name="smart-triage").kind == "scripted"  # still the server's to make
