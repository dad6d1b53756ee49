"""What a player sees beside the tool forms: the environment's status line and the panels its metadata declares.

    view = operator_view(env, episode)      # env: a private copy (play_env); nothing here spends budget

A panel is a tool call the environment names (environments.meta.Panel). Opening it is a submitted step like
any other, charged and recorded; the page then shows, for each panel, the result of the latest recorded step
that made exactly that call, drawn by the renderer the panel names (templates/play/panels/<renderer>.html).
The lab knows the renderers, never the environment.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from environments import registry
from environments.core import Env
from environments.meta import Panel
from lab.errors import DomainError
from lab.trajectories.models import Episode, Step

_ROWS_SHOWN = 200  # a table or chart past this many rows is cut; the full result is in the step record
_CHART_W, _CHART_H = 320, 120


@dataclass
class OperatorView:
    summary: str
    status: dict[str, str] = field(default_factory=dict)
    panels: list[dict[str, Any]] = field(default_factory=list)


def play_panel(env_name: str, raw_index: Any) -> Panel:
    """The panel a form names by its position; a DomainError naming the value when there is none."""
    panels = registry.env_meta(env_name).panels
    index = int(raw_index) if str(raw_index).isdigit() else -1
    if not 0 <= index < len(panels):
        raise DomainError("unknown_panel", f"{raw_index!r} is not a panel of {env_name}; it has {len(panels)}", path="panel")
    return panels[index]


def _latest_results(episode: Episode, panels: tuple[Panel, ...]) -> dict[int, dict[str, Any]]:
    """Panel position -> the newest recorded result of exactly its call. Reads backwards and stops once every
    panel has one, so a long episode whose panels were opened recently costs a few rows."""
    wanted = {i: (p.tool, dict(p.arguments)) for i, p in enumerate(panels)}
    found: dict[int, dict[str, Any]] = {}
    steps = Step.objects.filter(episode=episode, source="agent").order_by("-index").values_list("index", "tool_calls", "results")
    for index, calls, results in steps.iterator(chunk_size=50):
        for call, result in zip(calls or [], results or [], strict=False):
            for i, (tool, arguments) in wanted.items():
                if i not in found and call.get("name") == tool and call.get("arguments") == arguments:
                    found[i] = {"step": index, "content": result.get("content"), "is_error": bool(result.get("is_error"))}
        if len(found) == len(wanted):
            break
    return found


def operator_view(env: Env, episode: Episode) -> OperatorView:
    panels = registry.env_meta(env.name).panels
    latest = _latest_results(episode, panels)
    view = OperatorView(summary=env.summary(), status=env.status())
    for i, panel in enumerate(panels):
        shown = latest.get(i)
        entry: dict[str, Any] = {"index": i, "title": panel.title, "tool": panel.tool, "renderer": panel.renderer,
                                 "action_tool": panel.action_tool, "opened": shown is not None}  # fmt: skip
        if shown is not None:
            entry.update(shown, data=shown["content"] if shown["is_error"] else panel_data(panel.renderer, shown["content"]))
        view.panels.append(entry)
    return view


# --- renderers: a tool result -> what templates/play/panels/<renderer>.html draws ------------------------------


def _rows(content: Any) -> list[Any]:
    """The list a result carries: itself, or the first list among an object's values (e.g. {"orders": [...]})."""
    if isinstance(content, list):
        return content
    if isinstance(content, dict):
        return next((v for v in content.values() if isinstance(v, list)), [])
    return []


def _table(content: Any) -> dict[str, Any]:
    rows = [r if isinstance(r, dict) else {"value": r} for r in _rows(content)[:_ROWS_SHOWN]]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return {"columns": columns, "rows": [[r.get(c, "") for c in columns] for r in rows], "empty": not rows}


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
            series.append({"name": name, "low": low, "high": high, "last": values[-1][1],
                           "points": " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)})  # fmt: skip
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


def panel_data(renderer: str, content: Any) -> Any:
    """What one renderer's template draws; "json" (like an error result) shows the content as it is."""
    prepare = _PREPARE.get(renderer)
    return prepare(content) if prepare else content
