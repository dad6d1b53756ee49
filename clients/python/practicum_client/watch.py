"""Watching a folder for a harness's result files and uploading what each holds, once (`practicum watch KIND DIR`).

A `Source` knows one harness's files (practicum_client.harnesses): which names to read, whether a file is complete,
and what to send for it, each upload under an Idempotency-Key derived from what it carries.

- Polling, not inotify: it works the same on network filesystems, in containers and for files that are rewritten.
- Complete before sent: a file is read once its mtime is `settle_s` old, and the source then checks that it is
  whole (a zip with its header, JSON that parses); a file still being written is left for a later pass.
- Once, across restarts: a state file records, per file, the version (size, mtime) last handled and the marks of
  what was delivered (a log's digest, tau2 simulation ids). A restarted watcher skips handled versions without
  reading them; a rewritten file is read again and only what is new is sent. A state lost, or an upload whose answer
  was lost, is covered by the key: the server answers a repeat from its record of the first.
- A refusal (4xx) is recorded with the file's version and not retried until the file changes; no answer (the server
  away, 429, 5xx) leaves the file for the next pass.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from practicum_client.client import Client
from practicum_client.errors import PracticumError, TransportError
from practicum_client.uploads import state_dir, write_json_atomic

log = logging.getLogger("practicum_client")


@dataclass
class Upload:
    name: str
    """The file name the server records as the episodes' origin."""
    body: bytes
    key: str
    """Idempotency-Key: derived from what the upload carries, so a resend after a restart is answered, not stored."""
    marks: list[str]
    """What it delivers (a digest, simulation ids); a later pass sends only what has no mark yet."""


class Source(Protocol):
    kind: str
    format: str
    suffixes: tuple[str, ...]

    def uploads(self, path: Path, data: bytes, marks: set[str]) -> list[Upload] | None:
        """What to send for the file's current bytes beyond `marks`; None while it is incomplete.
        A complete file that is not this harness's answers [] (it is then left alone until it changes)."""
        ...


@dataclass
class Handled:
    """One file's outcome: `uploaded` episodes, or why it was left (`waiting`, `refused`, `unreachable`)."""

    file: str
    outcome: str
    episode_ids: list[int] = field(default_factory=list)
    replayed: int = 0
    error: str = ""


class Watcher:
    def __init__(
        self,
        client: Client,
        folder: Path,
        source: Source,
        *,
        project: str | None = None,
        settle_s: float = 2.0,
        state_file: Path | None = None,
        on_handled: Callable[[Handled], None] | None = None,
    ) -> None:
        if not folder.is_dir():
            raise PracticumError("folder_missing", f"{folder} is not a folder")
        if settle_s < 0:
            raise PracticumError("invalid_settle", f"settle_s={settle_s}: must be at least 0")
        self.client = client
        self.folder = folder.resolve()
        self.source = source
        self.project = project or client.project
        self.settle_s = settle_s
        identity = f"{source.kind}\0{self.folder}\0{client.url}\0{self.project}"
        default = state_dir() / "watch" / f"{source.kind}-{hashlib.sha256(identity.encode()).hexdigest()[:20]}.json"
        self.state_file = state_file or default
        self.files: dict[str, dict[str, Any]] = self._load()
        self.on_handled = on_handled

    def _load(self) -> dict[str, dict[str, Any]]:
        try:
            saved = json.loads(self.state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # Starting over is safe (every upload's key is its content's), only slower: say so and go on.
            log.warning("practicum watch: state file %s is unreadable (%s); every file will be checked again", self.state_file, exc)
            return {}
        files = saved.get("files") if isinstance(saved, dict) else None
        return files if isinstance(files, dict) else {}

    def _save(self) -> None:
        write_json_atomic(self.state_file, {"folder": str(self.folder), "kind": self.source.kind, "files": self.files})

    def candidates(self) -> list[Path]:
        own = self.state_file.resolve()  # a state file kept in the watched folder is not a result file
        return sorted(p for p in self.folder.rglob("*") if p.suffix.lower() in self.source.suffixes and p.is_file() and p.resolve() != own)

    def pass_once(self) -> list[Handled]:
        """Look at every candidate file once; upload what is complete and new. Returns what happened to each file
        that was not already handled."""
        handled = []
        for path in self.candidates():
            outcome = self._handle(path)
            if outcome is not None:
                handled.append(outcome)
                if self.on_handled is not None:
                    self.on_handled(outcome)
        return handled

    def run(self, *, interval_s: float = 5.0, stop: threading.Event | None = None) -> None:
        """Pass after pass, `interval_s` apart, until `stop` is set (or the process is interrupted)."""
        stop = stop or threading.Event()
        while not stop.is_set():
            self.pass_once()
            stop.wait(interval_s)

    def _handle(self, path: Path) -> Handled | None:
        name = str(path.relative_to(self.folder))
        try:
            before = path.stat()
        except FileNotFoundError:
            return None  # removed since listed
        version = {"size": before.st_size, "mtime_ns": before.st_mtime_ns}
        record = self.files.get(name, {})
        if record.get("version") == version:
            return None  # this version was handled by an earlier pass (or an earlier watcher)
        if time.time() - before.st_mtime < self.settle_s:
            return Handled(name, "waiting")
        data = path.read_bytes()
        after = path.stat()
        if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
            return Handled(name, "waiting")  # written to while read
        marks = set(record.get("marks", []))
        uploads = self.source.uploads(path, data, marks)
        if uploads is None:
            return Handled(name, "waiting")
        done = Handled(name, "uploaded" if uploads else "unchanged")
        for upload in uploads:
            try:
                result = self.client.episodes.upload_document(
                    upload.name, upload.body, format=self.source.format, key=upload.key, project=self.project
                )
            except PracticumError as exc:
                if isinstance(exc, TransportError) or exc.status == 429 or exc.status >= 500:
                    return Handled(name, "unreachable", done.episode_ids, done.replayed, str(exc))
                log.warning("practicum watch: %s was refused: %s", name, exc)
                self.files[name] = {**record, "version": version, "refused": f"{exc.code}: {exc.message}"}
                self._save()
                return Handled(name, "refused", done.episode_ids, done.replayed, f"{exc.code}: {exc.message}")
            record = {
                **record,
                "marks": sorted(set(record.get("marks", [])) | set(upload.marks)),
                "episode_ids": [*record.get("episode_ids", []), *result.episode_ids],
            }
            self.files[name] = record
            self._save()  # after every upload: a kill between two loses nothing already acknowledged
            done.episode_ids.extend(result.episode_ids)
            done.replayed += result.replayed
        self.files[name] = {**{k: v for k, v in record.items() if k != "refused"}, "version": version}
        self._save()
        return done
