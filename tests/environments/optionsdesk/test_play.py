"""Human play: the declared panels draw real results (the chain as a table, equity as a P&L chart)."""

from __future__ import annotations

from environments.registry import env_meta
from lab.play.operator import panel_data, series_chart
from tests.environments.optionsdesk.conftest import do, new_desk


def test_the_chain_panel_is_a_table_of_the_index_month_chain_with_its_columns() -> None:
    env = new_desk("oos", 1000)
    chain = env_meta("optionsdesk").panels[0]
    result = do(env, chain.tool, **chain.arguments)
    drawn = panel_data(chain.renderer, result.content, chain)
    assert drawn["columns"][:4] == ["contract", "type", "strike", "dte"]
    assert drawn["total"] == len(result.content["contracts"]) > 10 and not drawn["cut"]
    types = [row["cells"][1]["value"] for row in drawn["rows"]]
    assert types == sorted(types)  # calls first, then puts, each by strike


def test_the_pnl_chart_draws_equity_from_every_next_day_result() -> None:
    env = new_desk("oos", 1000)
    do(env, "open_strategy", underlying="IDX", strategy="long_straddle")
    results = [do(env, "next_day").content for _ in range(6)]
    chart = next(p for p in env_meta("optionsdesk").panels if p.renderer == "chart")
    drawn = series_chart(chart.series, {"next_day": results})
    assert not drawn["empty"] and drawn["series"][0]["name"] == "equity"
    assert [x for x, _ in drawn["series"][0]["points"]] == list(range(206, 212))
    assert drawn["series"][0]["last"][1] == results[-1]["equity"]
