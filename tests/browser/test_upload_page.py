"""In chromium (issue 44): a researcher drags a file onto the upload page and follows the import to its episodes; a
refused file shows the API's message; a large file shows its progress; the form works without JavaScript; an expert
sees no form. On the uploaded episodes, the pivotal search runs where it can and says why where it cannot."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from environments import registry
from environments.runner import make_policy, run_episode
from tests.browser.test_console_e2e import login

pytestmark = [pytest.mark.browser, pytest.mark.slow]
FIXTURES = Path(__file__).resolve().parents[1] / "lab" / "ingest" / "fixtures"
TAU = "tool-calling-gpt-4o-0.0_range_0-3_user-gpt-4o-llm_0315101500.json"


def drop_file(page: Any, selector: str, name: str, text: str) -> None:
    """What a person's drag from the file manager delivers: dragenter, dragover and drop carrying the file."""
    transfer = page.evaluate_handle(
        """([name, text]) => { const t = new DataTransfer(); t.items.add(new File([text], name, {type: "application/json"})); return t; }""",
        [name, text],
    )
    for event in ("dragenter", "dragover", "drop"):
        page.dispatch_event(selector, event, {"dataTransfer": transfer})


def upload_and_wait(page: Any) -> list[str]:
    page.click("#upload-submit")
    page.wait_for_selector("#import-state:text('imported')", timeout=60_000)
    return [a.get_attribute("href") for a in page.locator("#import-episodes a").all()]


def test_a_researcher_drags_a_file_in_and_reaches_its_episodes_and_their_pivots(
    console: Any, browser: Any, shoot: Any, tmp_path: Path
) -> None:
    page = login(browser, console, "rita")
    page.click("nav >> text=Upload")
    page.wait_for_url(f"{console.url}/uploads/")
    drop_file(page, "#upload-dropzone", TAU, (FIXTURES / TAU).read_text())
    assert page.locator("#upload-file-name").inner_text().startswith(TAU)
    links = upload_and_wait(page)
    assert page.locator("#upload-progress").get_attribute("value") == "100"
    assert page.locator("#import-report").inner_text().startswith("3 new episodes, 0 already stored · format taubench")
    shoot(page, "upload-done")
    # a failed tau-bench episode: its environment is not installed here, and the viewer says so instead of a form
    failed = next(a for a in page.locator("#import-episodes li").all() if "failed" in a.inner_text())
    failed.locator("a").click()
    page.wait_for_selector("#pivotal-unavailable")
    assert page.locator("#pivotal-form").count() == 0
    assert (
        page.locator("#pivotal-unavailable")
        .inner_text()
        .startswith("No pivotal search here: its environment 'tau-bench' is not installed here, so there is no environment to replay")
    )
    assert len(links) == 3
    shoot(page, "upload-pivot-unavailable")
    # a StoreBench episode uploaded from a file: the search runs and the viewer labels the step
    env = registry.make("storebench/cash-crunch", seed=0)
    record = run_episode(env, make_policy("do-nothing", env, 0), max_steps=40)
    page.goto(f"{console.url}/uploads/")
    page.set_input_files("#upload-file", {"name": "idle.json", "mimeType": "application/json", "buffer": json.dumps(record).encode()})
    page.select_option("select[name=format]", "native")
    [episode] = upload_and_wait(page)
    page.click(f"#import-episodes a[href='{episode}']")
    page.click("#pivotal-form button[type=submit]")
    page.wait_for_selector("#pivotal-label a", timeout=60_000)
    assert re.fullmatch(r"pivotal step \d+", page.locator("#pivotal-label a").inner_text())
    shoot(page, "upload-pivot-found")


def test_a_refused_file_shows_the_apis_message_and_a_large_one_its_progress(console: Any, browser: Any, shoot: Any) -> None:
    page = login(browser, console, "rita")
    page.goto(f"{console.url}/uploads/")
    lines = (FIXTURES / "openai_chat.jsonl").read_text().splitlines()
    broken = json.loads(lines[1])
    broken["messages"][0]["role"] = "wizard"
    with page.expect_file_chooser() as chooser:
        page.click("#upload-file")
    chooser.value.set_files({"name": "chat.jsonl", "mimeType": "text/plain", "buffer": "\n".join([lines[0], json.dumps(broken)]).encode()})
    page.focus("#upload-submit")
    page.keyboard.press("Enter")
    page.wait_for_selector("#upload-error")
    assert page.locator("#upload-error p.error").inner_text() == (
        "record 1 in chat.jsonl, field messages[0].role: unknown role 'wizard'; expected system, developer, user, assistant, tool or function"
    )
    assert "HTTP 400 · invalid_upload" in page.locator("#upload-error").inner_text()
    shoot(page, "upload-refused")
    # a 6 MB file sent at about 2 MB/s: the bar moves through the upload, then the import finishes
    big = {"messages": [{"role": "user", "content": "x" * 6_000_000}, {"role": "assistant", "content": "ok"}]}
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0, "downloadThroughput": -1, "uploadThroughput": 2_000_000})
    page.set_input_files("#upload-file", {"name": "big.jsonl", "mimeType": "text/plain", "buffer": json.dumps(big).encode()})
    page.click("#upload-submit")
    seen = set()
    for _ in range(200):
        seen.add(int(page.locator("#upload-progress").get_attribute("value") or 0))
        if page.locator("#import-state").count():
            break
        page.wait_for_timeout(50)
    assert any(0 < value < 100 for value in seen), seen
    assert re.search(r"MB of 5\.7 MB sent \(\d+%\)|Uploaded\.|Sent;", page.locator("#upload-progress-text").inner_text())
    page.wait_for_selector("#import-state:text('imported')", timeout=60_000)
    shoot(page, "upload-large")


def test_the_form_works_without_javascript_and_an_expert_sees_no_form(console: Any, browser: Any, shoot: Any) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{console.url}/accounts/login/")
    page.fill("input[name=username]", "rita")
    page.fill("input[name=password]", "rita-password")
    page.click("button[type=submit]")
    page.goto(f"{console.url}/uploads/")
    page.set_input_files("#upload-file", str(FIXTURES / "sharegpt_tools.json"))
    page.click("#upload-submit")
    page.wait_for_url(re.compile(r"/uploads/\d+/$"))
    for _ in range(60):
        if page.locator("#import-state").inner_text() == "imported":
            break
        page.wait_for_timeout(500)
        page.click("text=reload")
    assert page.locator("#import-state").inner_text() == "imported"
    assert page.locator("#import-episodes a").count() == 2
    shoot(page, "upload-no-js")
    context.close()
    expert = login(browser, console, "erin")
    expert.goto(f"{console.url}/uploads/")
    assert expert.locator("#upload-form").count() == 0
    assert "owners and researchers upload episodes" in expert.locator("#upload-refused").inner_text()
