"""The one error the ingest package raises: it names the record, the field path and the reason."""

from __future__ import annotations

from typing import Any

from lab.errors import DomainError


class IngestError(DomainError):
    """A refused upload. Nothing of the upload may be stored when this is raised.

    `record_index` counts episodes in upload order (a JSONL line, a list element, a tau2 simulation, an
    inspect sample); `path` is the field path inside the uploaded document (`[3].traj[2].role`,
    `simulations[1].messages[0].content`, `steps[4].index`); `status` is the HTTP status the API answers
    with (400 for bad content, 413 for too much of it). `file` names the zip member when there is one.
    """

    def __init__(self, record_index: int, path: str, reason: str, status: int = 400, *, file: str = "", code: str = "") -> None:
        where = f"record {record_index}" + (f" in {file}" if file else "") + (f", field {path}" if path else "")
        details: dict[str, Any] = {"record_index": record_index, "path": path, "reason": reason}
        if file:
            details["file"] = file
        # code is e.g. "too_large" for an upload whose decoding would pass the byte budget
        super().__init__(code or "invalid_upload", f"{where}: {reason}", status=status, **details)
        self.record_index = record_index
        self.path = path
        self.reason = reason
        self.file = file


def join_path(base: str, key: str | int) -> str:
    """`messages` + 3 -> `messages[3]`; `messages[3]` + `role` -> `messages[3].role`; `` + `steps` -> `steps`."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if not key:
        return base
    if not base:
        return key
    return f"{base}{key}" if key.startswith("[") else f"{base}.{key}"
