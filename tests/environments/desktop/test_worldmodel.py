from __future__ import annotations

import io
import json
import sys
import types
from itertools import islice
from pathlib import Path
from typing import Any

import pytest

from environments.core import ToolCall
from environments.desktop import worldmodel
from environments.desktop.widgets import accessibility_tree
from environments.desktop.worldmodel import anchor_records, export, main, record_transitions
from environments.desktop.worldmodel_eval import evaluate, summarise, transition_scores
from environments.desktop.worldmodel_predict import EditModel, NoChange, apply_atoms, atoms_of, context_keys, target_of
from environments.desktop.worldmodel_text import WORLDMODEL_VIEW, sft_record
from environments.desktop.worldmodel_tree import flatten, unflatten
from environments.policies import make_policy
from environments.runner import run_episode
from environments.trajectory import validate_record
from tests.environments.desktop.conftest import do, new_desktop

TRAIN = ("move-files", "reply-mail", "change-setting")
HELD_OUT = ("buy-cheapest", "schedule-event", "edit-cell")


def _record(anchor: str = "gui-only", task: str = "reply-mail", seed: int = 1000, drift: str = "none") -> dict[str, Any]:
    env = new_desktop(task, seed, drift)
    return run_episode(env, make_policy(anchor, env, seed))


def _tuples(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for r in records for t in record_transitions(r)]


@pytest.fixture(scope="module")
def split() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Training tuples from the training tasks' seeds 1-3, held-out ones from other tasks on seeds 1000-1001."""
    anchors = ("gui-only", "random-valid", "cli-preferring")
    train = _tuples(list(anchor_records(TRAIN, range(1, 4), ("none", "high"), anchors)))
    test = _tuples(list(anchor_records(HELD_OUT, (1000, 1001), ("none", "high"), anchors)))
    return train, test


def test_tuples_are_what_the_environment_did() -> None:
    record = _record()
    env = new_desktop("reply-mail", 1000)
    tuples = list(record_transitions(record))
    assert [t["step"] for t in tuples] == [s["index"] for s in record["steps"][1:]]
    for t, step in zip(tuples, record["steps"][1:], strict=True):
        call = step["tool_calls"][0]
        assert t["action"] == {"name": call["name"], "arguments": call["arguments"]}
        assert t["tree"] == accessibility_tree(env.screen())
        env.step(ToolCall(call["name"], call["arguments"]))
        assert t["next_tree"] == accessibility_tree(env.screen())
        assert (t["task"], t["seed"], t["drift"], t["policy"], t["screenshot_sha256"]) == ("reply-mail", 1000, "none", "gui-only", None)
    assert tuples[0]["action"] == {"name": "open_app", "arguments": {"app": "mail"}}
    assert "mail.window" in flatten(tuples[0]["next_tree"]) and "mail.window" not in flatten(tuples[0]["tree"])


def test_export_is_deterministic_and_says_it_is_tree_only_without_a_renderer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "environments.desktop.render", None)  # as if render.py were not installed
    outputs, summaries = [], []
    for _ in range(2):
        out = io.StringIO()
        summaries.append(export(anchor_records(["change-setting"], [1000, 1001], ["none", "high"], ["gui-only"]), out))
        outputs.append(out.getvalue())
    assert outputs[0] == outputs[1] and outputs[0].count("\n") == summaries[0]["tuples"] > 8
    assert summaries[0] == {
        "format": worldmodel.FORMAT,
        "episodes": 4,
        "tuples": summaries[0]["tuples"],
        "diverged": [],
        "renderer": "missing",
    }
    assert {json.loads(line)["drift"] for line in outputs[0].splitlines()} == {"none", "high"}


def test_a_renderer_adds_both_screenshots_hashes_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = types.ModuleType("environments.desktop.render")
    fake.render_png = lambda root: json.dumps(accessibility_tree(root)).encode()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "environments.desktop.render", fake)
    out = io.StringIO()
    assert export([_record(task="change-setting")], out, png=True)["renderer"] == "used"
    first = json.loads(out.getvalue().splitlines()[0])
    assert json.loads(__import__("base64").b64decode(first["next_screenshot_png"])) == first["next_tree"]
    assert first["screenshot_sha256"] != first["next_screenshot_sha256"] and len(first["screenshot_sha256"]) == 64


def test_with_the_renderer_the_hashes_are_the_environments_own_screenshots() -> None:
    renderer = worldmodel.load_renderer()
    assert renderer is not None, "render.py and Pillow are part of the project"
    first, second = islice(record_transitions(_record(task="change-setting"), renderer=renderer), 2)
    env = new_desktop("change-setting", 1000)
    assert do(env, "observe", screenshot=True).content["screenshot_sha256"] == first["screenshot_sha256"]
    do(env, first["action"]["name"], **first["action"]["arguments"])
    assert (
        do(env, "observe", screenshot=True).content["screenshot_sha256"] == first["next_screenshot_sha256"] == second["screenshot_sha256"]
    )
    assert first["screenshot_sha256"] != first["next_screenshot_sha256"]


def test_a_diverging_record_gives_its_steps_before_the_divergence() -> None:
    record = _record()
    record["steps"][3]["state_hash"] = "0" * 32
    out = io.StringIO()
    summary = export([record], out, screenshots=False)
    assert summary["diverged"] == [{"record": 0, "step": 3}] and summary["renderer"] == "off"
    assert [json.loads(line)["step"] for line in out.getvalue().splitlines()] == [1, 2]


def test_steps_with_several_calls_give_no_tuple_and_other_environments_are_refused() -> None:
    record = _record()
    for step in record["steps"]:
        step["state_hash"] = None  # a hand-made record: two calls in one step has no recorded chain to check
    record["steps"][1]["tool_calls"].append(record["steps"][2]["tool_calls"][0])
    assert [t["step"] for t in record_transitions(record)][:2] == [2, 3]
    with pytest.raises(ValueError, match="'toolgym'"):
        list(record_transitions({"header": {"env": "toolgym"}, "steps": []}))


def test_atoms_describe_every_transition_completely(split: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    for t in split[1]:
        assert unflatten(flatten(t["tree"])) == t["tree"]
        atoms = atoms_of(flatten(t["tree"]), flatten(t["next_tree"]), t["action"])
        assert apply_atoms(t["tree"], t["action"], atoms) == t["next_tree"], (t["task"], t["step"], t["action"])


def test_the_learnt_predictor_beats_no_change_on_held_out_tasks(split: tuple[list[dict[str, Any]], list[dict[str, Any]]]) -> None:
    train, test = split
    assert {t["task"] for t in train}.isdisjoint({t["task"] for t in test})
    scores = evaluate(train, test)["scores"]
    none, learnt = scores["no-change"]["all"], scores["learnt edits"]["all"]
    assert none["recall"] == 0.0 and none["precision"] is None and none["n"] == learnt["n"] == len(test)
    assert learnt["exact"] > none["exact"] + 0.03
    assert learnt["f1"] > 0.4 and learnt["precision"] > 0.5
    assert scores["learnt edits"]["type"]["exact"] > scores["no-change"]["type"]["exact"]  # typed text lands in the focused field
    assert scores["learnt edits"]["submit"]["exact"] == scores["no-change"]["submit"]["exact"] == 1.0


def _node(node_id: str, role: str = "button", **extra: Any) -> dict[str, Any]:
    return {"id": node_id, "role": role, "name": node_id.title(), "bounds": [0, 0, 10, 10], **extra}


def test_metrics_on_a_hand_made_pair_of_trees() -> None:
    before = {**_node("desktop", "desktop"), "children": [_node("ok"), _node("name", "textbox"), _node("old")]}
    real = {
        **_node("desktop", "desktop"),
        "children": [_node("ok"), _node("name", "textbox", value="al", states=["focused"]), _node("new")],
    }
    guess = {**_node("desktop", "desktop"), "children": [_node("ok"), _node("name", "textbox", states=["focused"]), _node("new")]}
    # real changes: name (value + focus), old removed, new added; the guess gets old and new right, name wrong
    scores = transition_scores(before, guess, real)
    assert scores == {"exact": 0, "predicted": 3, "real": 3, "correct": 2}
    assert transition_scores(before, real, real) == {"exact": 1, "predicted": 3, "real": 3, "correct": 3}
    summary = summarise([scores, transition_scores(before, real, real), transition_scores(before, before, real)])
    assert summary == {"n": 3, "exact": 1 / 3, "precision": 5 / 6, "recall": 5 / 9, "f1": 10 / 15}
    assert summarise([transition_scores(before, before, before)])["f1"] is None


def test_a_click_by_id_under_a_promotion_targets_the_promotion() -> None:
    ad = {**_node("ad.mail", "dialog", states=["ad"]), "bounds": [0, 0, 100, 100]}
    tree = {**_node("desktop", "desktop"), "bounds": [0, 0, 100, 100], "children": [_node("mail.reply"), ad]}
    flat = flatten(tree)
    assert target_of(flat, {"name": "click", "arguments": {"id": "mail.reply"}}) == "ad.mail"
    assert context_keys(flat, {"name": "click", "arguments": {"id": "mail.reply"}})[1] == ("click", "dialog:ad")
    assert target_of(flat, {"name": "click", "arguments": {"id": ["not", "an", "id"]}}) is None


def test_learnt_edits_move_a_list_selection() -> None:
    def tree(selected: str) -> dict[str, Any]:
        items = [
            {
                **_node(f"mail.item.m{i}", "listitem", **({"states": ["selected"]} if f"m{i}" == selected else {})),
                "bounds": [0, 20 * i, 10, 10],
            }
            for i in range(4)
        ]
        return {**_node("desktop", "desktop"), "children": [{**_node("mail.list", "list"), "children": items}]}

    train = [
        {"tree": tree(f"m{i}"), "action": {"name": "click", "arguments": {"id": f"mail.item.m{i + 1}"}}, "next_tree": tree(f"m{i + 1}")}
        for i in range(3)
    ]
    model = EditModel.learn(train)
    assert model.predict(tree("m3"), {"name": "click", "arguments": {"id": "mail.item.m0"}}) == tree("m0")
    assert NoChange().predict(tree("m3"), {"name": "click", "arguments": {"id": "mail.item.m0"}}) == tree("m3")


def test_the_sft_view_is_a_valid_record_whose_answer_is_the_next_screen() -> None:
    t = next(record_transitions(_record()))
    record = sft_record(t)
    assert validate_record(record) == [] and record["header"]["meta"]["view"] == WORLDMODEL_VIEW
    user, agent = record["steps"]
    assert 'Action: open_app {"app": "mail"}' in user["message"] and "[desktop] desktop" in user["message"]
    assert agent["source"] == "agent" and "[mail.window] window" in agent["message"] and "[mail.window]" not in user["message"]


def test_the_cli_exports_evaluates_and_refuses_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    common = ["--seeds", "1000", "--anchors", "gui-only", "--no-screenshots"]
    assert main(["export", "--tasks", "change-setting,reply-mail", *common, "--out", str(train)]) == 0
    assert main(["export", "--tasks", "schedule-event", *common, "--out", str(test)]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["episodes"] == 1
    assert main(["evaluate", "--train", str(train), "--test", str(test)]) == 0
    assert "| learnt edits | **all** |" in capsys.readouterr().out
    assert main(["sft", "--tuples", str(test), "--out", str(tmp_path / "sft.jsonl")]) == 0
    assert len((tmp_path / "sft.jsonl").read_text().splitlines()) == len(test.read_text().splitlines())
    (tmp_path / "bad.jsonl").write_text(json.dumps({"format": "other"}) + "\n")
    assert main(["evaluate", "--train", str(tmp_path / "bad.jsonl"), "--test", str(test)]) == 2
    assert "line 1: not a desktop-worldmodel/1 tuple" in capsys.readouterr().err
    record = _record(task="schedule-event")  # the same episode as a recorded one: the same tuples
    (tmp_path / "recorded.jsonl").write_text(json.dumps(record) + "\n")
    assert main(["export", "--records", str(tmp_path / "recorded.jsonl"), "--no-screenshots", "--out", str(tmp_path / "r.jsonl")]) == 0
    assert (tmp_path / "r.jsonl").read_text() == test.read_text()
    (tmp_path / "records.jsonl").write_text(json.dumps({"header": {}}) + "\n")
    assert main(["export", "--records", str(tmp_path / "records.jsonl"), "--out", str(tmp_path / "x.jsonl")]) == 2
    assert "records.jsonl line 1: not a trajectory record" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["export", "--tasks", "fly-to-moon", "--out", str(train)])
    assert "task 'fly-to-moon' is not one of" in capsys.readouterr().err
