"""The fidelity report page: human user sessions against a simulator's, with the plots drawn here as SVG
(no script: the page's CSP allows none inline) and the numbers; /api/v1/fidelity returns the same JSON."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse

from lab.console.fidelity import SET_FILTERS, fidelity_for
from lab.pages import console_view, page, visible_projects

WIDTH, HEIGHT, PAD = 360, 140, 18
SIDES = (("human", "Human"), ("simulated", "Simulated"))


def histogram_chart(counts: list[int], edges: list[float]) -> dict[str, Any]:
    """Bars for one length histogram, as shares of the set so that sets of different sizes compare."""
    total = sum(counts) or 1
    width = (WIDTH - 2 * PAD) / max(1, len(counts))
    bars = []
    for k, count in enumerate(counts):
        height = round((HEIGHT - 2 * PAD) * count / total, 1)
        bars.append(
            {
                "x": round(PAD + k * width, 1),
                "y": round(HEIGHT - PAD - height, 1),
                "w": round(width - 2, 1),
                "h": height,
                "label": f"{edges[k]:g}–{edges[k + 1]:g} words: {count}",
            }
        )
    return {"width": WIDTH, "height": HEIGHT, "bars": bars, "low": f"{edges[0]:g}", "high": f"{edges[-1]:g}", "base": HEIGHT - PAD}


def pattern_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per pattern: each set's frequency and a bar width (percent of the row) for each."""
    sets = report["sets"]
    return [
        {
            "name": name,
            **{
                side: {"rate": sets[side]["patterns"].get(name, 0.0), "bar": round(sets[side]["patterns"].get(name, 0.0) * 100)}
                for side, _ in SIDES
            },
        }
        for name in report["patterns"]
    ]


def behaviour_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    sets = report["sets"]
    keys = (
        ("Turns", "turns"),
        ("Clarification requests (share of turns)", "clarification_rate"),
        ("Goal changes (share of turns)", "goal_change_rate"),
        ("Cooperativeness (share of turns)", "cooperativeness"),
    )
    rows = [{"label": label, "human": sets["human"][key], "simulated": sets["simulated"][key]} for label, key in keys]
    for label, key in (("Words per turn", "length"), ("Facts per turn", "facts_per_turn")):
        for stat in ("mean", "q10", "q50", "q90"):
            rows.append({"label": f"{label}: {stat}", "human": sets["human"][key][stat], "simulated": sets["simulated"][key][stat]})
    return rows


@console_view
def fidelity_page(request: HttpRequest) -> HttpResponse:
    projects = visible_projects(request)
    params = {key: value for key, value in request.GET.items()}
    context: dict[str, Any] = {"projects": projects, "params": params, "filters": SET_FILTERS, "result": None}
    if params.get("project"):
        result = fidelity_for(projects=projects, params=params)
        report = result["report"]
        accuracy = report["turing"]["accuracy"]
        context.update(
            result=result,
            charts=[
                {"side": label, "chart": histogram_chart(report["sets"][side]["length_histogram"], report["length"]["edges"])}
                for side, label in SIDES
            ],
            patterns=pattern_rows(report),
            behaviour=behaviour_rows(report),
            accuracy_bar=None if accuracy is None else round(accuracy * 100),
        )
    return page(request, "console/fidelity.html", context, fragment="console/_fidelity_report.html")
