"""Task synthesis: every template composes a task whose rubric the graph confirms, and verify() catches a
rubric that disagrees with the graph."""

from __future__ import annotations

import dataclasses
import random

import pytest

from environments.workdesk.graph import build_graph
from environments.workdesk.render import render_workspace
from environments.workdesk.tasks import TEMPLATES, compose, oracle_text, synthesize, verify


@pytest.mark.parametrize("key", sorted(TEMPLATES))
def test_every_template_synthesizes_verified_tasks_over_many_seeds(key: str) -> None:
    for seed in range(12):
        graph = build_graph(seed)
        files = render_workspace(graph)
        task = synthesize(key, graph, files, seed)
        assert verify(task, graph, files) == []
        assert task.deliverable.startswith("out/") and all(p in files for p in task.sources)


def test_the_analyst_rubric_ties_items_to_graph_nodes() -> None:
    graph = build_graph(1000)
    files = render_workspace(graph)
    task = synthesize("analyst", graph, files, 1000)
    by_id = {i.id: i for i in task.items}
    assert by_id["figure:revenue_total/Q4"].value == graph.nodes["revenue_total/Q4"].value
    assert by_id["answer:top_region/Q4"].answer == graph.nodes["top_region/Q4"].text
    assert by_id["forbid:stale/revenue_total/Q4"].value == graph.nodes["stale/revenue_total/Q4"].value
    assert by_id["forbid:draft/top_region/Q4"].answer == graph.nodes["draft/top_region/Q4"].text
    assert "- Q4 total revenue: ... (kEUR; sum of the regions)" in task.brief


def test_verify_rejects_a_rubric_that_disagrees_with_the_graph() -> None:
    graph = build_graph(5)
    files = render_workspace(graph)
    task = compose("hr", graph, random.Random(0))
    wrong = [dataclasses.replace(i, value=i.value + 1) if i.kind == "figure" else i for i in task.items]
    problems = verify(dataclasses.replace(task, items=tuple(wrong)), graph, files)
    assert any("the graph says" in p for p in problems)
    # A trap equal to the right figure would make the rubric contradict itself.
    figure = next(i for i in task.items if i.kind == "figure")
    clash = [dataclasses.replace(i, value=figure.value) if i.kind == "forbidden-value" else i for i in task.items]
    assert any("equals the right figure" in p for p in verify(dataclasses.replace(task, items=tuple(clash)), graph, files))
    # A workspace without the evidence file cannot support the task.
    assert any("no current file" in p for p in verify(task, graph, {k: v for k, v in files.items() if k != "hr/roster.csv"}))


def test_the_oracle_deliverable_has_one_line_per_asked_figure() -> None:
    graph = build_graph(8)
    files = render_workspace(graph)
    task = synthesize("quarter-close", graph, files, 8)
    text = oracle_text(task, graph)
    asked = sum(i.kind in ("figure", "answer") for i in task.items)
    assert asked == 7 and sum(line.startswith("- ") and ": " in line for line in text.split("## Sources")[0].splitlines()) == asked


def test_a_draw_that_fails_verification_is_redrawn_and_none_at_all_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from environments.workdesk import tasks

    graph = build_graph(6)
    files = render_workspace(graph)
    calls: list[str] = []

    def first_fails(task: tasks.WorkTask, graph: object, files: object) -> list[str]:
        calls.append(task.key)
        return ["made up"] if len(calls) == 1 else []

    monkeypatch.setattr(tasks, "verify", first_fails)
    assert synthesize("hr", graph, files, 6).key == "hr" and len(calls) == 2
    monkeypatch.setattr(tasks, "verify", lambda task, graph, files: ["never consistent"])
    with pytest.raises(AssertionError, match=r"workdesk/hr seed 6: no task verified in 8 draws; last: \['never consistent'\]"):
        synthesize("hr", graph, files, 6)
