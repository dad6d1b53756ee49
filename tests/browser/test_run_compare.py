"""In chromium: a researcher ticks a native and an external run on the runs page, presses Compare, and the compare
page draws one uPlot chart per shared metric with a legend entry per run."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NATIVE = """
from lab.projects.models import Project
from lab.runs.models import RunMetric, TrainingRun
run = TrainingRun.objects.create(project=Project.objects.get(slug="acme"), name="grpo-native", recipe="grpo", base_model="tiny", status="finished")
RunMetric.objects.bulk_create([RunMetric(run=run, step=s, name="loss", value=v) for s, v in ((1, 2.0), (2, 1.5), (3, 1.0))])
print(run.pk)
"""


def test_a_researcher_compares_a_native_and_an_external_run(console: Any, browser: Any, shoot: Any) -> None:
    native = int(console.manage("manage.py", "shell", "-v", "0", "-c", NATIVE).strip())
    external = console.api("POST", "/api/v1/runs/external/", {"name": "trl-sft", "recipe": "trl-sft", "base_model": "Qwen/Qwen3-0.6B"})[
        "id"
    ]
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
    shoot(page, "run-compare")
