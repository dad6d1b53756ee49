"""Template helpers for the console: pretty JSON, the simulated clock, score bars, querystring edits."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.http import QueryDict
from django.urls import reverse
from django.utils.html import format_html

from environments import registry
from environments.screens import screenshot_ref

register = template.Library()


@register.filter
def pretty_json(value: Any) -> str:
    """Indented JSON for a <pre>. The result is plain text: autoescaping still applies in the template."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


@register.filter
def readable(value: Any) -> str:
    """A tool result as a person reads it: an object of plain values as "key: value" lines, its texts with their own
    line breaks (a screen's accessibility tree), not JSON-escaped onto one line; anything nested as indented JSON."""
    if isinstance(value, dict) and value and all(v is None or isinstance(v, str | int | float | bool) for v in value.values()):
        return "\n".join(f"{key}: {'—' if v is None else v if isinstance(v, str) else json.dumps(v)}" for key, v in value.items())
    return pretty_json(value)


@register.filter
def spoken(value: Any) -> Any:
    """A message as a person reads it: without the marks environments send themselves (EnvMeta.control_marks, a
    caller's "###STOP###"); the stored step keeps them, as replay needs."""
    if not isinstance(value, str):
        return value
    for meta in registry.list_envs():
        for mark in meta.control_marks:
            value = value.replace(mark, "")
    return value.strip()


@register.filter
def short_json(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register.simple_tag
def interval(low: Any, high: Any, n: Any, style: str = "score") -> str:
    """A 95% interval with its n beside it, the same on every page: "[0.210, 0.650] n=4"; "n=1" alone when there is
    no interval. `style`: score, signed (differences) or percent (rates)."""
    shown = {"score": score, "signed": signed, "percent": percent}[style]
    count = 0 if _missing(n) else n
    if _missing(low) or _missing(high):
        return format_html('<span class="interval muted">n={}</span>', count)
    return format_html('<span class="interval">[{}, {}] <small class="muted">n={}</small></span>', shown(low), shown(high), count)


@register.filter
def sim_clock(minutes: Any) -> str:
    """Simulated minutes since the episode start -> "day 3 14:05"."""
    if minutes is None:
        return ""
    day, minute = divmod(int(minutes), 1440)
    return f"day {day} {minute // 60:02d}:{minute % 60:02d}"


def _missing(value: Any) -> bool:
    # A lookup that fails in a template (a queued evaluation's empty aggregate) arrives as "", not None.
    return value is None or value == ""


@register.filter
def percent(value: Any, digits: int = 0) -> str:
    if _missing(value):
        return "—"
    return f"{float(value) * 100:.{digits}f}%"


@register.filter
def score(value: Any) -> str:
    return "—" if _missing(value) else f"{float(value):.3f}"


@register.filter
def signed(value: Any) -> str:
    return "—" if _missing(value) else f"{float(value):+.3f}"


@register.simple_tag(takes_context=True)
def query_with(context: Any, **changes: Any) -> str:
    """The current query string with some parameters replaced (None or "" removes one): keeps filters on links."""
    query: QueryDict = context["request"].GET.copy()
    for key, value in changes.items():
        if value in (None, ""):
            query.pop(key, None)
        else:
            query[key] = str(value)
    encoded = query.urlencode()
    return f"?{encoded}" if encoded else "?"


@register.filter
def pair(first: Any, second: Any) -> list[Any]:
    """[first, second], for a loop over both sides of a comparison row."""
    return [first, second]


@register.filter
def screenshot_url(step: Any, project_id: Any) -> str:
    """Where the step's screenshot loads from (lab.screenshots.api), or "" when it has none: an uploaded step's
    `meta.screenshot` may hold anything, and only a well-formed digest becomes a URL."""
    ref = screenshot_ref(step) if isinstance(step, dict) else None
    return f"{reverse('screenshot', args=[ref])}?project={int(project_id)}" if ref else ""
