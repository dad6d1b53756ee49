"""Training runs through the API: launch validation, permissions, a real tiny SFT run on the worker, cancel, evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.live.models import LiveEvent
from lab.rollouts.models import Evaluation, RolloutJob
from lab.runs.models import Checkpoint, RunMetric, TrainingRun
from lab.runs.services import dataset_export

SFT = {"max_steps": 3, "batch_size": 2, "save_every": 2, "learning_rate": 1e-3, "device": "cpu"}


def _launch(client: Any, tiny_model: str, **overrides: Any) -> Any:
    body = {"project": "acme", "recipe": "sft", "base_model": tiny_model, "config": SFT, "dataset": {"task": "toolgym/lookup"}}
    return client.post("/api/v1/runs/", {**body, **overrides}, format="json")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"config": {"learning_rate": -1.0}}, "learning_rate"),
        ({"config": {"batch_size": 0}}, "batch_size"),
        ({"config": {"bogus": 1}}, "bogus"),
        ({"config": {"max_steps": "ten"}}, "max_steps"),
        ({"config": {"output_dir": "/tmp/elsewhere"}}, "output_dir"),
        ({"config": {"parallel": "ddp", "processes": 2, "grad_accum": 3}}, "grad_accum"),
        ({"config": {"parallel": "mesh"}}, "parallel"),
        ({"recipe": "ppo"}, "recipe"),
        ({"base_model": ""}, "base_model"),
        ({"config": [1, 2]}, "config"),
        ({"dataset": {"colour": "red"}}, "colour"),
        ({"dataset": {"task": "toolgym/nothing-here"}}, "dataset"),
    ],
)
def test_it_answers_a_bad_launch_with_400_naming_the_field(
    alice_api: Any, tiny_model: str, lookup_episodes: list[int], overrides: dict[str, Any], field: str
) -> None:
    response = _launch(alice_api, tiny_model, **overrides)
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert field in error["fields"]
    assert field in error["message"]
    assert not TrainingRun.objects.exists()


@pytest.mark.django_db
def test_a_decode_budget_the_machine_cannot_hold_is_refused_at_launch_with_what_fits(alice_api: Any, tiny_model: str) -> None:
    grpo = {"max_steps": 1, "task": "toolgym/lookup", "device": "cpu"}
    response = _launch(alice_api, tiny_model, recipe="grpo", config={**grpo, "decode_token_budget": 10**13}, dataset={})
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "token_budget_too_large" and error["fields"] == ["config.decode_token_budget"]
    assert "tokens fit in 50% of the available memory" in error["message"]
    assert _launch(alice_api, tiny_model, recipe="grpo", config={**grpo, "decode_token_budget": 8192}, dataset={}).status_code == 201
    assert TrainingRun.objects.count() == 1


@pytest.mark.django_db
def test_it_freezes_the_dataset_at_launch(alice_api: Any, tiny_model: str, lookup_episodes: list[int]) -> None:
    response = _launch(alice_api, tiny_model)
    assert response.status_code == 201, response.json()
    run = TrainingRun.objects.get(pk=response.json()["id"])
    assert run.episode_ids == sorted(lookup_episodes)
    assert run.dataset_hash == dataset_export(lookup_episodes) and len(run.dataset_hash) == 64
    assert run.dataset_spec == {"task": "toolgym/lookup", "include_partial": False, "skipped": {}} and run.status == "queued"


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "code"), [("owner", 201), ("researcher", 201), ("expert", 403), ("viewer", 403)])
def test_only_owners_and_researchers_launch_runs(
    api: Any, role_users: dict[str, Any], project_a: Any, tiny_model: str, lookup_episodes: list[int], role: str, code: int
) -> None:
    assert _launch(api(role_users[role], project_a), tiny_model).status_code == code


@pytest.mark.django_db
def test_bob_cannot_see_or_cancel_alices_run(api: Any, bob: Any, project_b: Any, run_with_checkpoint: Any) -> None:
    client = api(bob, project_b)
    assert client.get(f"/api/v1/runs/{run_with_checkpoint.pk}/").status_code == 404
    assert client.post(f"/api/v1/runs/{run_with_checkpoint.pk}/cancel/").status_code == 404


@pytest.mark.django_db
def test_a_queued_run_is_cancelled_at_once_and_never_trains(alice_api: Any, tiny_model: str, lookup_episodes: list[int]) -> None:
    from lab.runs.services import run_execute

    run_id = _launch(alice_api, tiny_model).json()["id"]
    body = alice_api.post(f"/api/v1/runs/{run_id}/cancel/").json()
    assert body["status"] == "cancelled" and body["ended_at"]
    assert run_execute(run_id=run_id).status == "cancelled"
    assert not RunMetric.objects.filter(run_id=run_id).exists()


@pytest.mark.slow
def test_a_tiny_sft_run_trains_on_the_worker(
    celery_worker: Any, alice_api: Any, tiny_model: str, lookup_episodes: list[int], wait_for: Any
) -> None:
    run_id = _launch(alice_api, tiny_model).json()["id"]
    run = wait_for(lambda: TrainingRun.objects.filter(pk=run_id, status__in=["finished", "failed"]).first())
    assert run.status == "finished", run.error
    assert run.progress == 1.0 and run.started_at and run.ended_at

    losses = list(RunMetric.objects.filter(run=run, name="loss").order_by("step").values_list("step", "value"))
    assert [step for step, _ in losses] == [1, 2, 3] and all(value > 0 for _, value in losses)
    series = alice_api.get(f"/api/v1/runs/{run_id}/metrics/", {"name": ["loss", "lr"]}).json()
    assert set(series) == {"loss", "lr"}
    assert series["loss"] == {"steps": [1, 2, 3], "values": [value for _, value in losses]}

    events = list(LiveEvent.objects.filter(stream=f"run:{run_id}").order_by("seq"))
    metric_events = [e.payload for e in events if e.kind == "metric" and e.payload["name"] == "loss"]
    assert [(p["step"], p["value"]) for p in metric_events] == losses
    assert events[-1].kind == "status" and events[-1].payload["status"] == "finished"
    assert [e.payload["step"] for e in events if e.kind == "checkpoint"] == [2, 3]

    checkpoints = alice_api.get(f"/api/v1/runs/{run_id}/checkpoints/").json()
    assert [c["step"] for c in checkpoints] == [2, 3]
    final = Path(checkpoints[-1]["path"])
    assert (final / "training_config.json").exists() and (final / "config.json").exists()
    dataset = final.parents[1] / "dataset.jsonl"
    assert len(dataset.read_text().splitlines()) == len(lookup_episodes)


@pytest.mark.slow
def test_cancelling_a_running_run_stops_it_with_a_checkpoint(
    celery_worker: Any, alice_api: Any, tiny_model: str, lookup_episodes: list[int], wait_for: Any
) -> None:
    run_id = _launch(alice_api, tiny_model, config={**SFT, "max_steps": 500, "save_every": 0}).json()["id"]
    wait_for(lambda: RunMetric.objects.filter(run_id=run_id, name="loss").exists())
    assert alice_api.post(f"/api/v1/runs/{run_id}/cancel/").json()["status"] == "cancelled"
    run = wait_for(lambda: TrainingRun.objects.filter(pk=run_id, ended_at__isnull=False).first())
    assert run.status == "cancelled" and run.error == ""
    steps = RunMetric.objects.filter(run=run, name="loss").count()
    assert 1 <= steps < 500
    assert list(Checkpoint.objects.filter(run=run).values_list("step", flat=True)) == [steps]


@pytest.mark.django_db
def test_evaluating_a_checkpoint_starts_an_hf_evaluation(alice_api: Any, run_with_checkpoint: Any, tiny_model: str) -> None:
    response = alice_api.post(
        f"/api/v1/runs/{run_with_checkpoint.pk}/evaluate-checkpoint/", {"task_set": "toolgym/lookup", "seeds": [7, 8, 9]}, format="json"
    )
    assert response.status_code == 201, response.json()
    evaluation = Evaluation.objects.select_related("agent", "checkpoint").get(pk=response.json()["id"])
    assert evaluation.checkpoint.step == 5 and evaluation.seeds == [7, 8, 9]
    assert (evaluation.agent.kind, evaluation.agent.model) == ("hf", tiny_model)
    assert evaluation.agent.checkpoint_id == evaluation.checkpoint_id
    jobs = RolloutJob.objects.filter(evaluation=evaluation)
    assert sorted(jobs.values_list("seed", flat=True)) == [7, 8, 9] and set(jobs.values_list("queue", flat=True)) == {"gpu"}


@pytest.mark.django_db
def test_evaluating_a_missing_step_is_404_and_bad_seeds_400(alice_api: Any, run_with_checkpoint: Any) -> None:
    url = f"/api/v1/runs/{run_with_checkpoint.pk}/evaluate-checkpoint/"
    assert alice_api.post(url, {"task_set": "toolgym/lookup", "seeds": [1], "step": 99}, format="json").status_code == 404
    bad = alice_api.post(url, {"task_set": "toolgym/lookup", "seeds": "1,2"}, format="json")
    assert bad.status_code == 400 and bad.json()["error"]["fields"] == ["seeds"]
    for seeds in (["1"], list(range(1001)), []):
        bad = alice_api.post(url, {"task_set": "toolgym/lookup", "seeds": seeds}, format="json")
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_seeds" and bad.json()["error"]["fields"] == ["seeds"]
    past_int64 = alice_api.post(url, {"task_set": "toolgym/lookup", "seeds": [2**70]}, format="json")  # refused by the JSON parser
    assert past_int64.status_code == 400 and "64-bit" in past_int64.json()["error"]["message"]


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "code"), [("researcher", 201), ("expert", 403), ("viewer", 403)])
def test_evaluating_a_checkpoint_needs_the_role_that_starts_rollouts(
    api: Any, role_users: Any, project_a: Any, run_with_checkpoint: Any, role: str, code: int
) -> None:
    url = f"/api/v1/runs/{run_with_checkpoint.pk}/evaluate-checkpoint/"
    response = api(role_users[role], project_a).post(url, {"task_set": "toolgym/lookup", "seeds": [1]}, format="json")
    assert response.status_code == code, response.json()
    assert Evaluation.objects.filter(checkpoint__run=run_with_checkpoint).count() == (1 if code == 201 else 0)
