"""Environment metadata: what each environment declares for the lab, checked where it is declared."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from environments import registry
from environments.core import ToolCall
from environments.meta import EnvMeta, Panel
from environments.policies import make_policy, policy_names


def test_a_panel_with_a_renderer_outside_the_fixed_set_is_refused() -> None:
    with pytest.raises(AssertionError, match="renderer 'pie' is not one of"):
        Panel("Sales", "get_sales_report", renderer="pie")
    with pytest.raises(AssertionError, match="only the image, files and screenshot renderers take an action tool"):
        Panel("Sales", "get_sales_report", renderer="table", action_tool="set_price")


def test_a_default_anchor_must_be_one_of_the_anchors_and_panels_need_a_playable_env() -> None:
    with pytest.raises(AssertionError, match="default anchor 'oracle' is not one of its anchors"):
        EnvMeta(env="x", default_anchor="oracle")
    with pytest.raises(AssertionError, match="declare playable=True"):
        EnvMeta(env="x", panels=(Panel("P", "look"),))


def test_each_environment_declares_what_the_lab_reads() -> None:
    metas = {m.env: m for m in registry.list_envs()}
    assert {"storebench", "phantom", "toolgym"} <= set(metas)
    store = metas["storebench"]
    assert store.playable and store.default_anchor == "smart-triage" and store.roles == ()
    assert store.attacks.styles == ("direct", "authority", "quoted", "split") and "hardened" in store.anchors
    assert not metas["toolgym"].attacks and not metas["phantom"].attacks
    assert [p.tool for p in store.panels] == [
        "get_finance",
        "get_inventory",
        "list_orders",
        "list_tickets",
        "list_purchase_orders",
        "get_sales_report",
        "read_news",
    ]
    assert not metas["phantom"].playable and metas["phantom"].default_anchor == "keyword"
    # An uploaded episode may come from an environment this installation lacks: it is shown, never played.
    assert registry.env_meta("nowhere") == EnvMeta(env="nowhere")


def test_panels_that_name_a_missing_tool_or_bad_arguments_are_contract_problems() -> None:
    env = registry.make("storebench/cash-crunch", seed=0)
    meta = EnvMeta(
        env="storebench", playable=True, panels=(Panel("Gone", "no_such_tool"), Panel("Orders", "list_orders", {"status": "lost"}))
    )
    problems = meta.problems(env)
    assert problems[0] == "panel 'Gone': 'no_such_tool' is not a tool of storebench"
    assert problems[1].startswith("panel 'Orders': arguments.status: \"lost\" is not one of")
    assert registry.env_meta("storebench").problems(env) == []


def test_a_screenshot_panel_needs_a_declared_screen_renderer_and_what_an_env_provides_is_a_named_target() -> None:
    env = registry.make(registry.list_tasks("desktop")[0].id, seed=0)
    declared = registry.env_meta("desktop")
    assert declared.screen == "environments.desktop.render:render_png" and declared.problems(env) == []
    undeclared = dataclasses.replace(declared, screen="")
    assert "panel 'Screenshot': the screenshot renderer needs a screen renderer declared (EnvMeta.screen)" in undeclared.problems(env)
    for field_name, bad in (
        ("analyzer", "environments.toolgym.analyzer"),
        ("calibration", "environments.x:calibrate"),
        ("screen", "no spaces:x y"),
    ):
        with pytest.raises(AssertionError, match=field_name):
            EnvMeta(env="x", **{field_name: bad})


def test_anchors_declared_in_the_metadata_are_the_envs_policies() -> None:
    assert policy_names("storebench") == ["do-nothing", "hardened", "naive-restock", "oracle", "random-valid", "smart-triage"]
    env = registry.make("storebench/cash-crunch", seed=0)
    assert make_policy("smart-triage", env, 0).name == "smart-triage"


def test_storebench_anchor_modules_do_not_import_each_other_back() -> None:
    source = Path(registry.__file__).parent / "storebench" / "anchors.py"
    imported = {node.module for node in ast.walk(ast.parse(source.read_text())) if isinstance(node, ast.ImportFrom)}
    assert "environments.storebench.anchors_smart" not in imported


def test_storebench_declares_its_status_line_and_step_cap() -> None:
    env = registry.make("storebench/cash-crunch", seed=0)
    assert env.status_line() == "Day 0 of 35 · 09:00 · 40 of 40 operations left · 540 minutes left in this window"
    env.step(ToolCall(name="get_finance", arguments={}))
    assert env.status()["ops-left"] == "39 of 40 operations left"
    assert env.max_steps == 35 * (40 + 10) + 100 and env.termination_reason is None


def test_an_env_that_declares_no_reason_ends_at_its_horizon() -> None:
    env = registry.make("toolgym/echo", seed=0)
    assert env.termination_reason is None and env.max_steps == 10_000
    env.step(ToolCall(name="say", arguments={"word": "x"}))
    assert env.done and env.termination_reason == "horizon_reached"


def test_a_demo_task_the_environment_lacks_is_a_contract_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    from environments import contract

    store = registry.env_meta("storebench")
    assert store.demo_task == "payment-outage" and contract.check_task("storebench/payment-outage", seed=0) == []
    lost = EnvMeta(env="storebench", anchors=store.anchors, demo_task="gone")
    monkeypatch.setattr(contract, "env_meta", lambda env: lost)
    assert "demo_task 'gone' is not a task of storebench" in contract.check_task("storebench/payment-outage", seed=0)


def test_panel_presentation_is_validated_where_it_is_declared() -> None:
    from environments.meta import Column, Highlight, Series, SortKey

    with pytest.raises(AssertionError, match="give exactly one of below, above, equals"):
        Highlight("days_of_cover", below=3, above=9)
    with pytest.raises(AssertionError, match="css 'red' is not one of"):
        Highlight("days_of_cover", below=3, css="red")
    with pytest.raises(AssertionError, match="'late' is sorted or highlighted but is not one of its columns"):
        Panel("Orders", "list_orders", renderer="table", columns=(Column("order_id"),), sort=(SortKey("late"),))
    with pytest.raises(AssertionError, match="columns, sort and highlights are for the table renderer"):
        Panel("Orders", "list_orders", renderer="json", columns=(Column("order_id"),))
    with pytest.raises(AssertionError, match="series are for the chart renderer"):
        Panel("Cash", "get_finance", renderer="table", series=(Series("cash", "get_finance", y="cash"),))
    with pytest.raises(AssertionError, match="y 'pnl..revenue' is not a dotted path"):
        Series("revenue", "get_finance", y="pnl..revenue")
    with pytest.raises(AssertionError, match="key 'F' is not one lowercase letter or digit"):
        Panel("Cash", "get_finance", key="F")
    with pytest.raises(AssertionError, match="a shortcut key is used twice"):
        EnvMeta(env="x", playable=True, panels=(Panel("Cash", "get_finance", key="f"),), shortcuts={"f": "fulfil_orders"})


def test_highlight_rules_match_numbers_below_or_above_and_exact_values_only() -> None:
    from environments.meta import Highlight

    risk = Highlight("days_of_cover", below=3)
    assert [risk.matches(v) for v in (2.5, 3, None, "2", True)] == [True, False, False, False, False]
    assert Highlight("late", equals=(True,)).matches(True) and not Highlight("late", equals=(True,)).matches(1)
    assert Highlight("total", above=0).matches(0.5) and not Highlight("total", above=0).matches(0)


def test_chart_series_and_shortcuts_that_name_missing_tools_are_contract_problems() -> None:
    from environments.meta import Series

    env = registry.make("storebench/cash-crunch", seed=0)
    meta = EnvMeta(
        env="storebench",
        playable=True,
        panels=(Panel("Cash", "get_finance", renderer="chart", series=(Series("cash", "get_cash", y="cash"),)),),
        shortcuts={"z": "teleport"},
    )
    assert meta.problems(env) == [
        "panel 'Cash': series 'cash' reads 'get_cash', not a tool of storebench",
        "shortcut 'z': 'teleport' is not a tool of storebench",
    ]
    keys = registry.env_meta("storebench").keys()
    assert [k["key"] for k in keys] == ["c", "i", "o", "t", "p", "s", "n", "f", "r", "b", "e"]
    assert keys[1] == {"key": "i", "kind": "panel", "target": "1", "label": "open Inventory"}
    assert keys[-1] == {"key": "e", "kind": "tool", "target": "end_window", "label": "the end_window form"}


def test_a_score_component_moved_by_a_missing_tool_is_a_contract_problem() -> None:
    from environments.meta import ScoreComponent

    env = registry.make("storebench/cash-crunch", seed=0)
    meta = EnvMeta(env="storebench", score_components={"service": ScoreComponent("on time", 0.35, moved_by=("ship_it",))})
    assert meta.problems(env) == ["score component 'service': moved by 'ship_it', not a tool of storebench"]


def test_a_reported_score_component_without_an_explanation_is_a_contract_problem() -> None:
    from environments.contract import unexplained_components

    meta = registry.env_meta("storebench")
    assert unexplained_components(meta, {"service": 1.0, "profit": 0.5}) == []
    assert unexplained_components(meta, {"service": 1.0, "luck": 0.2}) == [
        "score component 'luck' is not explained in EnvMeta.score_components of storebench"
    ]


@pytest.mark.parametrize("env_name", [m.env for m in registry.list_envs()])
def test_every_component_a_default_anchor_episode_reports_is_explained(env_name: str) -> None:
    """One short episode per environment, its default anchor on its first task (at most 40 steps), then the score
    as the viewer would explain it: a new component without an EnvMeta.score_components entry fails here."""
    from environments.contract import unexplained_components

    meta = registry.env_meta(env_name)
    task = registry.list_tasks(env_name)[0]
    env = registry.make(task.id, seed=3)
    env.reset()
    policy = make_policy(meta.default_anchor or policy_names(env_name)[0], env, 3)  # a test's own env may declare no default
    history: list[dict] = [{"index": 0, "source": "env", "results": []}]
    for i in range(40):
        action = policy.act(history, env.tools())
        results = []
        for call in action.tool_calls:
            result = env.step(call)
            results.append({"call_id": call.id, "content": result.content, "is_error": result.is_error})
        history.append({"index": i + 1, "source": "agent", "results": results})
        if env.done or not action.tool_calls:
            break
    components = env.score().components
    assert components, f"{env_name}: its score reports no components"
    assert unexplained_components(meta, components) == []
