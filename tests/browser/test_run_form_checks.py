"""In chromium (issue 44): a researcher fills the "New training run" form. A base model the store does not hold is
refused beside its field with the models that exist; "Check the dataset" lists the matching episodes with the partial
demonstration marked; a config that leaves nothing to train on is refused with each skipped episode and why; ticking
"Include partial demonstrations" starts a run that records the choice."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from environments import registry
from environments.runner import make_policy, run_episode
from tests.browser.conftest import ConsoleServer, seeded_console
from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def console(tmp_path_factory: Any, seeded_state: tuple[Path, str]) -> Iterator[ConsoleServer]:
    """The seeded console with a model store holding one model folder (`org/tiny`: a config.json, never loaded here)."""
    store = tmp_path_factory.mktemp("models")
    (store / "org" / "tiny").mkdir(parents=True)
    (store / "org" / "tiny" / "config.json").write_text("{}")
    server = seeded_console(tmp_path_factory.mktemp("console"), seeded_state)
    server.env["PRACTICUM_MODEL_STORE"] = str(store)
    server.start()
    yield server
    server.stop()


def test_the_run_form_checks_the_model_and_the_training_data(console: Any, browser: Any, shoot: Any) -> None:
    env = registry.make("storebench/cash-crunch", seed=1)
    cut = run_episode(env, make_policy("do-nothing", env, 1), max_steps=8)
    [stored] = console.api("POST", "/api/v1/episodes/", cut)["episodes"]
    page = login(browser, console, "rita")
    page.click("nav >> text=Runs")
    page.click("#run-form summary")
    page.select_option("select[name=recipe]", "sft")
    page.fill("input[name=base_model]", "no/such-model")
    page.click("#run-form button:text('Start run')")
    page.wait_for_selector("#run-form .field-error")
    assert (
        page.locator("#run-form .field-error")
        .first.inner_text()
        .startswith("base_model='no/such-model': no such model; the model store has:")
    )
    shoot(page, "run-form-unknown-model")
    assert page.locator("#run-form .field-error").first.inner_text().endswith("the model store has: org/tiny")
    page.fill("input[name=base_model]", "org/tiny")
    page.fill("input[name=dataset-task]", "storebench/cash-crunch")
    page.click("#dataset-check")
    page.wait_for_selector("#dataset-summary")
    assert "1 partial demonstration (left out: tick" in page.locator("#dataset-summary").inner_text()
    row = page.locator(f"#dataset-episodes tr:has(a[href='/episodes/{stored['id']}/'])")
    assert row.locator(".tag").inner_text() == "partial: max_steps"
    shoot(page, "run-form-dataset-preview")
    page.fill("textarea[name=config]", "min_score = 1.1")
    page.click("#run-form button:text('Start run')")
    page.wait_for_selector("#dataset-error")
    refusal = page.locator("#dataset-error").inner_text()
    assert refusal.startswith("none of the ") and "has anything to train on:" in refusal
    assert f"1 partial demonstration (ended by max_steps), not included: episode {stored['id']}" in refusal
    assert "score below min_score=1.1" in refusal
    shoot(page, "run-form-no-training-data")
    page.fill("textarea[name=config]", "max_steps = 1")
    page.check("#include-partial")
    page.click("#run-form button:text('Start run')")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    assert "partial demonstrations included" in page.locator("#run-dataset").inner_text()  # the run page's dataset sentence
    shoot(page, "run-include-partial")
