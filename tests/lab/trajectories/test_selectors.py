"""Episode reads: the failed episodes a diagnosis job is offered, the siblings the viewer offers to compare, and
the tools an episode was played with."""

from __future__ import annotations

from typing import Any

import pytest

from lab.trajectories.models import EpisodeStatus
from lab.trajectories.selectors import episode_list_failed, episode_list_siblings, episode_tools
from lab.trajectories.shared import episode_header
from tests.lab.diagnoses.conftest import store  # noqa: F401  (the ledger episode fixture)

pytestmark = pytest.mark.django_db


def test_failed_episodes_are_the_unpassed_or_failed_ones_newest_first_filtered_by_task(store: Any, project_a: Any, project_b: Any) -> None:  # noqa: F811
    tight, passed, loose = store("ledger/tight"), store("ledger/tight", "ledger-fixer"), store("ledger/loose")
    assert (tight.passed, passed.passed, loose.passed) == (False, True, False)
    assert list(episode_list_failed(project=project_a)) == [loose, tight]
    crashed = passed  # a passed run that then ended in failure (a lost worker) is offered too
    crashed.status = EpisodeStatus.FAILED
    crashed.save(update_fields=["status"])
    assert list(episode_list_failed(project=project_a)) == [loose, crashed, tight]
    assert list(episode_list_failed(project=project_a, task="ledger/tight")) == [crashed, tight]
    assert list(episode_list_failed(project=project_a, task="loose")) == [loose]
    assert list(episode_list_failed(project=project_a, task="other/loose")) == []
    assert list(episode_list_failed(project=project_b)) == []


def test_an_episodes_tools_come_from_its_header_and_skip_malformed_entries(store: Any) -> None:  # noqa: F811
    episode = store("ledger/tight")
    header_tools = episode_header(episode)["tools"]
    assert sorted(episode_tools(episode)) == sorted(entry.get("function", entry)["name"] for entry in header_tools)
    assert episode.meta["header"]["tools"] is None and set(episode.meta["shared"]) == {"tools"}  # stored once, as shared context
    malformed = [*header_tools, {"function": {"name": "no_schema"}}, "not a tool"]
    episode.meta = {**episode.meta, "header": {**episode.meta["header"], "tools": malformed}, "shared": {}}
    tools = episode_tools(episode)
    assert sorted(tools) == sorted(entry.get("function", entry)["name"] for entry in header_tools)
    assert "no_schema" not in tools and all(spec.parameters for spec in tools.values())


def test_siblings_share_task_and_seed_in_the_project_best_score_first(store: Any) -> None:  # noqa: F811
    stubborn, fixer, other_task = store("ledger/tight"), store("ledger/tight", "ledger-fixer"), store("ledger/loose")
    assert stubborn.composite is not None and fixer.composite is not None and fixer.composite > stubborn.composite
    assert list(episode_list_siblings(episode=stubborn)) == [fixer]
    assert list(episode_list_siblings(episode=fixer)) == [stubborn]
    assert list(episode_list_siblings(episode=other_task)) == []
