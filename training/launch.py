"""Start a multi-process run through torchrun on this node and relay what rank 0 reports to the caller's hooks.

    result = launch("sft", config, hooks)      # what run_recipe does when config.parallel is ddp|fsdp outside torchrun

The caller (the lab's GPU worker, the CLI) keeps its hooks: rank 0 appends metrics to OUTPUT_DIR/metrics.jsonl
as every run does and checkpoints to OUTPUT_DIR/launch/checkpoints.jsonl; this process tails both into
on_metric/on_checkpoint, answers should_stop by creating OUTPUT_DIR/launch/stop (rank 0 polls it between steps and
every rank stops at the same step, with a checkpoint), and reads rank 0's RunResult from launch/result.json.
The rendezvous is a free loopback port; the children form their own process group and are killed with it on
any exit (error, timeout, the caller interrupted).

Several nodes: run `python -m torch.distributed.run --nnodes N --nproc-per-node G --rdzv-backend c10d
--rdzv-endpoint HOST:PORT -m training sft --config run.toml` on every node (training/README.md).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from training.config import TrainConfig
from training.engine import Hooks, RunResult

POLL_SECONDS = 0.2

logger = logging.getLogger(__name__)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def torchrun_command(recipe: str, config_file: Path, control: Path, processes: int, port: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes=1",
        f"--nproc-per-node={processes}",
        "--master-addr=127.0.0.1",
        f"--master-port={port}",
        "--max-restarts=0",
        "-m",
        "training.launch_worker",
        recipe,
        str(config_file),
        str(control),
    ]


class _Relay:
    """Tails rank 0's metrics and checkpoint files into the caller's hooks, from where they stood at launch."""

    def __init__(self, output_dir: Path, control: Path, hooks: Hooks) -> None:
        self.hooks = hooks
        self.files = {"metrics": output_dir / "metrics.jsonl", "checkpoints": control / "checkpoints.jsonl"}
        self.offsets = {name: (path.stat().st_size if path.exists() else 0) for name, path in self.files.items()}
        self.checkpoints: list[str] = []

    def pump(self) -> None:
        for name, path in self.files.items():
            if not path.exists():
                continue
            with open(path, encoding="utf-8") as handle:
                handle.seek(self.offsets[name])
                text = handle.read()
            complete = text[: text.rfind("\n") + 1]  # a line still being written waits for the next pump
            self.offsets[name] += len(complete.encode())
            for line in complete.splitlines():
                self._emit(name, json.loads(line))

    def _emit(self, name: str, row: dict[str, Any]) -> None:
        if name == "checkpoints":
            self.checkpoints.append(row["folder"])
            if self.hooks.on_checkpoint:
                self.hooks.on_checkpoint(int(row["step"]), row["folder"])
        elif self.hooks.on_metric:
            for key, value in row.items():
                if key != "step":
                    self.hooks.on_metric(int(row["step"]), key, float(value))


def launch(recipe: str, config: TrainConfig, hooks: Hooks | None = None, *, timeout: float | None = None) -> RunResult:
    """Run `recipe` in config.processes torchrun workers; raises RuntimeError (with the log's tail) if they fail."""
    hooks = hooks or Hooks()
    output_dir = Path(config.output_dir)
    control = output_dir / "launch"
    control.mkdir(parents=True, exist_ok=True)
    for stale in ("stop", "result.json", "checkpoints.jsonl"):
        (control / stale).unlink(missing_ok=True)
    config_file = control / "config.json"
    config_file.write_text(json.dumps(config.to_dict()))
    relay = _Relay(output_dir, control, hooks)
    log_path = control / "torchrun.log"
    deadline = None if timeout is None else time.monotonic() + timeout
    with open(log_path, "wb") as log:
        command = torchrun_command(recipe, config_file, control, config.processes, free_port())
        child = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
        try:
            while child.poll() is None:
                time.sleep(POLL_SECONDS)
                relay.pump()
                if hooks.should_stop and hooks.should_stop():
                    (control / "stop").touch()
                if deadline is not None and time.monotonic() > deadline:
                    raise TimeoutError(f"{recipe} run in {config.processes} processes passed its {timeout}s limit; log: {log_path}")
        finally:
            _stop_group(child)
    relay.pump()
    if not (control / "result.json").exists():
        tail = log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"torchrun exited with {child.returncode} ({config.processes} processes); log {log_path}:\n{tail}")
    if child.returncode != 0:
        # Rank 0 writes result.json only after every rank met the closing barrier (distributed.process_group), so
        # the run is complete and saved; what failed is a rank's teardown (a gloo abort was seen once under load).
        logger.warning("torchrun exited with %s after the run completed (teardown); log %s", child.returncode, log_path)
    saved = json.loads((control / "result.json").read_text())
    return RunResult(recipe, saved["steps"], relay.checkpoints, saved["last_metrics"], saved["stopped"])


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    """torchrun and its workers share one session: end them together, politely first."""
    if child.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(child.pid, sig)
        except ProcessLookupError:
            return
        try:
            child.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
