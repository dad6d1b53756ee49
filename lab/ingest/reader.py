"""Typed, path-aware reading of foreign JSON objects, remembering which fields were understood.

Every importer reads through a `Reader`: a wrong type raises `IngestError` naming the exact field path,
and at `done()` the keys nobody asked for are reported as unmapped (they stay in the raw payload).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

from lab.ingest.budget import ByteBudget
from lab.ingest.errors import IngestError, join_path

_KINDS: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "object": (dict,),
    "array": (list,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}


def type_ok(value: Any, kinds: str) -> bool:
    for kind in kinds.split("|"):
        if kind in ("number", "integer") and isinstance(value, bool):
            continue
        if kind == "any" or isinstance(value, _KINDS[kind]):
            return True
    return False


def type_name(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null", int: "integer", float: "number"}
    return names.get(type(value), type(value).__name__)


@dataclass
class RecordContext:
    """What one record's mapping needs to report: its index, its file, and what it could not map.
    `budget` is the upload's byte budget, for mappings that expand what they read (inspect attachments)."""

    record_index: int
    file: str = ""
    unmapped: list[str] = field(default_factory=list)
    budget: ByteBudget | None = None

    def fail(self, path: str, reason: str) -> NoReturn:
        raise IngestError(self.record_index, path, reason, file=self.file)

    def expect(self, value: Any, kinds: str, path: str) -> Any:
        if not type_ok(value, kinds):
            self.fail(path, f"expected {kinds.replace('|', ' or ')}, got {type_name(value)}")
        return value


class Reader:
    """One JSON object under `path`. `get` marks a key understood; `done` reports the others."""

    def __init__(self, value: Any, path: str, ctx: RecordContext) -> None:
        ctx.expect(value, "object", path or "(top level)")
        self.value: dict[str, Any] = value
        self.path = path
        self.ctx = ctx
        self.used: set[str] = set()

    def at(self, key: str | int) -> str:
        return join_path(self.path, key)

    def has(self, key: str) -> bool:
        return self.value.get(key) is not None

    def get(self, key: str, kinds: str = "any", *, required: bool = False, default: Any = None) -> Any:
        self.used.add(key)
        if key not in self.value or (self.value[key] is None and "null" not in kinds and not required):
            if required:
                self.ctx.fail(self.at(key), "required field is missing")
            return default
        return self.ctx.expect(self.value[key], kinds, self.at(key))

    def text(self, key: str, *, required: bool = False, default: str | None = None) -> str | None:
        value = self.get(key, "string", required=required, default=default)
        if required and not value:
            self.ctx.fail(self.at(key), "must not be empty")
        return value

    def child(self, key: str, *, required: bool = False) -> Reader | None:
        value = self.get(key, "object", required=required)
        return None if value is None else Reader(value, self.at(key), self.ctx)

    def array(self, key: str, *, required: bool = False) -> list[Any]:
        return self.get(key, "array", required=required, default=[])

    def skip(self, *keys: str) -> None:
        """Keys understood but deliberately not mapped (redundant with what is mapped)."""
        self.used.update(keys)

    def rest(self) -> dict[str, Any]:
        """The keys nobody asked for, marked used: for formats whose extras belong in `meta` verbatim."""
        extra = {k: v for k, v in self.value.items() if k not in self.used and v is not None}
        self.used.update(extra)
        return extra

    def done(self) -> None:
        for key, value in self.value.items():
            if key not in self.used and value is not None:  # a null loses nothing
                self.ctx.unmapped.append(self.at(key))


def drop_none(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}
