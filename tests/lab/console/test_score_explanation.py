"""The viewer explains a score: each component, rubric item and policy check with pass or fail, its reason, and a
link to the step that holds its evidence (lab/console/score_explanation.py)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from environments import registry
from environments.meta import ScoreComponent
from environments.runner import make_policy, run_episode
from environments.trajectory import make_step, new_record
from lab.console.score_explanation import MAX_LINES, explain
from lab.trajectories.services import episodes_ingest

pytestmark = pytest.mark.django_db


def _rows(html: str) -> list[str]:
    body = html.split('id="score-explanation"', 1)[1].split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", row)).strip() for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S)]


def test_a_workdesk_episode_shows_each_rubric_item_with_its_reason(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    env = registry.make("workdesk/analyst", seed=0)
    record = run_episode(env, make_policy("shallow-reader", env, 0))  # copies numbers without aggregating: fails figures
    episode = episodes_ingest(project=project_a, records=[record], user=role_users["owner"])[0].episode
    html = login(role_users["viewer"]).get(f"/episodes/{episode.pk}/").content.decode()
    rows = _rows(html)
    components = {row.split(" ")[1]: row for row in rows if row.startswith("component ")}
    assert components["audit"].startswith("component audit pass 1.000 share of the workspace files the deliverable cites")
    assert components["rubric"].startswith("component rubric fail 0.000 credit earned by the items met (figure 3, answer 3")
    assert "rubric figure:revenue_total/Q4 fail figure 6781.9 vs 6279.5 (±0.5) revenue_total/Q4" in rows
    assert "rubric forbid:stale/revenue_total/Q4 pass forbidden-value absent stale/revenue_total/Q4" in rows
    facts = html.split('id="score-facts"', 1)[1].split("</dl>", 1)[0]
    assert "cited" in facts and "board/q4_review.slides.json" in facts  # the other details, as facts


def test_a_storebench_episode_says_what_each_component_measures_and_weighs(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    env = registry.make("storebench/payment-outage", seed=0)
    record = run_episode(env, make_policy("smart-triage", env, 0))
    episode = episodes_ingest(project=project_a, records=[record], user=role_users["owner"])[0].episode
    html = login(role_users["viewer"]).get(f"/episodes/{episode.pk}/").content.decode()
    rows = {row.split(" ")[1]: row for row in _rows(html) if row.startswith("component ")}
    assert sorted(rows) == ["cash_safety", "inventory", "profit", "satisfaction", "service"]
    components = record["header"]["score"]["components"]
    service = components["service"]
    assert "units shipped on time / units customers wanted; weight 0.35 in quality" in rows["service"]
    assert f"adds {0.35 * service:.3f}" in rows["service"]
    assert "composite = profit × (0.4 + 0.6 × quality)" in rows["profit"]
    for name, row in rows.items():  # every row has a reason beyond its name and value
        assert len(row.split(f"{components[name]:.3f}", 1)[1].strip()) > 20, row
    step = re.search(r"step (\d+) fulfil_orders", rows["service"])  # evidence: the first step that fulfils orders
    assert step is not None
    assert "fulfil_orders" in [call["name"] for call in episode.steps.get(index=int(step.group(1))).tool_calls]


def test_a_policy_violation_links_to_the_first_call_of_the_tool_it_names(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    steps = [
        make_step(
            index=0,
            message="",
            tool_calls=[{"id": "a", "name": "lookup_customer", "arguments": {"id": "C1"}}],
            results=[{"call_id": "a", "content": "ok", "is_error": False}],
        ),
        make_step(
            index=1,
            message="",
            tool_calls=[{"id": "b", "name": "issue_credit", "arguments": {"customer": "C1"}}],
            results=[{"call_id": "b", "content": "ok", "is_error": False}],
        ),
    ]
    score = {
        "composite": 0.0,
        "passed": False,
        "components": {"policy": 0.0, "state": 1.0},
        "termination_reason": "user_closed",
        "details": {
            "violations": ["issue_credit for C1 before verifying their identity"],
            "missing_statements": ["refund_window"],
            "template": "refund",
        },
    }
    header = {
        "env": "toyenv",
        "task": "desk",
        "seed": 3,
        "source": "upload",
        "policy": {"name": "agent"},
        "score": score,
        "tools": [
            {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in ("lookup_customer", "issue_credit")
        ],
    }
    episode = episodes_ingest(project=project_a, records=[new_record(header=header, steps=steps)], user=role_users["owner"])[0].episode
    html = login(role_users["viewer"]).get(f"/episodes/{episode.pk}/").content.decode()
    assert "ended: user_closed" in html
    rows = _rows(html)
    assert "policy issue_credit for C1 before verifying their identity fail step 1 issue_credit" in rows
    assert "statement not made refund_window fail" in rows
    assert 'href="?at=1#step-1"' in html.split('id="score-explanation"', 1)[1]


def test_a_long_rubric_is_cut_and_says_how_much_and_no_score_shows_nothing() -> None:
    items = [{"id": f"i{n}", "kind": "figure", "ok": n % 2 == 0, "why": "x", "evidence": []} for n in range(MAX_LINES + 15)]
    explained = explain({"composite": 0.5, "passed": False, "details": {"items": items, "note": "y" * 500}})
    assert len(explained.lines) == MAX_LINES and explained.more == 15
    assert explained.facts == [("note", "y" * 159 + "…")]
    assert explain(None).empty and explain({"composite": 1.0}).empty


def test_a_measure_that_happens_to_be_zero_is_a_value_not_a_fail() -> None:
    """A desktop session finished without submit reports shell_aware = 0: a training reward, so no fail badge."""
    desktop = registry.env_meta("desktop").score_components
    shown = explain({"composite": 0.0, "components": {"shell_aware": 0.0, "goal": 1.0}}, components=desktop)
    assert [(line.name, line.ok) for line in shown.lines] == [("goal", None), ("shell_aware", None)]
    declared = {"check": ScoreComponent("a check", check=True), "share": ScoreComponent("a share")}
    shown = explain({"components": {"check": 0.0, "share": 1.0, "other": 0.5}}, components=declared)
    assert [(line.name, line.ok) for line in shown.lines] == [("check", False), ("other", None), ("share", True)]


def test_a_desktop_episode_stopped_before_submit_says_it_has_no_grade(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    env = registry.make("desktop/edit-cell", seed=1)
    record = run_episode(env, make_policy("gui-only", env, 1), max_steps=2)  # the harness' cap, long before submit
    assert (record["header"]["termination_reason"], record["header"]["score"]["termination_reason"]) == ("max_steps", None)
    episode = episodes_ingest(project=project_a, records=[record], user=role_users["owner"])[0].episode
    html = login(role_users["viewer"]).get(f"/episodes/{episode.pk}/").content.decode()
    assert '<p class="no-grade" id="score-ungraded">No grade: the episode reached its step cap without submit.</p>' in html
    composite = html.split('id="episode-composite">', 1)[1].split("</dd>", 1)[0]
    assert composite.startswith("no grade") and "failed" not in composite
    assert "Measured when it ended, not a grade" in html and "How the score was made" not in html
    assert [row for row in _rows(html) if " pass " in f"{row} " or " fail " in f"{row} "] == []


def test_no_grade_names_why_it_ended_and_what_would_have_graded_it() -> None:
    unfinished = {"composite": 0.0, "passed": False, "components": {"check": 0.0}, "termination_reason": None, "details": {"gates": ["x"]}}
    shown = explain(unfinished, ended="agent_stop", graded_by="submit", session=True)
    assert shown.ungraded == "No grade: the session ended without submit."
    assert [(line.kind, line.ok) for line in shown.lines] == [("component", None), ("gate", None)]  # values, never pass or fail
    assert explain(unfinished, ended="cancelled").ungraded == "No grade: a person stopped the episode before the environment graded it."
    assert explain(unfinished, ended="user_left").ungraded == "No grade: the episode ended (user_left) before the environment graded it."
    assert not explain({"components": {}, "termination_reason": None}).empty  # a bare no-grade still says so
    abandoned = explain(None, ended="abandoned", graded_by="submit", session=True)  # left idle: no score at all
    assert abandoned.ungraded == "No grade: the session was abandoned without submit." and not abandoned.lines
    assert explain(None).empty  # still running: nothing to say yet
    # A score the environment wrote at its end, and a foreign score that never had the key, are grades.
    assert explain({**unfinished, "termination_reason": "agent_stop"}, ended="agent_stop").ungraded == ""
    assert explain({"composite": 0.0, "components": {"check": 0.0}}, ended="agent_stop").lines[0].ok is False


def test_a_desktop_episode_that_submits_is_graded() -> None:
    env = registry.make("desktop/edit-cell", seed=1)
    record = run_episode(env, make_policy("oracle", env, 1))
    score = record["header"]["score"]
    assert record["header"]["termination_reason"] == score["termination_reason"] == "agent_stop"
    desktop = registry.env_meta("desktop")
    assert explain(score, components=desktop.score_components, ended="agent_stop", graded_by=desktop.graded_by).ungraded == ""
