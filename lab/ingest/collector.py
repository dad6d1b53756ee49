"""`collector_paused()`: Python's cyclic garbage collector held off while an upload is parsed and stored.

    with collector_paused():
        result = import_payload(data)
        store(result)

An upload of tens of MiB becomes millions of dicts, lists and strings. Every allocation counts toward the
collector's thresholds, so building them sets off young collections that traverse each new container, and
as they survive, full collections over the whole heap: 45% of the request in `benchmarks/ingest.py`.
Parsed JSON holds no reference cycles, and reference counting frees it as usual, so the pause only delays
the collection of cyclic garbage made meanwhile (a traceback, say) until the block ends.

The collector is process-wide, so the pause is counted: requests in several threads nest, and it resumes
when the last of them ends, and only if it ran before the first began.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_resume = False


@contextmanager
def collector_paused() -> Iterator[None]:
    global _holders, _resume
    with _lock:
        if _holders == 0:
            _resume = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _resume:
                gc.enable()
