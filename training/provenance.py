"""Where a result came from, and writing it so that a crash never leaves half a file.

    write_result(path, {"experiment": ..., **provenance()})   # commit and machine beside the figures

Every committed result file under training/results/ carries the commit that made it and the machine it ran on, so a
reader can tell a figure measured on two shared CPU cores from one measured on a GPU.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


def commit() -> str:
    """The repository's HEAD, or "" outside a git checkout."""
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return ""


def machine() -> dict[str, Any]:
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


def provenance() -> dict[str, Any]:
    return {"commit": commit(), "machine": machine(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_result(path: Path, data: dict[str, Any]) -> Path:
    """Write `data` as JSON through a temporary file and a rename: a killed run leaves the old file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.rename(path)
    return path
