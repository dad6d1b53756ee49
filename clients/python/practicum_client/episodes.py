"""Episodes: upload (batched, retried, resumable), list and iterate (keyset pagination), read steps."""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from practicum_client._http import Http, expect_object
from practicum_client.errors import PracticumError
from practicum_client.uploads import Batch, Plan, UploadState, plan_file, plan_records, state_dir

FORMATS = ("auto", "native", "atif", "taubench", "tau2", "inspect", "openai", "sharegpt")
IMPORT_POLL_S = 0.5


@dataclass
class UploadResult:
    episode_ids: list[int]
    created: int
    already_stored: int
    batches_sent: int
    batches_skipped: int
    """Batches an earlier, interrupted run of this upload had delivered (not sent again)."""
    replayed: int
    """Batches the server answered from its idempotency record: delivered before, their answer lost."""


@dataclass
class Progress:
    batch: int
    episodes: int
    """Episodes acknowledged so far, earlier runs of a resumed upload included."""


class Episodes:
    def __init__(self, http: Http, project: str | None) -> None:
        self.http = http
        self.project = project

    def upload(
        self,
        source: str | Path | Iterable[dict[str, Any]],
        *,
        format: str = "auto",
        project: str | None = None,
        batch_size: int = 100,
        batch_bytes: int = 8 * 1024 * 1024,
        resume: bool = True,
        progress: Callable[[Progress], None] | None = None,
        state_folder: Path | None = None,
        session: str | None = None,
    ) -> UploadResult:
        """Upload records (dicts), or a file (`str`/`Path`) in any format the server reads, in batches.

        Every batch carries an Idempotency-Key, so one retried after a lost answer is never stored twice. A file
        upload that stops part-way resumes from its last acknowledged batch when run again (`resume=False` starts
        over); see practicum_client.uploads. `session` names the keys' session instead (`<session>:<batch>`) for a
        caller that keeps its own record of what it sent (the watchers, the proxy): the same source sent again under
        the same session is answered from the server's record, and no local resume state is kept."""
        if format not in FORMATS:
            raise PracticumError("unknown_format", f"format={format!r}; use one of {', '.join(FORMATS)}")
        if batch_size < 1 or batch_bytes < 1:
            raise PracticumError("invalid_batch", f"batch_size={batch_size}, batch_bytes={batch_bytes}: both must be at least 1")
        project = project or self.project
        if isinstance(source, (str, Path)):
            file = Path(source)
            plan = plan_file(file, format=format, batch_size=batch_size, batch_bytes=batch_bytes)
        else:
            plan = plan_records(source, format=format, batch_size=batch_size, batch_bytes=batch_bytes)
        if session is not None:
            state = UploadState(None, session=_checked_key(session))
        elif isinstance(source, (str, Path)):
            identity = f"{self.http.url}\0{project}\0{format}\0{batch_size}\0{batch_bytes}"
            state = UploadState.for_file(Path(source), folder=state_folder or state_dir(), identity=identity, resume=resume)
        else:
            state = UploadState(None)
        skipped = state.acked
        sent = replayed = 0
        for batch in plan.batches:
            if batch.index < state.acked:
                continue
            ids, created, stored, was_replayed = self._send(batch, plan, project, state.idempotency_key(batch))
            state.ack(episode_ids=ids, created=created, already_stored=stored)
            sent += 1
            replayed += was_replayed
            if progress is not None:
                progress(Progress(batch=batch.index, episodes=len(state.episode_ids)))
        state.done()
        return UploadResult(state.episode_ids, state.created, state.already_stored, sent, skipped, replayed)

    def upload_document(self, name: str, body: bytes, *, format: str, key: str, project: str | None = None) -> UploadResult:
        """One whole document (a log file's bytes, `name` its file name) under the caller's Idempotency-Key: a watcher
        that derives `key` from the document's identity may send it again after a restart and is answered from the
        server's record of the first."""
        if format not in FORMATS or format == "native":
            raise PracticumError("unknown_format", f"format={format!r}; a document is imported as one of {', '.join(FORMATS[2:])} or auto")
        batch = Batch(0, body, 1, whole=name)
        ids, created, stored, replayed = self._send(batch, Plan(iter(()), False, format), project or self.project, _checked_key(key))
        return UploadResult(ids, created, stored, 1, 0, int(replayed))

    def _send(self, batch: Batch, plan: Plan, project: str | None, key: str) -> tuple[list[int], int, int, bool]:
        headers = {"Idempotency-Key": key}
        if plan.native:
            response = self.http.request(
                "POST",
                "episodes/",
                params={"project": project},
                content=batch.json_list(),
                headers={**headers, "Content-Type": "application/json"},
            )
            answer = expect_object(response.json(), "episode upload")
            episodes = answer.get("episodes") or []
            created = sum(1 for e in episodes if e.get("created"))
            return [int(e["id"]) for e in episodes], created, len(episodes) - created, _replayed(response.headers)
        name = batch.whole or f"batch-{batch.index:06d}.jsonl"
        response = self.http.request(
            "POST",
            "episodes/import/",
            params={"project": project, "format": plan.format, "wait": True},
            files={"file": (name, batch.body)},
            headers=headers,
        )
        job = self._import_finished(expect_object(response.json(), "import"))
        report = job.get("report") or {}
        return (
            [int(i) for i in job.get("episode_ids") or []],
            int(report.get("created", 0)),
            int(report.get("already_stored", 0)),
            _replayed(response.headers),
        )

    def _import_finished(self, job: dict[str, Any]) -> dict[str, Any]:
        """The import job once it has ended (the server waits for it a while; a long one is polled here)."""
        while job.get("status") not in ("done", "failed"):
            time.sleep(IMPORT_POLL_S)
            job = expect_object(self.http.json("GET", f"imports/{job['id']}/"), "import")
        if job["status"] == "failed":
            error = job.get("error") or {}
            raise PracticumError(str(error.get("code", "import_failed")), str(error.get("message", "")), details={"import": job["id"]})
        return job

    def list(self, *, limit: int = 50, **filters: Any) -> list[dict[str, Any]]:
        """The newest `limit` episodes (at most 500) matching the filters (env, task, agent, source, provenance,
        status, passed, score_min, score_max, after, before, ...; unknown names are refused by the server)."""
        page = expect_object(self.http.json("GET", "episodes/", params={**filters, "limit": limit}), "episode list")
        return list(page.get("results") or [])

    def iter(self, *, page_size: int = 200, **filters: Any) -> Iterator[dict[str, Any]]:
        """Every matching episode, newest first, a page at a time (keyset pagination: stable while episodes arrive)."""
        page = expect_object(self.http.json("GET", "episodes/", params={**filters, "limit": page_size}), "episode list")
        while True:
            yield from page.get("results") or []
            following = page.get("next")
            if not following:
                return
            page = expect_object(self.http.json("GET", str(following)), "episode list")

    def get(self, episode_id: int) -> dict[str, Any]:
        return expect_object(self.http.json("GET", f"episodes/{int(episode_id)}/"), "episode")

    def steps(self, episode_id: int, *, page_size: int = 500) -> builtins.list[dict[str, Any]]:
        """All of the episode's steps, in order."""
        steps: builtins.list[dict[str, Any]] = []
        offset: int | None = 0
        while offset is not None:
            page = expect_object(
                self.http.json("GET", f"episodes/{int(episode_id)}/steps/", params={"offset": offset, "limit": page_size}), "steps"
            )
            steps.extend(page.get("steps") or [])
            offset = page.get("next_offset")
        return steps

    def export(self, episode_id: int, *, format: str = "native") -> dict[str, Any]:
        """One episode as a canonical record (`native`) or an OpenAI chat record (`openai`)."""
        return expect_object(self.http.json("GET", f"episodes/{int(episode_id)}/export/", params={"format": format}), "episode")


def _checked_key(value: str) -> str:
    # The server keeps keys of at most 200 characters; a header cannot carry control characters.
    if not value or len(value) > 160 or not value.isprintable():
        raise PracticumError("invalid_idempotency_key", f"idempotency key or session {value[:40]!r}: 1 to 160 printable characters")
    return value


def _replayed(headers: Any) -> bool:
    return str(headers.get("Idempotent-Replayed", "")).lower() == "true"
