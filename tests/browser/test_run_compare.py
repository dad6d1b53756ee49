"""In chromium: a researcher ticks a native and an external run on the runs page, presses Compare, and the compare
page draws one uPlot chart per shared metric with a legend entry per run. A run's own page, in the same console:
its charts under one heading per role, loaded and live."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NATIVE = """
from lab.projects.models import Project
from lab.runs.models import RunMetric, TrainingRun
run = TrainingRun.objects.create(project=Project.objects.get(slug="acme"), name="grpo-native", recipe="grpo", base_model="tiny", status="finished",
                                 config={"learning_rate": 0.0001, "max_steps": 3})
RunMetric.objects.bulk_create([RunMetric(run=run, step=s, name="loss", value=v) for s, v in ((1, 2.0), (2, 1.5), (3, 1.0))])
print(run.pk)
"""


def test_a_researcher_compares_a_native_and_an_external_run(console: Any, browser: Any, shoot: Any) -> None:
    native = int(console.manage("manage.py", "shell", "-v", "0", "-c", NATIVE).strip())
    external = console.api(
        "POST",
        "/api/v1/runs/external/",
        {"name": "trl-sft", "recipe": "trl-sft", "base_model": "Qwen/Qwen3-0.6B", "config": {"learning_rate": 0.0003, "max_steps": 3}},
    )["id"]
    console.api(
        "POST", f"/api/v1/runs/{external}/metrics/", {"metrics": [{"step": s, "values": {"loss": v}} for s, v in ((1, 1.9), (3, 1.2))]}
    )
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/runs/")
    page.check(f"#compare-run-{native}")
    page.check(f"#compare-run-{external}")
    page.wait_for_timeout(6_000)  # one 5 s poll of the rows: the ticks survive it (hx-preserve)
    page.click("#run-compare-form button[type=submit]")
    page.wait_for_url(re.compile(r"/runs/compare\?ids=\d+&ids=\d+$"))  # newest run first, as the list shows them
    assert sorted(page.url.split("?ids=")[1].split("&ids=")) == sorted([str(native), str(external)])
    page.wait_for_selector('figure[data-metric="loss"] canvas')
    legend = page.locator('figure[data-metric="loss"] .u-legend').inner_text()
    assert f"grpo-native #{native} (recorded)" in legend and f"trl-sft #{external} (" in legend
    assert page.locator(f"#compared-run-{external}").inner_text().count("1.2000") == 1
    # every metric either run logged, and the settings that differ, as the reader sees them
    final = page.locator("#compare-final").inner_text()
    assert "loss\t1.2000\t1.0000" in final  # newest run first, as ticked on the runs page
    config = page.locator("#compare-config")
    assert "differ" in config.locator("caption").inner_text() or "identical" in config.inner_text()
    assert [row.inner_text().split("\t")[0] for row in config.locator("table").first.locator("tbody tr").all()] == ["learning_rate"]
    config.locator("summary").click()  # the settings alike, folded until asked for
    assert "max_steps\t3" in config.locator("details table").inner_text()
    shoot(page, "run-compare")


ROLES = """
from lab.projects.models import Project
from lab.runs.models import RunMetric, TrainingRun
names = ["adversary_entropy", "adversary_flip_rate", "adversary_loss", "agent_grad_norm", "agent_loss", "agent_lr",
         "curriculum_reward_mean", "eval_gap_asr", "eval_real_asr", "eval_real_benign_utility", "eval_real_completion_clean",
         "eval_sim_asr", "eval_sim_benign_utility", "eval_sim_completion_clean", "kl", "train/grad_norm", "train/loss", "train/lr"]
run = TrainingRun.objects.create(project=Project.objects.get(slug="acme"), name="advsim-roles", recipe="advsim", base_model="tiny", status="finished")
RunMetric.objects.bulk_create([RunMetric(run=run, step=s, name=n, value=0.1 * s) for n in names for s in (1, 2)])
print(run.pk)
"""


def test_a_runs_charts_stand_under_one_heading_per_role(console: Any, browser: Any, shoot: Any) -> None:
    run = int(console.manage("manage.py", "shell", "-v", "0", "-c", ROLES).strip())
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/runs/{run}/")
    page.wait_for_selector('details[data-group="eval_sim"] figure[data-metric="eval_sim_asr"] canvas')
    placed = page.evaluate(
        """() => Array.from(document.querySelectorAll('figure[data-metric]')).map(f => {
             const g = f.closest('details[data-group]'); return [g ? g.dataset.group : '', f.dataset.metric]; })"""
    )
    assert placed == [
        ["", "curriculum_reward_mean"],
        ["", "eval_gap_asr"],
        ["", "kl"],
        ["adversary", "adversary_entropy"],
        ["adversary", "adversary_flip_rate"],
        ["adversary", "adversary_loss"],
        ["agent", "agent_grad_norm"],
        ["agent", "agent_loss"],
        ["agent", "agent_lr"],
        ["eval_real", "eval_real_asr"],
        ["eval_real", "eval_real_benign_utility"],
        ["eval_real", "eval_real_completion_clean"],
        ["eval_sim", "eval_sim_asr"],
        ["eval_sim", "eval_sim_benign_utility"],
        ["eval_sim", "eval_sim_completion_clean"],
        ["train", "train/grad_norm"],
        ["train", "train/loss"],
        ["train", "train/lr"],
    ]
    assert page.locator('details[data-group="agent"] > summary').inner_text() == "agent (3)"
    assert page.locator("figure[data-metric] canvas").count() == 18  # every chart drawn where it stands
    shoot(page, "run-roles")


def test_a_watched_run_groups_metrics_as_they_arrive_and_its_card_follows_the_end(console: Any, browser: Any) -> None:
    """Live, through the run's websocket: an external trainer reports three agent metrics and then finishes."""
    run = console.api("POST", "/api/v1/runs/external/", {"name": "live-roles", "recipe": "advsim", "base_model": "tiny"})["id"]
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/runs/{run}/")
    assert page.locator("#run-status .cancel-form").count() == 1 and "No metrics logged yet" in page.inner_text("#charts")
    page.wait_for_timeout(1_000)  # the socket connects
    values = {"agent_loss": 0.5, "agent_lr": 1e-5, "agent_grad_norm": 0.1, "kl": 0.01}
    console.api("POST", f"/api/v1/runs/{run}/metrics/", {"metrics": [{"step": 1, "values": values}]})
    page.wait_for_selector('details[data-group="agent"] figure[data-metric="agent_lr"] canvas')
    assert page.locator('#charts figure[data-metric="kl"]').count() == 1
    console.api("POST", f"/api/v1/runs/{run}/finish/", {"status": "finished"})
    page.wait_for_selector("#run-state:text-is('finished')")  # a selector, not a function: the CSP forbids eval
    page.wait_for_selector("#run-status .cancel-form", state="detached")  # the card was rendered again: no cancel
    assert "Ended—" not in page.inner_text("#run-status").replace("\n", "").replace("\t", "")
