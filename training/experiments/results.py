"""An experiment's evidence as files in the repository, and its README table rebuilt from them.

    python -m training.experiments report             # every experiment with result files -> its README section
    python -m training.experiments report --check     # exit 1 naming each table that differs from its files

A full run (not --smoke) writes one JSON per training run under `training/results/<experiment>/<arm>/`, named like
its run folder (`<point>-seed<S>-<config hash>.json`): the recipe config, the seed, the base and teacher with their
hashes, the commit, the machine, the wall times and every evaluation episode. Before any arm trains, the room check
plays the base on the test seeds and writes `room-<base hash>.json` beside them: a base scoring below ROOM_LOW or above
ROOM_HIGH leaves no room to help or to hurt, and the runner stops (`--no-room-check` runs anyway; the table then says
it is not evidence).

The table is made from these files alone (training/experiments/tables.py: `result_from_files`), never from a run's memory, so a README and its files
cannot drift apart (tests/training/test_experiment_results.py rebuilds every table). The files are the runner's resume
state across machines too: a run whose file holds what the table needs is never trained again.

Which files make a table: those of the experiment's current definition (arms, shared config, evaluation, grid:
`definition_hash`) on one base, the base of the newest file. Files of another base are counted apart under the table;
files of an earlier definition are stale and named as such; a file that cannot be read is named, and then the table
is not rewritten at all (`ResultFileError`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from training.experiments import Experiment
from training.provenance import REPO_ROOT, provenance, write_result

RESULTS = REPO_ROOT / "training" / "results"
ROOM_LOW, ROOM_HIGH = 0.05, 0.95
"""A base whose mean test reward lies outside [ROOM_LOW, ROOM_HIGH] leaves a comparison no room: every arm sits on
the floor or the ceiling, and a null there says nothing about the method."""


class ResultFileError(ValueError):
    """A result file that cannot be read (not JSON, or missing what a table needs): the message names the file."""


class NoRoom(RuntimeError):
    """The base leaves no room on the experiment's test seeds (module docstring)."""


def model_identity(path: str | Path) -> dict[str, str]:
    """{"name", "hash"} of a model folder: a zoo model's spec name and config hash (zoo.json), a packaged model's store
    name and conversion (manifest.json), else the folder's name and no hash. The same model has the same identity on
    every machine, whatever its folder is called there."""
    from training.model_store import read_manifest
    from training.zoo import manifest

    if not str(path):
        return {"name": "", "hash": ""}
    zoo = manifest(path)
    if zoo.get("hash"):
        return {"name": str(zoo.get("name", Path(path).name)), "hash": str(zoo["hash"])}
    store = read_manifest(Path(path))
    if store.get("name"):
        digest = hashlib.sha256(json.dumps(store.get("source"), sort_keys=True, default=str).encode()).hexdigest()[:12]
        return {"name": str(store["name"]), "hash": f"{digest}-v{store.get('conversion_version', 0)}"}
    return {"name": Path(path).name, "hash": ""}


def portable(value: Any, models: dict[str, str]) -> Any:
    """`value` with machine-specific paths replaced: a model folder by its identity ("zoo:smol-base@355f7f5f5998"), a
    path inside the repository by its relative form. What a run's config hash is taken over, and what its file keeps."""
    if isinstance(value, dict):
        return {k: portable(v, models) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [portable(v, models) for v in value]
    if isinstance(value, str | Path) and str(value):
        text = str(value)
        if text in models:
            return models[text]
        root = str(REPO_ROOT) + "/"
        if text.startswith(root):
            return text[len(root) :]
    return value


def identity_label(identity: dict[str, str]) -> str:
    return f"{identity['name']}@{identity['hash']}" if identity.get("hash") else identity.get("name", "")


def definition_hash(experiment: Experiment) -> str:
    """What decides which runs an experiment's table is made of: its arms' recipes and overrides, shared config,
    evaluation and grid (not its wording, seeds or README)."""
    payload = {
        "arms": [[a.name, a.recipe, a.overrides] for a in experiment.arms],
        "shared": experiment.shared,
        "evaluation": dataclasses.asdict(experiment.evaluation),
        "tuning": {k: list(v) for k, v in experiment.tuning.items()},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run_file(results: Path, experiment: str, arm: str, run_name: str) -> Path:
    return results / experiment / arm / f"{run_name}.json"


def room_file(results: Path, experiment: str, base: dict[str, str]) -> Path:
    return results / experiment / f"room-{base['hash'] or base['name']}.json"


def write_run(
    path: Path,
    result: dict[str, Any],
    *,
    experiment: Experiment,
    base: dict[str, str],
    teacher: dict[str, str] | None,
    models: dict[str, str],
    command: str,
) -> None:
    """The run's result.json made portable, with what produced it (module docstring)."""
    write_result(
        path,
        {
            **portable(result, models),
            "experiment": experiment.name,
            "definition": definition_hash(experiment),
            "base": base,
            "teacher": teacher,
            "command": command,
            **provenance(),
        },
    )


def room_verdict(reward_mean: float) -> str:
    return "room" if ROOM_LOW <= reward_mean <= ROOM_HIGH else "no room"
