"""A dreamed trajectory (header.meta.dreamed) is marked as dreamed wherever it appears: list, viewer, export."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.trajectories import imports
from lab.trajectories.models import Episode, Provenance
from lab.trajectories.services import episodes_ingest
from tests.conftest import make_record

pytestmark = pytest.mark.django_db
DREAM_META = {"dreamed": True, "world_model": "learnt edits"}


@pytest.fixture
def dreamed(project_a: Any) -> Episode:
    real = make_record(steps=2, env="storebench", task="cash-crunch", tag="real")
    dream = make_record(steps=2, env="storebench", task="cash-crunch", tag="dream", meta=DREAM_META)
    episodes_ingest(project=project_a, records=[real, dream], provenance=Provenance.UPLOAD)
    return next(e for e in Episode.objects.all() if e.dreamed)


def test_the_list_and_the_viewer_badge_the_dreamed_episode_only(login: Any, role_users: dict[str, Any], dreamed: Episode) -> None:
    client = login(role_users["viewer"])
    assert Episode.objects.count() == 2 and [e.dreamed for e in Episode.objects.exclude(pk=dreamed.pk)] == [False]
    rows = client.get("/episodes/").content.decode()
    assert rows.count('class="tag dreamed"') == 1
    viewer = client.get(f"/episodes/{dreamed.pk}/").content.decode()
    assert "dreamed: learnt edits</span>" in viewer
    other = Episode.objects.exclude(pk=dreamed.pk).get()
    assert 'class="tag dreamed"' not in client.get(f"/episodes/{other.pk}/").content.decode()


def test_the_openai_export_names_a_dreamed_record_and_only_it() -> None:
    dream = make_record(steps=2, env="storebench", task="cash-crunch", tag="dream", meta=DREAM_META)
    real = make_record(steps=2, env="storebench", task="cash-crunch", tag="real")
    assert json.loads(imports.export_line(dream, fmt="openai", episode_id=1))["metadata"]["dreamed"] is True
    assert "dreamed" not in json.loads(imports.export_line(real, fmt="openai", episode_id=2))["metadata"]
    assert json.loads(imports.export_line(dream, fmt="native", episode_id=1))["header"]["meta"]["dreamed"] is True
