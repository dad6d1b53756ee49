"""Humans on equal terms: what a player sees through the play page costs what a model pays to see it.

A scripted "human" opens panels, presses a shortcut's panel and fills tool forms through the play views; a model
(the runner with a scripted policy) makes the same calls. Both spend the same budget and produce the same
state-hash chain, and the rendered page holds no number that the status line or a paid result did not give.
"""

from __future__ import annotations

import html as html_lib
import json
import re
from typing import Any

import pytest
from django.test import Client

from environments import registry
from environments.core import Action, Policy, ToolCall
from environments.runner import run_episode
from lab.play.models import HumanSession
from lab.play.services import play_env
from lab.trajectories.models import Episode
from lab.trajectories.services import episode_to_record

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
TASK, SEED = "storebench/cash-crunch", 2
PANELS = {p.tool: i for i, p in enumerate(registry.env_meta("storebench").panels)}
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


@pytest.fixture
def player(client: Any, role_users: dict[str, Any]) -> Any:
    client.force_login(role_users["expert"])
    return client


def _start(client: Any) -> HumanSession:
    assert client.post("/play/", {"project": "acme", "task": TASK, "seed": str(SEED)}).status_code == 302
    return HumanSession.objects.get()


def _open(client: Any, session: HumanSession, tool: str, index: int) -> str:
    response = client.post(f"/play/{session.pk}/submit", {"panel": str(PANELS[tool]), "expected_index": str(index)}, **HTMX)
    assert response.status_code == 200
    return str(response.content.decode())


def _run(client: Any, session: HumanSession, index: int, tool: str, **fields: str) -> str:
    response = client.post(f"/play/{session.pk}/submit", {"tool": tool, "expected_index": str(index), **fields}, **HTMX)
    assert response.status_code == 200
    return str(response.content.decode())


class _Script(Policy):
    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.queue = [Action(tool_calls=[ToolCall(name=n, arguments=a)]) for n, a in calls]

    def act(self, history: list[dict[str, Any]], tools: list[Any]) -> Action:
        return self.queue.pop(0)


def _human_day(client: Any, session: HumanSession) -> None:
    """Look at inventory, orders and cash, end the day, look again, ship, and check the tickets."""
    _open(client, session, "get_inventory", 1)
    _open(client, session, "list_orders", 2)
    _open(client, session, "get_finance", 3)
    _run(client, session, 4, "end_window")
    _open(client, session, "list_orders", 5)
    _run(client, session, 6, "fulfil_orders", max_orders="20")
    _open(client, session, "list_tickets", 7)
    _open(client, session, "get_sales_report", 8)


def _same_calls_as_a_model() -> list[tuple[str, dict[str, Any]]]:
    panels = registry.env_meta("storebench").panels

    def panel(tool: str) -> tuple[str, dict[str, Any]]:
        return tool, dict(panels[PANELS[tool]].arguments)

    return [
        panel("get_inventory"),
        panel("list_orders"),
        panel("get_finance"),
        ("end_window", {}),
        panel("list_orders"),
        ("fulfil_orders", {"max_orders": 20}),
        panel("list_tickets"),
        panel("get_sales_report"),
    ]


def test_a_human_session_and_a_model_episode_that_look_at_the_same_things_spend_the_same_budget(player: Any) -> None:
    session = _start(player)
    _human_day(player, session)
    env = registry.make(TASK, seed=SEED)
    model = run_episode(env, _Script(_same_calls_as_a_model()), max_steps=8)
    human = episode_to_record(Episode.objects.get(pk=session.episode_id))
    assert [s["state_hash"] for s in human["steps"]] == [s["state_hash"] for s in model["steps"]]
    assert [s["tool_calls"] for s in human["steps"]] == [s["tool_calls"] for s in model["steps"]]
    assert [(s["sim_time_start"], s["sim_time_end"]) for s in human["steps"]] == [
        (s["sim_time_start"], s["sim_time_end"]) for s in model["steps"]
    ]
    # Every panel opening was a charged step, priced as the model's: 4 calls on day 1 (shipping costs 2 operations).
    assert play_env(session).status() == env.status()
    assert env.status()["ops-left"] == "36 of 40 operations left"


def _visible_numbers(page: str) -> set[float]:
    """Numbers in the play area's text, the tool forms (static schema descriptions) left out."""
    area = page.split('<div class="tool-forms"')[0]
    text = html_lib.unescape(re.sub(r"<[^>]+>", " ", area))
    return {float(n) for n in _NUMBER.findall(text)}


def _list_lengths(value: Any) -> list[int]:
    if isinstance(value, list):
        return [len(value), *(n for v in value for n in _list_lengths(v))]
    if isinstance(value, dict):
        return [n for v in value.values() for n in _list_lengths(v)]
    return []


def _paid_numbers(session: HumanSession, env_status: dict[str, str]) -> set[float]:
    """What the player may know: the status line, the opening observation, every recorded result (and how many
    rows it had), the player's own arguments, the step indices and the session's ids and seed."""
    record = episode_to_record(Episode.objects.get(pk=session.episode_id))
    results = [r["content"] for s in record["steps"] for r in s.get("results") or []]
    texts = [" ".join(env_status.values()), str(record["steps"][0]["message"])]
    texts += [json.dumps(c) for c in results] + [json.dumps(s.get("tool_calls")) for s in record["steps"]]
    allowed = {float(n) for t in texts for n in _NUMBER.findall(t)} | {float(n) for c in results for n in _list_lengths(c)}
    return allowed | set(map(float, range(len(record["steps"]) + 1))) | {float(session.pk), float(session.episode_id), float(SEED)}


def test_the_play_page_shows_no_number_that_was_neither_in_the_status_line_nor_paid_for(player: Any) -> None:
    session = _start(player)
    _human_day(player, session)
    page = player.get(f"/play/{session.pk}/").content.decode()
    env = play_env(session)
    leaked = _visible_numbers(page) - _paid_numbers(session, env.status())
    assert leaked == set()
    # The world holds figures nobody paid for since they changed: open orders after shipping, tickets.
    world = env.world  # type: ignore[attr-defined]
    open_orders = sum(1 for o in world.orders.values() if o.status == "open")
    assert f"{open_orders} open orders" not in page and "open tickets;" not in page


def test_before_any_finance_call_the_page_shows_no_cash_but_the_briefings(player: Any) -> None:
    session = _start(player)
    page = _run(player, session, 1, "end_window")  # the world moves overnight: cash changes, shown only by end_window's result
    page = _open(player, session, "read_news", 2)
    cash = play_env(session).world.cash  # type: ignore[attr-defined]
    record = episode_to_record(Episode.objects.get(pk=session.episode_id))
    assert record["steps"][1]["results"][0]["content"]["cash"] == cash  # end_window's own (paid) result said it
    # The page now shows read_news's result: the cash that end_window reported is no longer on the page.
    assert str(cash) not in page and f"{cash:,.2f}" not in page
    assert "Cash and revenue" in page and "Not opened yet" in page.split('id="panel-0"')[1].split("</section>")[0]


def test_the_cash_chart_is_drawn_only_from_recorded_finance_results(player: Any) -> None:
    session = _start(player)
    _open(player, session, "get_finance", 1)
    _run(player, session, 2, "end_window")
    _run(player, session, 3, "end_window")
    page = _open(player, session, "get_finance", 4)
    chart = page.split('id="panel-0"')[1].split("</section>")[0]
    # Two paid points (days 0 and 2); day 1's cash was never asked for, so it is not drawn.
    assert chart.count('class="dot series-0"') == 2 and "day 0 – 2" in chart
    record = episode_to_record(Episode.objects.get(pk=session.episode_id))
    cash_day2 = record["steps"][4]["results"][0]["content"]["cash"]
    assert f"cash: <strong>{cash_day2}</strong>" in chart
    assert "revenue per day" not in chart  # no sales report was bought


def test_the_player_reads_a_running_session_only_through_the_play_page(player: Any, role_users: dict[str, Any]) -> None:
    """The viewer's step events and analyses would be free reads for the player; spectators keep them."""
    session = _start(player)
    _run(player, session, 1, "set_price", sku="P01", price="40")
    episode = f"/episodes/{session.episode_id}/"
    viewer = player.get(episode)
    assert viewer.status_code == 302 and viewer["Location"] == f"/play/{session.pk}/"
    for refused in (player.get(f"{episode}steps?start=0"), player.get(f"{episode}search?q=price"), player.post(f"{episode}pivotal")):
        assert refused.status_code == 403 and "You are playing this episode" in refused.content.decode()
    spectator = Client()
    spectator.force_login(role_users["researcher"])
    assert spectator.get(episode).status_code == 200 and spectator.get(f"{episode}steps?start=0").status_code == 200
    player.post(f"/play/{session.pk}/finish")
    assert player.get(episode).status_code == 200


def test_the_api_refuses_the_player_a_running_sessions_steps(client: Any, role_users: dict[str, Any]) -> None:
    from lab.projects.services import api_key_issue

    expert = role_users["expert"]
    client.force_login(expert)
    session = _start(client)
    _, raw = api_key_issue(project=session.episode.project, user=expert, name="expert laptop")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    for path in ("", "steps/", "export/"):
        response = api.get(f"/api/v1/episodes/{session.episode_id}/{path}")
        assert response.status_code == 403 and response.json()["error"]["code"] == "in_play"
    client.post(f"/play/{session.pk}/finish")
    assert api.get(f"/api/v1/episodes/{session.episode_id}/steps/").status_code == 200
