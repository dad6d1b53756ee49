"""The play page: start, submit through the forms (htmx and plain), field messages, fork refusal, finish."""

from __future__ import annotations

from typing import Any

import pytest

from lab.play.models import HumanSession
from lab.trajectories.models import Episode, Step

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
TASK = "storebench/cash-crunch"


@pytest.fixture
def expert_client(client: Any, role_users: dict[str, Any]) -> Any:
    client.force_login(role_users["expert"])
    return client


@pytest.fixture
def started(expert_client: Any) -> HumanSession:
    response = expert_client.post("/play/", {"project": "acme", "task": TASK, "seed": "3"})
    assert response.status_code == 302
    session = HumanSession.objects.get()
    assert response["Location"] == f"/play/{session.pk}/"
    return session


def test_the_play_page_shows_the_operator_view_and_one_form_per_tool(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.get(f"/play/{started.pk}/")
    html = response.content.decode()
    assert [panel["tool"] for panel in response.context["view"].panels] == [
        "get_finance",
        "get_inventory",
        "list_orders",
        "list_tickets",
        "list_purchase_orders",
        "get_sales_report",
        "read_news",
    ]
    assert "Day 0 of" in html and "40 of 40 operations left" in html
    assert html.count('<details class="tool-form card"') == 29
    # Each of the 29 tool forms and each of the 7 panels' open forms submits step 1.
    assert html.count('name="expected_index" value="1"') == 29 + 7
    assert 'name="price"' in html and 'name="lines"' in html  # a number input and a JSON list of objects


def test_a_submit_answers_with_the_result_and_spends_an_operation(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.post(
        f"/play/{started.pk}/submit", {"tool": "set_price", "expected_index": "1", "sku": "P01", "price": "44"}, **HTMX
    )
    html = response.content.decode()
    assert response.status_code == 200 and "<html" not in html
    assert "Step 1: set_price" in html and "39 of 40 operations left" in html and 'name="expected_index" value="2"' in html
    step = Step.objects.get(episode=started.episode, index=1)
    assert step.source == "agent" and step.tool_calls[0]["arguments"] == {"sku": "P01", "price": 44.0}


def test_field_errors_are_shown_per_field_and_spend_nothing(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.post(
        f"/play/{started.pk}/submit", {"tool": "set_price", "expected_index": "1", "sku": "shoes", "price": "lots"}, **HTMX
    )
    html = response.content.decode()
    assert response.status_code == 422
    assert "expected a number, got &#x27;lots&#x27;" in html and "is not in the expected form: “P”, 2 digits" in html
    assert 'value="shoes"' in html  # what was typed stays in the form
    assert Episode.objects.get(pk=started.episode_id).step_count == 1


def test_an_environment_error_is_a_recorded_step_like_a_models(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.post(f"/play/{started.pk}/submit", {"tool": "get_product", "expected_index": "1", "sku": "P99-ZZZ-M"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 200 and "unknown SKU" in html and 'class="tag bad">error' in html
    assert Step.objects.get(episode=started.episode, index=1).results[0]["is_error"] is True


def test_a_stale_tab_cannot_fork_the_session(expert_client: Any, started: HumanSession) -> None:
    expert_client.post(f"/play/{started.pk}/submit", {"tool": "get_finance", "expected_index": "1"}, **HTMX)
    response = expert_client.post(f"/play/{started.pk}/submit", {"tool": "list_tickets", "expected_index": "1"}, **HTMX)
    assert response.status_code == 409 and "step 1 is already taken" in response.content.decode()
    assert list(Step.objects.filter(episode=started.episode).values_list("index", flat=True)) == [0, 1]


def test_without_javascript_a_submit_redirects_back_to_the_page(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.post(f"/play/{started.pk}/submit", {"tool": "end_window", "expected_index": "1"})
    assert response.status_code == 302 and response["Location"] == f"/play/{started.pk}/"
    assert "Day 1 of" in expert_client.get(f"/play/{started.pk}/").content.decode()


def test_finishing_goes_to_the_scored_episode(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.post(f"/play/{started.pk}/finish")
    assert response.status_code == 302 and response["Location"] == f"/episodes/{started.episode_id}/"
    episode = Episode.objects.get(pk=started.episode_id)
    assert (episode.status, episode.termination_reason, episode.composite) == ("finished", "agent_stop", 0.0)
    assert "continue #" not in expert_client.get("/play/").content.decode()


def test_the_start_form_explains_a_bad_seed(expert_client: Any) -> None:
    response = expert_client.post("/play/", {"project": "acme", "task": TASK, "seed": "soon"})
    assert response.status_code == 400 and "seed must be a whole number, got &#x27;soon&#x27;" in response.content.decode()


def test_viewers_cannot_play_and_others_only_spectate(client: Any, role_users: dict[str, Any], started: HumanSession, bob: Any) -> None:
    client.force_login(role_users["viewer"])
    assert "You need the expert, researcher or owner role" in client.get("/play/").content.decode()
    assert client.post("/play/", {"project": "acme", "task": TASK, "seed": "0"}).status_code == 400
    page = client.get(f"/play/{started.pk}/")
    assert page.status_code == 302 and page["Location"] == f"/episodes/{started.episode_id}/"
    assert client.post(f"/play/{started.pk}/submit", {"tool": "get_finance", "expected_index": "1"}).status_code == 403
    client.force_login(bob)
    assert client.get(f"/play/{started.pk}/").status_code == 404
    assert client.post(f"/play/{started.pk}/submit", {"tool": "get_finance", "expected_index": "1"}).status_code == 404


def test_a_submit_that_ends_the_scenario_sends_htmx_to_the_scored_episode(
    expert_client: Any, started: HumanSession, monkeypatch: Any
) -> None:
    from lab.play import views
    from lab.play.services import SubmitOutcome

    monkeypatch.setattr(views, "play_submit", lambda **kwargs: SubmitOutcome(step={"index": 1}, finished=True, replayed=False))
    response = expert_client.post(f"/play/{started.pk}/submit", {"tool": "end_window", "expected_index": "1"}, **HTMX)
    assert response.status_code == 204 and response["HX-Redirect"] == f"/episodes/{started.episode_id}/"
    plain = expert_client.post(f"/play/{started.pk}/submit", {"tool": "end_window", "expected_index": "1"})
    assert plain.status_code == 302 and plain["Location"] == f"/episodes/{started.episode_id}/"


MALFORMED = [
    {"tool": "set_price", "expected_index": "1", "sku": "shoes", "price": "lots"},  # a field error for the player
    {"tool": "create_purchase_order", "expected_index": "1", "lines": "[" * 5000},  # JSON too deep to read
    {"tool": "no_such_tool", "expected_index": "x"},
    {"tool": "get_finance", "expected_index": "1", "note": "a\x00b"},  # a NUL character
]


@pytest.mark.parametrize("form", MALFORMED, ids=["field-error", "deep-json", "unknown-tool", "nul"])
def test_a_malformed_submission_from_someone_else_is_refused_unread(
    client: Any, role_users: dict[str, Any], started: HumanSession, bob: Any, form: dict[str, str]
) -> None:
    client.force_login(role_users["researcher"])  # a member of the project, but not the player
    refused = client.post(f"/play/{started.pk}/submit", form, **HTMX)
    assert refused.status_code == 403 and "Only the expert who started this session" in refused.content.decode()
    client.force_login(bob)  # not a member: the session does not exist for him
    assert client.post(f"/play/{started.pk}/submit", form, **HTMX).status_code == 404
    assert Episode.objects.get(pk=started.episode_id).step_count == 1


def test_a_player_whose_role_was_lowered_is_refused_before_the_form_is_read(
    expert_client: Any, role_users: dict[str, Any], started: HumanSession, project_a: Any
) -> None:
    from lab.projects.services import membership_set

    membership_set(project=project_a, user=role_users["expert"], role="viewer")
    refused = expert_client.post(f"/play/{started.pk}/submit", MALFORMED[0], **HTMX)
    assert refused.status_code == 403 and "does not allow playing" in refused.content.decode()


def test_the_players_own_nul_submission_is_a_400_that_spends_nothing(expert_client: Any, started: HumanSession) -> None:
    response = expert_client.post(f"/play/{started.pk}/submit", MALFORMED[3], **HTMX)
    assert response.status_code == 400 and "note contains a NUL character" in response.content.decode()
    assert Episode.objects.get(pk=started.episode_id).step_count == 1


@pytest.mark.parametrize("panel", ["99999999999999999999999", "-1", "abc", "", "1.5", "７"])
def test_it_refuses_a_bad_panel_index_by_name_and_spends_nothing(expert_client: Any, started: HumanSession, panel: str) -> None:
    response = expert_client.post(f"/play/{started.pk}/submit", {"panel": panel, "expected_index": "1"}, **HTMX)
    assert response.status_code == 400 and "is not a panel of storebench; it has 7" in response.content.decode()
    assert Step.objects.filter(episode=started.episode).count() == 1


def test_the_page_declares_its_shortcuts_and_a_raw_json_view_per_opened_panel(expert_client: Any, started: HumanSession) -> None:
    html = expert_client.post(f"/play/{started.pk}/submit", {"panel": "1", "expected_index": "1"}, **HTMX).content.decode()
    assert 'class="panel-open" data-key="i"' in html and 'id="tool-fulfil_orders"  data-key="f"' in html
    assert '<details class="keys" id="shortcut-help">' in html and "<kbd>e</kbd></td><td>the end_window form" in html
    inventory = html.split('id="panel-1"')[1].split("</section>")[0]
    assert '<details class="raw"><summary>Raw JSON</summary>' in inventory and "&quot;days_of_cover&quot;" in inventory
    assert "<th>days of cover</th>" in inventory and "<script" not in html


def _playable_tasks() -> list[str]:
    from environments import registry

    return [registry.list_tasks(meta.env)[0].id for meta in registry.list_envs() if meta.playable and meta.panels]


@pytest.mark.parametrize("task", [*_playable_tasks(), "optionsdesk/train-short"])
def test_every_panel_shows_what_its_call_bought(expert_client: Any, task: str) -> None:
    """Opening a panel is a charged call: whatever the result's shape (a compact one-line snapshot in a table panel,
    a chart whose series are other tools'), the panel shows it, never "Not opened yet" or nothing."""
    assert expert_client.post("/play/", {"project": "acme", "task": task, "seed": "0"}).status_code == 302
    session = HumanSession.objects.get(task__key=task.rpartition("/")[2])
    panels = expert_client.get(f"/play/{session.pk}/").context["view"].panels
    for panel in panels:
        if panel["renderer"] == "screenshot":
            continue  # the current screen, drawn every step; not a bought result
        index = Episode.objects.get(pk=session.episode_id).step_count
        response = expert_client.post(f"/play/{session.pk}/submit", {"panel": str(panel["index"]), "expected_index": str(index)}, **HTMX)
        assert response.status_code == 200, (task, panel["title"], response.content[:300])
        shown = response.context["view"].panels[panel["index"]]
        # An error (the account panel before the caller is verified) is what that call bought, and is shown as such.
        assert shown["opened"] and (shown["drawn"] or shown["is_error"]), (task, panel["title"], shown)
        html = response.content.decode().split(f'id="panel-{panel["index"]}"')[1].split('<details class="raw">')[0]
        assert "Not opened yet" not in html and "No points over time" not in html, (task, panel["title"], html[:500])
        assert shown["renderer"] == "json" or "null" not in html, (task, panel["title"], html[:500])  # a table says why a cell is empty


def test_a_compact_snapshot_in_a_table_panel_is_shown_as_it_came_and_the_pnl_chart_draws_the_history(expert_client: Any) -> None:
    expert_client.post("/play/", {"project": "acme", "task": "optionsdesk/train-short", "seed": "0"})
    session = HumanSession.objects.get()
    titles = [p["title"] for p in expert_client.get(f"/play/{session.pk}/").context["view"].panels]
    market, pnl = titles.index("Market"), titles.index("P&L")
    html = expert_client.post(f"/play/{session.pk}/submit", {"panel": str(market), "expected_index": "1"}, **HTMX).content.decode()
    assert "As the tool returned it:" in html and "IDX 307.83" in html
    response = expert_client.post(f"/play/{session.pk}/submit", {"panel": str(pnl), "expected_index": "2"}, **HTMX)
    chart = response.context["view"].panels[pnl]["data"]
    assert [line["points"] for line in chart["series"]] == [[(25, 1000000.0)]]


def test_finish_on_a_session_that_already_ended_goes_to_the_episode_not_a_409(expert_client: Any, started: HumanSession) -> None:
    expert_client.post(f"/play/{started.pk}/finish")  # another tab finished it
    response = expert_client.post(f"/play/{started.pk}/finish")
    assert response.status_code == 302 and response["Location"] == f"/episodes/{started.episode_id}/"
    html = expert_client.get(f"/play/{started.pk}/").content.decode()
    assert 'id="finish-session"' not in html and "This session is" in html and "tag life-finished" in html


def test_a_session_left_idle_ends_as_abandoned_unscored_and_a_submit_keeps_it_alive(
    expert_client: Any, started: HumanSession, settings: Any
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    settings.PRACTICUM_PLAY_IDLE_MINUTES = 30
    expert_client.post(f"/play/{started.pk}/submit", {"tool": "get_finance", "expected_index": "1"}, **HTMX)
    assert timezone.now() - HumanSession.objects.get().last_active_at < timedelta(seconds=30)  # a step is activity
    HumanSession.objects.update(last_active_at=timezone.now() - timedelta(minutes=29))
    expert_client.get("/play/")
    assert Episode.objects.get().status == "running"
    HumanSession.objects.update(last_active_at=timezone.now() - timedelta(minutes=31))
    html = expert_client.get("/play/").content.decode()
    episode, session = Episode.objects.get(), HumanSession.objects.get()
    assert (episode.life_cycle, episode.termination_reason, episode.composite, session.status) == (
        "abandoned",
        "abandoned",
        None,
        "abandoned",
    )
    assert "tag life-abandoned" in html and "continue #" not in html
    response = expert_client.post(f"/play/{started.pk}/submit", {"tool": "get_finance", "expected_index": "2"}, **HTMX)
    assert response.status_code == 409 and "this session ended (abandoned)" in response.content.decode()


def test_the_command_ends_idle_sessions_for_a_cron_line(started: HumanSession, settings: Any) -> None:
    from datetime import timedelta
    from io import StringIO

    from django.core.management import call_command
    from django.utils import timezone

    HumanSession.objects.update(last_active_at=timezone.now() - timedelta(minutes=settings.PRACTICUM_PLAY_IDLE_MINUTES + 1))
    out = StringIO()
    call_command("abandon_idle_sessions", stdout=out)
    assert out.getvalue().startswith("1 session(s) idle for over 120 minutes") and Episode.objects.get().life_cycle == "abandoned"
