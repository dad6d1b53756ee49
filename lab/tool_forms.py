"""Browser forms for tools, generated from each tool's JSON Schema, and the parsing of what comes back: the play
page's tool calls and the viewer's diagnosis corrections both use them.

    fields = tool_fields(spec)                                  # what the template renders, one input per property
    arguments, errors = tool_arguments_parse(spec, request.POST, prefix="")   # errors: {field: message}

Scalars get typed inputs; a long string (a file's content, a message: no pattern, room for more than a line) is
a textarea whose line breaks arrive as "\n", as a model's would; a string with a pattern shows an example and
the rule in words (lab.pattern_words), never the regular expression; lists of scalars are one comma-separated
input; lists of objects (purchase order lines, quote lines) are a JSON textarea with an example, checked as
the player types (static/js/play.js) and again here. Each field is checked with the same
`validate_arguments` the environment uses, so a message names the field and the offending value before any
budget is spent; what the schema cannot know (an unknown SKU) is the environment's answer, as for a model.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from environments.core import ToolSpec, validate_arguments
from lab.edge import json_loads_checked
from lab.errors import DomainError
from lab.pattern_words import pattern_example, pattern_rule

# A string field allowing more than this many characters (and no pattern) is a textarea: one line is too small.
LONG_TEXT = 120
_DEFAULT_MAX_STRING = 2000  # environments.core's limit for a string without maxLength


@dataclass
class ToolField:
    name: str
    widget: str  # text | textarea | number | integer | checkbox | select | list | json
    required: bool
    description: str = ""
    choices: list[Any] = field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    rule: str = ""  # a pattern in words
    max_length: int | None = None
    json_kind: str = ""  # json widget: "array" or "object", what the field must parse to
    placeholder: str = ""
    value: str = ""
    error: str = ""


def _example(schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "object":
        return {k: _example(v) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])}
    if kind == "array":
        return [_example(schema.get("items", {}))]
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "integer":
        return int(schema.get("minimum", 1)) if schema.get("minimum", 1) > 0 else 1
    if kind == "number":
        return float(schema.get("minimum", 1.0)) if schema.get("minimum", 1.0) > 0 else 1.0
    if kind == "string" and "SKU" in schema.get("description", "").upper():
        return "P01-BLA-M"
    return "..."


def tool_fields(spec: ToolSpec, values: dict[str, str] | None = None, errors: dict[str, str] | None = None) -> list[ToolField]:
    values, errors = values or {}, errors or {}
    required = set(spec.parameters.get("required", []))
    fields: list[ToolField] = []
    for name, schema in spec.parameters.get("properties", {}).items():
        kind = schema.get("type")
        items = schema.get("items", {})
        if "enum" in schema:
            widget = "select"
        elif kind == "boolean":
            widget = "checkbox"
        elif kind in ("integer", "number"):
            widget = kind
        elif kind == "array" and items.get("type") in ("string", "integer", "number"):
            widget = "list"
        elif kind in ("array", "object"):
            widget = "json"
        elif _is_long_text(schema):
            widget = "textarea"
        else:
            widget = "text"
        placeholder, rule = "", ""
        if widget == "json":
            placeholder = json.dumps(_example(schema))
        elif widget == "list":
            placeholder = "comma-separated, e.g. " + ", ".join(str(_example(items)) for _ in range(2))
        elif "pattern" in schema:
            rule = pattern_rule(schema["pattern"])
            example = pattern_example(schema["pattern"])
            placeholder = f"e.g. {example}" if example else ""
        elif widget in ("integer", "number") and schema.get("minimum") is not None:
            placeholder = (
                f"{schema['minimum']} – {schema['maximum']}" if schema.get("maximum") is not None else f"{schema['minimum']} or more"
            )
        max_length = schema.get("maxLength", _DEFAULT_MAX_STRING) if widget in ("text", "textarea") else None
        fields.append(
            ToolField(
                name=name,
                widget=widget,
                required=name in required,
                description=schema.get("description", ""),
                choices=list(schema.get("enum", [])),
                minimum=schema.get("minimum"),
                maximum=schema.get("maximum"),
                rule=rule,
                max_length=max_length,
                json_kind=kind if widget == "json" else "",
                placeholder=placeholder,
                value=values.get(name, ""),
                error=errors.get(name, ""),
            )
        )
    return fields


def _is_long_text(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "string" and "pattern" not in schema and schema.get("maxLength", _DEFAULT_MAX_STRING) > LONG_TEXT


def form_text(raw: Any) -> str:
    """A browser's text as a model would send it: a textarea posts its line breaks as CRLF, the tools expect "\n"."""
    return str(raw).replace("\r\n", "\n")


def _pattern_problem(value: Any, schema: dict[str, Any]) -> str:
    """A string off its pattern, said with the rule in words and an example instead of the regular expression."""
    pattern = schema.get("pattern")
    if not pattern or not isinstance(value, str) or re.fullmatch(pattern, value):
        return ""
    rule, example = pattern_rule(pattern), pattern_example(pattern)
    if not rule:
        return ""  # validate_arguments names the pattern itself
    return f"{value[:40]!r} is not in the expected form: {rule}" + (f" (e.g. {example})" if example else "")


def _scalar(raw: str, schema: dict[str, Any]) -> Any:
    kind = schema.get("type")
    if kind == "integer":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"expected a whole number, got {raw!r}") from None
    if kind == "number":
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"expected a number, got {raw!r}") from None
    return raw


def tool_arguments_parse(spec: ToolSpec, data: Any, *, prefix: str = "") -> tuple[dict[str, Any], dict[str, str]]:
    """Form data -> (arguments, {field: message}). Blank optional fields are left out of the arguments."""
    arguments: dict[str, Any] = {}
    errors: dict[str, str] = {}
    required = set(spec.parameters.get("required", []))
    for name, schema in spec.parameters.get("properties", {}).items():
        key = prefix + name
        kind = schema.get("type")
        if kind == "boolean":
            if key in data:
                arguments[name] = str(data.get(key)).lower() in ("on", "true", "1", "yes")
            continue
        raw = form_text(data.get(key, ""))
        if raw.strip() == "":
            if name in required:
                errors[name] = "this field is required"
            continue
        if not _is_long_text(schema):  # a file's or a message's own spacing is kept; a SKU's stray space is not
            raw = raw.strip()
        try:
            if kind == "array" and schema.get("items", {}).get("type") in ("string", "integer", "number"):
                value: Any = [_scalar(part.strip(), schema["items"]) for part in raw.split(",") if part.strip()]
            elif kind in ("array", "object"):
                try:
                    value = json_loads_checked(raw, path=name)
                except DomainError as exc:
                    raise ValueError(exc.message.removeprefix(f"{name}: ")) from None
            else:
                value = _scalar(raw, schema)
        except ValueError as exc:
            errors[name] = str(exc)
            continue
        problem = _pattern_problem(value, schema) or validate_arguments(schema, value)
        if problem:
            errors[name] = problem.replace("arguments", name, 1).removeprefix(f"{name}: ")
            continue
        arguments[name] = value
    if not errors:
        problem = validate_arguments(spec.parameters, arguments)
        if problem:
            errors["form"] = problem
    return arguments, errors


def tool_values(data: Any, spec: ToolSpec, *, prefix: str = "") -> dict[str, str]:
    """What the user typed, to render the form again beside its messages."""
    return {name: str(data.get(prefix + name, "")) for name in spec.parameters.get("properties", {})}
