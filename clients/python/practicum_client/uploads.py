"""What an upload sends: its source cut into batches, and the state that lets an interrupted upload resume.

Sources:
- records (a list or any iterable of dicts): one JSON line each, batched.
- a `.jsonl` / `.ndjson` file: read line by line, never whole, batched; each line is one document to the server
  (lab.ingest reads every line of a JSONL upload on its own), so cutting between lines changes nothing.
- any other file (`.json`, `.zip`, an inspect `.eval`): one document, sent whole in one batch.

A batch of native records goes to POST /episodes/ as a JSON list; any other format to POST /episodes/import/.

Resuming (the choice, and why): a local state file per upload, keyed by the file's path, size and mtime (and the
server, project, format and batch shape), records the batches the server acknowledged and the idempotency session.
A rerun skips the acknowledged batches without sending them (a multi-GB file is not re-sent), and re-sends the rest
under the same Idempotency-Keys, so a batch the server stored but whose answer was lost is answered from the
server's record instead of being stored twice. The state file is removed when the upload completes.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from practicum_client.errors import PracticumError

LINE_SUFFIXES = (".jsonl", ".ndjson")
NATIVE_PREFIX = "practicum.trajectory"


@dataclass
class Batch:
    index: int
    body: bytes
    """JSONL lines (records and line files), or the whole file's bytes (`whole`)."""
    count: int
    whole: str = ""
    """For a one-document file: its name, sent as the multipart file name."""

    def json_list(self) -> bytes:
        return b"[" + b",".join(line for line in self.body.splitlines() if line.strip()) + b"]"


def is_native(document: Any) -> bool:
    return isinstance(document, dict) and str(document.get("schema_version", "")).startswith(NATIVE_PREFIX)


def _cut(lines: Iterable[bytes], *, batch_size: int, batch_bytes: int) -> Iterator[Batch]:
    chunk: list[bytes] = []
    size = 0
    index = 0
    for line in lines:
        if chunk and (len(chunk) >= batch_size or size + len(line) > batch_bytes):
            yield Batch(index, b"".join(chunk), len(chunk))
            index += 1
            chunk, size = [], 0
        chunk.append(line)
        size += len(line)
    if chunk:
        yield Batch(index, b"".join(chunk), len(chunk))


def record_lines(records: Iterable[Any]) -> Iterator[bytes]:
    for i, record in enumerate(records):
        if not isinstance(record, dict):
            raise PracticumError("invalid_record", f"records[{i}] is a {type(record).__name__}; each record is a JSON object (dict)")
        yield (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def file_lines(path: Path) -> Iterator[bytes]:
    with path.open("rb") as handle:
        for line in handle:
            if line.strip():
                yield line if line.endswith(b"\n") else line + b"\n"


def first_document(path: Path) -> Any:
    """The first line of a JSONL file, parsed (None when it is not JSON: the server will name the problem)."""
    for line in file_lines(path):
        try:
            return json.loads(line)
        except ValueError:
            return None
    raise PracticumError("empty_file", f"{path} holds no records")


@dataclass
class Plan:
    """How a source is sent: `native` batches to /episodes/, otherwise to /episodes/import/ as `format`."""

    batches: Iterator[Batch]
    native: bool
    format: str


def plan_records(records: Iterable[Any], *, format: str, batch_size: int, batch_bytes: int) -> Plan:
    iterator = iter(records)
    first = next(iterator, None)
    if first is None:
        raise PracticumError("empty_upload", "no records to upload")
    native = format == "native" or (format == "auto" and is_native(first))
    lines = record_lines(_chain(first, iterator))
    return Plan(_cut(lines, batch_size=batch_size, batch_bytes=batch_bytes), native, format)


def plan_file(path: Path, *, format: str, batch_size: int, batch_bytes: int) -> Plan:
    if not path.is_file():
        raise PracticumError("file_missing", f"{path} is not a file")
    if path.suffix.lower() in LINE_SUFFIXES:
        native = format == "native" or (format == "auto" and is_native(first_document(path)))
        return Plan(_cut(file_lines(path), batch_size=batch_size, batch_bytes=batch_bytes), native, format)
    return Plan(iter([Batch(0, path.read_bytes(), 1, whole=path.name)]), False, format)


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def state_dir() -> Path:
    explicit = os.environ.get("PRACTICUM_STATE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "practicum" / "uploads"


def write_json_atomic(path: Path, value: Any) -> None:
    """Write `value` as JSON so that a kill mid-write leaves the previous file, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(value), encoding="utf-8")
    os.replace(temporary, path)


@dataclass
class UploadState:
    """What the server acknowledged of one file's upload so far; saved after every batch."""

    path: Path | None
    session: str = field(default_factory=lambda: uuid.uuid4().hex)
    acked: int = 0
    episode_ids: list[int] = field(default_factory=list)
    created: int = 0
    already_stored: int = 0

    @classmethod
    def for_file(cls, file: Path, *, folder: Path, identity: str, resume: bool) -> UploadState:
        info = file.stat()
        key = hashlib.sha256(f"{file.resolve()}\0{info.st_size}\0{info.st_mtime_ns}\0{identity}".encode()).hexdigest()[:32]
        path = folder / f"{key}.json"
        if resume and path.is_file():
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
                return cls(
                    path,
                    saved["session"],
                    int(saved["acked"]),
                    [int(i) for i in saved["episode_ids"]],
                    int(saved["created"]),
                    int(saved["already_stored"]),
                )
            except (OSError, ValueError, KeyError, TypeError):
                pass  # a damaged state file: start over (every batch keeps its Idempotency-Key, so nothing doubles)
        return cls(path)

    def idempotency_key(self, batch: Batch) -> str:
        return f"practicum-client:{self.session}:{batch.index}"

    def ack(self, *, episode_ids: list[int], created: int, already_stored: int) -> None:
        self.acked += 1
        self.episode_ids.extend(episode_ids)
        self.created += created
        self.already_stored += already_stored
        if self.path is None:
            return
        fields = {
            "session": self.session,
            "acked": self.acked,
            "episode_ids": self.episode_ids,
            "created": self.created,
            "already_stored": self.already_stored,
        }
        write_json_atomic(self.path, fields)

    def done(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)
