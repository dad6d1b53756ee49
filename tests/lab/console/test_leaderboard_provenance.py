"""Leaderboards rank the server's own recordings; external and uploaded scores stand apart, labelled."""

from __future__ import annotations

from typing import Any

import pytest

from lab.trajectories.models import Provenance
from lab.trajectories.services import episodes_ingest
from tests.conftest import make_record

pytestmark = pytest.mark.django_db
TASK = "storebench/cash-crunch"


def _reported(project: Any, *, composite: float, provenance: str, **header: Any) -> None:
    score = {"composite": composite, "passed": True, "components": {}}
    record = make_record(steps=2, env="storebench", task="cash-crunch", tag=provenance, score=score, **header)
    episodes_ingest(project=project, records=[record], provenance=provenance)


@pytest.fixture
def reported(project_a: Any, store_episodes: dict[str, Any]) -> None:
    """A perfect upload that claims to be the smart-triage anchor's rollout, and an external harness's report."""
    _reported(project_a, composite=1.0, provenance=Provenance.UPLOAD, source="rollout", policy={"name": "smart-triage", "kind": "scripted"})
    _reported(project_a, composite=0.95, provenance=Provenance.EXTERNAL, policy={"name": "harness-gpt"})


def test_the_leaderboard_ranks_recorded_episodes_only(
    login: Any, role_users: dict[str, Any], store_episodes: dict[str, Any], reported: None
) -> None:
    board = login(role_users["viewer"]).get("/leaderboard/").context["board"]
    assert {(row.name, row.provenance) for row in board.overall} == {("smart-triage", "recorded"), ("do-nothing", "recorded")}
    smart = next(row for row in board.by_task[TASK] if row.name == "smart-triage")
    assert smart.n == 1 and smart.mean == pytest.approx(store_episodes["smart"].composite)


def test_external_and_uploaded_scores_get_their_own_labelled_section(login: Any, role_users: dict[str, Any], reported: None) -> None:
    response = login(role_users["viewer"]).get("/leaderboard/")
    rows = {(row.name, row.provenance): row.mean for row in response.context["reported"].overall}
    # The upload keeps the name it claimed, marked as a claim, never merged with the real anchor of that name.
    assert rows == {("smart-triage (claimed)", "upload"): pytest.approx(1.0), ("harness-gpt", "external"): pytest.approx(0.95)}
    html = response.content.decode()
    assert "Reported elsewhere: external and uploaded episodes" in html
    assert html.index("Reported elsewhere") < html.index("harness-gpt")  # listed under the label, not in the ranking above
    assert 'class="tag provenance-upload"' in html and 'class="tag provenance-external"' in html
    # The claimed name links to the uploaded episodes, not to the real anchor's.
    assert '?task=storebench/cash-crunch&amp;provenance=upload">smart-triage (claimed)</a>' in html


def test_the_dashboard_snapshot_leaves_reported_scores_out(login: Any, role_users: dict[str, Any], reported: None) -> None:
    board = login(role_users["viewer"]).get("/").context["board"]
    assert {row.name for row in board} == {"smart-triage", "do-nothing"}


def test_the_tier_shows_in_the_list_the_viewer_and_compare(
    login: Any, role_users: dict[str, Any], project_a: Any, store_episodes: dict[str, Any], reported: None
) -> None:
    from lab.trajectories.models import Episode

    client = login(role_users["viewer"])
    upload = Episode.objects.get(provenance="upload")
    rows = client.get("/episodes/").content.decode()
    assert rows.count('class="tag provenance-recorded"') == 2 and rows.count('class="tag provenance-upload"') == 1
    assert [e.pk for e in client.get("/episodes/", {"provenance": "upload"}).context["page"].rows] == [upload.pk]
    viewer = client.get(f"/episodes/{upload.pk}/").content.decode()
    assert 'id="episode-provenance"><span class="tag provenance-upload">upload</span>' in viewer
    assert "its header claims source rollout, agent smart-triage" in viewer
    compare = client.get("/compare/", {"a": store_episodes["smart"].pk, "b": upload.pk}).content.decode()
    assert 'class="tag provenance-recorded">recorded</span></th><th>B: upload <span class="tag provenance-upload">upload</span>' in compare
