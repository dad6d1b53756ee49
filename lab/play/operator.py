"""What a player sees beside the tool forms: the environment's status line and the panels its metadata declares.

    view = operator_view(env, episode)      # env: a private copy (play_env); nothing here spends budget

Parity with a model: the only free read is the status line (`env.status()`: clock, budget, day), which a
model gets with every prompt too, and the opening observation, which is a model's first prompt. Everything
else on the page is a result this episode has recorded, that is, paid for: a panel is a tool call the
environment names (environments.meta.Panel), opening it is a submitted step like any other, and the page
shows, for each panel, the result of the latest recorded step that made exactly that call, drawn by the
renderer the panel names (templates/play/panels/<renderer>.html) as the panel declares (columns, sort,
highlights). A chart with declared series is drawn from every recorded result of its series' tools. The
world itself is never read here (no `env.summary()`, no score): the lab knows the renderers, never the
environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from environments import registry
from environments.core import Env
from environments.meta import Panel, Series, SortKey
from lab.errors import DomainError
from lab.play.screens import screen_panel
from lab.trajectories.models import Episode, Step

_ROWS_SHOWN = 200  # a table or chart past this many rows is cut; the full result is in the step record
_CHART_W, _CHART_H = 320, 120
_PLOT_W, _PLOT_H, _PAD = 900, 160, 8  # a series chart: one shared scale for every line


@dataclass
class OperatorView:
    status: dict[str, str] = field(default_factory=dict)
    briefing: str = ""  # the opening observation: a model's first prompt, so the player's too
    panels: list[dict[str, Any]] = field(default_factory=list)
    keys: list[dict[str, str]] = field(default_factory=list)


def play_panel(env_name: str, raw_index: Any) -> Panel:
    """The panel a form names by its position; a DomainError naming the value when there is none."""
    panels = registry.env_meta(env_name).panels
    index = int(raw_index) if str(raw_index).isdigit() and len(str(raw_index)) < 6 else -1
    if not 0 <= index < len(panels):
        raise DomainError("unknown_panel", f"{str(raw_index)[:40]!r} is not a panel of {env_name}; it has {len(panels)}", path="panel")
    return panels[index]


@dataclass
class _Recorded:
    latest: dict[int, dict[str, Any]]  # panel position -> the newest result of exactly its call
    by_tool: dict[str, list[Any]]  # series tool -> the content of each of its successful results, oldest first


def _recorded(episode: Episode, panels: tuple[Panel, ...]) -> _Recorded:
    """What this episode has paid for that the panels show. Two queries: every step's calls (small), then the
    results of only the steps a panel or a chart series needs. O(steps) per render; fine for a year's episode."""
    wanted = {i: (p.tool, dict(p.arguments)) for i, p in enumerate(panels)}
    series_tools = {s.tool for p in panels for s in p.series}
    latest_at: dict[int, int] = {}
    series_at: list[int] = []
    calls = Step.objects.filter(episode=episode, source="agent").order_by("index").values_list("index", "tool_calls")
    for index, tool_calls in calls.iterator(chunk_size=500):
        for call in tool_calls or []:
            for i, (tool, arguments) in wanted.items():
                if call.get("name") == tool and call.get("arguments") == arguments:
                    latest_at[i] = index
            if call.get("name") in series_tools:
                series_at.append(index)
    needed = set(latest_at.values()) | set(series_at)
    out = _Recorded(latest={}, by_tool={tool: [] for tool in series_tools})
    rows = Step.objects.filter(episode=episode, index__in=needed).order_by("index").values_list("index", "tool_calls", "results")
    for index, tool_calls, results in rows.iterator(chunk_size=50):
        for call, result in zip(tool_calls or [], results or [], strict=False):
            is_error = bool(result.get("is_error"))
            for i, (tool, arguments) in wanted.items():
                if latest_at.get(i) == index and call.get("name") == tool and call.get("arguments") == arguments:
                    out.latest[i] = {"step": index, "content": result.get("content"), "is_error": is_error}
            if call.get("name") in series_tools and not is_error:
                out.by_tool[call["name"]].append(result.get("content"))
    return out


def operator_view(env: Env, episode: Episode) -> OperatorView:
    meta = registry.env_meta(env.name)
    recorded = _recorded(episode, meta.panels)
    opening = Step.objects.filter(episode=episode, index=0).values_list("message", flat=True).first()
    view = OperatorView(status=env.status(), briefing=opening if isinstance(opening, str) else "", keys=meta.keys())
    for i, panel in enumerate(meta.panels):
        shown = recorded.latest.get(i)
        entry: dict[str, Any] = {
            "index": i,
            "title": panel.title,
            "tool": panel.tool,
            "renderer": panel.renderer,
            "key": panel.key,
            "action_tool": panel.action_tool,
            "opened": shown is not None,
            "is_error": False,
        }
        if shown is not None:
            entry.update(shown)
        if panel.renderer == "screenshot":  # the current screen, as a vision model sees it each step
            entry["data"] = screen_panel(env, episode)
            entry["drawn"] = True
        elif panel.series:
            entry["data"] = series_chart(panel.series, recorded.by_tool)
            entry["drawn"] = not entry["data"]["empty"]
        elif shown is not None:
            entry["data"] = shown["content"] if shown["is_error"] else panel_data(panel.renderer, shown["content"], panel)
            entry["drawn"] = True
        if shown is not None and not shown["is_error"] and (not entry.get("drawn") or _not_its_shape(panel.renderer, shown["content"])):
            entry.update(_as_it_came(shown["content"]))
        view.panels.append(entry)
    return view


def _not_its_shape(renderer: str, content: Any) -> bool:
    """A result the renderer cannot draw (a compact one-line snapshot in a table panel): no list anywhere on top.
    An empty list ({"orders": []}) is the renderer's shape, and its "No rows." is the truth."""
    if renderer not in ("table", "chart", "chat", "files"):
        return False
    return not isinstance(content, list) and not (isinstance(content, dict) and any(isinstance(v, list) for v in content.values()))


def _as_it_came(content: Any) -> dict[str, Any]:
    """An opened panel always shows what its call bought: when its renderer has nothing to draw from the result,
    the result itself, as text or JSON."""
    if isinstance(content, str):
        return {"renderer": "text", "data": _text(content), "drawn": True, "as_it_came": True}
    return {"renderer": "json", "data": content, "drawn": True, "as_it_came": True}


# --- renderers: a tool result -> what templates/play/panels/<renderer>.html draws ------------------------------


def _rows(content: Any) -> list[Any]:
    """The list a result carries: itself, or the first list among an object's values (e.g. {"orders": [...]})."""
    if isinstance(content, list):
        return content
    if isinstance(content, dict):
        return next((v for v in content.values() if isinstance(v, list)), [])
    return []


def _order(key: SortKey, value: Any) -> tuple[int, float, str]:
    if value in key.rank:
        return (0, float(key.rank.index(value)), "")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return (1, float(value), "")
    return (2, 0.0, str(value))


def _sorted(rows: list[dict[str, Any]], keys: tuple[SortKey, ...]) -> list[dict[str, Any]]:
    """Stable sort by each key, last key first; rows without a key's value go last in either direction."""
    for key in reversed(keys):
        present = [r for r in rows if r.get(key.column) is not None]
        present.sort(key=lambda r: _order(key, r[key.column]), reverse=key.descending)
        rows = present + [r for r in rows if r.get(key.column) is None]
    return rows


def _table(content: Any, panel: Panel | None = None) -> dict[str, Any]:
    """Rows in the declared order, the declared columns (every key when none), each row with the class of the
    first highlight rule it meets and each cell marked when its column decided that."""
    found = [r if isinstance(r, dict) else {"value": r} for r in _rows(content)]
    rows = _sorted(found, panel.sort)[:_ROWS_SHOWN] if panel else found[:_ROWS_SHOWN]
    declared = panel.columns if panel else ()
    columns = [(c.key, c.heading, c.missing) for c in declared] or [(k, k, "—") for k in dict.fromkeys(k for r in rows for k in r)]
    out = []
    for row in rows:
        rule = next((h for h in (panel.highlights if panel else ()) if h.matches(row.get(h.column))), None)
        # A cell without a value says why (the column's rule) instead of JSON's "null".
        cells = [
            {
                "value": missing if row.get(key) is None else row[key],
                "missing": row.get(key) is None,
                "num": isinstance(row.get(key), (int, float)) and not isinstance(row.get(key), bool),
                "marked": rule is not None and rule.column == key,
            }
            for key, _, missing in columns
        ]
        out.append({"css": rule.css if rule else "", "cells": cells})
    return {
        "columns": [heading for _, heading, _ in columns],
        "rows": out,
        "empty": not out,
        "total": len(found),
        "cut": len(found) > len(out),
    }


def _chart(content: Any) -> dict[str, Any]:
    points = [p for p in _rows(content)[:_ROWS_SHOWN] if isinstance(p, dict) and isinstance(p.get("t"), (int, float))]
    names = list(dict.fromkeys(k for p in points for k, v in p.items() if k != "t" and isinstance(v, (int, float))))
    series = []
    if points:
        t0, t1 = min(p["t"] for p in points), max(p["t"] for p in points)
        for name in names:
            values = [(p["t"], p[name]) for p in points if isinstance(p.get(name), (int, float))]
            low, high = min(v for _, v in values), max(v for _, v in values)
            xy = [(_CHART_W * (t - t0) / ((t1 - t0) or 1), _CHART_H * (1 - (v - low) / ((high - low) or 1))) for t, v in values]
            series.append(
                {"name": name, "low": low, "high": high, "last": values[-1][1], "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)}
            )
    return {"series": series, "width": _CHART_W, "height": _CHART_H, "empty": not series}


def _chat(content: Any) -> dict[str, Any]:
    messages = [m for m in _rows(content) if isinstance(m, dict)]
    return {"messages": [{"role": str(m.get("role", "")), "content": m.get("content", "")} for m in messages], "empty": not messages}


def _files(content: Any) -> dict[str, Any]:
    files = [f for f in _rows(content) if isinstance(f, dict) and isinstance(f.get("path"), str)]
    files = sorted(files, key=lambda f: f["path"])
    return {"files": [{"path": f["path"], "depth": f["path"].count("/"), "content": f.get("content")} for f in files], "empty": not files}


def _image(content: Any) -> dict[str, Any]:
    src = content.get("src") if isinstance(content, dict) else None
    # The page's CSP allows images from data: URLs only (lab/security.py); anything else is shown as text.
    ok = isinstance(src, str) and src.startswith("data:image/")
    return {"src": src if ok else "", "alt": str(content.get("alt", "")) if isinstance(content, dict) else "", "empty": not ok}


def _text(content: Any) -> dict[str, Any]:
    if isinstance(content, dict):
        return {"lines": [f"{k}: {v}" for k, v in content.items()]}
    return {"lines": [str(content)]}


_PREPARE = {"table": _table, "chart": _chart, "chat": _chat, "files": _files, "image": _image, "text": _text}


def panel_data(renderer: str, content: Any, panel: Panel | None = None) -> Any:
    """What one renderer's template draws; "json" (like an error result) shows the content as it is."""
    if renderer == "table":
        return _table(content, panel)
    prepare = _PREPARE.get(renderer)
    return prepare(content) if prepare else content


def _path(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def series_chart(series: tuple[Series, ...], by_tool: dict[str, list[Any]]) -> dict[str, Any]:
    """Lines over x on one shared scale, from recorded results only; a later result's point replaces an
    earlier one at the same x (a day's figures as last seen: per tool in recording order, the series in order)."""
    # Series with one label are one line fed by several tools (the equity curve from pnl_history and each next_day).
    by_label: dict[str, dict[float, float]] = {}
    colour: dict[str, int] = {}
    for n, s in enumerate(series):
        points = by_label.setdefault(s.label, {})
        colour.setdefault(s.label, n)
        for content in by_tool.get(s.tool, []):
            for item in _rows(content) if s.rows else [content]:
                x, y = _path(item, s.x), _path(item, s.y)
                if _number(x) and _number(y):
                    points[x] = y
    lines: list[dict[str, Any]] = [
        {"name": label, "n": colour[label], "points": sorted(points.items())} for label, points in by_label.items() if points
    ]
    if not lines:
        return {"empty": True, "series": []}
    xs = [x for line in lines for x, _ in line["points"]]
    ys = [y for line in lines for _, y in line["points"]]
    x0, x1, y0, y1 = min(xs), max(xs), min(0.0, min(ys)), max(ys)

    def at(x: float, y: float) -> tuple[float, float]:
        return (_PAD + (_PLOT_W - 2 * _PAD) * (x - x0) / ((x1 - x0) or 1), _PAD + (_PLOT_H - 2 * _PAD) * (1 - (y - y0) / ((y1 - y0) or 1)))

    for line in lines:
        xy = [at(x, y) for x, y in line["points"]]
        line.update(
            last=line["points"][-1],
            dots=[{"x": f"{a:.1f}", "y": f"{b:.1f}"} for a, b in xy],
            path=" ".join(f"{a:.1f},{b:.1f}" for a, b in xy),
        )
    return {
        "empty": False,
        "shared": True,
        "series": lines,
        "width": _PLOT_W,
        "height": _PLOT_H,
        "x0": x0,
        "x1": x1,
        "y_high": y1,
        "y_low": y0,
        "x_label": series[0].x,
    }
