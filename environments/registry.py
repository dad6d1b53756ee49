"""Where environments register their tasks, and where everyone else finds them.

    make("storebench/supplier-collapse", seed=3) -> Env
    task_set("storebench/eval") -> [TaskSpec, ...]     # "<env>/<split or 'eval'|'train'|'all'>" or one task id

    env_meta("storebench") -> EnvMeta                   # what the lab needs: playable, panels, anchors, ...

Each environment package registers its tasks and its metadata (environments.meta: anchors, panels, analyzer,
calibration, screen renderer) when imported. The registry discovers the packages, so adding an environment
touches only its own folder: every package folder under environments/ (imported as environments.<name>), then
every package folder under the folders listed in $PRACTICUM_ENV_PATH (os.pathsep-separated; each folder goes on
sys.path and its packages are imported by name). A package that registers nothing (environments.diagnosis) is
not an environment and costs one import.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from environments.core import Env, EnvError, TaskSpec, options_problem
from environments.meta import EnvMeta

EnvFactory = Callable[..., Env]  # (task, seed) -> Env, also taking options= and version= when it has them

ENV_PATH_VARIABLE = "PRACTICUM_ENV_PATH"
_HERE = Path(__file__).resolve().parent


def _packages_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if (p / "__init__.py").is_file() and p.name.isidentifier()) if folder.is_dir() else []


def env_packages() -> list[str]:
    """The importable names of every environment package, built-in ones first (each list by name)."""
    found = [f"environments.{name}" for name in _packages_in(_HERE)]
    for entry in os.environ.get(ENV_PATH_VARIABLE, "").split(os.pathsep):
        folder = Path(entry).expanduser().resolve() if entry else None
        if folder is None or folder == _HERE:
            continue
        if str(folder) not in sys.path:
            sys.path.append(str(folder))  # appended: an extra environment never shadows an installed module
        found += _packages_in(folder)
    return found


_TASKS: dict[str, tuple[TaskSpec, EnvFactory]] = {}
_ENVS: dict[str, EnvMeta] = {}
_loaded = False


def register(task: TaskSpec, factory: EnvFactory) -> None:
    existing = _TASKS.get(task.id)
    assert existing is None or existing[0] == task, f"task {task.id} registered twice with different specs"
    _TASKS[task.id] = (task, factory)


def register_env(meta: EnvMeta) -> None:
    existing = _ENVS.get(meta.env)
    assert existing is None or existing == meta, f"environment {meta.env} declared twice with different metadata"
    _ENVS[meta.env] = meta


def _ensure_loaded() -> None:
    global _loaded
    if _loaded:
        return
    for package in env_packages():
        importlib.import_module(package)  # an import error inside an environment surfaces, naming it
    _loaded = True


def rediscover() -> None:
    """Looks for environment packages again on next use (one added to $PRACTICUM_ENV_PATH since); those already
    imported keep their registrations."""
    global _loaded
    _loaded = False


def list_tasks(env: str | None = None) -> list[TaskSpec]:
    _ensure_loaded()
    tasks = [task for task, _ in _TASKS.values() if env is None or task.env == env]
    return sorted(tasks, key=lambda t: (t.env, t.split, t.key))


def env_meta(env: str) -> EnvMeta:
    """The environment's declaration. Any other name gets the batch-only default (not playable, no anchors):
    the lab also shows uploaded episodes of environments this installation does not have."""
    _ensure_loaded()
    return _ENVS.get(env) or EnvMeta(env=env)


def list_envs() -> list[EnvMeta]:
    """Every environment with registered tasks, by name."""
    return [env_meta(name) for name in sorted({task.env for task in list_tasks()})]


def get_task(task_id: str) -> TaskSpec:
    _ensure_loaded()
    if task_id not in _TASKS:
        raise EnvError("unknown_task", f"unknown task {task_id!r}; `python -m environments list` shows them all")
    return _TASKS[task_id][0]


def make(task_id: str, seed: int, *, options: dict[str, Any] | None = None, version: str | None = None) -> Env:
    """A fresh environment for one task and seed, already reset.

    `options` are the environment's per-episode options (Env.options_schema); `version` asks for an engine
    version other than the current one, and is refused with EnvError("unsupported_version") when the
    environment does not run it."""
    task = get_task(task_id)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise EnvError("bad_seed", f"seed must be an integer, got {seed!r}")
    if options is not None and not isinstance(options, dict):
        raise EnvError("bad_options", f"options must be an object, got {options!r}")
    factory = _TASKS[task_id][1]
    if version is not None and version == getattr(factory, "version", None):
        version = None  # the current engine
    # Only asked-for extras are passed, so a plain (task, seed) factory keeps working for the default engine.
    extras = {k: v for k, v in (("options", options), ("version", version)) if v is not None}
    env = factory(task, seed, **extras)
    env.reset()
    return env


def options_check(task_id: str, options: Any) -> dict[str, Any]:
    """Per-episode options checked against the task's environment (its options_schema) without building one;
    raises EnvError("bad_options") with the message naming the field and value."""
    task = get_task(task_id)
    factory = _TASKS[task_id][1]
    if problem := options_problem(task.env, getattr(factory, "options_schema", {}), options):
        raise EnvError("bad_options", problem)
    return dict(options)


def task_set(name: str) -> list[TaskSpec]:
    """Tasks named by a set: "<env>/eval" (dev + test), "<env>/train", "<env>/dev", "<env>/test", "<env>/all",
    or a single task id."""
    _ensure_loaded()
    if name in _TASKS:
        return [_TASKS[name][0]]
    env, _, which = name.partition("/")
    splits = {"eval": ("dev", "test"), "train": ("train",), "dev": ("dev",), "test": ("test",), "all": ("train", "dev", "test")}
    tasks = [t for t in list_tasks(env) if t.split in splits.get(which, ())]
    if not tasks:
        raise EnvError("unknown_task_set", f"no tasks in {name!r}; use <env>/eval|train|dev|test|all or a task id")
    return tasks
