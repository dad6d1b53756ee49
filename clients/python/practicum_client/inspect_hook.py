"""An inspect_ai hook that uploads each eval log to Practicum as soon as its task ends (inspect writes the log
before it calls the hook). Registered through this package's `inspect_ai` entry point, so installing the client
is enough; it acts only when PRACTICUM_INSPECT_UPLOAD=1, with the server from PRACTICUM_URL / PRACTICUM_API_KEY (or
the config file) as everywhere else.

The upload carries the watcher's key for the same log, so running the hook and `practicum watch inspect` on the
same log folder stores each log once. A failed upload is logged by inspect as a hook warning and does not stop the
eval; the watcher (or `practicum upload LOG`) sends it later.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import anyio.to_thread
from inspect_ai.hooks import Hooks, TaskEnd, hooks

from practicum_client.client import Client
from practicum_client.harnesses import inspect_log_upload

log = logging.getLogger("practicum_client")
ENABLE = "PRACTICUM_INSPECT_UPLOAD"


@hooks(name="practicum", description="Upload each eval log to Practicum when its task ends (PRACTICUM_INSPECT_UPLOAD=1)")
class PracticumHooks(Hooks):
    def enabled(self) -> bool:
        return os.environ.get(ENABLE, "").strip().lower() in ("1", "true", "yes")

    async def on_task_end(self, data: TaskEnd) -> None:
        location = data.log.location.removeprefix("file://")
        if not location or "://" in location:
            log.warning("practicum: the log of %s is at %r, not a local file; upload it with the watcher", data.eval_id, location)
            return
        await anyio.to_thread.run_sync(_upload, Path(location))


def _upload(path: Path) -> None:
    with Client() as client:
        result = inspect_log_upload(client, path)
    if result is not None:
        log.info("practicum: %s uploaded as %d episodes", path.name, len(result.episode_ids))
