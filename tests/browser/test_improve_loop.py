"""In chromium, about a minute: a researcher opens a finished evaluation with failing episodes, presses "Improve this
agent", keeps every failing episode (select all), the expert's rule diagnoser and SFT on the tiny model, sets dev and
test seeds, starts the loop, watches the chain advance live to the report, promotes the checkpoint and finds its
lineage (diagnosis job, dataset, run) on the loop page and the new agent on the agents page."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import ConsoleServer, seeded_console
from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]  # ~1 min on a quiet machine; setup dominates on a loaded one

PRELOAD = ("tests.lab.improve.clumsy",)
EVALUATE = """
from lab.projects.models import Project
from lab.rollouts.evaluations import evaluation_launch
from lab.rollouts.models import RolloutJob
from lab.rollouts.services import rollout_run
from lab.trajectories.models import AgentConfig
project = Project.objects.get(slug="acme")
agent = AgentConfig.objects.create(project=project, name="clumsy", kind="scripted", model="clumsy", harness={"max_turns": 3, "max_new_tokens": 12})
evaluation = evaluation_launch(project=project, agent=agent, task_set="toolgym/chain", seeds=[0, 1, 2, 3], enqueue=False)
for job in RolloutJob.objects.filter(evaluation=evaluation):
    rollout_run(job_id=job.pk)
print(evaluation.pk)
"""


@pytest.fixture(scope="module")
def loop_console(tmp_path_factory: Any, seeded_state: tuple[Path, str]) -> Iterator[tuple[ConsoleServer, str]]:
    from training.tiny import build_tiny_model

    workdir = tmp_path_factory.mktemp("improve")
    server = seeded_console(workdir, seeded_state, preload=PRELOAD)
    server.env["PRACTICUM_MODEL_STORE"] = str(workdir / "models")
    tiny = str(build_tiny_model(workdir / "models" / "tiny", seed=0))
    evaluation = server.manage("tests/browser/preload.py", ",".join(PRELOAD), "shell", "-v", "0", "-c", EVALUATE).strip().splitlines()[-1]
    try:
        server.start(timeout=300)  # the server imports torch: slower than most on a loaded machine
        yield server, f"{evaluation}|{tiny}"
    finally:
        server.stop()


def test_a_researcher_takes_an_agent_around_the_loop_to_a_promoted_checkpoint(loop_console: Any, browser: Any, shoot: Any) -> None:
    console, seeded = loop_console
    evaluation, tiny = seeded.split("|")
    page = login(browser, console, "rita")
    page.set_default_timeout(60_000)  # a page of a loaded machine (the loop's worker shares the server's CPU)
    page.goto(f"{console.url}/evaluations/{evaluation}/")
    page.click("#improve-agent")
    page.wait_for_url(f"{console.url}/evaluations/{evaluation}/improve")
    boxes = page.locator('input[name="episodes"]')
    assert boxes.count() == 2
    page.click("#improve-select-all")  # clears every box, then ticks them all again
    assert page.locator('input[name="episodes"]:checked').count() == 0
    page.click("#improve-select-all")
    assert page.locator('input[name="episodes"]:checked').count() == 2
    page.select_option("select[name=diagnoser]", "rule:expert")
    page.fill("input[name=weight-anchors]", "0")
    page.select_option("#improve-recipe", "sft")
    page.fill("input[name=base_model]", tiny)
    page.fill("#improve-recipe-config", '{"max_steps": 2, "save_every": 1, "batch_size": 2, "learning_rate": 0.001, "device": "cpu"}')
    page.fill("input[name=dev_seeds]", "10")
    page.fill("input[name=test_seeds]", "1,20")  # seed 1 failed in the evaluation: its episode is in the picked set
    page.click("#improve-start")
    assert "the picked episodes contains toolgym/chain seed 1, which the loop tests on" in page.locator("#episodes-error").inner_text()
    page.fill("input[name=test_seeds]", "20-21")
    page.click("#improve-start")
    page.wait_for_url(re.compile(r"/loops/\d+/$"))
    shoot(page, "improve-loop-running")
    page.wait_for_selector("#promote", timeout=150_000)  # the chain advances live to the report
    assert page.locator("#loop-report").is_visible() and "composite" in page.locator("#loop-report").inner_text()
    for stage in ("select", "diagnose", "dataset", "train", "checkpoint", "report"):
        assert "finished" in page.locator(f"#stage-{stage}").inner_text(), stage
    assert "2 diagnoses, 2 verified by replay" in page.locator("#stage-diagnose").inner_text()
    page.click("#promote")
    page.wait_for_selector("#promoted")
    promoted = page.locator("#promoted").inner_text()
    assert re.search(r"Promoted: run-\d+-step-\d+ \(hf, .*\), trained by run \d+ on dataset v1 from diagnosis job \d+\.", promoted), (
        promoted
    )
    shoot(page, "improve-loop-promoted")
    page.locator("#promoted a", has_text="run ").click()
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    name = promoted.split("Promoted: ")[1].split(" ")[0]
    page.goto(f"{console.url}/agents/")
    assert name in page.content()


QUEUED_LOOP = """
from lab.improve.services import loop_create
from lab.rollouts.models import Evaluation
evaluation = Evaluation.objects.get(pk={evaluation})
config = {{"base_model": "{tiny}", "recipe_config": {{"max_steps": 2, "device": "cpu"}}, "dev_seeds": [10], "test_seeds": [20],
          "sources": {{"recovery": 1.0, "successes": 1.0, "anchors": 0}}}}
print(loop_create(project=evaluation.project, evaluation=evaluation, config=config, name="to cancel", enqueue=False).pk)
"""


def test_a_researcher_cancels_a_queued_loop_and_sees_it_cancelled_everywhere(loop_console: Any, browser: Any, shoot: Any) -> None:
    console, seeded = loop_console
    evaluation, tiny = seeded.split("|")
    script = QUEUED_LOOP.format(evaluation=evaluation, tiny=tiny)
    loop = console.manage("tests/browser/preload.py", ",".join(PRELOAD), "shell", "-v", "0", "-c", script).strip().splitlines()[-1]
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/loops/{loop}/")
    assert page.locator("#loop-state").inner_text() == "queued · stage select"
    page.focus("#loop-cancel")
    page.keyboard.press("Enter")  # a keyboard user cancels as a mouse user does
    page.wait_for_selector("#loop-cancelled")
    assert page.locator("#loop-state").inner_text() == "cancelled · stage select"
    assert "Cancelled at stage select" in page.locator("#loop-cancelled").inner_text()
    assert page.locator("#loop-cancel").count() == 0 and page.locator("#promote").count() == 0
    assert page.locator("#stage-select .tag").inner_text() == "cancelled"
    shoot(page, "improve-loop-cancelled")
    page.reload()
    assert page.locator("#loop-state").inner_text() == "cancelled · stage select"
    page.click("nav a[href='/loops/']")
    page.wait_for_url(f"{console.url}/loops/")
    row = page.locator("tr", has=page.locator(f"a[href='/loops/{loop}/']"))
    assert "cancelled" in row.inner_text()
    assert console.api("GET", f"/api/v1/loops/{loop}/")["status"] == "cancelled"


CUT_SHORT = """
from lab.rollouts.models import Evaluation
from lab.rollouts.selectors import evaluation_episodes
evaluation = Evaluation.objects.get(pk={evaluation})
cut = [e for e in evaluation_episodes(evaluation) if e.passed][-1]
type(cut).objects.filter(pk=cut.pk).update(termination_reason="timeout")
print(cut.pk)
"""


def test_the_improve_form_marks_partial_demonstrations_and_keeps_the_choice(loop_console: Any, browser: Any, shoot: Any) -> None:
    console, seeded = loop_console
    evaluation, tiny = seeded.split("|")
    cut = console.manage("manage.py", "shell", "-v", "0", "-c", CUT_SHORT.format(evaluation=evaluation)).strip().splitlines()[-1]
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/evaluations/{evaluation}/improve")
    note = page.locator("#partial-successes").inner_text()
    assert "2 successful episodes in this evaluation; 1 of them partial:" in note and f"{cut} partial: timeout" in note
    assert not page.locator("#include-partial").is_checked()
    page.focus("#include-partial")
    page.keyboard.press("Space")
    assert page.locator("#include-partial").is_checked()
    page.fill("input[name=base_model]", tiny)
    page.fill("input[name=test_seeds]", "1")  # refused: seed 1 is a picked episode's; the page comes back with the choice kept
    page.click("#improve-start")
    page.wait_for_selector("#episodes-error")
    assert page.locator("#include-partial").is_checked() and f"{cut} partial: timeout" in page.locator("#partial-successes").inner_text()
    shoot(page, "improve-form-partial")
