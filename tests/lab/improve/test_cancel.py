"""Cancelling an improvement loop: at once when queued, at the next step when running (with the rollouts and the
training run it started), refused with the life cycle's 409 when it has finished or failed; shown as cancelled on
the API, the loop's page and the list."""

from __future__ import annotations

from typing import Any

import pytest

from lab.errors import Conflict
from lab.improve.models import ImprovementLoop
from lab.improve.selectors import loop_lineage
from lab.improve.services import loop_cancel, loop_create, loop_run
from lab.rollouts.models import Evaluation, RolloutJob

pytestmark = pytest.mark.django_db


def _loop(clumsy_evaluation: Any, loop_config: dict[str, Any]) -> ImprovementLoop:
    return loop_create(project=clumsy_evaluation.project, evaluation=clumsy_evaluation, config=loop_config, enqueue=False)


def test_a_queued_loop_is_cancelled_at_once_and_its_worker_then_does_nothing(clumsy_evaluation: Any, loop_config: dict[str, Any]) -> None:
    loop = loop_cancel(loop=_loop(clumsy_evaluation, loop_config))
    assert loop.status == "cancelled" and loop.ended_at is not None
    loop = loop_run(loop_id=loop.pk)
    assert (loop.status, loop.stage, loop.diagnosis_job_id) == ("cancelled", "select", None)
    assert [entry["status"] for entry in loop_lineage(loop)][:2] == ["cancelled", "pending"]
    assert loop_cancel(loop=loop).status == "cancelled"  # a second cancel changes nothing


def test_a_running_loop_stops_during_its_anchor_rollouts_and_cancels_the_rest(clumsy_evaluation: Any, loop_config: dict[str, Any]) -> None:
    loop = _loop(clumsy_evaluation, loop_config)
    loop.config = {**loop.config, "anchor_seeds": [1000, 1001, 1002, 1003]}
    loop.save(update_fields=["config"])
    seen: list[str] = []

    def progress(stage: str, fraction: float, message: str) -> None:
        seen.append(message)
        if message.startswith("anchor demonstrations: episode 1 of"):
            assert loop_cancel(loop=ImprovementLoop.objects.get(pk=loop.pk)).ended_at is None  # the worker stamps the end

    loop = loop_run(loop_id=loop.pk, progress=progress)
    assert (loop.status, loop.stage) == ("cancelled", "dataset") and loop.ended_at is not None
    assert loop.stages["dataset"]["status"] == "cancelled" and loop.stages["diagnose"]["status"] == "finished"
    assert loop.dataset_id is None and loop.run_id is None and "train" not in loop.stages
    anchors = Evaluation.objects.get(pk=loop.stages["dataset"]["anchor_evaluation"])
    statuses = list(RolloutJob.objects.filter(evaluation=anchors).order_by("pk").values_list("status", flat=True))
    assert len(statuses) > 2 and statuses[0] == "finished" and set(statuses[1:]) == {"cancelled"}, statuses
    assert not [m for m in seen if m.startswith("anchor demonstrations: episode 2")]
    assert {e["stage"]: e["status"] for e in loop_lineage(loop)}["dataset"] == "cancelled"
    assert loop_run(loop_id=loop.pk).status == "cancelled"  # a redelivered task does nothing


def test_a_running_loop_cancels_its_training_run(clumsy_evaluation: Any, loop_config: dict[str, Any]) -> None:
    loop = _loop(clumsy_evaluation, loop_config)

    def progress(stage: str, fraction: float, message: str) -> None:
        if stage == "train" and message.startswith("training run"):
            loop_cancel(loop=ImprovementLoop.objects.get(pk=loop.pk))

    loop = loop_run(loop_id=loop.pk, progress=progress)
    assert (loop.status, loop.stage, loop.stages["train"]["status"]) == ("cancelled", "train", "cancelled")
    assert loop.run.status == "cancelled" and loop.error == "" and not loop.dev_evaluations


@pytest.mark.parametrize("status", ["finished", "failed"])
def test_a_finished_or_failed_loop_is_refused_with_illegal_transition(
    clumsy_evaluation: Any, loop_config: dict[str, Any], status: str
) -> None:
    loop = _loop(clumsy_evaluation, loop_config)
    ImprovementLoop.objects.filter(pk=loop.pk).update(status=status)
    loop.refresh_from_db()
    with pytest.raises(Conflict) as caught:
        loop_cancel(loop=loop)
    assert (caught.value.code, caught.value.status) == ("illegal_transition", 409)
    loop.refresh_from_db()
    assert loop.status == status


def test_the_api_cancels_a_loop_and_answers_409_for_a_finished_one(
    alice_api: Any, promotable_loop: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]
) -> None:
    loop = _loop(clumsy_evaluation, loop_config)
    response = alice_api.post(f"/api/v1/loops/{loop.pk}/cancel/")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "cancelled" and body["ended_at"] and body["lineage"][0]["status"] == "cancelled"
    assert alice_api.get(f"/api/v1/loops/{loop.pk}/").json()["status"] == "cancelled"
    refused = alice_api.post(f"/api/v1/loops/{promotable_loop.pk}/cancel/")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "illegal_transition"


def test_only_researchers_and_owners_cancel(
    api: Any, role_users: dict[str, Any], clumsy_evaluation: Any, loop_config: dict[str, Any]
) -> None:
    loop = _loop(clumsy_evaluation, loop_config)
    project = clumsy_evaluation.project
    for role in ("viewer", "expert"):
        response = api(role_users[role], project).post(f"/api/v1/loops/{loop.pk}/cancel/")
        assert response.status_code == 403, (role, response.content)
    assert api(role_users["researcher"], project).post(f"/api/v1/loops/{loop.pk}/cancel/").status_code == 200


def test_the_loop_page_offers_cancel_and_then_shows_cancelled(
    client: Any, alice: Any, clumsy_evaluation: Any, loop_config: dict[str, Any]
) -> None:
    loop = _loop(clumsy_evaluation, loop_config)
    client.force_login(alice)
    page = client.get(f"/loops/{loop.pk}/").content.decode()
    assert 'id="loop-cancel"' in page
    fragment = client.post(f"/loops/{loop.pk}/cancel", HTTP_HX_REQUEST="true").content.decode()
    assert "cancelled · stage select" in fragment and 'id="loop-cancelled"' in fragment and 'id="loop-cancel"' not in fragment
    assert "<td>cancelled</td>" in client.get("/loops/").content.decode()


def test_the_command_cancels_a_loop_and_names_the_refusal(clumsy_evaluation: Any, loop_config: dict[str, Any]) -> None:
    import io

    from django.core.management import call_command
    from django.core.management.base import CommandError

    loop = _loop(clumsy_evaluation, loop_config)
    out = io.StringIO()
    call_command("improve", "cancel", str(loop.pk), stdout=out)
    assert out.getvalue().strip() == f"loop {loop.pk} cancelled at stage select"
    ImprovementLoop.objects.filter(pk=loop.pk).update(status="finished")
    with pytest.raises(CommandError, match="illegal_transition: ImprovementLoop .* is finished; it cannot become cancelled"):
        call_command("improve", "cancel", str(loop.pk), stdout=io.StringIO())
