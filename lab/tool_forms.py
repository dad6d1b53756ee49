"""Browser forms for tools, generated from each tool's JSON Schema, and the parsing of what comes back: the play
page's tool calls and the viewer's diagnosis corrections both use them.

    fields = tool_fields(spec)                                  # what the template renders, one input per property
    arguments, errors = tool_arguments_parse(spec, request.POST, prefix="")   # errors: {field: message}

Scalars get typed inputs; lists of scalars are one comma-separated input; lists of objects (purchase order
lines, quote lines) are a JSON textarea with an example. Each field is checked with the same
`validate_arguments` the environment uses, so a message names the field and the offending value before any
budget is spent; what the schema cannot know (an unknown SKU) is the environment's answer, as for a model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from environments.core import ToolSpec, validate_arguments
from lab.edge import json_loads_checked
from lab.errors import DomainError


@dataclass
class ToolField:
    name: str
    widget: str  # text | number | integer | checkbox | select | list | json
    required: bool
    description: str = ""
    choices: list[Any] = field(default_factory=list)
    minimum: float | None = None
    maximum: float | None = None
    pattern: str = ""
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
        else:
            widget = "text"
        placeholder = ""
        if widget == "json":
            placeholder = json.dumps(_example(schema))
        elif widget == "list":
            placeholder = "comma-separated, e.g. " + ", ".join(str(_example(items)) for _ in range(2))
        fields.append(
            ToolField(
                name=name, widget=widget, required=name in required, description=schema.get("description", ""),
                choices=list(schema.get("enum", [])), minimum=schema.get("minimum"), maximum=schema.get("maximum"),
                pattern=schema.get("pattern", ""), placeholder=placeholder, value=values.get(name, ""), error=errors.get(name, ""),
            )
        )  # fmt: skip
    return fields


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
        raw = str(data.get(key, "")).strip()
        if raw == "":
            if name in required:
                errors[name] = "this field is required"
            continue
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
        problem = validate_arguments(schema, value)
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
