"""Which format a document is, and how it splits into per-episode units (decided by shape alone)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from lab.ingest.documents import Document
from lab.ingest.errors import IngestError
from lab.ingest.formats import atif, inspect_ai, native, openai, sharegpt, tau2, taubench

# Record-shaped formats in detection order: the most specific markers first (a tau2 simulation and an
# inspect sample both hold `messages`, so they are tried before plain OpenAI chat).
RECORD_FORMATS: tuple[ModuleType, ...] = (native, atif, taubench, tau2, inspect_ai, openai, sharegpt)
FORMATS: dict[str, ModuleType] = {module.NAME: module for module in RECORD_FORMATS}
FORMAT_NAMES: tuple[str, ...] = ("auto", *FORMATS)
_HINTS = (
    'native (schema_version "practicum.trajectory/1"), openai (messages), atif (schema_version "ATIF-v1.x", steps), '
    "taubench (task_id, reward, traj), tau2 (simulations, tasks, info), inspect (eval, samples), sharegpt (conversations)"
)


@dataclass
class Unit:
    """One future episode: `raw` is what gets stored as its original payload, found at `origin` in `file`."""

    format: str
    raw: Any
    origin: str
    file: str
    context: dict[str, Any] = field(default_factory=dict)


@dataclass
class Split:
    units: list[Unit]
    unmapped: list[str] = field(default_factory=list)  # document-level keys that belong to no episode


def _record_format(value: Any) -> str | None:
    return next((module.NAME for module in RECORD_FORMATS if module.matches(value)), None)


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        keys = sorted(map(str, value))
        return "an object with keys " + ", ".join(keys[:8]) + (" ..." if len(keys) > 8 else "") if keys else "an empty object"
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def _unknown(index: int, path: str, value: Any, file: str) -> IngestError:
    return IngestError(index, path, f"unrecognised format: {_describe(value)} matches none of {_HINTS}", file=file)


def split_document(document: Document, fmt: str, first_index: int) -> Split:
    """Units of one document. `fmt` is a format name or "auto"; `first_index` is the upload-wide index so far."""
    file = document.file
    context = {"file": file}
    if document.kind == "eval":
        if fmt not in ("auto", inspect_ai.NAME):
            raise IngestError(first_index, "", f"an inspect .eval archive cannot be read as {fmt}", file=file)
        shared, unmapped = inspect_ai.container_context(document.value if isinstance(document.value, dict) else {})
        units = [Unit(inspect_ai.NAME, sample, "", name, {**context, **shared}) for name, sample in document.samples]
        return Split(units, [f"header.json:{key}" for key in unmapped])
    value = document.value
    if fmt in ("auto", tau2.NAME) and tau2.is_container(value):
        shared, unmapped = tau2.container_context(value)
        return Split(
            [Unit(tau2.NAME, sim, f"simulations[{i}]", file, {**context, **shared}) for i, sim in enumerate(value["simulations"])], unmapped
        )
    if fmt in ("auto", inspect_ai.NAME) and inspect_ai.is_container(value):
        shared, unmapped = inspect_ai.container_context(value)
        samples = value.get("samples") or []
        if not isinstance(samples, list):
            raise IngestError(first_index, "samples", "expected array", file=file)
        return Split(
            [Unit(inspect_ai.NAME, sample, f"samples[{i}]", file, {**context, **shared}) for i, sample in enumerate(samples)], unmapped
        )
    if isinstance(value, list):
        if not value:
            raise IngestError(first_index, "", "the upload holds an empty list: no records", file=file)
        if fmt in ("auto", openai.NAME) and all(isinstance(item, dict) and "role" in item for item in value):
            return Split([Unit(openai.NAME, value, "", file, context)])  # a bare message list is one conversation
        units = []
        for i, item in enumerate(value):
            found = fmt if fmt != "auto" else _record_format(item)
            if found is None:
                raise _unknown(first_index + i, f"[{i}]", item, file)
            units.append(Unit(found, item, f"[{i}]", file, context))
        return Split(units)
    found = fmt if fmt != "auto" else _record_format(value)
    if found is None:
        raise _unknown(first_index, "", value, file)
    if found in (tau2.NAME, inspect_ai.NAME) and fmt != "auto" and not FORMATS[found].matches(value):
        raise IngestError(
            first_index, "", f"expected a {found} results file: {_describe(value)} is neither a results file nor one run", file=file
        )
    return Split([Unit(found, value, "", file, context)])


def unit_index_for(path: str, units: list[Unit], first_index: int) -> int:
    """The upload-wide index of the unit that holds `path` (a document-level problem location)."""
    for offset, unit in enumerate(units):
        origin = unit.origin
        if origin and (path == origin or path.startswith(origin + ".") or path.startswith(origin + "[")):
            return first_index + offset
    return first_index
