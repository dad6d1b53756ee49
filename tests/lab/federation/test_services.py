"""Federation services end to end: three projects of one installation federate on tiny models."""

from __future__ import annotations

import hashlib
import json

import pytest

from lab.errors import DomainError, Forbidden, NotFound
from lab.federation.models import ArtifactExport, FederationRound
from lab.federation.services import federation_cancel, federation_create, federation_execute, federation_folder, sharing_policy_set


@pytest.mark.slow
def test_three_projects_federate_their_adapters_and_a_lost_worker_resumes_after_the_last_round(
    three_projects, alice, tiny_model, fed_participants, tiny_config
):
    project_a = three_projects["projects"]["a"]
    federation = federation_create(
        project=project_a,
        name="acme+bravo+charlie",
        mode="fedavg",
        base_model=tiny_model,
        participants=fed_participants,
        config={**tiny_config, "rounds": 2},
        user=alice,
        enqueue=False,
    )
    assert [p["slug"] for p in federation.participants] == ["acme", "bravo", "charlie"] and federation.status == "queued"

    stop_after_first = lambda r: FederationRound.objects.filter(pk=federation.pk).update(status="cancelled")  # noqa: E731
    federation = federation_execute(federation_id=federation.pk, on_round=stop_after_first)
    assert federation.status == "cancelled" and [m["round"] for m in federation.results] == [0] and federation.progress == 0.5
    folder = federation_folder(federation)
    stamp = (folder / "round-000" / "metrics.json").stat().st_mtime_ns

    FederationRound.objects.filter(pk=federation.pk).update(status="running")  # what a redelivered task finds
    federation = federation_execute(federation_id=federation.pk)
    assert federation.status == "finished" and federation.progress == 1.0 and federation.error == ""
    assert [m["round"] for m in federation.results] == [0, 1]
    assert (folder / "round-000" / "metrics.json").stat().st_mtime_ns == stamp  # round 0 was not run again
    exports = ArtifactExport.objects.filter(federation=federation)
    assert exports.count() == 2 * 3 * 2 and not exports.filter(refused=True).exists()  # rounds x projects x (adapter, stats)
    for export in exports:
        payload = (folder / f"round-{export.round:03d}" / "artifacts" / f"{export.project.slug}-{export.kind}.bin").read_bytes()
        assert export.sha256 == hashlib.sha256(payload).hexdigest() == export.manifest["sha256"] and export.bytes == len(payload)
    for metrics in federation.results:
        assert {"utility acme", "utility bravo", "utility charlie", "canaries found", "bytes exchanged"} <= set(metrics)
        assert metrics["canaries found"] == 0.0 and metrics["bytes up"] == sum(e.bytes for e in exports if e.round == metrics["round"])


@pytest.mark.slow
def test_a_canary_in_an_export_is_refused_and_stays_home(three_projects, alice, tiny_model, fed_participants, tiny_config):
    projects, owners = three_projects["projects"], three_projects["owners"]
    sharing_policy_set(
        project=projects["c"], kinds=["skills", "stats"], canaries={"ledger.metric_name": "composite_mean"}, user=owners["c"]
    )
    federation = federation_create(
        project=projects["a"],
        name="skills",
        mode="skills",
        base_model=tiny_model,
        participants=fed_participants,
        config=tiny_config,
        user=alice,
        enqueue=False,
    )
    federation = federation_execute(federation_id=federation.pk)
    assert federation.status == "finished"
    refused = ArtifactExport.objects.get(federation=federation, refused=True)
    assert (refused.project.slug, refused.kind) == ("charlie", "stats")
    assert refused.gate["refused"]["fields"] == ["ledger.metric_name"] and "composite_mean" not in refused.gate["refused"]["message"]
    assert not (federation_folder(federation) / "round-000" / "artifacts" / "charlie-stats.bin").exists()
    (metrics,) = federation.results
    assert metrics["canaries found"] == 1.0 and metrics["refused exports"] == 1.0
    accepted = ArtifactExport.objects.get(federation=federation, project__slug="acme", kind="skills")
    assert {"attribute_accuracy", "attribute_chance"} <= set(accepted.gate["leakage"])  # fedgym's private colors were attacked
    skills = json.loads((federation_folder(federation) / "round-000" / "skills.json").read_text())
    assert len(skills) == 1 and "<the color field of lookup's result>" in skills[0]


def test_launch_checks_every_participant(three_projects, alice, bob, tiny_model, fed_participants):
    projects, owners = three_projects["projects"], three_projects["owners"]
    with pytest.raises(NotFound, match=r"participants\[0\].project: no project 'acme'"):
        federation_create(project=projects["b"], name="", mode="fedavg", base_model=tiny_model, participants=fed_participants, user=bob)
    sharing_policy_set(project=projects["b"], kinds=["stats"], user=owners["b"])  # bravo's owner stops sharing adapters
    with pytest.raises(DomainError, match=r"participants\[1\].project: bravo's sharing policy does not share adapter"):
        federation_create(project=projects["a"], name="", mode="fedavg", base_model=tiny_model, participants=fed_participants, user=alice)
    local = federation_create(
        project=projects["a"], name="", mode="local", base_model=tiny_model, participants=fed_participants, user=alice, enqueue=False
    )
    assert local.config["rounds"] == 2 and local.name == "local federation of 3"  # local shares nothing: no policy needed


def test_a_viewer_of_a_participant_may_not_enter_it(three_projects, alice, tiny_model, fed_participants):
    from lab.projects.services import membership_set

    membership_set(project=three_projects["projects"]["c"], user=alice, role="viewer")
    with pytest.raises(Forbidden, match=r"participants\[2\].project: a viewer of charlie"):
        federation_create(
            project=three_projects["projects"]["a"],
            name="",
            mode="skills",
            base_model=tiny_model,
            participants=fed_participants,
            user=alice,
        )


def test_cancel_of_a_queued_federation_ends_it_and_execute_then_does_nothing(three_projects, alice, tiny_model, fed_participants):
    federation = federation_create(
        project=three_projects["projects"]["a"],
        name="",
        mode="local",
        base_model=tiny_model,
        participants=fed_participants,
        user=alice,
        enqueue=False,
    )
    federation = federation_cancel(federation=federation)
    assert federation.status == "cancelled" and federation.ended_at is not None
    assert federation_execute(federation_id=federation.pk).results == []


def test_the_same_received_bytes_are_listed_once_whatever_their_ids(three_projects, alice, tiny_model, fed_participants):
    """A peer may push one artifact twice (two ids, one sha256); listing both would weigh it twice."""
    from lab.federation.models import Peer, ReceivedArtifact

    project_a = three_projects["projects"]["a"]
    peer = Peer.objects.create(project=project_a, name="partner", endpoint="partner-lab")
    first, again = (
        ReceivedArtifact.objects.create(
            project=project_a, peer=peer, sender="partner-lab", kind="skills", sha256="ab" * 32, bytes=10, status="accepted"
        )
        for _ in range(2)
    )
    with pytest.raises(DomainError, match=rf"config.received\[1\]: received artifact {again.pk} holds the same bytes as {first.pk}"):
        federation_create(
            project=project_a,
            name="",
            mode="skills",
            base_model=tiny_model,
            participants=fed_participants,
            config={"received": [first.pk, again.pk]},
            user=alice,
            enqueue=False,
        )
    federation = federation_create(
        project=project_a,
        name="",
        mode="skills",
        base_model=tiny_model,
        participants=fed_participants,
        config={"received": [first.pk]},
        user=alice,
        enqueue=False,
    )
    assert federation.config["received"] == [first.pk]
