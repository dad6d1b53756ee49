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
    """What a figure was measured on. The CPU's model and its vector capability matter as much as the core count:
    the same SFT step took 19-24 s on an AVX512-BF16/AMX Xeon and 100-120 s on an AVX2-only EPYC (training/README)."""
    import torch

    from training.decode import bf16_supported

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "bf16_native": bf16_supported(),
        "cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
    }


def _cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo ('' where there is none: not Linux)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        return ""


def provenance() -> dict[str, Any]:
    return {"commit": commit(), "machine": machine(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_result(path: Path, data: dict[str, Any]) -> Path:
    """Write `data` as JSON through a temporary file and a rename: a killed run leaves the old file or none."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    tmp.rename(path)
    return path
