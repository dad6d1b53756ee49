"""The result files of harnesses people already run, as sources for practicum_client.watch.

inspect_ai eval logs (`.eval` zip or `.json`): uploaded whole once finished, one upload per version of the log.
tau2-bench results files: rewritten by tau2 after every simulation, so each pass sends only the simulations that
have not been sent, as a Results document of their own.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from practicum_client.episodes import UploadResult
from practicum_client.watch import Source, Upload

if TYPE_CHECKING:
    from practicum_client.client import Client

KEY_PREFIX = "practicum-watch"
TAU2_SIMULATIONS_PER_UPLOAD = 50


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:24]


def inspect_log_header(name: str, data: bytes) -> tuple[str, dict[str, Any]]:
    """("finished", header) for a finished inspect log; otherwise ("partial" | "running" | "foreign", {}).

    A `.eval` zip gets its `header.json` when the eval ends (while it runs it holds `_journal/` and samples), and a
    zip being written has no central directory yet; a `.json` log is complete once it parses. A log whose status is
    still "started" is running. "foreign": complete, but not an eval log (inspect writes other JSON beside its logs)."""
    if name.lower().endswith(".eval"):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = set(archive.namelist())
                if "header.json" not in names:
                    return ("running" if any(n.startswith("_journal/") for n in names) else "foreign"), {}
                header = json.loads(archive.read("header.json"))
        except (zipfile.BadZipFile, EOFError):
            return "partial", {}
        except ValueError:
            return "foreign", {}
    else:
        try:
            header = json.loads(data)
        except ValueError:
            return "partial", {}
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict):
        return "foreign", {}
    if header.get("status") in (None, "started"):
        return "running", {}
    return "finished", header


class InspectLogs:
    kind = "inspect"
    format = "inspect"
    suffixes: tuple[str, ...] = (".eval", ".json")

    def uploads(self, path: Path, data: bytes, marks: set[str]) -> list[Upload] | None:
        state, header = inspect_log_header(path.name, data)
        if state in ("partial", "running"):
            return None
        if state == "foreign":
            return []  # left alone until it changes
        digest = _digest(data)
        if digest in marks:
            return []  # the same bytes as a version already sent (touched, not changed)
        # The key is the log's identity (its eval id) and version (its digest): `inspect score` rewrites a log in place.
        eval_id = str(header["eval"].get("eval_id") or header["eval"].get("run_id") or "")[:60]
        return [Upload(path.name, data, f"{KEY_PREFIX}:inspect:{eval_id}:{digest}", [digest])]


def inspect_log_upload(client: Client, path: Path, *, project: str | None = None) -> UploadResult | None:
    """Upload one finished inspect log (None if it is not one) under the key the watcher gives it, so a log that both
    the hook and a watcher send is stored once."""
    data = path.read_bytes()
    uploads = InspectLogs().uploads(path, data, set())
    if not uploads:
        return None
    [upload] = uploads
    return client.episodes.upload_document(upload.name, upload.body, format=InspectLogs.format, key=upload.key, project=project)


def tau2_simulation_id(simulation: dict[str, Any]) -> str:
    """tau2 gives every simulation a unique `id`; one without (hand-made files) is known by its content."""
    given = simulation.get("id")
    if isinstance(given, (str, int)) and str(given):
        return str(given)
    return "sha:" + _digest(json.dumps(simulation, sort_keys=True, separators=(",", ":")).encode())


class Tau2Results:
    kind = "tau2"
    format = "tau2"
    suffixes: tuple[str, ...] = (".json",)

    def uploads(self, path: Path, data: bytes, marks: set[str]) -> list[Upload] | None:
        try:
            results = json.loads(data)
        except ValueError:
            return None  # cut short mid-write: tau2 rewrites the whole file after each simulation
        if not isinstance(results, dict) or not isinstance(results.get("simulations"), list):
            return []
        new = [s for s in results["simulations"] if isinstance(s, dict) and tau2_simulation_id(s) not in marks]
        uploads = []
        for start in range(0, len(new), TAU2_SIMULATIONS_PER_UPLOAD):
            chunk = new[start : start + TAU2_SIMULATIONS_PER_UPLOAD]
            ids = [tau2_simulation_id(s) for s in chunk]
            task_ids = {str(s.get("task_id")) for s in chunk}
            # Each upload is a Results document of its own: the shared info, and only the tasks its simulations ran.
            tasks = [t for t in results.get("tasks") or [] if isinstance(t, dict) and str(t.get("id")) in task_ids]
            body = json.dumps({**results, "tasks": tasks, "simulations": chunk}, ensure_ascii=False).encode()
            # Which simulations, and the exact bytes: a resend is replayed; a file rewritten otherwise is a new request.
            key = f"{KEY_PREFIX}:tau2:{_digest(chr(0).join(sorted(ids)).encode())}:{_digest(body)}"
            uploads.append(Upload(path.name, body, key, ids))
        return uploads


SOURCES: dict[str, Callable[[], Source]] = {"inspect": InspectLogs, "tau2": Tau2Results}
