"""Shared context (lab.trajectories.shared): a header value many episodes of an upload hold is stored once per project
and content, every reader sees the header as it was uploaded, and no project reaches another's rows."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from lab.ingest import import_payload
from lab.trajectories import imports
from lab.trajectories.models import Episode, SharedContext
from lab.trajectories.services import episode_to_record
from lab.trajectories.shared import episode_header, episode_headers, shared_contexts_prune
from tests.lab.ingest.conftest import FIXTURES
from tests.lab.ingest.test_ingest_budget import tau2_results

pytestmark = pytest.mark.django_db

# Written by the code before shared context was stored once (commit 1fcc4da): what the exports must still give.
GOLDEN = json.loads((Path(__file__).parent / "fixtures" / "shared_context_exports.json").read_text())
FILES = ("tau2_airline_results.json", "inspect_ctf_log.json", "inspect_ctf_log.eval", "native_storebench.json")


@pytest.fixture
def bob_api(api: Any, bob: Any, project_b: Any) -> Any:
    return api(bob, project_b)


def _upload(project: Any, user: Any, data: bytes, name: str = "results.json") -> imports.StoredUpload:
    return imports.upload_ingest(project=project, user=user, data=data, filename=name, fmt="auto")


def _lines(response: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in b"".join(response.streaming_content).splitlines()]


def _exports(client: Any, outcomes: list[Any]) -> list[dict[str, Any]]:
    exported = []
    for outcome in outcomes:
        pk = outcome.episode.pk
        openai = client.get(f"/api/v1/episodes/{pk}/export?format=openai")
        exported.append(
            {
                "content_hash": outcome.episode.content_hash,
                "native": client.get(f"/api/v1/episodes/{pk}/export?format=native").json(),
                "openai": openai.json() if openai.status_code == 200 else openai.status_code,
            }
        )
    return exported


def test_a_policy_shared_by_300_simulations_is_stored_once(project_a: Any, alice: Any) -> None:
    # The case: a 290 KB upload grew the database by 200 MB, its policy copied into every episode.
    data = json.dumps(tau2_results(100_000, 300)).encode()
    stored = _upload(project_a, alice, data)
    assert len(stored.outcomes) == 300
    (context,) = SharedContext.objects.filter(project=project_a)
    assert context.size > 100_000 and context.content["environment_info"]["policy"] == "p" * 100_000
    headers = Episode.objects.filter(project=project_a).values_list("meta", flat=True)
    per_episode = [len(json.dumps(meta)) for meta in headers]
    assert max(per_episode) < 1_500  # a reference, not a 100 KB copy
    assert sum(per_episode) + context.size < 2 * 100_000 + len(data)  # one copy in all, where there were 300 (30 MB)
    # and each episode still reads its full header
    episode = stored.outcomes[0].episode
    assert episode_header(episode)["meta"]["run_info"]["environment_info"]["policy"] == "p" * 100_000
    assert episode_to_record(episode)["header"] == import_payload(data).records[0]["header"]


def test_uploading_the_same_run_again_stores_nothing_new(project_a: Any, alice: Any) -> None:
    data = json.dumps(tau2_results(5_000, 4)).encode()
    _upload(project_a, alice, data)
    assert not any(outcome.created for outcome in _upload(project_a, alice, data).outcomes)
    later = _upload(project_a, alice, json.dumps({**tau2_results(5_000, 6), "timestamp": "u"}).encode())
    assert all(outcome.created for outcome in later.outcomes)  # other episodes (their timestamp differs), the same run info
    assert SharedContext.objects.filter(project=project_a).count() == 1


@pytest.mark.parametrize("name", FILES)
def test_exports_equal_those_before_shared_context(alice_api: Any, project_a: Any, alice: Any, name: str) -> None:
    stored = _upload(project_a, alice, (FIXTURES / name).read_bytes(), name)
    assert _exports(alice_api, stored.outcomes) == GOLDEN[name]
    shared = [episode.meta.get("shared") for episode in Episode.objects.filter(project=project_a)]
    assert all(shared) and SharedContext.objects.filter(project=project_a).exists()  # the path under test was taken


def test_dataset_exports_equal_those_before_shared_context(alice_api: Any, project_a: Any, alice: Any) -> None:
    for name in FILES:
        _upload(project_a, alice, (FIXTURES / name).read_bytes(), name)
    for fmt in ("native", "openai"):
        lines = _lines(alice_api.get(f"/api/v1/datasets/export?format={fmt}"))
        for line in lines:
            line.get("metadata", {}).pop("episode_id", None)
        assert sorted(lines, key=lambda line: json.dumps(line, sort_keys=True)) == GOLDEN[f"dataset:{fmt}"]


def test_a_page_of_headers_reads_its_shared_context_in_one_query(project_a: Any, alice: Any, django_assert_num_queries: Any) -> None:
    _upload(project_a, alice, (FIXTURES / "tau2_airline_results.json").read_bytes())
    _upload(project_a, alice, (FIXTURES / "inspect_ctf_log.json").read_bytes())
    episodes = list(Episode.objects.filter(project=project_a))
    assert len(episodes) == 4 and SharedContext.objects.count() >= 4
    with django_assert_num_queries(1):
        headers = episode_headers(episodes)
    assert all(header["harness"] for header in headers)
    for episode in episodes:
        episode.meta = {"header": {"env": "x"}}
    with django_assert_num_queries(0):
        episode_headers(episodes)  # nothing shared: nothing to read


def test_the_same_content_in_two_projects_is_two_rows_and_each_reads_its_own(
    alice_api: Any, bob_api: Any, project_a: Any, project_b: Any, alice: Any, bob: Any
) -> None:
    data = (FIXTURES / "tau2_airline_results.json").read_bytes()
    in_a, in_b = _upload(project_a, alice, data), _upload(project_b, bob, data)
    digests_a = set(SharedContext.objects.filter(project=project_a).values_list("sha256", flat=True))
    assert digests_a == set(SharedContext.objects.filter(project=project_b).values_list("sha256", flat=True))
    Episode.objects.filter(project=project_a).delete()  # a project's tasks keep it while it has episodes
    project_a.delete()  # its rows go with it; B's episodes still read theirs
    assert not SharedContext.objects.filter(sha256__in=digests_a).exclude(project=project_b).exists()
    assert _exports(bob_api, in_b.outcomes) == GOLDEN["tau2_airline_results.json"]
    assert in_a.outcomes[0].episode.content_hash == in_b.outcomes[0].episode.content_hash


def test_a_reference_to_another_projects_context_is_never_read(project_a: Any, project_b: Any, alice: Any, bob: Any) -> None:
    _upload(project_a, alice, (FIXTURES / "tau2_airline_results.json").read_bytes())
    theirs = SharedContext.objects.filter(project=project_a).first()
    assert theirs is not None
    mine = _upload(project_b, bob, (FIXTURES / "openai_chat.jsonl").read_bytes(), "chat.jsonl").outcomes[0].episode
    # A digest in meta can only come from the server; were one of A's ever put there, B's read fails loudly, never leaks.
    mine.meta = {**mine.meta, "shared": {"meta.run_info": theirs.sha256}}
    with pytest.raises(AssertionError, match="is not among"):
        episode_header(mine)


def test_an_upload_that_names_a_digest_in_its_header_gets_its_header_back(
    alice_api: Any, bob_api: Any, project_a: Any, project_b: Any, alice: Any, bob: Any
) -> None:
    _upload(project_a, alice, (FIXTURES / "tau2_airline_results.json").read_bytes())
    digest = SharedContext.objects.filter(project=project_a).values_list("sha256", flat=True).first()
    record = json.loads((FIXTURES / "native_storebench.json").read_text())
    record = record[0] if isinstance(record, list) else record
    record["header"]["meta"] = {"run_info": None, "shared": {"meta.run_info": digest}}
    response = bob_api.post("/api/v1/episodes/", data=json.dumps(record), content_type="application/json")
    assert response.status_code == 201, response.json()
    pk = response.json()["episodes"][0]["id"]
    exported = bob_api.get(f"/api/v1/episodes/{pk}/export?format=native").json()
    assert exported["header"]["meta"] == {"run_info": None, "shared": {"meta.run_info": digest}}
    assert alice_api.get(f"/api/v1/episodes/{pk}/export?format=native").status_code == 404


def test_deleting_an_episode_keeps_the_context_others_use_and_prune_removes_the_unused(alice_api: Any, project_a: Any, alice: Any) -> None:
    stored = _upload(project_a, alice, (FIXTURES / "tau2_airline_results.json").read_bytes())
    first, second = (outcome.episode for outcome in stored.outcomes)
    before = set(SharedContext.objects.values_list("sha256", flat=True))
    only_first = set(first.meta["shared"].values()) - set(second.meta["shared"].values())
    assert only_first and set(second.meta["shared"].values()) < before
    first.delete()
    assert shared_contexts_prune(project=project_a) == len(only_first)
    assert set(SharedContext.objects.values_list("sha256", flat=True)) == before - only_first
    assert _exports(alice_api, stored.outcomes[1:]) == GOLDEN["tau2_airline_results.json"][1:]
    second.delete()
    assert shared_contexts_prune(project=project_a) == len(before - only_first)
    assert not SharedContext.objects.exists()
    again = _upload(project_a, alice, (FIXTURES / "tau2_airline_results.json").read_bytes())  # stored anew, whole
    assert _exports(alice_api, again.outcomes) == GOLDEN["tau2_airline_results.json"]


def test_the_data_migration_turns_stored_copies_into_references_once_and_back(project_a: Any, project_b: Any, alice: Any, bob: Any) -> None:
    from django.apps import apps

    migration = importlib.import_module("lab.trajectories.migrations.0008_episode_headers_share_context")
    for project, user in ((project_a, alice), (project_b, bob)):
        for name in FILES:
            _upload(project, user, (FIXTURES / name).read_bytes(), name)
    episodes = list(Episode.objects.order_by("pk"))
    headers = episode_headers(episodes)
    made = {(episode.project_id, digest) for episode in episodes[1:] for digest in episode.meta["shared"].values()}
    assert made < set(SharedContext.objects.values_list("project_id", "sha256"))  # not those of episode 0 only
    for episode, header in zip(episodes, headers, strict=True):  # as episodes were stored before: a copy each
        Episode.objects.filter(pk=episode.pk).update(meta={**{k: v for k, v in episode.meta.items() if k != "shared"}, "header": header})
    running = Episode.objects.filter(pk=episodes[0].pk)
    running.update(status="running")
    SharedContext.objects.all().delete()
    old = {episode.pk: episode.meta for episode in Episode.objects.all()}

    migration.share(apps, None)
    converted = {episode.pk: episode.meta for episode in Episode.objects.all()}
    assert converted[episodes[0].pk] == old[episodes[0].pk]  # a running episode's header may still change: left as it is
    assert all("shared" in meta for pk, meta in converted.items() if pk != episodes[0].pk)
    assert episode_headers(list(Episode.objects.order_by("pk"))) == headers
    assert set(SharedContext.objects.values_list("project_id", "sha256")) == made  # per project, as uploads store them

    migration.share(apps, None)  # again: nothing left to convert
    assert {episode.pk: episode.meta for episode in Episode.objects.all()} == converted
    assert SharedContext.objects.count() == len(made)

    migration.expand(apps, None)
    assert {episode.pk: episode.meta for episode in Episode.objects.all()} == old


@pytest.mark.postgres
def test_native_records_stored_by_the_streaming_path_share_context_too(
    project_a: Any, project_b: Any, alice: Any, bob: Any, monkeypatch: Any
) -> None:
    stored = _upload(project_a, alice, json.dumps(tau2_results(20_000, 50)).encode())
    records = [episode_to_record(outcome.episode) for outcome in stored.outcomes]
    monkeypatch.setattr(imports, "parse_upload", None)  # the general path would fail here: the streaming one must not call it
    again = imports.upload_ingest(project=project_b, user=bob, data=json.dumps(records).encode(), filename="body.json", fmt="native")
    assert SharedContext.objects.filter(project=project_b).count() == SharedContext.objects.filter(project=project_a).count() == 1
    assert [episode_to_record(outcome.episode) for outcome in again.outcomes] == records


def test_episodes_deleted_in_the_admin_take_the_context_only_they_named(project_a: Any, alice: Any) -> None:
    from django.contrib.admin.sites import site

    stored = _upload(project_a, alice, (FIXTURES / "tau2_airline_results.json").read_bytes())
    first, second = (outcome.episode for outcome in stored.outcomes)
    site._registry[Episode].delete_model(None, first)
    assert set(SharedContext.objects.values_list("sha256", flat=True)) == set(second.meta["shared"].values())
    site._registry[Episode].delete_queryset(None, Episode.objects.filter(pk=second.pk))
    assert not SharedContext.objects.exists()


def test_a_dataset_export_reads_shared_context_once_per_page_of_200(alice_api: Any, project_a: Any, alice: Any) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    _upload(project_a, alice, json.dumps(tau2_results(2_000, 250)).encode())
    with CaptureQueriesContext(connection) as queries:
        lines = _lines(alice_api.get("/api/v1/datasets/export?format=native"))
    assert len(lines) == 250 and all(line["header"]["meta"]["run_info"]["environment_info"]["policy"] == "p" * 2_000 for line in lines)
    assert sum("trajectories_sharedcontext" in query["sql"] for query in queries.captured_queries) == 2


def test_the_viewer_and_the_episode_api_read_uploaded_episodes_whole(client: Any, alice_api: Any, project_a: Any, alice: Any) -> None:
    from lab.trajectories.selectors import episode_tools

    client.force_login(alice)
    for name in FILES:
        for outcome in _upload(project_a, alice, (FIXTURES / name).read_bytes(), name).outcomes:
            assert client.get(f"/episodes/{outcome.episode.pk}/").status_code == 200
            assert alice_api.get(f"/api/v1/episodes/{outcome.episode.pk}/").status_code == 200
    native = Episode.objects.get(project=project_a, meta__header__meta__runner__isnull=False)
    assert native.meta["header"]["tools"] is None and sorted(episode_tools(native)) == ["check_inventory", "place_order"]
