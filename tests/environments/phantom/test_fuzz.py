"""Property: no tool call, however malformed, makes PhantomEnv raise; the budget always ends the episode."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from environments.core import ToolCall
from environments.phantom.env import PhantomEnv
from tests.environments.phantom.conftest import small_task

ENV_TASK = small_task(max_steps=6)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
ARGUMENTS = st.one_of(
    st.fixed_dictionaries({"query": st.text(max_size=50)}, optional={"k": JSON_VALUES}),
    st.fixed_dictionaries({"article_id": st.text(max_size=8) | st.from_regex(r"a[0-9]{5}", fullmatch=True)}),
    st.fixed_dictionaries({"text": st.text(max_size=30)}),
    st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=3),
    JSON_VALUES,
)
CALLS = st.lists(
    st.tuples(st.sampled_from(["search", "open_article", "answer", "", "Search", "rm -rf"]), ARGUMENTS), min_size=1, max_size=8
)


@settings(max_examples=150, deadline=None)
@given(calls=CALLS)
def test_any_call_sequence_is_answered_without_exceptions(calls: list[tuple[str, Any]]) -> None:
    env = PhantomEnv(ENV_TASK, 4)
    env.reset()
    counted = 0
    for name, arguments in calls:
        was_done = env.done
        counted += 0 if was_done else 1
        result = env.step(ToolCall(name=name, arguments=arguments))
        assert isinstance(result.content, dict)
        assert result.is_error == ("error" in result.content)
        assert not was_done or result.content["error"] == "episode_over"
        assert 0.0 <= env.score().composite <= 1.0
    assert env.score().details["steps"] == counted <= 6
    assert env.done == (counted == 6 or env.score().details["answer"] is not None)
