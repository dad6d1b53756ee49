"""The loop's configuration, validated at the edge: every problem names its field and the offending value.

    config = loop_config_check(raw, agent=agent, evaluation=evaluation)   # a plain dict, stored on the loop

Fields (all but base_model/test_seeds have defaults):
    diagnoser       {"kind": "rule" | "anchor" | "model", "name": anchor or agent config name}; rule: the anchor's
                    pivotal-step diagnosis; anchor: a scripted diagnoser agent; model: an LLM diagnoser agent
    sources         {"recovery": w, "successes": w, "anchors": w}: weights 0..10 of the dataset's three sources
    anchor, anchor_seeds   which anchor demonstrates the training-split tasks, on which seeds
    include_partial false: a source's demonstration cut short (step cap, timeout, errors, cancelled, abandoned:
                    training.dataset_check.partial_ending) is left out of the dataset, as a run leaves it out
    recipe          sft | grpo | self_distill (the distillation variant); recipe_config overrides its defaults
    base_model      a from_pretrained folder; default: the starting agent's model when it is an `hf` agent
    dev_task_set, dev_seeds     where checkpoints are compared; test_task_set, test_seeds   where the chosen one is reported
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments import registry
from environments.core import EnvError
from environments.policies import policy_names
from lab.errors import DomainError
from lab.rollouts.models import Evaluation
from lab.runs.paths import model_path_confine
from lab.trajectories.models import AgentConfig, AgentKind

RECIPES = ("sft", "grpo", "self_distill")
DIAGNOSERS = ("rule", "anchor", "model")
SOURCES = ("recovery", "successes", "anchors")
MAX_WEIGHT = 10.0
MAX_SEEDS = 200
ON_POLICY = ("grpo", "self_distill")  # recipes that play the training tasks themselves instead of reading a dataset


def _bad(field: str, message: str) -> DomainError:
    return DomainError("invalid_loop", f"{field}: {message}"[:500], path=field)


def seeds_check(value: Any, field: str) -> list[int]:
    if not isinstance(value, list) or not value or len(value) > MAX_SEEDS:
        raise _bad(field, f"give 1 to {MAX_SEEDS} seeds, got {value!r}")
    if any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s < 2**31 for s in value):
        raise _bad(field, f"seeds are whole numbers 0..2^31-1, got {value!r}")
    if len(set(value)) != len(value):
        raise _bad(field, f"seeds repeat: {value!r}")
    return list(value)


def task_set_check(value: Any, field: str, env: str) -> str:
    if not isinstance(value, str) or not value:
        raise _bad(field, f"give a task set such as {env}/dev, got {value!r}")
    try:
        tasks = registry.task_set(value)
    except EnvError as exc:
        raise _bad(field, exc.message) from None
    if tasks[0].env != env:
        raise _bad(field, f"{value!r} is a task set of {tasks[0].env}; the evaluation is on {env}")
    return value


def model_size(base_model: str) -> int | None:
    """Parameters estimated from the folder's config.json (12·L·h² + V·h), None when it has none."""
    try:
        config = json.loads((Path(base_model) / "config.json").read_text(encoding="utf-8"))
        hidden, layers, vocab = int(config["hidden_size"]), int(config["num_hidden_layers"]), int(config["vocab_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return 12 * layers * hidden * hidden + vocab * hidden


def recipe_defaults(recipe: str, *, base_model: str, env: str) -> dict[str, Any]:
    """Small, working defaults: full fine-tuning with a high rate for small models, LoRA above a billion parameters."""
    size = model_size(base_model)
    big = size is not None and size > 1_000_000_000
    common: dict[str, Any] = {"max_steps": 20, "save_every": 10, "learning_rate": 1e-4 if big else 1e-3, **({"lora_r": 16} if big else {})}
    if recipe == "sft":
        return {**common, "batch_size": 4}
    train = [t.id for t in registry.list_tasks(env) if t.split == "train"]
    on_policy = {"task": train[0] if train else "", "tasks_per_step": 2, "group_size": 4, "max_turns": 4, "eval_every": 0}
    return {**common, **on_policy}


def loop_config_check(raw: Any, *, agent: AgentConfig, evaluation: Evaluation) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise _bad("config", f"must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(DEFAULTS) - {"base_model", "test_seeds", "recipe_config", "anchor", "dev_task_set", "test_task_set"})
    if unknown:
        raise _bad(unknown[0], "not a loop setting; use " + ", ".join(sorted({*DEFAULTS, "base_model", "test_seeds", "recipe_config"})))
    env = registry.task_set(evaluation.task_set)[0].env
    meta = registry.env_meta(env)
    out: dict[str, Any] = {**DEFAULTS, **{k: v for k, v in raw.items() if v is not None}}

    diagnoser = out["diagnoser"]
    if not isinstance(diagnoser, dict) or diagnoser.get("kind") not in DIAGNOSERS:
        raise _bad("diagnoser", f"give {{kind: rule|anchor|model, name}}, got {diagnoser!r}")
    if diagnoser["kind"] == "rule" and not diagnoser.get("name"):
        diagnoser = {**diagnoser, "name": meta.default_anchor}
    if not isinstance(diagnoser.get("name"), str) or not diagnoser["name"]:
        raise _bad("diagnoser.name", f"name the {diagnoser['kind']} diagnoser, got {diagnoser.get('name')!r}")
    out["diagnoser"] = {"kind": diagnoser["kind"], "name": diagnoser["name"]}

    sources = out["sources"]
    if not isinstance(sources, dict) or set(sources) - set(SOURCES):
        raise _bad("sources", f"weights of {', '.join(SOURCES)}, got {sources!r}")
    for name, weight in sources.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not 0 <= weight <= MAX_WEIGHT:
            raise _bad(f"sources.{name}", f"a weight from 0 to {MAX_WEIGHT:g}, got {weight!r}")
    out["sources"] = {name: float(sources.get(name, 0.0)) for name in SOURCES}

    anchors = policy_names(env)
    out["anchor"] = out.get("anchor") or meta.default_anchor
    if out["anchor"] not in anchors:
        raise _bad("anchor", f"{out['anchor']!r} is not a scripted policy of {env}; choose one of {', '.join(anchors) or 'none'}")
    if diagnoser["kind"] == "rule" and diagnoser["name"] not in anchors:
        raise _bad(
            "diagnoser.name", f"{diagnoser['name']!r} is not a scripted policy of {env}; choose one of {', '.join(anchors) or 'none'}"
        )
    out["anchor_seeds"] = seeds_check(out["anchor_seeds"], "anchor_seeds")

    if out["recipe"] not in RECIPES:
        raise _bad("recipe", f"{out['recipe']!r}; choose one of {', '.join(RECIPES)}")
    base_model = out.get("base_model") or (agent.model if agent.kind == AgentKind.HF else "")
    if not isinstance(base_model, str) or not base_model.strip():
        raise _bad("base_model", f"the starting agent {agent.name!r} is not an hf model: give the base model to train")
    # Confined before model_size reads its config.json; run_model_paths confines it (and resume_from) again.
    out["base_model"] = base_model.strip()
    model_path_confine(project=agent.project, value=out["base_model"], field="base_model")
    overrides = out.get("recipe_config") or {}
    if not isinstance(overrides, dict):
        raise _bad("recipe_config", f"an object of recipe fields, got {overrides!r}")
    out["recipe_config"] = {**recipe_defaults(out["recipe"], base_model=out["base_model"], env=env), **overrides}

    out["dev_task_set"] = task_set_check(out.get("dev_task_set") or evaluation.task_set, "dev_task_set", env)
    out["test_task_set"] = task_set_check(out.get("test_task_set") or evaluation.task_set, "test_task_set", env)
    out["dev_seeds"] = seeds_check(out["dev_seeds"], "dev_seeds")
    if "test_seeds" not in out:
        raise _bad("test_seeds", "give the held-out seeds the chosen checkpoint is reported on")
    out["test_seeds"] = seeds_check(out["test_seeds"], "test_seeds")
    if not isinstance(out["include_partial"], bool):
        raise _bad("include_partial", f"give true or false, got {out['include_partial']!r}")
    for field in ("max_episodes",):
        value = out[field]
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000:
            raise _bad(field, f"a whole number 1..10000, got {value!r}")
    return out


DEFAULTS: dict[str, Any] = {
    "diagnoser": {"kind": "rule", "name": ""},
    "sources": {"recovery": 1.0, "successes": 1.0, "anchors": 0.5},
    "anchor_seeds": [1000, 1001],
    "recipe": "sft",
    "dev_seeds": [500, 501],
    "max_episodes": 200,
    "include_partial": False,
}
