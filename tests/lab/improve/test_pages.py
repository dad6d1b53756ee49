"""Console pages of the loop (lab/console/views/improve_new.py, loops.py): the form from an evaluation, refusals beside
their field, the loop page with its chain, the promote button for researchers and up only."""

from __future__ import annotations

import re
from typing import Any

import pytest

from lab.improve.models import ImprovementLoop

pytestmark = pytest.mark.django_db


def _form(evaluation: Any, tiny_model: str, **changes: Any) -> dict[str, Any]:
    episodes = [str(pk) for pk in evaluation.episodes.filter(passed=False).values_list("pk", flat=True)]
    return {
        "episodes": episodes,
        "diagnoser": "rule:expert",
        "weight-recovery": "2",
        "weight-successes": "1",
        "weight-anchors": "0",
        "recipe": "sft",
        "base_model": tiny_model,
        "recipe_config": '{"max_steps": 1}',
        "dev_seeds": "10",
        "test_seeds": "20-21",
        **changes,
    }


def test_the_evaluation_page_offers_improve_and_the_form_lists_its_failing_episodes(
    client: Any, alice: Any, clumsy_evaluation: Any, tiny_model: str
) -> None:
    client.force_login(alice)
    page = client.get(f"/evaluations/{clumsy_evaluation.pk}/").content.decode()
    assert f'href="/evaluations/{clumsy_evaluation.pk}/improve"' in page and "Improve this agent" in page
    form = client.get(f"/evaluations/{clumsy_evaluation.pk}/improve").content.decode()
    failing = sorted(clumsy_evaluation.episodes.filter(passed=False).values_list("pk", flat=True))
    assert sorted(int(pk) for pk in re.findall(r'name="episodes" value="(\d+)"', form)) == failing
    assert 'data-select-all="episodes"' in form and 'value="rule:expert" selected' in form and "self_distill" in form
    fragment = client.get(f"/evaluations/{clumsy_evaluation.pk}/improve?task=echo", HTTP_HX_REQUEST="true").content.decode()
    assert fragment.startswith('\n<table class="episode-picker"') or fragment.lstrip().startswith("<table")
    assert 'name="episodes"' not in fragment and "No failing episodes match the filters" in fragment


@pytest.mark.parametrize(
    ("changes", "field", "text"),
    [
        ({"episodes": []}, "episodes", "pick at least one failing episode"),
        ({"test_seeds": "1,20"}, "episodes", "the picked episodes contains toolgym/chain seed 1"),
        ({"test_seeds": "x"}, "test_seeds", "test_seeds"),
        ({"weight-anchors": "lots"}, "sources", "sources.anchors"),
        ({"recipe_config": "{"}, "recipe_config", "recipe_config"),
        ({"base_model": ""}, "base_model", "base_model"),
        ({"recipe": "ppo", "recipe_config": ""}, "recipe", "&#x27;ppo&#x27;; choose one of"),  # an unknown recipe once answered 500
    ],
)  # fmt: skip
def test_a_refused_form_is_the_page_again_with_the_message(
    client: Any, alice: Any, clumsy_evaluation: Any, tiny_model: str, changes: dict[str, Any], field: str, text: str
) -> None:
    client.force_login(alice)
    response = client.post(f"/evaluations/{clumsy_evaluation.pk}/improve", _form(clumsy_evaluation, tiny_model, **changes))
    assert response.status_code == 400
    assert text in response.content.decode() and not ImprovementLoop.objects.exists()


def test_a_good_form_starts_the_loop_and_its_page_shows_the_chain(
    client: Any, alice: Any, clumsy_evaluation: Any, tiny_model: str, monkeypatch: Any, django_capture_on_commit_callbacks: Any
) -> None:
    monkeypatch.setattr("lab.improve.services.loop_enqueue", lambda loop: None)
    client.force_login(alice)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"/evaluations/{clumsy_evaluation.pk}/improve", _form(clumsy_evaluation, tiny_model))
    loop = ImprovementLoop.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/loops/{loop.pk}/"
    assert loop.config["sources"] == {"recovery": 2.0, "successes": 1.0, "anchors": 0.0} and loop.config["recipe_config"]["max_steps"] == 1
    page = client.get(f"/loops/{loop.pk}/").content.decode()
    assert all(f'id="stage-{stage}"' in page for stage in ("select", "diagnose", "dataset", "train", "checkpoint", "report", "promote"))
    assert f'data-ws="/ws/loops/{loop.pk}/?after=' in page and f"evaluation {clumsy_evaluation.pk}" in page
    assert 'id="promote"' not in page
    assert str(loop.pk) in client.get("/loops/").content.decode()


def test_only_researchers_and_owners_promote(client: Any, role_users: dict[str, Any], promotable_loop: Any) -> None:
    for role in ("viewer", "expert"):
        client.force_login(role_users[role])
        assert 'id="promote"' not in client.get(f"/loops/{promotable_loop.pk}/").content.decode()
        assert client.post(f"/loops/{promotable_loop.pk}/promote").status_code == 403
        assert client.get(f"/evaluations/{promotable_loop.evaluation_id}/improve").status_code == 403
    client.force_login(role_users["researcher"])
    assert 'id="promote"' in client.get(f"/loops/{promotable_loop.pk}/").content.decode()
    fragment = client.post(f"/loops/{promotable_loop.pk}/promote", HTTP_HX_REQUEST="true").content.decode()
    promotable_loop.refresh_from_db()
    assert promotable_loop.stage == "done" and f"Promoted: <strong>{promotable_loop.promoted_agent.name}</strong>" in fragment


def test_a_stranger_gets_404(client: Any, bob: Any, promotable_loop: Any) -> None:
    client.force_login(bob)
    assert client.get(f"/loops/{promotable_loop.pk}/").status_code == 404
    assert client.post(f"/loops/{promotable_loop.pk}/promote").status_code == 404
    assert client.get(f"/evaluations/{promotable_loop.evaluation_id}/improve").status_code == 404


def test_the_form_marks_partial_successes_and_passes_include_partial_to_the_loop(
    client: Any, alice: Any, clumsy_evaluation: Any, tiny_model: str, monkeypatch: Any
) -> None:
    from lab.rollouts.selectors import evaluation_episodes

    monkeypatch.setattr("lab.improve.services.loop_enqueue", lambda loop: None)
    cut = next(e for e in evaluation_episodes(clumsy_evaluation) if e.passed)
    type(cut).objects.filter(pk=cut.pk).update(termination_reason="timeout")
    client.force_login(alice)
    form = client.get(f"/evaluations/{clumsy_evaluation.pk}/improve").content.decode()
    assert 'id="include-partial"' in form and 'id="include-partial" checked' not in form
    assert "2 successful episodes in this evaluation; 1 of them partial:" in form and "partial: timeout" in form
    client.post(f"/evaluations/{clumsy_evaluation.pk}/improve", {**_form(clumsy_evaluation, tiny_model), "include_partial": "on"})
    assert ImprovementLoop.objects.get().config["include_partial"] is True
