"""Datasets: matching episodes exported as JSONL, streamed to a file without holding it in memory."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from practicum_client._http import Http
from practicum_client.errors import PracticumError


@dataclass
class ExportResult:
    path: Path
    lines: int
    bytes: int


class Datasets:
    def __init__(self, http: Http) -> None:
        self.http = http

    def export(
        self, path: str | Path, *, format: str = "openai", view: str = "episode", role: str | None = None, **filters: Any
    ) -> ExportResult:
        """Write matching episodes to `path` as JSONL: OpenAI `{"messages", "tools", "metadata"}` records (`format=
        "native"`: canonical records; `view="role"` with `role`: one line per turn of that role). The file appears
        complete or not at all: it is written beside `path` and moved into place at the end."""
        if format not in ("openai", "native"):
            raise PracticumError("unknown_format", f"format={format!r}; use openai or native")
        target = Path(path)
        partial = target.with_name(target.name + ".partial")
        lines = size = 0
        params = {**filters, "format": format, "view": view, "role": role}
        try:
            with self.http.stream("datasets/export", params=params) as response, partial.open("wb") as handle:
                for chunk in response.iter_bytes():
                    handle.write(chunk)
                    lines += chunk.count(b"\n")
                    size += len(chunk)
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
        return ExportResult(target, lines, size)
