"""Launching and cancelling from the console: each form makes the service's rows, refuses bad input field by
field without writing anything, and only owners and researchers of the object's project may use it.

Celery tasks are enqueued on commit, which plain `db` tests never reach: the queued rows are what we check.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lab.jobs import JobStatus
from lab.rollouts.models import Evaluation, RolloutJob
from lab.runs.models import Checkpoint, TrainingRun
from lab.runs.services import run_create
from lab.trajectories.models import AgentKind, EpisodeStatus

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
TASK = "storebench/cash-crunch"


@pytest.fixture
def toy_episodes(project_a: Any, role_users: dict[str, Any], record_factory: Any) -> list[Any]:
    from lab.trajectories.services import episodes_ingest

    outcomes = episodes_ingest(project=project_a, records=[record_factory(seed=i, tag=str(i)) for i in range(3)], user=role_users["owner"])
    return [o.episode for o in outcomes]


@pytest.fixture
def queued_run(project_a: Any, role_users: dict[str, Any]) -> TrainingRun:
    return run_create(
        project=project_a, recipe="grpo", base_model="org/tiny", config={"max_steps": 3}, user=role_users["owner"], enqueue=False
    )


def as_user(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- training runs ------------------------------------------------------------------------------------------------


def test_run_form_creates_a_queued_run_with_its_frozen_dataset(role_users: dict[str, Any], toy_episodes: list[Any]) -> None:
    response = as_user(role_users["researcher"]).post(
        "/runs/new",
        {
            "project": "acme",
            "name": "sft smoke",
            "recipe": "sft",
            "base_model": "org/tiny",
            "config": 'max_steps = 5\nlearning_rate = 0.0002\n# comment\nlora_target_modules = ["q_proj"]',
            "dataset-env": "toyenv",
            "dataset-seed": "",
        },
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.name, run.recipe, run.base_model, run.status) == ("sft smoke", "sft", "org/tiny", JobStatus.QUEUED)
    assert run.config == {"max_steps": 5, "learning_rate": 0.0002, "lora_target_modules": ["q_proj"]}
    assert (
        run.dataset_spec == {"env": "toyenv", "include_partial": False, "skipped": {}}
        and run.episode_ids == sorted(e.pk for e in toy_episodes)
        and len(run.dataset_hash) == 64
    )
    assert run.created_by == role_users["researcher"]


def test_run_form_takes_a_json_config_for_a_recipe_without_dataset(role_users: dict[str, Any]) -> None:
    response = as_user(role_users["owner"]).post(
        "/runs/new", {"project": "acme", "recipe": "grpo", "base_model": "org/tiny", "config": '{"max_steps": 7, "group_size": 4}'}
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and run.config == {"max_steps": 7, "group_size": 4} and run.episode_ids == []
    assert run.name == "grpo on tiny"


def test_run_form_offers_the_ascent_recipe_with_its_fields_and_refuses_it_without_lora(role_users: dict[str, Any]) -> None:
    html = as_user(role_users["owner"]).get("/runs/").content.decode()
    assert "<option >ascent</option>" in html and "<code>steps_per_task</code>" in html and "<code>privileged_template</code>" in html
    client = as_user(role_users["owner"])
    response = client.post(
        "/runs/new", {"project": "acme", "recipe": "ascent", "base_model": "org/tiny", "config": 'update = "sft"\nmax_steps = 8'}
    )
    run = TrainingRun.objects.get()
    assert (
        response.status_code == 302 and (run.recipe, run.config) == ("ascent", {"update": "sft", "max_steps": 8}) and run.episode_ids == []
    )
    refused = client.post("/runs/new", {"project": "acme", "recipe": "ascent", "base_model": "org/tiny", "config": "lora_r = 0"})
    assert "lora_r=0: ascent adapts LoRA weights" in refused.content.decode() and TrainingRun.objects.count() == 1


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"recipe": "grpo", "base_model": "", "config": ""}, "base_model", "give a from_pretrained path"),
        ({"recipe": "grpo", "base_model": "m", "config": "max_steps = many"}, "config", "max_steps='many' should be int"),
        ({"recipe": "grpo", "base_model": "m", "config": "warp = 9"}, "config", "unknown field(s) warp"),
        ({"recipe": "grpo", "base_model": "m", "config": "{not json"}, "config", "config is not valid JSON"),
        ({"recipe": "grpo", "base_model": "m", "config": "just words"}, "config", "is not key=value"),
        ({"recipe": "grpo", "base_model": "m", "config": "model = x"}, "config", "config.model is set by the lab"),
        ({"recipe": "dpo", "base_model": "m", "config": ""}, "recipe", "unknown recipe 'dpo'"),
        ({"recipe": "sft", "base_model": "org/tiny", "config": "", "dataset-seed": "abc"}, "dataset", "seed='abc' is not an integer"),
        ({"recipe": "sft", "base_model": "org/tiny", "config": "", "dataset-env": "nowhere"}, "dataset", "no finished episodes match"),
        (
            {"recipe": "sft", "base_model": "org/huge", "config": ""},
            "base_model",
            "base_model='org/huge': no such model; the model store has: org/tiny",
        ),
        ({"recipe": "grpo", "base_model": "/etc", "config": ""}, "base_model", "outside the model store and project acme's checkpoints"),
        ({"recipe": "grpo", "base_model": "m/../../x", "config": ""}, "base_model", "'..' is not allowed"),
        ({"recipe": "grpo", "base_model": "m", "config": 'resume_from = "/tmp"'}, "config", "config.resume_from='/tmp': outside"),
    ],
)
def test_run_form_shows_the_error_beside_its_field_and_creates_nothing(
    role_users: dict[str, Any], toy_episodes: list[Any], fields: dict[str, str], field: str, message: str
) -> None:
    response = as_user(role_users["owner"]).post("/runs/new", {"project": "acme", **fields})
    assert response.status_code == 400
    assert message in response.context["errors"][field], response.context["errors"]
    html = response.content.decode()
    assert 'class="error field-error"' in html and 'id="run-form" open' in html
    assert f'value="{fields["base_model"]}"' in html  # the values come back
    assert not TrainingRun.objects.exists()


def test_run_form_offers_the_gated_self_distillation_recipe_with_its_fields(role_users: dict[str, Any]) -> None:
    html = as_user(role_users["owner"]).get("/runs/").content.decode()
    assert "<option >gated_sd</option>" in html and "<caption>gated_sd</caption>" in html
    assert "<code>gate_threshold</code>" in html and "weight 1 - value" in html  # the field and its docstring
    response = as_user(role_users["owner"]).post(
        "/runs/new", {"project": "acme", "recipe": "gated_sd", "base_model": "org/tiny", "config": 'sd_coef = 0.25\ngate = "linear"'}
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and (run.recipe, run.config) == ("gated_sd", {"sd_coef": 0.25, "gate": "linear"})


def test_run_form_offers_the_flowright_recipe_with_its_list_fields_and_refuses_a_scripted_generator_in_training(
    role_users: dict[str, Any],
) -> None:
    client = as_user(role_users["owner"])
    html = client.get("/runs/").content.decode()
    assert "<option >flowright</option>" in html and "<code>train_roles</code>" in html and "<code>graph_weight</code>" in html
    refused = client.post(
        "/runs/new", {"project": "acme", "recipe": "flowright", "base_model": "org/tiny", "config": 'train_roles = ["generator"]'}
    )
    assert "training the generator needs generator=&#x27;model&#x27;" in refused.content.decode() and not TrainingRun.objects.exists()
    response = client.post(
        "/runs/new", {"project": "acme", "recipe": "flowright", "base_model": "org/tiny", "config": 'train_roles = ["finder"]\nstages = 3'}
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and (run.recipe, run.config) == ("flowright", {"train_roles": ["finder"], "stages": 3})


def test_run_form_offers_the_sibyl_recipe_with_its_fields_and_refuses_a_bad_cost(role_users: dict[str, Any]) -> None:
    client = as_user(role_users["owner"])
    html = client.get("/runs/").content.decode()
    assert "<caption>sibyl</caption>" in html and "<code>disagree_max_logp</code>" in html and "<code>consult_cost</code>" in html
    bad = client.post("/runs/new", {"project": "acme", "recipe": "sibyl", "base_model": "org/tiny", "config": "consult_cost = 2.0"})
    assert bad.status_code == 400 and "consult_cost=2.0" in bad.context["errors"]["config"] and not TrainingRun.objects.exists()
    response = client.post(
        "/runs/new",
        {"project": "acme", "recipe": "sibyl", "base_model": "org/tiny", "config": "stage1_steps = 2\nstage2_steps = 1\nmax_steps = 6"},
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and (run.recipe, run.config) == ("sibyl", {"stage1_steps": 2, "stage2_steps": 1, "max_steps": 6})


def test_run_form_is_shown_to_writers_only_and_carries_a_csrf_token(role_users: dict[str, Any]) -> None:
    for role in ("owner", "researcher"):
        html = as_user(role_users[role]).get("/runs/").content.decode()
        assert 'action="/runs/new"' in html and "csrfmiddlewaretoken" in html and "New training run" in html
        assert "<code>group_size</code>" in html  # the recipes' fields with their docs
    for role in ("expert", "viewer"):
        assert 'action="/runs/new"' not in as_user(role_users[role]).get("/runs/").content.decode()


def test_run_form_offers_the_raised_recipe_with_its_fields_and_queues_it(role_users: dict[str, Any]) -> None:
    client = as_user(role_users["owner"])
    html = client.get("/runs/").content.decode()
    assert "<caption>raised</caption>" in html and "<code>guidance_share</code>" in html and "<code>teacher_weights</code>" in html
    response = client.post(
        "/runs/new", {"project": "acme", "recipe": "raised", "base_model": "org/tiny", "config": 'variant = "advsft"\npairs_per_step = 2'}
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and run.recipe == "raised" and run.config == {"variant": "advsft", "pairs_per_step": 2}


def test_run_form_offers_the_advsim_recipe_and_refuses_a_bad_schedule_and_an_outside_user_model(role_users: dict[str, Any]) -> None:
    client = as_user(role_users["owner"])
    html = client.get("/runs/").content.decode()
    assert "<caption>advsim</caption>" in html and "<code>flip_threshold</code>" in html and "<code>real_user_model</code>" in html
    bad = client.post("/runs/new", {"project": "acme", "recipe": "advsim", "base_model": "org/tiny", "config": 'schedule = "both"'})
    assert bad.status_code == 400 and "schedule='both'" in bad.context["errors"]["config"] and not TrainingRun.objects.exists()
    outside = client.post(
        "/runs/new", {"project": "acme", "recipe": "advsim", "base_model": "org/tiny", "config": 'real_user_model = "/etc"'}
    )
    assert outside.status_code in (400, 403) and not TrainingRun.objects.exists()
    response = client.post(
        "/runs/new", {"project": "acme", "recipe": "advsim", "base_model": "org/tiny", "config": 'schedule = "alternating"\nmax_steps = 3'}
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and (run.recipe, run.config) == ("advsim", {"schedule": "alternating", "max_steps": 3})


def test_run_form_offers_the_hat_recipe_and_takes_its_levels_as_a_json_list(role_users: dict[str, Any], toy_episodes: list[Any]) -> None:
    client = as_user(role_users["owner"])
    html = client.get("/runs/").content.decode()
    assert "<caption>hat</caption>" in html and "<code>levels</code>" in html and "<code>harness_weight</code>" in html
    refused = client.post(
        "/runs/new",
        {"project": "acme", "recipe": "hat", "base_model": "org/tiny", "config": 'levels = ["full", "scaffold"]', "dataset-env": "toyenv"},
    )
    assert refused.status_code == 400 and "levels=['full', 'scaffold']" in refused.context["errors"]["config"]
    response = client.post(
        "/runs/new",
        {
            "project": "acme",
            "recipe": "hat",
            "base_model": "org/tiny",
            "dataset-env": "toyenv",
            "config": 'levels = ["full", "tools-only"]\nstage_steps = [2, 6]\nmax_steps = 8',
        },
    )
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and run.recipe == "hat"
    assert run.config == {"levels": ["full", "tools-only"], "stage_steps": [2, 6], "max_steps": 8} and len(run.episode_ids) == 3


def test_run_form_offers_self_distillation_teacher_contexts_and_checks_the_coachs_task(role_users: dict[str, Any]) -> None:
    client = as_user(role_users["owner"])
    html = client.get("/runs/").content.decode()
    assert "<code>teacher_context</code>" in html and "SELF&#x27;s feedback-conditioned teacher" in html and "<code>coach</code>" in html
    refused = client.post(
        "/runs/new", {"project": "acme", "recipe": "self_distill", "base_model": "org/tiny", "config": 'teacher_context = "coach"'}
    )
    assert refused.status_code == 400 and "task 'toolgym/lookup' has no user to coach on" in refused.context["errors"]["config"]
    config = 'teacher_context = "coach"\ntask = "servicedesk/roaming-on"'
    response = client.post("/runs/new", {"project": "acme", "recipe": "self_distill", "base_model": "org/tiny", "config": config})
    assert response.status_code == 302
    assert TrainingRun.objects.get().config == {"teacher_context": "coach", "task": "servicedesk/roaming-on"}


def test_launch_forms_refuse_posts_without_a_csrf_token(role_users: dict[str, Any]) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(role_users["owner"])
    assert client.post("/runs/new", {"project": "acme", "recipe": "grpo", "base_model": "m"}).status_code == 403
    assert client.post("/evaluations/new", {"project": "acme", "agent": "smart-triage", "task_set": TASK, "seeds": "0"}).status_code == 403
    assert not TrainingRun.objects.exists() and not Evaluation.objects.exists()


def test_launch_posts_answer_403_to_read_only_roles_and_404_across_projects(role_users: dict[str, Any], bob: Any) -> None:
    posts = {
        "/runs/new": {"project": "acme", "recipe": "grpo", "base_model": "m"},
        "/evaluations/new": {"project": "acme", "agent": "smart-triage", "task_set": TASK, "seeds": "0"},
        "/rollouts/new": {"project": "acme", "agent": "smart-triage", "task": TASK, "seed": "0"},
    }
    for url, data in posts.items():
        for role in ("expert", "viewer"):
            assert as_user(role_users[role]).post(url, data).status_code == 403, (url, role)
        assert as_user(bob).post(url, data).status_code == 404, url
        assert as_user(role_users["owner"]).get(url).status_code == 405  # POST only
    assert not TrainingRun.objects.exists() and not Evaluation.objects.exists() and not RolloutJob.objects.exists()


def test_cancel_run_for_writers_only(role_users: dict[str, Any], bob: Any, queued_run: TrainingRun) -> None:
    url = f"/runs/{queued_run.pk}/cancel"
    assert f'action="{url}"' in as_user(role_users["researcher"]).get(f"/runs/{queued_run.pk}/").content.decode()
    assert "/cancel" not in as_user(role_users["viewer"]).get(f"/runs/{queued_run.pk}/").content.decode()
    assert as_user(role_users["viewer"]).post(url).status_code == 403
    assert as_user(role_users["expert"]).post(url).status_code == 403
    assert as_user(bob).post(url).status_code == 404
    queued_run.refresh_from_db()
    assert queued_run.status == JobStatus.QUEUED
    fragment = as_user(role_users["researcher"]).post(url, **HTMX)
    queued_run.refresh_from_db()
    assert queued_run.status == JobStatus.CANCELLED and queued_run.ended_at is not None
    html = fragment.content.decode()
    assert fragment.status_code == 200 and "<html" not in html and ">cancelled<" in html and "Cancel run" not in html
    assert as_user(role_users["owner"]).post(url)["Location"] == f"/runs/{queued_run.pk}/"  # idempotent, a page without htmx


def test_checkpoint_evaluate_creates_an_hf_agent_evaluation_linked_to_the_checkpoint(
    role_users: dict[str, Any], bob: Any, queued_run: TrainingRun
) -> None:
    checkpoint = Checkpoint.objects.create(run=queued_run, step=3, path="/ckpt/step-3")
    url = f"/runs/{queued_run.pk}/checkpoints/{checkpoint.pk}/evaluate"
    html = as_user(role_users["owner"]).get(f"/runs/{queued_run.pk}/").content.decode()
    assert f'action="{url}"' in html
    assert f'action="{url}"' not in as_user(role_users["viewer"]).get(f"/runs/{queued_run.pk}/").content.decode()
    assert as_user(role_users["expert"]).post(url, {"task_set": TASK, "seeds": "0"}).status_code == 403
    assert as_user(bob).post(url, {"task_set": TASK, "seeds": "0"}).status_code == 404

    refused = as_user(role_users["owner"]).post(url, {"task_set": TASK, "seeds": "0,x"})
    assert refused.status_code == 400 and "'x' is not a seed" in refused.context["eval_errors"]["seeds"]
    assert "&#x27;x&#x27; is not a seed" in refused.content.decode() and 'value="0,x"' in refused.content.decode()
    refused = as_user(role_users["owner"]).post(url, {"task_set": "storebench/nowhere", "seeds": "0"})
    assert refused.status_code == 400 and "task_set" in refused.context["eval_errors"]
    assert not Evaluation.objects.exists()

    response = as_user(role_users["researcher"]).post(url, {"task_set": TASK, "seeds": "0, 1"})
    evaluation = Evaluation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/evaluations/{evaluation.pk}/"
    assert (evaluation.checkpoint, evaluation.task_set, evaluation.seeds) == (checkpoint, TASK, [0, 1])
    assert (evaluation.agent.kind, evaluation.agent.model) == (AgentKind.HF, "/ckpt/step-3")
    assert sorted(RolloutJob.objects.values_list("seed", "status", "queue")) == [(0, "queued", "gpu"), (1, "queued", "gpu")]
    assert f'href="/evaluations/{evaluation.pk}/"' in as_user(role_users["viewer"]).get(f"/runs/{queued_run.pk}/").content.decode()


# --- evaluations --------------------------------------------------------------------------------------------------


def test_evaluation_form_creates_the_evaluation_and_its_jobs(role_users: dict[str, Any]) -> None:
    html = as_user(role_users["researcher"]).get("/evaluations/").content.decode()
    assert 'action="/evaluations/new"' in html and '<option value="smart-triage">' in html and '<option value="storebench/eval">' in html
    assert 'action="/evaluations/new"' not in as_user(role_users["expert"]).get("/evaluations/").content.decode()
    response = as_user(role_users["researcher"]).post(
        "/evaluations/new", {"project": "acme", "agent": "smart-triage", "task_set": TASK, "seeds": "0-2"}
    )
    evaluation = Evaluation.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/evaluations/{evaluation.pk}/"
    assert (evaluation.agent.name, evaluation.agent.kind, evaluation.task_set, evaluation.seeds) == (
        "smart-triage",
        "scripted",
        TASK,
        [0, 1, 2],
    )
    jobs = RolloutJob.objects.filter(evaluation=evaluation)
    assert sorted(jobs.values_list("seed", flat=True)) == [0, 1, 2] and {j.task.task_id for j in jobs} == {TASK}
    assert set(jobs.values_list("status", flat=True)) == {"queued"} and evaluation.created_by == role_users["researcher"]


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"agent": "nobody", "task_set": TASK, "seeds": "0"}, "agent", "no agent 'nobody' in acme"),
        ({"agent": "smart-triage", "task_set": "storebench/nowhere", "seeds": "0"}, "task_set", "storebench/nowhere"),
        ({"agent": "smart-triage", "task_set": TASK, "seeds": ""}, "seeds", "give at least one seed"),
        ({"agent": "smart-triage", "task_set": TASK, "seeds": "1,1"}, "form", "seeds repeat"),
    ],
)
def test_evaluation_form_refuses_bad_input_by_field(role_users: dict[str, Any], fields: dict[str, str], field: str, message: str) -> None:
    response = as_user(role_users["owner"]).post("/evaluations/new", {"project": "acme", **fields})
    assert response.status_code == 400 and message in response.context["errors"][field], response.context["errors"]
    assert 'id="evaluation-form" open' in response.content.decode()
    assert not Evaluation.objects.exists() and not RolloutJob.objects.exists()


def test_cancel_evaluation_cancels_its_queued_jobs(role_users: dict[str, Any], bob: Any) -> None:
    as_user(role_users["owner"]).post("/evaluations/new", {"project": "acme", "agent": "smart-triage", "task_set": TASK, "seeds": "0,1"})
    evaluation = Evaluation.objects.get()
    url = f"/evaluations/{evaluation.pk}/cancel"
    assert f'action="{url}"' in as_user(role_users["owner"]).get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert f'action="{url}"' not in as_user(role_users["viewer"]).get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert as_user(role_users["viewer"]).post(url).status_code == 403 and as_user(bob).post(url).status_code == 404
    fragment = as_user(role_users["researcher"]).post(url, **HTMX)
    evaluation.refresh_from_db()
    assert evaluation.status == JobStatus.CANCELLED and evaluation.progress == 1.0
    assert set(RolloutJob.objects.values_list("status", "cancel_requested")) == {("cancelled", True)}
    assert fragment.status_code == 200 and "<html" not in fragment.content.decode() and "Cancel evaluation" not in fragment.content.decode()


# --- rollouts -----------------------------------------------------------------------------------------------------


def test_rollout_form_queues_a_job_and_shows_it(role_users: dict[str, Any]) -> None:
    client = as_user(role_users["researcher"])
    assert 'action="/rollouts/new"' in client.get("/episodes/").content.decode()
    assert 'action="/rollouts/new"' not in as_user(role_users["viewer"]).get("/episodes/").content.decode()
    response = client.post("/rollouts/new", {"project": "acme", "agent": "do-nothing", "task": TASK, "seed": "4"})
    job = RolloutJob.objects.get()
    assert (job.agent.name, job.task.task_id, job.seed, job.status, job.queue, job.evaluation) == (
        "do-nothing",
        TASK,
        4,
        "queued",
        "cpu",
        None,
    )
    assert response.status_code == 302 and response["Location"] == f"/episodes/?rollout={job.pk}"
    html = client.get(response["Location"]).content.decode()
    assert f"Rollout {job.pk} (do-nothing on {TASK}, seed 4) is queued" in html


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        ({"agent": "do-nothing", "task": TASK, "seed": "x"}, "seed", "seed must be a whole number"),
        ({"agent": "do-nothing", "task": "storebench/nowhere", "seed": "0"}, "task", "storebench/nowhere"),
        ({"agent": "ghost", "task": TASK, "seed": "0"}, "agent", "no agent 'ghost'"),
    ],
)
def test_rollout_form_refuses_bad_input_by_field(role_users: dict[str, Any], fields: dict[str, str], field: str, message: str) -> None:
    response = as_user(role_users["owner"]).post("/rollouts/new", {"project": "acme", **fields})
    assert response.status_code == 400 and message in response.context["errors"][field], response.context["errors"]
    assert not RolloutJob.objects.exists()


def test_rollout_form_refuses_a_human_agent(role_users: dict[str, Any], project_a: Any) -> None:
    from lab.trajectories.models import AgentConfig

    AgentConfig.objects.create(project=project_a, name="expert-jane", kind=AgentKind.HUMAN)
    response = as_user(role_users["owner"]).post("/rollouts/new", {"project": "acme", "agent": "expert-jane", "task": TASK, "seed": "0"})
    assert response.status_code == 400 and "only scripted, hf, vllm and openai agents run here" in response.context["errors"]["form"]
    assert not RolloutJob.objects.exists()


def test_a_disabled_agent_is_listed_with_its_reason_not_offered_and_refused(role_users: dict[str, Any], project_a: Any) -> None:
    from lab.trajectories.models import AgentConfig

    AgentConfig.objects.create(
        project=project_a,
        name="stale-gpt",
        kind=AgentKind.OPENAI,
        model="m",
        endpoint="https://evil.example/v1",
        disabled_reason="endpoint: 'https://evil.example/v1' is not an endpoint the operator declared",
    )
    client = as_user(role_users["researcher"])
    html = client.get("/episodes/").content.decode()
    assert '<option value="stale-gpt">' not in html
    assert "Agent <strong>stale-gpt</strong> is disabled: endpoint: &#x27;https://evil.example/v1&#x27; is not an endpoint" in html
    response = client.post("/rollouts/new", {"project": "acme", "agent": "stale-gpt", "task": TASK, "seed": "0"})
    assert response.status_code == 400
    assert response.context["errors"]["agent"].startswith("agent 'stale-gpt' is disabled: endpoint: 'https://evil.example/v1'")
    assert not RolloutJob.objects.exists()


def test_cancel_a_running_rollout_from_the_episode_viewer(role_users: dict[str, Any], bob: Any, toy_episodes: list[Any]) -> None:
    episode = toy_episodes[0]
    as_user(role_users["owner"]).post("/rollouts/new", {"project": "acme", "agent": "do-nothing", "task": TASK, "seed": "0"})
    job = RolloutJob.objects.get()
    type(episode).objects.filter(pk=episode.pk).update(status=EpisodeStatus.RUNNING)  # as a worker mid-episode leaves it
    RolloutJob.objects.filter(pk=job.pk).update(status=JobStatus.RUNNING, episode=episode)
    url = f"/rollouts/{job.pk}/cancel"
    assert f'action="{url}"' in as_user(role_users["researcher"]).get(f"/episodes/{episode.pk}/").content.decode()
    for role in ("viewer", "expert"):
        assert f'action="{url}"' not in as_user(role_users[role]).get(f"/episodes/{episode.pk}/").content.decode()
        assert as_user(role_users[role]).post(url).status_code == 403
    assert as_user(bob).post(url).status_code == 404
    job.refresh_from_db()
    assert not job.cancel_requested
    response = as_user(role_users["researcher"]).post(url)
    job.refresh_from_db()
    assert response.status_code == 302 and response["Location"] == f"/episodes/{episode.pk}/"
    assert job.cancel_requested and job.status == JobStatus.RUNNING  # the worker stops it after the current step
    assert "Stop requested" in as_user(role_users["researcher"]).get(f"/episodes/{episode.pk}/").content.decode()


def test_no_cancel_button_for_episodes_without_a_running_job(role_users: dict[str, Any], toy_episodes: list[Any]) -> None:
    assert "/cancel" not in as_user(role_users["owner"]).get(f"/episodes/{toy_episodes[0].pk}/").content.decode()


def test_a_seed_range_past_the_maximum_is_refused_before_it_is_built(role_users: dict[str, Any], settings: Any) -> None:
    settings.PRACTICUM_MAX_SEEDS = 5
    owner = as_user(role_users["owner"])
    for seeds, message in [
        ("0-99999999999", "holds more than 5 seeds"),
        ("0-5", "holds more than 5 seeds"),
        ("99999999999999999999", "outside"),
    ]:
        refused = owner.post("/evaluations/new", {"project": "acme", "agent": "smart-triage", "task_set": TASK, "seeds": seeds})
        assert refused.status_code == 400 and message in refused.content.decode(), seeds
    refused = owner.post("/rollouts/new", {"project": "acme", "agent": "smart-triage", "task": TASK, "seed": "99999999999999999999"})
    assert refused.status_code == 400 and "outside" in refused.content.decode()
    assert not Evaluation.objects.exists() and not RolloutJob.objects.exists()
    owner.post("/evaluations/new", {"project": "acme", "agent": "smart-triage", "task_set": TASK, "seeds": "0-4"})
    assert Evaluation.objects.get().seeds == [0, 1, 2, 3, 4]
