"""Native uploads stored by the streaming path (PostgreSQL) equal what the general path stores.

lab.trajectories.imports.upload_ingest takes native records on PostgreSQL through
services.episodes_ingest_native: steps COPYed while records are read, episodes after, repeats dropped.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.ingest import Redactor, read_native
from lab.trajectories import imports
from lab.trajectories.models import Episode, Step
from lab.trajectories.services import episode_to_record, episodes_ingest_native

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def _general_path(monkeypatch: Any) -> None:
    monkeypatch.setattr(imports, "_native_upload_ingest", lambda **kwargs: None)


def _upload(project: Any, user: Any, records: list[dict[str, Any]]) -> imports.StoredUpload:
    return imports.upload_ingest(project=project, user=user, data=json.dumps(records).encode(), filename="body.json", fmt="native")


def _stored(outcome: Any) -> dict[str, Any]:
    record = episode_to_record(outcome.episode)
    return {"record": record, "hash": outcome.episode.content_hash, "steps": outcome.episode.step_count, "created": outcome.created}


def test_the_streaming_path_stores_what_the_general_path_stores(
    project_a: Any, project_b: Any, alice: Any, bob: Any, record_factory: Any, monkeypatch: Any
) -> None:
    records = [record_factory(steps=4, seed=s, score={"composite": 0.5, "passed": True, "components": {}}) for s in range(3)]
    records[1]["steps"][2]["meta"] = {"note": "kept"}
    records[2]["steps"][0]["timestamp"] = "2026-01-01T00:00:00Z"
    records[2]["steps"][1]["reward"] = 1e22  # msgspec writes "1e22", json.dumps "1e+22": the hash falls back
    upload = [*records, records[0]]  # the first record again: stored once
    with monkeypatch.context() as patch:
        patch.setattr(imports, "parse_upload", None)  # the general path would fail here: the streaming one must not call it
        fast = _upload(project_a, alice, upload)
    _general_path(monkeypatch)
    general = _upload(project_b, bob, upload)
    assert [_stored(o) for o in fast.outcomes] == [_stored(o) for o in general.outcomes]
    assert fast.report == general.report
    assert [o.created for o in fast.outcomes] == [True, True, True, False]
    assert fast.outcomes[3].episode.pk == fast.outcomes[0].episode.pk
    assert Step.objects.filter(episode__project=project_a).count() == 12


def test_content_stored_before_is_found_and_its_new_steps_dropped(
    project_a: Any, alice: Any, record_factory: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(imports, "parse_upload", None)
    first = _upload(project_a, alice, [record_factory(steps=3, seed=1)])
    again = _upload(project_a, alice, [record_factory(steps=3, seed=1), record_factory(steps=2, seed=2)])
    assert [o.created for o in again.outcomes] == [False, True]
    assert again.outcomes[0].episode.pk == first.outcomes[0].episode.pk
    assert Episode.objects.filter(project=project_a).count() == 2
    assert Step.objects.filter(episode__project=project_a).count() == 5


def test_an_upload_naming_a_parent_is_stored_unlinked_with_the_claim_kept(
    project_a: Any, alice: Any, record_factory: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(imports, "parse_upload", None)  # the streaming path answers, or this fails
    parent = _upload(project_a, alice, [record_factory(steps=3, seed=1)]).outcomes[0].episode
    child = record_factory(steps=2, seed=2, source="branch", parent={"episode_id": parent.pk, "branch_step": 1})
    [outcome] = _upload(project_a, alice, [child]).outcomes
    stored = Episode.objects.get(pk=outcome.episode.pk)
    assert (stored.parent_id, stored.branch_step, stored.source, stored.provenance) == (None, None, "upload", "upload")
    assert stored.meta["claimed_parent"] == {"episode_id": parent.pk, "branch_step": 1} and stored.meta["claimed_source"] == "branch"
    [unknown] = _upload(project_a, alice, [record_factory(steps=1, seed=4, parent={"episode_id": 10**9})]).outcomes
    assert unknown.created and unknown.episode.parent_id is None  # a claim is not looked up, so it cannot probe other projects


def _native(records: list[dict[str, Any]]) -> Any:
    found = read_native(json.dumps(records).encode(), filename="body.json", redactor=Redactor(), max_records=10)
    assert found is not None
    return found


def test_a_recorded_native_ingest_links_its_parent_and_refuses_a_missing_one(project_a: Any, alice: Any, record_factory: Any) -> None:
    from lab.errors import DomainError
    from lab.trajectories.models import Provenance

    parent = _upload(project_a, alice, [record_factory(steps=3, seed=1)]).outcomes[0].episode
    child = record_factory(steps=2, seed=2, source="branch", parent={"episode_id": parent.pk, "branch_step": 1})
    [outcome] = episodes_ingest_native(project=project_a, records=_native([child]), user=alice, provenance=Provenance.RECORDED) or []
    assert (outcome.episode.parent_id, outcome.episode.branch_step, outcome.episode.source) == (parent.pk, 1, "branch")
    assert Episode.objects.get(pk=outcome.episode.pk).provenance == "recorded"
    with pytest.raises(DomainError) as raised:
        bad = [record_factory(steps=1, seed=3), record_factory(steps=1, seed=4, parent={"episode_id": 10**9})]
        episodes_ingest_native(project=project_a, records=_native(bad), user=alice, provenance=Provenance.RECORDED)
    assert "record 1: header.parent.episode_id" in str(raised.value)
    assert Episode.objects.filter(project=project_a).count() == 2  # nothing of the refused ingest stayed


def test_the_streaming_path_keeps_uploads_out_of_server_tiers_and_agents(
    project_a: Any, alice: Any, record_factory: Any, monkeypatch: Any
) -> None:
    from lab.rollouts.services import anchor_agent_resolve

    anchor = anchor_agent_resolve(project=project_a, name="smart-triage")
    monkeypatch.setattr(imports, "parse_upload", None)
    claims = [
        record_factory(steps=2, seed=1, source="rollout", policy={"name": "smart-triage"}),
        record_factory(steps=2, seed=2, source="human", policy={"name": "erin", "kind": "human"}),
        record_factory(steps=2, seed=3, policy={"name": "my-harness", "kind": "scripted"}),
    ]
    stored = [Episode.objects.select_related("agent").get(pk=o.episode.pk) for o in _upload(project_a, alice, claims).outcomes]
    assert [(e.source, e.provenance, e.agent_id) for e in stored] == [("upload", "upload", None)] * 3
    assert [e.meta.get("claimed_source") for e in stored] == ["rollout", "human", None]
    assert [e.meta.get("claimed_agent") for e in stored] == ["smart-triage", "erin", "my-harness"]
    assert not anchor.episodes.exists()
    external = imports.upload_ingest(
        project=project_a,
        user=alice,
        data=json.dumps([record_factory(steps=2, seed=9)]).encode(),
        filename="body.json",
        fmt="native",
        provenance="external",
    )
    episode = Episode.objects.select_related("agent").get(pk=external.outcomes[0].episode.pk)
    assert (episode.provenance, episode.source, episode.agent.kind) == ("external", "upload", "external")


def test_a_record_the_general_path_must_judge_rolls_the_copy_back(project_a: Any, alice: Any, record_factory: Any) -> None:
    good, bad = record_factory(steps=3, seed=1), record_factory(steps=3, seed=2)
    bad["steps"][2]["index"] = 7  # found only when its steps are read, after the first record's steps went out
    data = json.dumps([good, bad]).encode()
    records = read_native(data, filename="body.json", redactor=Redactor(), max_records=10)
    assert records is not None
    assert episodes_ingest_native(project=project_a, records=records, user=alice) is None
    assert not Step.objects.filter(episode__project=project_a).exists()
    from lab.errors import DomainError

    with pytest.raises(DomainError) as raised:
        imports.upload_ingest(project=project_a, user=alice, data=data, filename="body.json", fmt="native")
    assert "steps[2].index" in str(raised.value)


@pytest.mark.parametrize("path", ["streaming", "general"])
def test_the_same_content_stored_meanwhile_by_another_upload_is_found_on_a_second_try(
    transactional_db: Any, project_a: Any, alice: Any, record_factory: Any, monkeypatch: Any, path: str
) -> None:
    import threading

    from lab.trajectories import bulk

    # The task and agent exist already, as they do once a project has uploads: made in both transactions at once,
    # the second maker would wait on the first, which here waits on the second.
    _upload(project_a, alice, [record_factory(steps=1, seed=8)])
    record = record_factory(steps=2, seed=9)
    if path == "general":
        _general_path(monkeypatch)
    target = "copy_episodes" if path == "streaming" else "insert_episodes"
    original = getattr(bulk, target)
    raced: list[Any] = []

    def another_upload_commits_first(episodes: list[Any]) -> Any:
        if threading.current_thread() is main and not raced:  # the other request, on its own connection, stores
            thread = threading.Thread(target=lambda: raced.append(_upload(project_a, alice, [record])))  # and commits
            thread.start()
            thread.join()
        return original(episodes)

    main = threading.current_thread()

    monkeypatch.setattr(bulk, target, another_upload_commits_first)
    [outcome] = _upload(project_a, alice, [record]).outcomes
    assert not outcome.created and outcome.episode.pk == raced[0].outcomes[0].episode.pk
    assert Episode.objects.filter(project=project_a).count() == 2 and Step.objects.filter(episode__project=project_a).count() == 3
