"""Model paths are confined to the operator's model store and the project's own checkpoints: through the service
the tasks use, the runs and agents API (create and PATCH), and again when a job loads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lab.errors import DomainError
from lab.jobs import JobStatus
from lab.rollouts.services import rollout_launch, rollout_run
from lab.runs.models import Checkpoint, TrainingRun
from lab.runs.paths import model_path_confine, run_folder
from lab.runs.services import run_create, run_execute
from lab.trajectories.models import AgentConfig
from lab.trajectories.services import task_resolve

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(tmp_path: Path, settings: Any) -> Path:
    """A model store of its own holding one model folder, `gpt2`, and an `org/small` one; a folder `outside` beside it."""
    folder = tmp_path / "store"
    for name in ("gpt2", "org/small"):  # loadable as far as the lab checks (a config.json): nothing loads them here
        (folder / name).mkdir(parents=True)
        (folder / name / "config.json").write_text("{}")
    (tmp_path / "outside").mkdir()
    settings.PRACTICUM_MODEL_STORE = folder
    return folder


def _refusal(project: Any, value: str, field: str = "base_model") -> DomainError:
    with pytest.raises(DomainError) as caught:
        model_path_confine(project=project, value=value, field=field)
    assert (caught.value.code, caught.value.status, caught.value.details["fields"]) == ("path_refused", 400, [field])
    return caught.value


# --- the service ---------------------------------------------------------------------------------------------------


def test_a_bare_name_or_relative_path_is_looked_up_in_the_model_store_never_the_hub(project_a: Any, store: Path) -> None:
    assert model_path_confine(project=project_a, value="gpt2", field="model") == str((store / "gpt2").resolve())
    assert model_path_confine(project=project_a, value="org/small", field="model") == str((store / "org" / "small").resolve())
    assert model_path_confine(project=project_a, value=str(store / "gpt2"), field="model") == str((store / "gpt2").resolve())


def test_the_projects_own_checkpoints_are_allowed(project_a: Any, store: Path, settings: Any) -> None:
    folder = Path(settings.PRACTICUM_CHECKPOINT_DIR) / f"project-{project_a.pk}" / "run-3" / "output" / "step-000002"
    folder.mkdir(parents=True)
    assert model_path_confine(project=project_a, value=str(folder), field="config.resume_from") == str(folder.resolve())


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("/etc", "outside the model store and project acme's checkpoints"),
        ("../outside", "'..' is not allowed in a model path"),
        ("gpt2/../../outside", "'..' is not allowed in a model path"),
        ("~/models/gpt2", "'~' is not expanded"),
        ("~root", "'~' is not expanded"),
        ("gpt2\x00", "contains a NUL byte"),
    ],
)
def test_it_refuses_paths_that_leave_the_store_naming_field_value_and_reason(project_a: Any, store: Path, value: str, reason: str) -> None:
    error = _refusal(project_a, value)
    assert error.message.startswith(f"base_model={value!r}: ") and reason in error.message


def test_a_symlink_in_the_store_that_points_out_is_refused(project_a: Any, store: Path, tmp_path: Path) -> None:
    (store / "evil").symlink_to(tmp_path / "outside")
    (store / "gpt2" / "weights").symlink_to(tmp_path / "outside")
    assert "follows a symlink out of the model store" in _refusal(project_a, "evil").message
    assert "follows a symlink out of the model store" in _refusal(project_a, "gpt2/weights").message


def test_a_symlink_loop_is_refused_not_a_crash(project_a: Any, store: Path) -> None:
    (store / "ping").symlink_to(store / "pong")
    (store / "pong").symlink_to(store / "ping")
    assert "cannot be resolved" in _refusal(project_a, "ping").message


def test_another_projects_checkpoints_are_refused_directly_and_through_a_symlink(
    project_a: Any, project_b: Any, store: Path, settings: Any
) -> None:
    theirs = Path(settings.PRACTICUM_CHECKPOINT_DIR) / f"project-{project_b.pk}" / "run-9" / "output" / "step-000001"
    theirs.mkdir(parents=True)
    (store / "borrowed").symlink_to(theirs)
    assert "outside the model store and project acme's checkpoints" in _refusal(project_a, str(theirs)).message
    assert "follows a symlink out" in _refusal(project_a, "borrowed").message
    assert model_path_confine(project=project_b, value=str(theirs), field="model") == str(theirs.resolve())


def test_a_store_that_contains_the_checkpoints_opens_no_other_projects_run(
    project_a: Any, project_b: Any, settings: Any, tmp_path: Path
) -> None:
    settings.PRACTICUM_MODEL_STORE = tmp_path
    theirs = Path(settings.PRACTICUM_CHECKPOINT_DIR) / f"project-{project_b.pk}" / "run-1"
    theirs.mkdir(parents=True)
    assert "outside the model store" in _refusal(project_a, str(theirs)).message


def test_old_flat_checkpoints_are_allowed_only_to_the_project_whose_run_recorded_them(
    project_a: Any, project_b: Any, store: Path, settings: Any
) -> None:
    folder = Path(settings.PRACTICUM_CHECKPOINT_DIR) / "run-7" / "output" / "step-000004"
    folder.mkdir(parents=True)
    run = TrainingRun.objects.create(project=project_a, name="old", recipe="sft", base_model="gpt2", status="finished")
    Checkpoint.objects.create(run=run, step=4, path=str(folder))
    assert model_path_confine(project=project_a, value=str(folder), field="model") == str(folder.resolve())
    assert "outside the model store" in _refusal(project_b, str(folder)).message


def test_new_runs_write_per_project_and_an_old_run_keeps_its_flat_folder(project_a: Any, settings: Any) -> None:
    root = Path(settings.PRACTICUM_CHECKPOINT_DIR)
    new = TrainingRun.objects.create(project=project_a, name="new", recipe="sft", base_model="gpt2")
    old = TrainingRun.objects.create(project=project_a, name="old", recipe="sft", base_model="gpt2")
    (root / f"run-{old.pk}").mkdir(parents=True)
    assert run_folder(new) == root / f"project-{project_a.pk}" / f"run-{new.pk}"
    assert run_folder(old) == root / f"run-{old.pk}"


# --- the API -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "field", "reason"),
    [
        ({"recipe": "grpo", "base_model": "/etc"}, "base_model", "outside the model store"),
        ({"recipe": "grpo", "base_model": "gpt2", "config": {"resume_from": "evil"}}, "config.resume_from", "follows a symlink out"),
        ({"recipe": "opd", "base_model": "gpt2", "config": {"teacher": "../outside"}}, "config.teacher", "'..' is not allowed"),
        ({"recipe": "caddie", "base_model": "gpt2", "config": {"actor": "../outside"}}, "config.actor", "'..' is not allowed"),
        ({"recipe": "grpo", "base_model": "~/gpt2"}, "base_model", "'~' is not expanded"),
    ],
)
def test_launching_a_run_with_a_confined_path_outside_answers_400_with_the_field(
    alice_api: Any, store: Path, tmp_path: Path, body: dict[str, Any], field: str, reason: str
) -> None:
    (store / "evil").symlink_to(tmp_path / "outside")
    response = alice_api.post("/api/v1/runs/", {"project": "acme", **body}, format="json")
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert (error["code"], error["fields"]) == ("path_refused", [field]) and reason in error["message"]
    assert not TrainingRun.objects.exists()


def test_an_hf_agent_model_is_confined_on_create(alice_api: Any, store: Path) -> None:
    refused = alice_api.post("/api/v1/agents/", {"project": "acme", "name": "x", "kind": "hf", "model": "/etc"}, format="json")
    assert refused.status_code == 400 and refused.json()["error"]["fields"] == ["model"]
    assert "model='/etc': outside the model store" in refused.json()["error"]["message"]
    assert not AgentConfig.objects.filter(name="x").exists()
    created = alice_api.post("/api/v1/agents/", {"project": "acme", "name": "y", "kind": "hf", "model": "gpt2"}, format="json")
    assert created.status_code == 201 and created.json()["model"] == "gpt2"


def test_patching_an_agent_into_an_hf_model_outside_is_refused(alice_api: Any, project_a: Any, store: Path, tmp_path: Path) -> None:
    agent = AgentConfig.objects.create(project=project_a, name="served", kind="openai", model="/etc")  # a served name: not a path
    (store / "evil").symlink_to(tmp_path / "outside")
    as_hf = alice_api.patch(f"/api/v1/agents/{agent.pk}/", {"kind": "hf"}, format="json")
    assert as_hf.status_code == 400 and as_hf.json()["error"]["fields"] == ["model"]
    hf = AgentConfig.objects.create(project=project_a, name="local", kind="hf", model="gpt2")
    relinked = alice_api.patch(f"/api/v1/agents/{hf.pk}/", {"model": "evil"}, format="json")
    assert relinked.status_code == 400 and "follows a symlink out" in relinked.json()["error"]["message"]
    agent.refresh_from_db(), hf.refresh_from_db()
    assert (agent.kind, hf.model) == ("openai", "gpt2")


def test_an_agent_cannot_point_at_another_projects_checkpoint(alice_api: Any, project_a: Any, project_b: Any, store: Path) -> None:
    theirs = TrainingRun.objects.create(project=project_b, name="theirs", recipe="sft", base_model="gpt2", status="finished")
    checkpoint = Checkpoint.objects.create(run=theirs, step=1, path="/elsewhere")
    agent = AgentConfig.objects.create(project=project_a, name="local", kind="hf", model="gpt2")
    response = alice_api.patch(f"/api/v1/agents/{agent.pk}/", {"checkpoint": checkpoint.pk}, format="json")
    assert response.status_code == 400 and response.json()["error"]["fields"] == ["checkpoint"]
    agent.refresh_from_db()
    assert agent.checkpoint is None


# --- jobs check again before loading ---------------------------------------------------------------------------------


def test_a_run_whose_base_model_symlink_was_swapped_after_launch_fails_before_loading(project_a: Any, store: Path, tmp_path: Path) -> None:
    (store / "current").symlink_to(store / "gpt2")
    run = run_create(project=project_a, recipe="grpo", base_model="current", config={"max_steps": 1}, enqueue=False)
    (store / "current").unlink()
    (store / "current").symlink_to(tmp_path / "outside")
    run = run_execute(run_id=run.pk)
    assert run.status == JobStatus.FAILED
    assert run.error == "DomainError: base_model='current': follows a symlink out of the model store and this project's checkpoints"
    assert not run.checkpoints.exists()


def test_a_rollout_of_an_hf_agent_whose_model_now_points_out_fails_before_loading(project_a: Any, store: Path, tmp_path: Path) -> None:
    (store / "current").symlink_to(store / "gpt2")
    agent = AgentConfig.objects.create(project=project_a, name="local", kind="hf", model="current")
    (store / "current").unlink()
    (store / "current").symlink_to(tmp_path / "outside")
    task = task_resolve(project=project_a, env="toolgym", key="lookup")
    job = rollout_run(job_id=rollout_launch(project=project_a, agent=agent, task=task, seed=0, enqueue=False).pk)
    assert job.status == "failed" and job.episode is None
    assert job.error == "model='current': follows a symlink out of the model store and this project's checkpoints"


# --- reported paths: an external run's checkpoints and what the lab then loads ------------------------------------


def _their_checkpoint(project_b: Any, settings: Any) -> Path:
    theirs = Path(settings.PRACTICUM_CHECKPOINT_DIR) / f"project-{project_b.pk}" / "run-9" / "output" / "step-000001"
    theirs.mkdir(parents=True)
    return theirs


def test_an_external_run_cannot_report_another_projects_checkpoint_folder(
    alice_api: Any, project_b: Any, store: Path, settings: Any, tmp_path: Path
) -> None:
    theirs = _their_checkpoint(project_b, settings)
    (tmp_path / "link").symlink_to(theirs)
    run_id = alice_api.post("/api/v1/runs/external/", {"name": "trl", "recipe": "trl-sft", "base_model": "gpt2"}, format="json").json()[
        "id"
    ]
    for path in (str(theirs), str(tmp_path / "link")):
        response = alice_api.post(f"/api/v1/runs/{run_id}/checkpoints/", {"step": 1, "path": path}, format="json")
        assert (response.status_code, response.json()["error"]["code"]) == (400, "path_refused"), path
        assert response.json()["error"]["fields"] == ["path"]
    assert not Checkpoint.objects.filter(run_id=run_id).exists()
    # Where a trainer elsewhere keeps its files stays a label: it names nothing this server holds.
    for label in ("s3://bucket/ckpt-1", "/home/trainer/ckpt-1"):
        assert alice_api.post(f"/api/v1/runs/{run_id}/checkpoints/", {"step": 2, "path": label}, format="json").status_code == 201


def test_a_recorded_checkpoint_pointing_into_another_project_opens_nothing_when_used(
    project_a: Any, project_b: Any, store: Path, settings: Any
) -> None:
    """Rows stored before reports were checked (or written by any other way) are checked again at load time."""
    theirs = _their_checkpoint(project_b, settings)
    for provenance in ("external", "recorded"):
        run = TrainingRun.objects.create(project=project_a, name=provenance, recipe="sft", base_model="gpt2", provenance=provenance)
        Checkpoint.objects.create(run=run, step=1, path=str(theirs))
    assert "outside the model store and project acme's checkpoints" in _refusal(project_a, str(theirs)).message
    agent = AgentConfig.objects.create(project=project_a, name="borrower", kind="hf", model=str(theirs))
    with pytest.raises(DomainError, match="outside the model store"):
        from lab.runs.paths import agent_model_path

        agent_model_path(agent=agent)


def test_an_old_flat_checkpoint_of_an_external_run_is_not_the_projects(project_a: Any, store: Path, settings: Any) -> None:
    folder = Path(settings.PRACTICUM_CHECKPOINT_DIR) / "run-7" / "output" / "step-000004"  # another project's old flat run
    folder.mkdir(parents=True)
    run = TrainingRun.objects.create(project=project_a, name="ext", recipe="trl", base_model="gpt2", provenance="external")
    Checkpoint.objects.create(run=run, step=4, path=str(folder))
    assert "outside the model store" in _refusal(project_a, str(folder)).message
