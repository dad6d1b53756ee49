"""The one error the ingest package raises: it names the record, the field path and the reason."""

from __future__ import annotations

from typing import Any


class IngestError(Exception):
    """A refused upload. Nothing of the upload may be stored when this is raised.

    `record_index` counts episodes in upload order (a JSONL line, a list element, a tau2 simulation, an
    inspect sample); `path` is the field path inside the uploaded document (`[3].traj[2].role`,
    `simulations[1].messages[0].content`, `steps[4].index`); `status` is the HTTP status the API answers
    with (400 for bad content, 413 for too much of it). `file` names the zip member when there is one.
    Duck-compatible with `lab.errors.DomainError` (code, message, status, details, as_json).
    """

    code = "invalid_upload"

    def __init__(self, record_index: int, path: str, reason: str, status: int = 400, *, file: str = "", code: str = "") -> None:
        if code:  # e.g. "too_large" for an upload whose decoding would pass the byte budget
            self.code = code
        self.record_index = record_index
        self.path = path
        self.reason = reason
        self.status = status
        self.file = file
        where = f"record {record_index}" + (f" in {file}" if file else "") + (f", field {path}" if path else "")
        self.message = f"{where}: {reason}"
        super().__init__(self.message)

    @property
    def details(self) -> dict[str, Any]:
        details: dict[str, Any] = {"record_index": self.record_index, "path": self.path, "reason": self.reason}
        if self.file:
            details["file"] = self.file
        return details

    def as_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.details}}


def join_path(base: str, key: str | int) -> str:
    """`messages` + 3 -> `messages[3]`; `messages[3]` + `role` -> `messages[3].role`; `` + `steps` -> `steps`."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if not key:
        return base
    if not base:
        return key
    return f"{base}{key}" if key.startswith("[") else f"{base}.{key}"
