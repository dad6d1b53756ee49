"""Where a project may read model weights from: the operator's model store and the project's own checkpoints.

    path = model_path_confine(project=p, value="qwen3-0.6b", field="base_model")   # "<store>/qwen3-0.6b", resolved
    folder = run_folder(run)                                                       # <checkpoints>/project-<id>/run-<id>

Every path a training run or an `hf`/`vllm` agent loads goes through `model_path_confine`: the API, the console
forms and the management commands when the path is given (400 naming the field), and the Celery tasks again
right before loading, since a symlink may have been swapped in between. Rules:

- a name or relative path ("gpt2", "Qwen/Qwen3-8B") is looked up in the model store, never on the hub;
- an absolute path must resolve (symlinks followed) inside the model store or inside this project's checkpoint
  folder, or inside an old flat checkpoint folder (<checkpoints>/run-<id>, written by runs started before
  checkpoints were kept per project) that the database records for one of the project's own recorded runs: an
  external run's checkpoints are its trainer's word and never make a folder of this server the project's;
- an external run's reported checkpoint path (`reported_path_check`) that names a place on this server (the
  model store or the checkpoint folder, symlinks followed) obeys the same rule when it is reported; a URL or a
  path elsewhere stays a label of where the trainer keeps it, and loading it is refused like any other path;
- "..", a leading "~" and NUL bytes are refused outright, whatever they would resolve to.

Confining does not ask the path to exist; `model_folder_check` does, where a run or an agent is created: a name
not in the store is a 400 that lists the installed models.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings

from lab.errors import DomainError
from lab.projects.models import Project
from lab.runs.models import Checkpoint, TrainingRun
from lab.trajectories.models import AgentConfig, Provenance

# AgentConfig kinds whose `model` is a folder of weights loaded in the worker (an `openai` model is a served name).
PATH_AGENT_KINDS = ("hf", "vllm")


def project_checkpoint_dir(project: Project | int) -> Path:
    pk = project if isinstance(project, int) else project.pk
    return Path(settings.PRACTICUM_CHECKPOINT_DIR) / f"project-{pk}"


def run_folder(run: TrainingRun) -> Path:
    """The run's folder, per project; a run begun under the old flat layout keeps its folder so it resumes in place."""
    legacy = Path(settings.PRACTICUM_CHECKPOINT_DIR) / f"run-{run.pk}"
    return legacy if legacy.is_dir() else project_checkpoint_dir(run.project_id) / f"run-{run.pk}"


def _refuse(field: str, value: str, why: str) -> DomainError:
    return DomainError("path_refused", f"{field}={value!r}: {why}", fields=[field])


def model_path_confine(*, project: Project, value: str, field: str) -> str:
    """The resolved absolute path of `value` if the project may load weights from it, else DomainError
    "path_refused" (400) naming `field`, the value and the reason."""
    if not isinstance(value, str) or not value.strip():
        raise _refuse(field, str(value), "give a model name from the model store or a path inside it")
    if "\x00" in value:
        raise _refuse(field, value, "contains a NUL byte")
    if value.startswith("~"):
        raise _refuse(field, value, "'~' is not expanded; give a name from the model store or an absolute path inside it")
    if ".." in Path(value).parts:
        raise _refuse(field, value, "'..' is not allowed in a model path")
    store = Path(settings.PRACTICUM_MODEL_STORE).resolve()
    checkpoints = Path(settings.PRACTICUM_CHECKPOINT_DIR).resolve()
    own = checkpoints / f"project-{project.pk}"
    lexical = Path(os.path.normpath(value if os.path.isabs(value) else store / value))
    try:
        resolved = lexical.resolve()
    except (OSError, RuntimeError):  # a symlink loop, or a name the OS will not take
        raise _refuse(field, value, "cannot be resolved (a symlink loop, or a name too long)") from None

    def allowed(path: Path) -> bool:
        if path.is_relative_to(checkpoints):  # checked first: a store that contains the checkpoints opens no other project's
            return path.is_relative_to(own) or _recorded_checkpoint(project, path)
        return path.is_relative_to(store)

    if allowed(resolved):
        return str(resolved)
    if allowed(lexical):
        raise _refuse(field, value, "follows a symlink out of the model store and this project's checkpoints")
    raise _refuse(
        field,
        value,
        f"outside the model store and project {project.slug}'s checkpoints (a name or relative path is looked up in the model store)",
    )


def store_model_names() -> list[str]:
    """The loadable folders of the model store, by the name a run or agent gives (`name`, or `org/name` as hub ids go)."""
    store = Path(settings.PRACTICUM_MODEL_STORE)
    if not store.is_dir():
        return []
    tops = [p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")]
    nested = [q for p in tops if not _loadable(p) for q in p.iterdir() if q.is_dir() and not q.name.startswith(".")]
    return sorted(str(p.relative_to(store)) for p in [*tops, *nested] if _loadable(p))


def _loadable(folder: Path) -> bool:
    return (folder / "config.json").is_file() or (folder / "adapter_config.json").is_file()


def model_folder_check(*, path: str, value: str, field: str) -> str:
    """`path` (confined and resolved by model_path_confine) when it is a folder a loader can take (a model's
    config.json, or a LoRA adapter's adapter_config.json), else DomainError 400 naming the field and, for a name, the
    models installed in the store: checked when a run or agent is created, not when a worker first loads it."""
    folder = Path(path)
    if folder.is_dir() and _loadable(folder):
        return path
    installed = ", ".join(store_model_names()) or "none (run `make setup`)"
    if not folder.exists():
        why = f"no such model; the model store has: {installed}"
    else:
        why = f"{folder.name} is not a loadable model folder (no config.json or adapter_config.json); the model store has: {installed}"
    raise DomainError("unknown_model", f"{field}={value!r}: {why}", fields=[field])


def agent_config_check(*, project: Project, values: dict[str, Any]) -> None:
    """An agent config's fields as they will be stored: an `hf`/`vllm` model confined like any weights path, and a
    checkpoint only of this project's runs. DomainError (400) naming the field otherwise."""
    checkpoint = values.get("checkpoint")
    if checkpoint is not None and checkpoint.run.project_id != project.pk:
        raise DomainError("cross_project", f"checkpoint={checkpoint.pk}: not a checkpoint of project {project.slug}", fields=["checkpoint"])
    if values.get("kind") in PATH_AGENT_KINDS and values.get("model"):
        path = model_path_confine(project=project, value=values["model"], field="model")
        model_folder_check(path=path, value=values["model"], field="model")


def agent_model_path(*, agent: AgentConfig) -> str:
    """The model an agent's worker loads: for `hf`/`vllm` the confined, resolved path, checked at load time."""
    if agent.kind in PATH_AGENT_KINDS and agent.model:
        return model_path_confine(project=agent.project, value=agent.model, field="model")
    return str(agent.model)


def reported_path_check(*, project: Project, value: str, field: str) -> str:
    """An external trainer's word for where a checkpoint is: a URL or a path off this server is kept as a label;
    one that names the model store or the checkpoint folder (as written, or once its symlinks are followed) must
    pass `model_path_confine`, so no report can name another project's weights. DomainError (400) otherwise."""
    if "://" in value or not os.path.isabs(value):
        return value  # s3://..., hf://..., or a relative name: never a path into this server's folders as reported
    if "\x00" in value or ".." in Path(value).parts:
        raise _refuse(field, value, "'..' and NUL bytes are not allowed in a checkpoint path")
    roots = [Path(settings.PRACTICUM_MODEL_STORE).resolve(), Path(settings.PRACTICUM_CHECKPOINT_DIR).resolve()]
    try:
        resolved = Path(value).resolve()
    except (OSError, RuntimeError):
        raise _refuse(field, value, "cannot be resolved (a symlink loop, or a name too long)") from None
    if any(path.is_relative_to(root) for path in (Path(os.path.normpath(value)), resolved) for root in roots):
        model_path_confine(project=project, value=value, field=field)
    return value


def _recorded_checkpoint(project: Project, path: Path) -> bool:
    """Inside an old flat checkpoint folder (<checkpoints>/run-<id>) that the database records for one of the
    project's own recorded runs. Recorded paths elsewhere (another project's folder) admit nothing, whoever wrote them."""
    checkpoints = Path(settings.PRACTICUM_CHECKPOINT_DIR).resolve()
    folders = Checkpoint.objects.filter(run__project=project, run__provenance=Provenance.RECORDED).values_list("path", flat=True)
    for folder in folders:
        if not folder:
            continue
        recorded = Path(folder).resolve()
        flat = (
            recorded.is_relative_to(checkpoints)
            and recorded.relative_to(checkpoints).parts[:1] != ()
            and (recorded.relative_to(checkpoints).parts[0].startswith("run-"))
        )
        if flat and path.is_relative_to(recorded):
            return True
    return False
