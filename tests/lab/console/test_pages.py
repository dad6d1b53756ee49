"""Every console page renders for members, answers 404 across projects, and serves fragments to htmx."""

from __future__ import annotations

from typing import Any

import pytest

from lab.diagnoses.services import diagnosis_create
from lab.rollouts.models import Evaluation
from lab.runs.models import Checkpoint, RunMetric, TrainingRun
from lab.trajectories.models import AgentConfig

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_pages_require_login(client: Any) -> None:
    for url in ("/", "/episodes/", "/leaderboard/", "/runs/", "/evaluations/", "/diagnoses/", "/play/"):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url


def test_dashboard_lists_projects_recent_episodes_and_the_leaderboard_snapshot(
    login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any]
) -> None:
    html = login(role_users["viewer"]).get("/").content.decode()
    assert "Acme" in html and f'href="/episodes/{store_episodes["smart"].pk}/"' in html
    assert "smart-triage" in html and "anchor" in html
    fragment = login(role_users["viewer"]).get("/", **HTMX).content.decode()
    assert "<html" not in fragment and "Running" in fragment


def test_episode_list_filters_sorts_and_pages_by_keyset(
    login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any], record_factory: Any, project_a: Any
) -> None:
    from lab.trajectories.services import episodes_ingest

    episodes_ingest(project=project_a, records=[record_factory(tag=str(i), seed=i) for i in range(55)], user=role_users["owner"])
    client = login(role_users["viewer"])
    first = client.get("/episodes/").context["page"]
    assert len(first.rows) == 50 and first.next_cursor
    second = client.get("/episodes/", {"cursor": first.next_cursor}).context["page"]
    assert len(second.rows) == 7 and second.next_cursor is None
    assert not {e.pk for e in first.rows} & {e.pk for e in second.rows}
    by_score = client.get("/episodes/", {"sort": "-composite", "env": "storebench"}).context["page"].rows
    assert [e.pk for e in by_score] == [store_episodes["smart"].pk, store_episodes["idle"].pk]
    assert by_score[0].composite > by_score[1].composite
    agent = client.get("/episodes/", {"agent": "do-nothing"}).context["page"].rows
    assert [e.pk for e in agent] == [store_episodes["idle"].pk]
    fragment = client.get("/episodes/", {"source": "upload"}, **HTMX)
    assert b"<html" not in fragment.content and b'id="episode-rows"' not in fragment.content


def test_episode_list_answers_a_bad_filter_with_a_message(login: Any, role_users: dict[str, Any]) -> None:
    response = login(role_users["viewer"]).get("/episodes/", {"seed": "abc"})
    assert response.status_code == 400 and "seed=&#x27;abc&#x27; is not an integer" in response.content.decode()
    assert login(role_users["viewer"]).get("/episodes/", {"sort": "random"}).status_code == 400


def test_other_projects_are_invisible(login: Any, bob: Any, store_episodes: dict[str, Any]) -> None:
    client = login(bob)
    assert store_episodes["smart"].pk not in [e.pk for e in client.get("/episodes/").context["page"].rows]
    assert client.get(f"/episodes/{store_episodes['smart'].pk}/").status_code == 404
    assert client.get(f"/compare/?a={store_episodes['smart'].pk}&b={store_episodes['idle'].pk}").status_code == 404
    assert client.get("/leaderboard/").context["board"].overall == []


def test_compare_aligns_steps_marks_the_first_divergence_and_scores_the_deltas(
    login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any]
) -> None:
    smart, idle = store_episodes["smart"], store_episodes["idle"]
    response = login(role_users["viewer"]).get("/compare/", {"a": idle.pk, "b": smart.pk})
    context = response.context
    assert context["divergence"] == 1  # step 0 is the shared opening observation
    composite = context["deltas"][0]
    assert composite["name"] == "composite" and composite["delta"] == pytest.approx(smart.composite - idle.composite)
    names = [row["name"] for row in context["deltas"]]
    assert names == ["composite", *sorted(smart.score["components"])]
    service = next(row for row in context["deltas"] if row["name"] == "service")
    assert service["delta"] == pytest.approx(smart.score["components"]["service"] - idle.score["components"]["service"])
    assert 'id="cmp-1" class="first-divergence"' in response.content.decode()


def test_leaderboard_ranks_anchors_and_humans_with_pass_rates_and_filters_by_split(
    login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any], project_a: Any
) -> None:
    from lab.trajectories.services import episode_finish, episode_start

    human = AgentConfig.objects.create(project=project_a, name="human:expert-user", kind="human")
    task = store_episodes["smart"].task
    for composite in (0.2, 0.4):
        episode = episode_start(project=project_a, task=task, source="human", seed=0, agent=human)
        episode_finish(episode=episode, reason="agent_stop", score={"composite": composite, "passed": composite > 0.3, "components": {}})
    board = login(role_users["viewer"]).get("/leaderboard/").context["board"]
    rows = {row.name: row for row in board.by_task["storebench/cash-crunch"]}
    assert rows["human:expert-user"].kind == "human" and rows["human:expert-user"].n == 2
    assert rows["human:expert-user"].mean == pytest.approx(0.3) and rows["human:expert-user"].pass_rate == pytest.approx(0.5)
    # n = 2: t(1) = 12.706 makes the interval ± 1.27 around .3, clipped to the composite's [0, 1] (never past it)
    assert (rows["human:expert-user"].low, rows["human:expert-user"].high) == (0.0, 1.0)
    assert (rows["human:expert-user"].pass_low, rows["human:expert-user"].pass_high) == (
        pytest.approx(0.094531, abs=1e-5),
        pytest.approx(0.905469, abs=1e-5),
    )
    assert rows["smart-triage"].kind == "anchor" and rows["smart-triage"].mean == pytest.approx(store_episodes["smart"].composite)
    assert task.split in ("train", "dev", "test")
    other_split = "train" if task.split != "train" else "test"
    assert login(role_users["viewer"]).get("/leaderboard/", {"split": other_split}).context["board"].overall == []


def test_cancelled_and_abandoned_episodes_are_kept_out_of_the_leaderboard_and_counted_apart(
    login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any], project_a: Any
) -> None:
    from lab.trajectories.services import episode_finish, episode_start

    human = AgentConfig.objects.create(project=project_a, name="human:expert-user", kind="human")
    task = store_episodes["smart"].task
    ended = {}
    for reason, composite in (("agent_stop", 0.4), ("cancelled", 0.0), ("abandoned", None)):
        episode = episode_start(project=project_a, task=task, source="human", seed=0, agent=human)
        score = {"composite": composite, "passed": False, "components": {}} if composite is not None else None
        ended[reason] = episode_finish(episode=episode, reason=reason, score=score)
    assert [ended[r].life_cycle for r in ("agent_stop", "cancelled", "abandoned")] == ["finished", "cancelled", "abandoned"]
    client = login(role_users["viewer"])
    response = client.get("/leaderboard/")
    board = response.context["board"]
    row = next(r for r in board.by_task["storebench/cash-crunch"] if r.name == "human:expert-user")
    assert (row.n, row.mean, row.pass_rate) == (1, pytest.approx(0.4), 0.0)  # the cancelled 0.0 is no failure of the human's
    assert board.set_apart == {"abandoned": 1, "cancelled": 1}
    assert "Not ranked: 1 abandoned, 1 cancelled episodes" in response.content.decode()
    listed = client.get("/episodes/", {"status": "cancelled"})
    assert [e.pk for e in listed.context["page"].rows] == [ended["cancelled"].pk]
    assert 'class="tag life-cancelled"' in listed.content.decode()


def test_runs_and_evaluations_pages_show_status_metrics_and_checkpoints(
    login: Any, role_users: dict[str, Any], project_a: Any, bob: Any
) -> None:
    run = TrainingRun.objects.create(project=project_a, name="grpo-small", recipe="grpo", base_model="tiny", status="running", progress=0.4)
    RunMetric.objects.bulk_create(
        [RunMetric(run=run, step=s, name=n, value=v) for s, n, v in ((1, "loss", 2.0), (2, "loss", 1.5), (1, "kl", 0.01))]
    )
    checkpoint = Checkpoint.objects.create(run=run, step=100, path="/ckpt/100", eval_results={"mean": 0.31})
    agent = AgentConfig.objects.create(project=project_a, name="tiny@100", kind="hf", checkpoint=checkpoint)
    evaluation = Evaluation.objects.create(
        project=project_a,
        agent=agent,
        task_set="storebench/eval",
        seeds=[0, 1],
        status="running",
        progress=0.5,
        checkpoint=checkpoint,
        aggregate={
            "episodes": 4,
            "composite": {"n": 4, "mean": 0.31, "low": 0.2, "high": 0.42},
            "pass_rate": 0.25,
            "anchors": {"smart-triage": {"composite": 0.55, "pass_rate": 1.0, "episodes": 4}},
            "per_task": [
                {
                    "task": "storebench/cash-crunch",
                    "n": 4,
                    "composite": {"mean": 0.31, "low": 0.2, "high": 0.42},
                    "pass_rate": 0.25,
                    "anchors": {"smart-triage": 0.55},
                }
            ],
        },
    )
    client = login(role_users["viewer"])
    assert "grpo-small" in client.get("/runs/").content.decode()
    detail = client.get(f"/runs/{run.pk}/").content.decode()
    assert "/ckpt/100" in detail and 'data-metric="loss"' in detail and f'ws-connect="/ws/runs/{run.pk}/?after=0"' in detail
    assert client.get(f"/runs/{run.pk}/metrics.json").json() == {"metrics": {"kl": [[1], [0.01]], "loss": [[1, 2], [2.0, 1.5]]}}
    listing = client.get("/evaluations/").content.decode()
    assert "tiny@100" in listing and "0.310" in listing
    detail = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert "50%" in detail and "[0.200, 0.420]" in detail and "smart-triage" in detail and "0.550" in detail
    other = login(bob)
    assert other.get(f"/runs/{run.pk}/").status_code == 404 and other.get(f"/evaluations/{evaluation.pk}/").status_code == 404


def test_diagnoses_list_filters_by_category(login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any]) -> None:
    idle = store_episodes["idle"]
    diagnosis_create(
        episode=idle, step_index=3, category="premature_end", explanation="never shipped an order", author=role_users["expert"]
    )
    diagnosis_create(
        episode=idle, step_index=5, category="ignored_alert", explanation="ignored the cash warning", author=role_users["expert"]
    )
    client = login(role_users["viewer"])
    listed = list(client.get("/diagnoses/", {"category": "ignored_alert"}).context["diagnoses"])
    assert [d.explanation for d in listed] == ["ignored the cash warning"]
    assert len(client.get("/diagnoses/").context["diagnoses"]) == 2


def test_the_run_page_warns_when_the_on_policy_check_fired(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    run = TrainingRun.objects.create(project=project_a, name="grpo", recipe="grpo", base_model="tiny", status="running")
    client = login(role_users["viewer"])
    metrics = [(1, "onpolicy_warning", 0.0), (1, "onpolicy_logprob_diff", 0.01), (2, "onpolicy_warning", 1.0), (3, "onpolicy_warning", 1.0)]
    RunMetric.objects.bulk_create([RunMetric(run=run, step=s, name=n, value=v) for s, n, v in metrics[:2]])
    assert 'id="off-policy-warning"' not in client.get(f"/runs/{run.pk}/").content.decode()
    RunMetric.objects.bulk_create([RunMetric(run=run, step=s, name=n, value=v) for s, n, v in metrics[2:]])
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="off-policy-warning"' in page and "at steps 2, 3 the sampler" in page
