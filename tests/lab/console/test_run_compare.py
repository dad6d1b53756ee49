"""The run comparison page (lab/console/views/run_compare.py, lab.runs.selectors.run_compare): a native and an
external run on the same charts, scoped to the caller's projects, with precise 400s for bad ids and metrics."""

from __future__ import annotations

from typing import Any

import pytest

from lab.runs.models import RunMetric, TrainingRun

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_runs(project_a: Any, alice: Any) -> tuple[TrainingRun, TrainingRun]:
    """A native GRPO run and an external TRL run in project A: both log loss (at different steps), only one logs kl."""
    from lab.runs.external import external_metrics_report, external_run_create

    native = TrainingRun.objects.create(project=project_a, name="grpo-native", recipe="grpo", base_model="tiny", status="finished")
    RunMetric.objects.bulk_create(
        [RunMetric(run=native, step=s, name=n, value=v) for s, n, v in ((1, "loss", 2.0), (3, "loss", 1.0), (1, "kl", 0.5))]
    )
    external = external_run_create(
        project=project_a, name="trl-sft", recipe="trl-sft", base_model="Qwen/Qwen3-0.6B", config={}, user=alice, provenance="external"
    )
    external_metrics_report(run=external, metrics=[{"step": 2, "values": {"loss": 1.8}}, {"step": 3, "values": {"loss": 1.2, "lr": 1e-5}}])
    return native, external


def test_it_overlays_a_native_and_an_external_run_on_the_metrics_they_share(login: Any, alice: Any, two_runs: Any) -> None:
    native, external = two_runs
    client = login(alice)
    body = client.get(f"/runs/compare.json?ids={native.pk},{external.pk}").json()
    assert body["labels"] == [f"grpo-native #{native.pk} (recorded)", f"trl-sft #{external.pk} (external)"]
    # loss is the only shared metric: the union of steps, None where a run logged nothing at that step
    assert body["metrics"] == {"loss": [[1, 2, 3], [2.0, None, 1.0], [None, 1.8, 1.2]]}
    html = client.get(f"/runs/compare?ids={native.pk}&ids={external.pk}").content.decode()
    assert 'data-metric="loss"' in html and 'data-metric="kl"' not in html and "vendor/uplot/uPlot.iife.min.js" in html
    assert f'data-metrics-url="/runs/compare.json?ids={native.pk}%2C{external.pk}&amp;metric=loss"' in html
    assert "provenance-external" in html and "provenance-recorded" in html and "Qwen/Qwen3-0.6B" in html
    assert "<td>1.0000</td>" in html and "<td>1.2000</td>" in html  # last loss of each run


def test_a_named_metric_one_run_lacks_has_an_empty_series_for_it(login: Any, alice: Any, two_runs: Any) -> None:
    native, external = two_runs
    body = login(alice).get(f"/runs/compare.json?ids={external.pk},{native.pk}&metric=kl,loss").json()
    assert body["metrics"]["kl"] == [[1], [None], [0.5]] and list(body["metrics"]) == ["kl", "loss"]


def test_another_projects_run_is_404_and_its_name_never_shows(login: Any, alice: Any, two_runs: Any, project_b: Any) -> None:
    native, _ = two_runs
    hidden = TrainingRun.objects.create(project=project_b, name="secret-bravo-run", recipe="sft", base_model="tiny")
    client = login(alice)
    for url in (f"/runs/compare?ids={native.pk},{hidden.pk}", f"/runs/compare.json?ids={native.pk},{hidden.pk}"):
        response = client.get(url)
        assert response.status_code == 404 and "secret-bravo-run" not in response.content.decode()
        assert f"No training run {hidden.pk} that you can see." in response.content.decode()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "ids names 0 run; name 2 to 8"),
        ("ids={a}", "ids names 1 run; name 2 to 8"),
        ("ids={a},x", "ids must be an id, got &#x27;x&#x27;"),
        ("ids={a},-3", "ids must be an id, got &#x27;-3&#x27;"),
        ("ids={a}," + "9" * 30, "is outside [1, 9223372036854775807]"),
        ("ids=" + ",".join(str(i) for i in range(1, 10)), "ids names 9 runs; compare at most 8"),
        ("ids={a},{b}&metric=a,b,c,d,e", "metric names 5 metrics; chart at most 4"),
        ("ids={a},{b}&metric=" + "m" * 65, "is 65 characters long; at most 64"),
        ("ids={a},{b}&metric=lo%00ss", "contains a NUL character"),
        ("ids={a},{b}&metric=reward", "metric=&#x27;reward&#x27; is logged by none of runs {a}, {b}; they log: kl, loss, lr"),
    ],
)
def test_it_answers_bad_ids_and_metrics_with_400_naming_them(login: Any, alice: Any, two_runs: Any, query: str, message: str) -> None:
    a, b = (run.pk for run in two_runs)
    response = login(alice).get("/runs/compare?" + query.format(a=a, b=b))
    assert response.status_code == 400
    assert message.format(a=a, b=b) in response.content.decode()


def test_runs_that_share_no_metric_get_a_hint_instead_of_charts(login: Any, alice: Any, project_a: Any) -> None:
    one = TrainingRun.objects.create(project=project_a, name="one", recipe="sft", base_model="tiny")
    two = TrainingRun.objects.create(project=project_a, name="two", recipe="sft", base_model="tiny")
    RunMetric.objects.create(run=one, step=1, name="train/loss", value=1.0)
    html = login(alice).get(f"/runs/compare?ids={one.pk},{two.pk}").content.decode()
    assert "These runs share no metric" in html and "they log train/loss" in html and "data-metric=" not in html


def test_the_runs_list_has_a_checkbox_per_run_in_a_plain_get_form(login: Any, alice: Any, two_runs: Any) -> None:
    native, external = two_runs
    html = login(alice).get("/runs/").content.decode()
    assert '<form method="get" action="/runs/compare" id="run-compare-form">' in html
    for run in (native, external):
        assert f'name="ids" value="{run.pk}" id="compare-run-{run.pk}" form="run-compare-form" hx-preserve' in html


def test_every_logged_metric_and_the_config_diff_are_shown(login: Any, alice: Any, two_runs: Any) -> None:
    native, external = two_runs
    native.config = {"learning_rate": 1e-4, "lora": {"r": 16, "alpha": 32}, "seed": 0}
    native.save(update_fields=["config"])
    external.config = {"learning_rate": 3e-4, "lora": {"r": 16, "alpha": 16}, "seed": 0, "packing": True}
    external.save(update_fields=["config"])
    html = login(alice).get(f"/runs/compare?ids={native.pk},{external.pk}").content.decode()
    final = html.split('id="compare-final"', 1)[1].split("</section>", 1)[0]
    rows = {row.split("</th>")[0].split(">")[-1]: row for row in final.split("<tr>")[2:]}
    assert set(rows) == {"kl", "loss", "lr"}  # every metric either run logs, not only the shared ones
    assert "<td>0.5000</td><td>—</td>" in rows["kl"] and "<td>1.0000</td><td>1.2000</td>" in rows["loss"]
    config = html.split('id="compare-config"', 1)[1].split("</section>", 1)[0]
    assert "3 settings differ (2 alike, below)" in config
    for key, a, b in (("learning_rate", "0.0001", "0.0003"), ("lora.alpha", "32", "16"), ("packing", "—", "true")):
        assert f"<th><code>{key}</code></th><td><code>{a}</code></td><td><code>{b}</code></td>" in config
    assert "<th><code>lora.r</code></th><td><code>16</code></td>" in config.split("<details>", 1)[1]
