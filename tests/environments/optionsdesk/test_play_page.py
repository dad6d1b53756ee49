"""The console's play page for the options desk: the chain table and the P&L chart, through the generic forms."""

from __future__ import annotations

from typing import Any

import pytest

from lab.play.models import HumanSession

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def desk_session(client: Any, role_users: dict[str, Any]) -> tuple[Any, HumanSession]:
    client.force_login(role_users["expert"])
    response = client.post("/play/", {"project": "acme", "task": "optionsdesk/oos", "seed": "1000"})
    assert response.status_code == 302
    return client, HumanSession.objects.get()


def test_a_player_opens_the_chain_trades_and_sees_the_pnl_chart(desk_session: tuple[Any, HumanSession]) -> None:
    client, session = desk_session
    page = client.get(f"/play/{session.pk}/")
    assert [p["tool"] for p in page.context["view"].panels] == ["option_chain", "portfolio", "pnl_history", "market_snapshot", "read_news"]
    assert "day 205 of 205-265" in page.content.decode()
    chain = client.post(f"/play/{session.pk}/submit", {"panel": "0", "expected_index": "1"}, **HTMX).content.decode()
    table = chain.split('id="panel-0"')[1].split("</section>")[0]
    assert "<th>contract</th>" in table and "IDX-E" in table
    opened = client.post(
        f"/play/{session.pk}/submit",
        {"tool": "open_strategy", "expected_index": "2", "underlying": "IDX", "strategy": "iron_condor"},
        **HTMX,
    )
    assert opened.status_code == 200 and "P1" in opened.content.decode()
    for index in (3, 4):
        html = client.post(f"/play/{session.pk}/submit", {"tool": "next_day", "expected_index": str(index)}, **HTMX).content.decode()
    chart = html.split('id="panel-2"')[1].split("</section>")[0]
    assert 'aria-label="equity over day"' in chart and chart.count('<circle class="dot series-0"') == 2  # one point per close
    assert "day 207 of 205-265" in html
