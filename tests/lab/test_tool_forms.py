"""lab.tool_forms: the fields a tool's schema gets on the play page and in the viewer's correction form, and the
parsing of what a browser posts back."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from environments import registry
from lab.tool_forms import tool_arguments_parse, tool_fields


def _spec(task: str, tool: str) -> Any:
    return next(spec for spec in registry.make(task, seed=0).tools() if spec.name == tool)


def test_a_long_string_is_a_textarea_with_its_limit_and_a_pattern_is_an_example_and_words() -> None:
    path, content = tool_fields(_spec("workdesk/operations", "write_file"))
    assert (content.widget, content.max_length) == ("textarea", 8000)
    assert path.widget == "text" and path.placeholder == "e.g. abc/def.ghi"
    assert path.rule.startswith("one or more letters, digits or _") and "\\" not in path.rule
    [lines] = [f for f in tool_fields(_spec("storebench/cash-crunch", "create_purchase_order")) if f.name == "lines"]
    assert (lines.widget, lines.json_kind) == ("json", "array")


def test_a_textarea_keeps_its_lines_and_spacing_as_a_model_would_send_them() -> None:
    spec = _spec("workdesk/operations", "write_file")
    arguments, errors = tool_arguments_parse(spec, {"path": " out/notes.md ", "content": "# Notes\r\n\r\n  - one\r\n"})
    assert errors == {}
    assert arguments == {"path": "out/notes.md", "content": "# Notes\n\n  - one\n"}


def test_a_value_off_its_pattern_is_refused_with_the_rule_in_words_not_the_regex() -> None:
    _, errors = tool_arguments_parse(_spec("storebench/cash-crunch", "get_product"), {"sku": "shoes"})
    assert errors == {
        "sku": "'shoes' is not in the expected form: “P”, 2 digits, “-”, 3 capital letters, “-”, one of S, M, L or OS (e.g. P12-ABC-S)"
    }


def test_no_playable_environment_shows_a_regular_expression_in_its_forms() -> None:
    for meta in registry.list_envs():
        if not meta.playable:
            continue
        task = registry.list_tasks(meta.env)[0]
        for spec in registry.make(task.id, seed=0).tools():
            html = render_to_string("play/_tool_fields.html", {"fields": tool_fields(spec), "prefix": "", "form_id": "-x"})
            for schema in spec.parameters.get("properties", {}).values():
                pattern = schema.get("pattern") if isinstance(schema, dict) else None
                assert not pattern or pattern not in html.replace("&quot;", '"'), f"{task.id} {spec.name} shows {pattern!r}"
