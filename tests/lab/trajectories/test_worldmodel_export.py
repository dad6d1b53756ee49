"""The dataset export's view=worldmodel: one training record per transition of environments that declare
world-model data (EnvMeta.world_model; the desktop does), other episodes named as skipped."""

from __future__ import annotations

import json
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from environments import registry
from environments.desktop.worldmodel import record_transitions
from environments.policies import make_policy
from environments.runner import run_episode
from lab.trajectories.models import Episode, Provenance
from lab.trajectories.services import episodes_ingest

pytestmark = pytest.mark.django_db


def _ingest(project: Any, user: Any, task: str, policy: str) -> tuple[Episode, dict[str, Any]]:
    env = registry.make(task, seed=1000)
    record = run_episode(env, make_policy(policy, env, 1000))
    [outcome] = episodes_ingest(project=project, records=[record], user=user, provenance=Provenance.RECORDED)
    return outcome.episode, record


def _lines(client: Any, query: str) -> list[dict[str, Any]]:
    body = b"".join(client.get(f"/api/v1/datasets/export?{query}").streaming_content)
    return [json.loads(line) for line in body.splitlines()]


def test_view_worldmodel_gives_each_desktop_transition_and_skips_other_environments(alice_api: Any, alice: Any, project_a: Any) -> None:
    desktop, record = _ingest(project_a, alice, "desktop/change-setting", "gui-only")
    other, _ = _ingest(project_a, alice, "toolgym/echo", "expert")
    lines = _lines(alice_api, "view=worldmodel")
    transitions = list(record_transitions(record))
    *examples, last = lines
    assert len(examples) == len(transitions) > 3 and {e["episode_id"] for e in examples} == {desktop.pk}
    assert [e["header"]["meta"]["step"] for e in examples] == [t["step"] for t in transitions]
    assert examples[0]["header"]["meta"]["view"] == "worldmodel" and examples[0]["steps"][1]["source"] == "agent"
    assert last == {"skipped": [{"episode_id": other.pk, "problems": ["environment 'toolgym' declares no world-model data"]}]}


def test_an_episode_that_cannot_be_replayed_is_named_not_a_500(alice_api: Any, alice: Any, project_a: Any) -> None:
    episode, _ = _ingest(project_a, alice, "desktop/change-setting", "gui-only")
    header = dict(episode.meta["header"], seed=None)
    Episode.objects.filter(pk=episode.pk).update(meta={**episode.meta, "header": header})
    response = alice_api.get("/api/v1/datasets/export?view=worldmodel")
    assert response.status_code == 200
    [line] = [json.loads(x) for x in b"".join(response.streaming_content).splitlines()]
    assert line["skipped"][0]["episode_id"] == episode.pk and "no seed" in line["skipped"][0]["problems"][0]


def test_the_command_exports_the_worldmodel_view(alice: Any, project_a: Any, tmp_path: Any) -> None:
    _, record = _ingest(project_a, alice, "desktop/reply-mail", "gui-only")
    out = tmp_path / "wm.jsonl"
    call_command("export_dataset", "--project", "acme", "--view", "worldmodel", "--out", str(out), stderr=StringIO())
    assert len(out.read_text().splitlines()) == len(list(record_transitions(record)))
