"""Exploration: screen identity without per-seed content, both explorers within budget, the README table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from environments.core import ToolCall
from environments.desktop import explore
from environments.desktop.explore import Graph, candidates, make_env, random_walk, systematic
from environments.desktop.screen_id import element_sig, screen_id
from environments.desktop.widgets import accessibility_tree


def _screen(seed: int, drift: str, *calls: tuple[str, dict]) -> str:
    env = make_env(seed, drift)
    for name, args in calls:
        env.step(ToolCall(name, args))
    return screen_id(accessibility_tree(env.screen()))


def test_the_same_kind_of_screen_has_one_id_across_seeds_and_selections() -> None:
    mail = ("click", {"id": "launch.mail"})
    assert _screen(1, "none", mail) == _screen(2, "none", mail)  # other messages, same screen
    assert _screen(1, "none", mail, ("click", {"id": "mail.item.m1"})) == _screen(1, "none", mail, ("click", {"id": "mail.item.m2"}))
    assert _screen(1, "none", mail) != _screen(1, "none", mail, ("click", {"id": "mail.compose"}))  # a form is a new screen
    assert _screen(1, "none") != _screen(1, "none", mail)


def test_element_sig_leaves_content_out_and_keeps_labels() -> None:
    assert element_sig({"id": "mail.item.m2", "role": "listitem", "name": "bob: Lunch"}) == "listitem mail.item"
    assert element_sig({"id": "mail.reply", "role": "button", "name": "Reply"}) == "button mail.reply Reply"


def test_candidates_try_one_of_each_kind_then_every_element() -> None:
    env = make_env(1, "none")
    env.step(ToolCall("click", {"id": "launch.mail"}))
    tree = accessibility_tree(env.screen())
    some, every = candidates(tree), candidates(tree, every=True)
    items = lambda cs: [a["arguments"]["id"] for _, a in cs if a["name"] == "click" and a["arguments"]["id"].startswith("mail.item.")]  # noqa: E731
    assert items(some) == ["mail.item.m1", "mail.item.m6"] and len(items(every)) == 6
    assert {"key enter", "key escape", "key tab", "scroll down"} <= {k for k, _ in some}


@pytest.mark.parametrize("drift", ["none", "high"])
def test_both_explorers_stay_within_the_budget_and_record_their_graph(drift: str) -> None:
    sys_graph, rnd = systematic(make_env(3, drift), 120), random_walk(make_env(3, drift), 120, 3)
    for graph in (sys_graph, rnd):
        assert graph.steps <= 120 and len(graph.nodes) >= 7  # the desktop and the six apps at least
        assert {s for s, _, _ in graph.edges} <= set(graph.nodes) and {t for _, _, t in graph.edges} <= set(graph.nodes)
        assert [n for _, n in graph.curve] == list(range(1, len(graph.nodes) + 1))
    # the systematic explorer stops early only when going back to a screen would not fit in what is left
    assert rnd.steps == 120 and sys_graph.steps > 120 - 1 - sys_graph.metrics()["max_depth"]


def test_a_systematic_path_leads_back_to_its_screen() -> None:
    graph = systematic(make_env(2, "high"), 150)
    for screen, node in list(graph.nodes.items())[:8]:
        env = make_env(2, "high")
        for a in node["path"]:
            env.step(ToolCall(a["name"], a["arguments"]))
        assert screen_id(accessibility_tree(env.screen())) == screen


def test_run_writes_one_result_file_per_run_and_the_table_reads_them(tmp_path: Path) -> None:
    assert (
        explore.main(
            [
                "run",
                "--seeds",
                "1,2",
                "--budget",
                "60",
                "--drift",
                "none",
                "--out",
                str(tmp_path / "out"),
                "--results",
                str(tmp_path / "res"),
            ]
        )
        == 0
    )
    files = sorted(p.name for p in (tmp_path / "res").glob("*.json"))
    assert files == ["random-none-b60-s1.json", "random-none-b60-s2.json", "systematic-none-b60-s1.json", "systematic-none-b60-s2.json"]
    data = json.loads((tmp_path / "res" / files[2]).read_text())
    assert data["config"] == {"explorer": "systematic", "drift": "none", "budget": 60, "carrier_task": "change-setting"}
    assert data["seed"] == 1 and {"screens", "edges", "steps"} <= set(data["metrics"]) and "commit" in data and "machine" in data
    row = explore.table(tmp_path / "res").splitlines()[2]
    assert row.startswith("| none | 60 | 2 | ") and (tmp_path / "out" / "pairs.jsonl").exists()


def test_rejects_a_bad_budget_with_the_value() -> None:
    with pytest.raises(SystemExit):
        explore.main(["run", "--budget", "0", "--out", "x"])


def test_the_readme_table_is_what_the_committed_result_files_give() -> None:
    text = explore.README_PATH.read_text()
    shown = text.split(explore.TABLE_START, 1)[1].split(explore.TABLE_END, 1)[0]
    assert shown.strip() == explore.readme_section().strip(), "run `python -m environments.desktop.explore report` and commit README.md"
    assert isinstance(Graph(start="").metrics(), dict)
