"""Calibration of StoreBench's short family (short.py), on both engines: AdvSim2Real judges its simulator's episodes
(engine 1.0.0) and its real world's (2.0.0) each against its own engine's references and thresholds.

    python -m environments calibrate storebench-short                  # every short task, both engines, seeds 1000-1009
    python -m environments calibrate storebench-short --tasks cold-snap-3d --heldout-seeds 1000-1003

The method is calibration.py's (references and thresholds from each task's three public seeds; pass rates on
held-out seeds that feed nothing back); results go to short_calibration.json, one section per engine, and the
held-out tables into README.md's "Short family" section.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from environments.storebench.calibration import (
    DEFAULT_HELDOUT_SEEDS,
    README_PATH,
    _progress,
    calibrate_tasks,
    calibration_inputs,
    calibration_write,
    heldout_markdown,
    replace_block,
)
from environments.storebench.calibration import table_markdown as engine_table
from environments.storebench.env import StoreBenchEnv
from environments.storebench.short import ENV, SHORT_CALIBRATION_PATH

ENGINES = (StoreBenchEnv.version, *StoreBenchEnv.frozen_versions)
COMMAND = "python -m environments calibrate storebench-short"
START, END = "<!-- short-calibration:start -->", "<!-- short-calibration:end -->"


def calibrate(
    *,
    workers: int = 2,
    write: bool = True,
    tasks: list[str] | None = None,
    heldout_seeds: Sequence[int] | str = DEFAULT_HELDOUT_SEEDS,
    path: Path = SHORT_CALIBRATION_PATH,
    readme: Path = README_PATH,
    progress: Callable[[int, int, float], None] | None = _progress,
) -> dict[str, Any]:
    """{engine version: {task key: entry}} for `tasks` (keys or ids; default all) on every engine; with `write`,
    merged into short_calibration.json and the README block rewritten."""
    specs, heldout = calibration_inputs(ENV, tasks, heldout_seeds, what="short StoreBench task")
    out: dict[str, Any] = {}
    for version in ENGINES:
        current = version == StoreBenchEnv.version
        out[version], run = calibrate_tasks(specs, heldout, workers=workers, progress=progress, version=None if current else version)
        if write:
            calibration_write(out[version], run=run, path=path, version=version, command=COMMAND)
    if write:
        readme_write(path, readme)
    return out


def tables(engines: dict[str, Any]) -> str:
    """The held-out table of each engine section ({version: {"scenarios", "last_run"?}}), newest engine first."""
    parts = [
        heldout_markdown(engines[v]["scenarios"], env_version=v, run=engines[v].get("last_run"), env=ENV)
        for v in sorted(engines, reverse=True)
    ]
    return "\n\n".join(parts)


def readme_write(path: Path = SHORT_CALIBRATION_PATH, readme: Path = README_PATH) -> None:
    engines = json.loads(path.read_text())["engines"]
    readme.write_text(replace_block(readme.read_text(), START, END, tables(engines)))


def table_markdown(result: dict[str, Any]) -> str:
    """The calibration-seed table of each engine calibrated just now (what the CLI prints besides the held-out ones)."""
    return "\n\n".join(f"Engine `{ENV} {v}`:\n\n{engine_table(result[v])}" for v in sorted(result, reverse=True))


def report_markdown(result: dict[str, Any]) -> str:
    return table_markdown(result) + "\n\n" + tables({v: {"scenarios": s} for v, s in result.items()})


if __name__ == "__main__":  # python -m environments.storebench.short_calibration: only rewrite the README block
    readme_write()
