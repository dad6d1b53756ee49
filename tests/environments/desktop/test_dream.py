"""Dreams: chained predictions marked dreamed, refused by replay, fidelity by step, the README table."""

from __future__ import annotations

import pytest

from environments.core import EnvError
from environments.desktop import dream
from environments.desktop.worldmodel import anchor_records, record_transitions
from environments.desktop.worldmodel_predict import EditModel, NoChange
from environments.replay import env_for_header, replay_record
from environments.trajectory import validate_record


@pytest.fixture(scope="module")
def model() -> EditModel:
    return dream.train_model(t for r in anchor_records(dream.TRAIN_TASKS, [1], ["none"], ["gui-only"]) for t in record_transitions(r))


@pytest.fixture(scope="module")
def held_out() -> list[dict]:
    return dream.held_out_records([1000], ["gui-only"])[:4]


def test_a_rollout_chains_the_models_own_predictions(model: EditModel, held_out: list[dict]) -> None:
    transitions = list(record_transitions(held_out[0]))
    dreamed, matches = dream.rollout(model, transitions, 3)
    assert len(dreamed) == len(matches) == min(3, len(transitions))
    assert dreamed[1] == model.predict(dreamed[0], transitions[1]["action"])  # from the dream, not the real screen
    assert matches == [d == t["next_tree"] for d, t in zip(dreamed, transitions, strict=False)]


def test_dreamed_records_are_marked_and_never_replay_as_real(model: EditModel, held_out: list[dict]) -> None:
    result, dreams = dream.fidelity([model, NoChange()], held_out, 4)
    assert len(dreams) == len(held_out) and set(result["by_k"]) == {"learnt edits", "no-change"}
    record = dreams[0]
    assert validate_record(record) == [] and record["header"]["meta"] == {
        **record["header"]["meta"],
        "dreamed": True,
        "world_model": "learnt edits",
    }
    assert all(s["state_hash"] is None for s in record["steps"])
    report = replay_record(record)
    assert report["ok"] is False and "dreamed trajectory (world model learnt edits)" in report["refused"]
    with pytest.raises(EnvError) as caught:
        env_for_header(record["header"])
    assert caught.value.code == "dreamed"


def test_fidelity_at_step_one_is_the_one_step_exact_share(model: EditModel, held_out: list[dict]) -> None:
    result, _ = dream.fidelity([model], held_out, 2)
    first = [model.predict(ts[0]["tree"], ts[0]["action"]) == ts[0]["next_tree"] for ts in (list(record_transitions(r)) for r in held_out)]
    assert result["by_k"]["learnt edits"][0] == {"k": 1, "n": len(first), "exact": sum(first) / len(first)}


def test_single_step_data_pairs_the_real_and_the_dreamed_next_screen(model: EditModel, held_out: list[dict]) -> None:
    rows = list(dream.dream_steps(model, held_out[:1]))
    assert rows and all(r["format"] == dream.STEP_FORMAT and r["exact"] == (r["real_next_tree"] == r["dreamed_next_tree"]) for r in rows)


def test_the_readme_table_is_what_the_committed_result_file_gives() -> None:
    text = dream.README_PATH.read_text()
    shown = text.split(dream.TABLE_START, 1)[1].split(dream.TABLE_END, 1)[0]
    assert shown.strip() == dream.readme_section().strip(), "run `python -m environments.desktop.dream report` and commit README.md"
