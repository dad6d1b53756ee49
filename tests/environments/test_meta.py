"""Environment metadata: what each environment declares for the lab, checked where it is declared."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from environments import registry
from environments.core import ToolCall
from environments.meta import EnvMeta, Panel
from environments.policies import make_policy, policy_names


def test_a_panel_with_a_renderer_outside_the_fixed_set_is_refused() -> None:
    with pytest.raises(AssertionError, match="renderer 'pie' is not one of"):
        Panel("Sales", "get_sales_report", renderer="pie")
    with pytest.raises(AssertionError, match="only the image and files renderers take an action tool"):
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
        "list_purchase_orders",
        "list_tickets",
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
