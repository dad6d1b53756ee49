"""The play page's forms and panels in Debian's chromium, used as an expert uses them, keyboard and mouse:

- the workdesk: a multi-line file typed into write_file's textarea passes the task the oracle agent passes;
  after each call the focus is back in the tool list, so the next shortcut works, and keys typed in a field stay
  in the field;
- fields with a pattern show an example and the rule in words, never the regular expression;
- StoreBench: a purchase order's JSON lines are checked as they are typed (submit disabled while invalid); the
  inventory says why days of cover are empty instead of "null";
- the options desk: the Market and P&L panels show what their calls bought.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from environments import registry
from environments.runner import make_policy, run_episode
from tests.browser.test_console_e2e import login
from tests.browser.test_csp import WATCH_VIOLATIONS, _counts

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _play(browser: Any, console: Any, task: str, seed: int) -> tuple[Any, list[str]]:
    page = login(browser, console, "erin")
    page.add_init_script(WATCH_VIOLATIONS)
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if _counts(message) else None)
    page.goto(f"{console.url}/play/")
    page.select_option("select[name=task]", task)
    page.fill("input[name=seed]", str(seed))
    page.click("form.inline-form button[type=submit]")
    page.wait_for_url(re.compile(r"/play/\d+/$"))
    return page, errors


def _focused(page: Any, selector: str) -> bool:
    return bool(page.evaluate("(s) => document.activeElement !== null && document.activeElement.matches(s)", selector))


def test_an_expert_types_a_multi_line_file_and_passes_the_workdesk_task_an_agent_passes(console: Any, browser: Any) -> None:
    env = registry.make("workdesk/operations", seed=0)
    record = run_episode(env, make_policy("oracle", env, 0))
    assert record["header"]["score"]["passed"], "the oracle agent passes this task"
    read, write, _ = [call for step in record["steps"] for call in step.get("tool_calls") or []]
    assert write["arguments"]["content"].count("\n") >= 5  # the deliverable is a multi-line file

    page, errors = _play(browser, console, "workdesk/operations", 0)
    page.keyboard.press("r")  # the read_file form opens with its path field focused
    path = page.locator("#tool-read_file [name=path]")
    assert _focused(page, "#tool-read_file [name=path]")
    assert path.get_attribute("placeholder") == "e.g. abc/def.ghi"  # an example, not [A-Za-z0-9_]+(/...
    rule = page.locator("#tool-read_file .field-rule").inner_text()
    assert rule.startswith("Form: one or more letters, digits or _") and "\\" not in rule and "[" not in rule
    page.keyboard.type(read["arguments"]["path"])
    page.keyboard.press("Enter")
    page.wait_for_selector("#last-result >> text=Step 1: read_file")
    assert _focused(page, "#tool-read_file > summary"), "after a call the focus is back in the tool list"

    page.keyboard.press("s")  # so a shortcut works at once: the search form, its text field focused
    assert _focused(page, "#tool-search [name=text]")
    page.keyboard.type("cr")  # "c" and "r" are shortcuts outside a field; inside it they are letters
    assert page.locator("#tool-search [name=text]").input_value() == "cr"
    assert page.locator("#tool-calc").get_attribute("open") is None
    page.keyboard.press("Escape")

    form = page.locator("#tool-write_file")
    form.locator("summary").click()
    assert "Several lines allowed; at most 8000 characters." in form.inner_text()
    form.locator("[name=path]").click()
    page.keyboard.type(write["arguments"]["path"])
    content = form.locator("textarea[name=content]")
    content.click()
    page.keyboard.type(write["arguments"]["content"])  # each "\n" is an Enter: a new line, not a submit
    assert content.input_value() == write["arguments"]["content"]
    form.locator("button[type=submit]").click()
    page.wait_for_selector("#last-result >> text=Step 2: write_file")
    assert "error" not in page.locator("#last-result h2").inner_text()
    assert _focused(page, "#tool-write_file > summary")

    page.locator("#tool-submit > summary").click()
    page.locator("#tool-submit button[type=submit]").click()
    page.wait_for_url(re.compile(r"/episodes/\d+/"))
    assert page.locator("#episode-composite").inner_text() == "1.000 · passed"
    assert page.evaluate("window.__violations") == [] and errors == []


def test_json_lines_are_checked_as_typed_and_the_inventory_says_why_cover_is_empty(console: Any, browser: Any) -> None:
    page, errors = _play(browser, console, "storebench/cash-crunch", 0)
    page.keyboard.press("b")  # the purchase order form, its supplier field focused
    form = page.locator("#tool-create_purchase_order")
    assert _focused(page, "#tool-create_purchase_order [name=supplier_id]")
    assert form.locator("[name=supplier_id]").get_attribute("placeholder") == "e.g. SUP-12"
    assert form.locator(".field-rule").first.inner_text() == "Form: “SUP-”, 1 or 2 digits"
    page.keyboard.type("SUP-1")
    check, run = form.locator(".json-check"), form.locator("button[type=submit]")
    form.locator("textarea[name=lines]").click()
    page.keyboard.type('[{"sku": "P01-BLA-M", "quantity": ')
    assert check.inner_text().startswith("Not valid JSON yet") and run.is_disabled()
    page.keyboard.type("5}]")
    assert check.inner_text() == "Valid JSON." and run.is_enabled()
    page.keyboard.press("Control+A")
    page.keyboard.type('{"sku": "P01-BLA-M", "quantity": 5}')
    assert check.inner_text() == "Expected a JSON list [ ... ], like the example." and run.is_disabled()
    page.keyboard.press("Escape")

    page.keyboard.press("i")  # the inventory panel, one charged call
    page.wait_for_selector("#panel-1 .panel-head small:has-text('step 1')")
    table = page.locator("#panel-1 table.panel-table")
    assert "null" not in table.inner_text()
    empty = table.locator("td.missing").all_inner_texts()
    assert len(empty) == 52 and set(empty) == {"no sales in 14 days"}  # day 0: no SKU has sold yet
    assert page.evaluate("window.__violations") == [] and errors == []


def test_the_options_desk_market_and_pnl_panels_show_what_they_cost(console: Any, browser: Any) -> None:
    page, errors = _play(browser, console, "optionsdesk/train-short", 0)
    titles = page.locator("section.panel h2").all_inner_texts()
    market, pnl = titles.index("Market"), titles.index("P&L")
    page.keyboard.press("m")
    page.wait_for_selector(f"#panel-{market} .panel-head small:has-text('step 1')")
    shown = page.locator(f"#panel-{market}").inner_text()
    assert "As the tool returned it:" in shown and "IDX 307.83" in shown and "No rows." not in shown
    page.keyboard.press("l")
    page.wait_for_selector(f"#panel-{pnl} .panel-head small:has-text('step 2')")
    assert page.locator(f"#panel-{pnl} svg circle.dot").count() == 1  # the equity at the window's first close
    assert "equity: 1000000.0" in page.locator(f"#panel-{pnl} figcaption").inner_text()
    page.keyboard.press("d")  # next_day (a compact one-line result here), then the P&L again: two closes
    page.keyboard.press("Enter")
    page.wait_for_selector("#last-result >> text=Step 3: next_day")
    page.keyboard.press("l")
    page.wait_for_selector(f"#panel-{pnl} .panel-head small:has-text('step 4')")
    assert page.locator(f"#panel-{pnl} svg circle.dot").count() == 2
    assert page.evaluate("window.__violations") == [] and errors == []
