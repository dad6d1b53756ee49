from __future__ import annotations

import json

import pytest

from environments.diagnosis.exports import diagnosis_example
from environments.registry import make
from training.config import ConfigError
from training.diagnoser_eval import weak_episode
from training.diagnosis_view import as_diagnoser_record, diagnoser_record, diagnosis_answer, parse_diagnosis_answer
from training.recipes.sft import SFTConfig, select_records, training_pairs

DIAGNOSIS = {
    "step_index": 3,
    "category": "wrong_arguments",
    "explanation": "It answered a colour it never looked up.",
    "correction": {"name": "answer", "arguments": {"color": "red"}},
    "evidence_steps": [3],
}
ANSWER = '{"step_index": 3, "correction": {"name": "answer", "arguments": {"color": "red"}}}'


def test_a_diagnoser_record_shows_the_whole_trajectory_and_supervises_only_the_compact_answer(tokenizer):
    failed = weak_episode("toolgym/chain", 2)  # owner(gus), lookup(river), answer(orange): a wrong colour
    record = diagnoser_record(failed, DIAGNOSIS)
    user, agent = record["steps"]
    assert user["source"] == "user" and agent["source"] == "agent" and not agent["tool_calls"]
    assert agent["message"] == ANSWER == diagnosis_answer(DIAGNOSIS)
    assert "[3] agent: calls answer(" in user["message"] and "[1] agent: calls owner(" in user["message"]
    assert record["header"]["meta"]["view"] == "diagnosis" and record["header"]["meta"]["diagnosis"] == DIAGNOSIS
    ((_, episode),) = training_pairs(
        select_records([record], SFTConfig(model="m", data="x", view="diagnosis")), tokenizer, SFTConfig(model="m", data="x")
    )
    trained = [t for t, m in zip(episode.input_ids, episode.mask, strict=True) if m]
    assert tokenizer.decode(trained, skip_special_tokens=True) == ANSWER


def test_the_exports_diagnosis_view_trains_the_compact_answer_after_its_own_prompt():
    failed = weak_episode("toolgym/chain", 2)
    example = json.loads(json.dumps(diagnosis_example(failed, DIAGNOSIS, env_tools=make("toolgym/chain", 2).tools())))
    assert example["steps"][1]["tool_calls"][0]["name"] == "submit_diagnosis"
    converted = as_diagnoser_record(example)
    assert converted["steps"][0]["message"] == example["steps"][0]["message"]
    assert converted["steps"][1]["message"] == ANSWER and not converted["steps"][1]["tool_calls"]
    assert "tools" not in converted["header"]
    assert as_diagnoser_record(converted) is converted


def test_the_exports_diagnosis_view_shows_the_whole_trajectory_not_a_prefix_ending_at_the_answer():
    failed = weak_episode("toolgym/chain", 2)
    early = {**DIAGNOSIS, "step_index": 1}
    assert early["step_index"] < len(failed["steps"]) - 1
    example = diagnosis_example(failed, early, env_tools=make("toolgym/chain", 2).tools())
    assert example["header"]["meta"]["episode_steps"] == len(failed["steps"])
    last = failed["steps"][-1]
    assert f"[{last['index']}]" in example["steps"][0]["message"]


def test_sft_with_view_diagnosis_keeps_only_diagnosis_records():
    failed = weak_episode("toolgym/chain", 2)
    kept = select_records([failed, diagnoser_record(failed, DIAGNOSIS)], SFTConfig(model="m", data="x", view="diagnosis"))
    assert [r["header"]["meta"]["view"] for r in kept] == ["diagnosis"]
    with pytest.raises(ConfigError, match="view='other'"):
        SFTConfig(model="m", data="x", view="other")
    with pytest.raises(AssertionError, match="not a diagnosis-view record"):
        as_diagnoser_record(failed)


@pytest.mark.parametrize(
    "text",
    [
        ANSWER,
        "The first error: " + ANSWER + " and then more text {",
        '<tool_call>{"name": "submit_diagnosis", "arguments": ' + ANSWER + "}</tool_call>",
    ],
)
def test_a_good_answer_parses_to_its_step_and_correction(text):
    parsed = parse_diagnosis_answer(text)
    assert parsed.ok and parsed.step_index == 3
    assert parsed.correction == {"name": "answer", "arguments": {"color": "red"}}


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("step 3, answer red", "no JSON object"),
        ('{"step_index": 3, "correction": {"name": "answer"', "not valid JSON"),
        ('{"step_index": -1, "correction": {"name": "answer", "arguments": {}}}', "step_index"),
        ('{"step_index": true, "correction": {"name": "answer", "arguments": {}}}', "step_index"),
        ('{"step_index": "3", "correction": {"name": "answer", "arguments": {}}}', "step_index"),
        ('{"step_index": 3}', "correction"),
        ('{"step_index": 3, "correction": {"name": "", "arguments": {}}}', "correction"),
        ('{"step_index": 3, "correction": {"name": "answer", "arguments": "red"}}', "correction.arguments"),
    ],
)
def test_a_malformed_answer_is_an_error_naming_the_field(text, error):
    parsed = parse_diagnosis_answer(text)
    assert not parsed.ok and parsed.step_index is None and parsed.correction is None
    assert error in parsed.error
