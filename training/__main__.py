"""`python -m training RECIPE --config FILE.toml [--set key=value ...]`: run a recipe with a progress bar.

Values from --set override the file and are parsed as TOML values (`--set max_steps=20 --set model="'x'"`;
bare words that are not TOML are taken as text). Metrics go to OUTPUT_DIR/metrics.jsonl; `--describe` lists
every field of the recipe's config with its docstring and default.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tomllib
from typing import Any

from training import RECIPES, recipe_config_class, run_recipe
from training.config import ConfigError, field_docs


def _parse_value(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training", description="Train an agent with one recipe.")
    parser.add_argument("recipe", choices=sorted(RECIPES))
    parser.add_argument("--config", help="a TOML file of config fields (flat, or under a [RECIPE] table)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override one field")
    parser.add_argument("--role", help="whose turns to train (the config's role field: actor, critic, consultant, ...)")
    parser.add_argument("--describe", action="store_true", help="list the recipe's config fields and exit")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    cls = recipe_config_class(args.recipe)
    if args.describe:
        docs = field_docs(cls)
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
            print(f"{f.name} = {default!r}\n    {docs.get(f.name, '')}")
        return 0
    values: dict[str, Any] = {}
    if args.config:
        with open(args.config, "rb") as handle:
            loaded = tomllib.load(handle)
        values.update(loaded.get(args.recipe, loaded))
    for item in args.set:
        key, sep, raw = item.partition("=")
        if not sep:
            parser.error(f"--set needs KEY=VALUE, got {item!r}")
        values[key.strip()] = _parse_value(raw.strip())
    if args.role is not None:
        if "role" not in {f.name for f in dataclasses.fields(cls)}:
            parser.error(f"--role: the {args.recipe} recipe trains the actor on its own rollouts; train other roles with sft --role")
        values["role"] = args.role
    try:
        result = run_recipe(args.recipe, values, progress=not args.quiet)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{result.recipe}: {result.steps} steps; final checkpoint {result.final_checkpoint}")
    for name, value in result.last_metrics.items():
        print(f"  {name} = {value:.6g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
