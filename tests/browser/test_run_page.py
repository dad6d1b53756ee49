"""A training run's page as a researcher walks it in chromium (issue 44), each finding of that walk as they now see it:

- a checkpoint saved while the page is open appears in its table, and a run that ends without one says so, not
  "No checkpoints yet." (which stayed until a reload);
- a chart's numbers read right: a learning rate of 2e-4 is not "0", twelve million tokens not "2,500,000";
- a checkpoint evaluated from its row on two seeds runs both (two model loads at once failed every job), and the
  row shows the evaluation's figures, not "(finished)" after a dash;
- an evaluation whose rollouts failed says which and why instead of "finished" over "No episodes yet.";
- the configuration and the dataset read as settings and sentences, not raw JSON.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from environments import registry
from environments.policies import make_policy
from environments.runner import run_episode
from tests.browser.conftest import ConsoleServer, seeded_console
from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def console(tmp_path_factory: Any, seeded_state: tuple[Path, str]) -> Iterator[ConsoleServer]:
    """The seeded console, its model store holding the tiny model, and four short toolgym demonstrations to train on."""
    from training.tiny import build_tiny_model

    workdir = tmp_path_factory.mktemp("runpage")
    server = seeded_console(workdir, seeded_state)
    server.env["PRACTICUM_MODEL_STORE"] = str(workdir / "models")
    build_tiny_model(workdir / "models" / "tiny", seed=0)
    server.start(timeout=300)  # the server imports torch: slower than most on a loaded machine
    for seed in range(4):
        env = registry.make("toolgym/chain", seed=seed)
        server.api("POST", "/api/v1/episodes/?project=acme", run_episode(env, make_policy("expert", env, seed)))
    yield server
    server.stop()


def _login(browser: Any, console: ConsoleServer) -> Any:
    page = login(browser, console, "rita")
    page.set_default_timeout(60_000)  # training and evaluating on a busy two-core machine: each answer may wait
    return page


def _start_run(page: Any, console: ConsoleServer, task: str = "toolgym/chain") -> str:
    """The "New training run" form, filled with the keyboard and sent with Enter; the run's page URL."""
    page.click("nav >> text=Runs")
    page.click("#run-form summary")
    page.select_option("select[name=recipe]", "sft")
    page.fill("textarea[name=config]", "max_steps = 4\ndevice = cpu\nsave_every = 2")
    page.fill("input[name=dataset-task]", task)
    page.fill("input[name=base_model]", "tiny")
    page.keyboard.press("Enter")  # the form's first button: Start run
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    return str(page.url)


def _evaluate(page: Any, step: int, seeds: str) -> None:
    row = page.locator("#run-checkpoints tr", has=page.locator(f"td:text-is('{step}')"))
    row.locator("input[name=task_set]").fill("toolgym/chain")
    row.locator("input[name=seeds]").fill(seeds)
    row.locator("input[name=seeds]").press("Enter")
    page.wait_for_url(re.compile(r"/evaluations/\d+/$"))
    page.wait_for_selector("#evaluation-status dd:text-is('finished')", timeout=240_000)  # the page polls every 3 s


def test_a_checkpoint_saved_while_watching_appears_and_an_end_without_one_says_so(console: ConsoleServer, browser: Any) -> None:
    page = _login(browser, console)
    run = console.api("POST", "/api/v1/runs/external/", {"name": "watched", "recipe": "sft", "base_model": "tiny"})["id"]
    page.goto(f"{console.url}/runs/{run}/")
    assert page.locator("#no-checkpoints").inner_text() == "No checkpoints yet."
    page.wait_for_timeout(1_000)  # the socket connects
    console.api("POST", f"/api/v1/runs/{run}/checkpoints/", {"step": 100, "path": "s3://bucket/ckpt-100", "eval_results": {}})
    page.wait_for_selector("#run-checkpoints tr:has(code:text-is('s3://bucket/ckpt-100'))")
    assert page.locator("#no-checkpoints").count() == 0
    assert "not evaluated" in page.locator("#run-checkpoints tbody").inner_text()

    failing = console.api("POST", "/api/v1/runs/external/", {"name": "fails early", "recipe": "sft", "base_model": "tiny"})["id"]
    page.goto(f"{console.url}/runs/{failing}/")
    page.wait_for_timeout(1_000)
    console.api("POST", f"/api/v1/runs/{failing}/finish/", {"status": "failed", "error": "out of memory"})
    page.wait_for_selector("#run-state:text-is('failed')")
    page.wait_for_selector("#no-checkpoints:text-is('No checkpoints: the run saved none before it failed.')")
    assert page.locator("#no-metrics").inner_text() == "No metrics: the run logged none before it failed."


CHARTED = """
from lab.projects.models import Project
from lab.runs.models import RunMetric, TrainingRun
run = TrainingRun.objects.create(project=Project.objects.get(slug="acme"), name="charted", recipe="sft", base_model="tiny", status="finished")
RunMetric.objects.bulk_create([RunMetric(run=run, step=s, name=n, value=v * s) for s in (1, 2, 3)
                               for n, v in (("lr", 0.0002), ("compute_tokens", 4_166_667), ("loss", 0.5))])
print(run.pk)
"""


def test_a_charts_numbers_read_as_logged_when_the_mouse_is_over_it(console: ConsoleServer, browser: Any, shoot: Any) -> None:
    run = int(console.manage("manage.py", "shell", "-v", "0", "-c", CHARTED).strip())
    page = _login(browser, console)
    page.goto(f"{console.url}/runs/{run}/")
    for metric, shown in (("lr", "2e-4"), ("compute_tokens", "4,166,667"), ("loss", "0.5")):
        figure = page.locator(f'figure[data-metric="{metric}"]')
        figure.locator(".u-over").wait_for()
        box = figure.locator(".u-over").bounding_box()
        page.mouse.move(box["x"] + 2, box["y"] + box["height"] / 2)  # over step 1, at the left edge
        legend = figure.locator(".u-legend")
        assert legend.locator(".u-series").nth(0).locator(".u-value").inner_text() == "1"
        assert legend.locator(".u-series").nth(1).locator(".u-value").inner_text() == shown, metric
    shoot(page, "run-page-charts")


def test_a_checkpoint_evaluated_from_its_row_shows_its_figures_there(console: ConsoleServer, browser: Any, shoot: Any) -> None:
    page = _login(browser, console)
    run_url = _start_run(page, console)
    page.wait_for_selector("#run-state:text-is('finished')", timeout=240_000)
    page.wait_for_selector("#run-checkpoints tr:has(td:text-is('4'))")  # saved while the page was open
    assert page.locator("#run-settings").inner_text().split("\n")[1:] == ['device\t"cpu"', "max_steps\t4", "save_every\t2"]
    dataset = page.locator("#run-dataset").inner_text()
    assert dataset == 'Dataset: 4 episodes frozen at launch, matched by task="toolgym/chain"; partial demonstrations left out.'
    assert page.locator("#run-config pre").count() == 0  # no raw JSON

    _evaluate(page, 4, "0,1")
    assert page.locator("#failed-jobs").count() == 0
    assert "finished 2" in page.locator("#evaluation-status").inner_text()
    assert page.locator("#evaluation-status table").last.locator("tbody tr").count() == 2  # an episode per seed
    evaluation = page.url.rstrip("/").rsplit("/", 1)[1]
    page.go_back()
    page.reload()
    line = page.locator(f"#checkpoint-evaluation-{evaluation}").inner_text()
    assert re.fullmatch(rf"evaluation {evaluation} on toolgym/chain: mean composite \d\.\d{{3}} .*n=2 · passed \d+%", line), line
    assert run_url == page.url
    shoot(page, "run-page-evaluated")


def test_an_evaluation_whose_rollouts_fail_says_why(console: ConsoleServer, browser: Any) -> None:
    page = _login(browser, console)
    _start_run(page, console)
    page.wait_for_selector("#run-state:text-is('finished')", timeout=240_000)
    page.wait_for_selector("#run-checkpoints tr:has(td:text-is('2'))")
    folder = page.locator("#run-checkpoints tr:has(td:text-is('2')) code").inner_text()
    shutil.rmtree(folder)  # the checkpoint's files are gone: loading it fails
    _evaluate(page, 2, "0")
    failed = page.locator("#failed-jobs").inner_text()
    assert failed.startswith("1 rollout failed, so the figures leave it out:"), failed
    assert f"toolgym/chain seed 0: FileNotFoundError: checkpoint {folder} is not on this machine" in failed
    assert page.locator("#no-episodes").inner_text() == "No episodes: every rollout failed (above)."
    page.go_back()  # the checkpoint's row says the same, in short
    page.reload()
    assert "finished, no episode scored (1 job failed)" in page.locator("#run-checkpoints").inner_text()


def test_a_run_on_episodes_too_long_to_fit_says_what_to_change(console: ConsoleServer, browser: Any) -> None:
    """The seeded StoreBench anchor run (529 steps) passes the dataset check, which has no tokenizer, then fails: its
    page said "AssertionError: no actor turns to train on in …/dataset.jsonl (min_score=None)"."""
    page = _login(browser, console)
    _start_run(page, console, task="storebench/cash-crunch")
    page.wait_for_selector("#run-state:text-is('failed')", timeout=240_000)
    error = page.locator("#run-status pre.error").inner_text()
    assert error.startswith("ValueError: no actor turns to train on in "), error
    assert re.search(
        r": the episode is cut at max_tokens=2048 before its first actor turn \(the earliest starts at token \d+\): raise max_tokens", error
    )
