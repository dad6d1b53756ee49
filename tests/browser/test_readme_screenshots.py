"""The README's screenshots, taken as a person meets each page: a fresh console (what `make run` gives), the admin
clicks the empty dashboard's one button and the first-minute card shows the anchors running; a session of the demo's
scenario mid-play; the finished session turn by turn beside the anchors; a smart-triage episode with its score
explanation and credit graph; two runs compared; the upload page; the diagnoses page.

    make screenshots     # PRACTICUM_README_SCREENSHOTS=1: writes docs/screenshots/*.jpg (1280x800, JPEG quality 80)

Without the variable the images go to test-output/readme/, so the suite never rewrites the committed ones. Each page
is also checked for what would stop a reader: a server error, raw "None", an empty main heading.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ROOT, ConsoleServer
from tests.browser.test_console_e2e import run_tool

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]
VIEWPORT = {"width": 1280, "height": 800}
MAX_BYTES = 200_000
RUNS = """
from lab.projects.models import Project
from lab.runs.models import RunMetric, TrainingRun
project = Project.objects.get()
ids = []
for name, lr, losses in (("sft-lr3e-4", 0.0003, (2.1, 1.6, 1.3, 1.1)), ("sft-lr1e-4", 0.0001, (2.1, 1.9, 1.7, 1.5))):
    run = TrainingRun.objects.create(project=project, name=name, recipe="sft", base_model="smol-base", status="finished", progress=1.0,
                                     config={"learning_rate": lr, "max_steps": 4, "batch_size": 8})
    RunMetric.objects.bulk_create([RunMetric(run=run, step=s + 1, name=m, value=v * f) for s, v in enumerate(losses)
                                   for m, f in (("loss", 1.0), ("grad_norm", 0.7))])
    ids.append(run.pk)
print(*ids)
"""
DIAGNOSE = """
from lab.diagnoses.analysis import diagnosis_propose_rule
from lab.trajectories.models import Episode
for episode in Episode.objects.filter(source="rollout", agent__name__in=["do-nothing", "naive-restock"]).order_by("pk")[:2]:
    diagnosis_propose_rule(episode=episode, anchor="smart-triage")
print("ok")
"""


def _out() -> Path:
    folder = ROOT / "docs" / "screenshots" if os.environ.get("PRACTICUM_README_SCREENSHOTS") == "1" else ROOT / "test-output" / "readme"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def snap(page: Any, name: str) -> Path:
    """The viewport as the reader sees it, after checking the page says nothing broken."""
    text = page.locator("main").inner_text() if page.locator("main").count() else page.inner_text("body")
    assert "Server Error" not in text and "Traceback" not in text, name
    assert not re.search(r"(?<![\w-])None(?![\w-]| yet)", text), f"{name}: a raw None on the page"
    path = _out() / f"{name}.jpg"
    page.screenshot(path=str(path), type="jpeg", quality=80)
    assert path.stat().st_size < MAX_BYTES, f"{path.name}: {path.stat().st_size} bytes"
    return path


@pytest.fixture(scope="module")
def fresh_console(tmp_path_factory: Any, migrated_state: Path) -> Iterator[ConsoleServer]:
    server = ConsoleServer(tmp_path_factory.mktemp("readme"))
    server.load(migrated_state)
    server.env.pop("DJANGO_SUPERUSER_USERNAME", None)
    server.env["DJANGO_SUPERUSER_PASSWORD"] = "admin-password"
    server.manage("manage.py", "bootstrap")
    server.start()
    yield server
    server.stop()


def test_the_readme_screenshots_show_the_pages_as_they_are(fresh_console: ConsoleServer, browser: Any) -> None:
    console = fresh_console
    page = browser.new_context(viewport=VIEWPORT).new_page()
    page.set_default_timeout(60_000)
    page.goto(f"{console.url}/accounts/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "admin-password")
    page.press("input[name=password]", "Enter")
    page.wait_for_url(f"{console.url}/")

    page.click("#demo-run")
    page.wait_for_selector("#demo-progress[data-stage=running] #demo-progress-current >> text=on seed", timeout=180_000)
    page.wait_for_timeout(3_000)
    snap(page, "dashboard-first-minute")
    page.wait_for_selector("#demo-progress[data-stage=done]", timeout=300_000)

    page.goto(f"{console.url}/play/")
    task = page.locator("select[name=task] option", has_text="payment-outage").first.get_attribute("value")
    page.select_option("form.inline-form >> nth=0 >> select[name=task]", task)
    seed = re.search(r"seeds (\d+)", page.locator("main").inner_text())
    page.fill("form.inline-form >> nth=0 >> input[name=seed]", seed.group(1) if seed else "61")
    page.click("form.inline-form >> nth=0 >> button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    page.keyboard.press("i")
    page.wait_for_selector("#panel-1 .panel-head small:has-text('step 1')")
    run_tool(page, "list_tickets")
    page.wait_for_selector("#last-result >> text=Step 2: list_tickets")
    page.evaluate("window.scrollTo(0, 0)")  # the tool's form sits low in the list; the result is at the top
    snap(page, "play-mid-session")
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#finish-session")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    page.click("#turns-link")
    page.wait_for_selector("#turns-table")
    snap(page, "turns-compare")

    page.goto(f"{console.url}/episodes/?agent=smart-triage")
    page.locator("table.episodes tbody a").first.click()
    page.wait_for_selector("#credit-graph svg")
    page.locator("#score-explanation").scroll_into_view_if_needed()
    snap(page, "episode-viewer")

    a, b = console.manage("manage.py", "shell", "-v", "0", "-c", RUNS).split()
    page.goto(f"{console.url}/runs/compare?ids={a}&ids={b}")
    page.wait_for_selector('figure[data-metric="loss"] canvas')
    snap(page, "runs-compare")

    page.goto(f"{console.url}/uploads/")
    snap(page, "upload")

    console.manage("manage.py", "shell", "-v", "0", "-c", DIAGNOSE)
    page.goto(f"{console.url}/diagnoses/")
    snap(page, "diagnoses")
