"""Recipe configs: every registered recipe keeps its fields (names and defaults) and class settings exactly, since
checkpoints save the config's dict and experiment run hashes are made from it; shared field groups are defined once
(training/config_fields.py). The fields' order is free: every hash of a config sorts its keys."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from training import RECIPES, recipe_config_class
from training.config import TrainConfig, field_docs
from training.experiments.runner import config_hash

# Written from the configs as they were before the shared field groups became mixins; a change here changes
# committed result files' run hashes, so it is never regenerated to make this test pass.
PINNED = json.loads((Path(__file__).parent / "recipe_config_defaults.json").read_text())


def _defaults(cls: type[TrainConfig]) -> dict[str, Any]:
    """The config's dict as a default instance would give it (no instance: most recipes need a model to validate)."""
    return {
        f.name: f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        for f in dataclasses.fields(cls)
    }


def test_every_registered_recipe_is_pinned() -> None:
    assert sorted(PINNED) == sorted(RECIPES)


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_a_recipes_fields_and_defaults_are_unchanged(recipe: str) -> None:
    cls = recipe_config_class(recipe)
    actual, expected = _defaults(cls), PINNED[recipe]["defaults"]
    assert sorted(actual) == sorted(expected)
    assert json.loads(json.dumps(actual)) == expected
    # 1 and 1.0 are equal, but not in a hash of the dumped text
    assert json.dumps(actual, sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert PINNED[recipe]["model_path_fields"] == list(cls.MODEL_PATH_FIELDS)
    assert PINNED[recipe]["distributed"] == cls.DISTRIBUTED
    assert PINNED[recipe]["onpolicy_check"] == bool(getattr(cls, "onpolicy_check", False))


@pytest.mark.parametrize("recipe", sorted(RECIPES))
def test_every_field_of_a_recipe_has_its_docstring(recipe: str) -> None:
    cls = recipe_config_class(recipe)
    docs = field_docs(cls)
    assert [f.name for f in dataclasses.fields(cls) if not docs.get(f.name)] == []


def test_the_recipes_folder_holds_the_registered_recipes_one_file_each_and_nothing_else() -> None:
    folder = Path(__file__).resolve().parents[2] / "training" / "recipes"
    files = sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")
    assert files == sorted(f"{module.rpartition('.')[2]}.py" for module, _ in RECIPES.values())
    assert all(module == f"training.recipes.{recipe}" for recipe, (module, _) in RECIPES.items())


def test_a_run_hash_does_not_depend_on_the_order_of_the_config_fields() -> None:
    config = _defaults(recipe_config_class("grpo"))
    reordered = dict(reversed(list(config.items())))
    assert list(reordered) != list(config)
    assert config_hash({"recipe": "grpo", "config": reordered}) == config_hash({"recipe": "grpo", "config": config})
