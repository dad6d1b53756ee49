"""Training agents from their trajectories: data with exact masks, losses, credit, recipes, the tiny-model factory.

The public entry point for callers such as the lab's Celery task:

    result = run_recipe("sft", {"model": path, "data": "episodes.jsonl", "max_steps": 50},
                        on_metric=lambda step, name, value: ..., on_checkpoint=lambda step, folder: ...,
                        should_stop=lambda: cancelled)
    result.final_checkpoint   # a from_pretrained folder (or LoRA adapter folder) with training_config.json inside
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from training import distributed
from training.config import ConfigError, TrainConfig, load_config
from training.engine import Hooks, RunResult

RECIPES: dict[str, tuple[str, str]] = {
    "sft": ("training.recipes.sft", "SFTConfig"),
    "grpo": ("training.recipes.grpo", "GRPOConfig"),
    "opd": ("training.recipes.opd", "OPDConfig"),
    "graphopd": ("training.recipes.graphopd", "GraphOPDConfig"),
    "self_distill": ("training.recipes.self_distill", "SelfDistillConfig"),
    "ascent": ("training.recipes.ascent", "AscentConfig"),
    "raised": ("training.recipes.raised", "RaisedConfig"),
    "gated_sd": ("training.recipes.gated_sd", "GatedSDConfig"),
    "pivotopd": ("training.recipes.pivotopd", "PivotOPDConfig"),
    "evoke": ("training.recipes.evoke", "EvokeConfig"),
    "flowright": ("training.recipes.flowright", "FlowrightConfig"),
    "caddie": ("training.recipes.caddie", "CaddieConfig"),
    "ideacritic": ("training.recipes.ideacritic", "IdeaCriticConfig"),
    "ideapropose": ("training.recipes.ideapropose", "IdeaProposeConfig"),
    "sibyl": ("training.recipes.sibyl", "SibylConfig"),
    "constitution": ("training.recipes.constitution", "ConstitutionConfig"),
    "hat": ("training.recipes.hat", "HATConfig"),
    "sft_grpo": ("training.recipes.sft_grpo", "SFTGRPOConfig"),
    "advsim": ("training.recipes.advsim", "AdvSimConfig"),
    "federation": ("training.recipes.federation", "FederationConfig"),
}


def recipe_config_class(recipe: str) -> type[TrainConfig]:
    if recipe not in RECIPES:
        raise ConfigError(f"unknown recipe {recipe!r}; choose one of {', '.join(RECIPES)}", ["recipe"])
    module, name = RECIPES[recipe]
    return getattr(importlib.import_module(module), name)


def make_config(recipe: str, values: dict[str, Any] | TrainConfig) -> TrainConfig:
    cls = recipe_config_class(recipe)
    if isinstance(values, TrainConfig):
        if not isinstance(values, cls):
            raise ConfigError(f"recipe {recipe!r} needs a {cls.__name__}, got {type(values).__name__}")
        return values
    return load_config(cls, values)


def run_recipe(
    recipe: str,
    config: dict[str, Any] | TrainConfig,
    *,
    on_metric: Callable[[int, str, float], None] | None = None,
    on_checkpoint: Callable[[int, str], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    progress: bool = False,
) -> RunResult:
    """Run one recipe to max_steps (or until should_stop() is true); returns the steps done and the checkpoints.
    With parallel ddp|fsdp the run goes through torchrun (training.launch) unless this process is a torchrun worker
    already, which then joins the process group and runs its rank."""
    resolved = make_config(recipe, config)
    hooks = Hooks(on_metric=on_metric, on_checkpoint=on_checkpoint, should_stop=should_stop, progress=progress)
    if resolved.parallel == "none":
        return importlib.import_module(RECIPES[recipe][0]).run(resolved, hooks)
    if not distributed.under_launcher():
        from training.launch import launch

        return launch(recipe, resolved, hooks)
    with distributed.process_group():
        return importlib.import_module(RECIPES[recipe][0]).run(resolved, hooks)


__all__ = ["ConfigError", "RECIPES", "RunResult", "make_config", "recipe_config_class", "run_recipe"]
