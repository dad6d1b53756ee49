from __future__ import annotations

import pytest

from environments.analyzers import GenericAnalyzer, StepAnalysis, analyze_record, analyzer_for
from environments.storebench.analyzer import StoreBenchAnalyzer
from environments.toolgym.analyzer import ToolGymAnalyzer
from environments.trajectory import make_step, new_record


def test_analyzers_are_registered_per_environment_with_a_generic_fallback():
    assert isinstance(analyzer_for("toolgym"), ToolGymAnalyzer)
    assert isinstance(analyzer_for("storebench"), StoreBenchAnalyzer)
    assert isinstance(analyzer_for("servicedesk"), GenericAnalyzer)


def test_a_value_outside_the_unit_interval_is_refused():
    with pytest.raises(AssertionError, match="outside"):
        StepAnalysis("x", 1.5)


def test_only_the_actors_steps_are_analyzed_and_the_generic_rules_apply():
    call = {"id": "c", "name": "ping", "arguments": {}}
    steps = [
        make_step(index=0, source="env", message="hello"),
        make_step(index=1, tool_calls=[call], results=[{"call_id": "c", "content": {"error": "bad"}, "is_error": True}]),
        make_step(index=2, message="try again", role="critic"),
        make_step(index=3, tool_calls=[call], results=[{"call_id": "c", "content": "pong"}]),
        make_step(index=4, tool_calls=[call], results=[{"call_id": "c", "content": "pong"}]),
    ]
    record = new_record(header={"env": "servicedesk", "task": "x", "seed": 0}, steps=steps)
    analyses = dict(analyze_record(record))
    assert sorted(analyses) == [1, 3, 4]
    assert analyses[1].value == 0.0 and "bad" in analyses[1].guidance
    assert analyses[3].value == 1.0 and analyses[4].value == 0.2  # the third identical call in a row
