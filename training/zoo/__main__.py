"""`python -m training.zoo list | build NAME [--out PATH] [--seed N] | eval PATH_OR_NAME | path NAME`.

`build` prints a line per stage with the elapsed time, and after a build writes every built spec's evaluation
table into training/README.md between the zoo markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from training.config import ConfigError
from training.model_store import ModelStoreError
from training.zoo import manifest, prompt_style_for, resolve
from training.zoo.build import REPO_ROOT, build, build_folder
from training.zoo.evaluate import evaluate_model, results_table, targets_reached
from training.zoo.specs import SPECS, ZooSpec, config_hash, get_spec

BEGIN, END = "<!-- zoo:begin -->", "<!-- zoo:end -->"
README_SPECS = ("base-small", "teacher-small", "desk-small")  # the models whose tables training/README.md shows


def _spec(name: str, seed: int | None) -> ZooSpec:
    spec = get_spec(name)
    return spec if seed is None else dataclasses.replace(spec, seed=seed)


def readme_section(names: tuple[str, ...] = README_SPECS) -> str:
    """The evaluation table of the built specs among `names`, with their targets and build times."""
    built = {}
    notes = []
    for name in names:
        final = build_folder(get_spec(name)) / "final"
        if not (final / "zoo.json").exists():
            continue
        info = manifest(final)
        built[f"{name} ({info['hash']})"] = info["evaluation"]
        reached = ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in info["targets_reached"].items())
        walls = ", ".join(f"{k} {v:.0f}s" for k, v in info["wall_s"].items())
        notes.append(f"- {name}: {info['parameters']:,} parameters; stages {walls}; targets: {reached}")
    if not built:
        return "No zoo model is built yet."
    return results_table(built) + "\n\n" + "\n".join(notes)


def update_readme(path: Path = REPO_ROOT / "training" / "README.md", names: tuple[str, ...] = README_SPECS) -> list[str]:
    """Rewrite the README's zoo table when every spec in `names` is built here; otherwise leave it (a machine with only
    some builds must not erase the others' columns) and return the names not built."""
    missing = [name for name in names if not (build_folder(get_spec(name)) / "final" / "zoo.json").exists()]
    text = path.read_text()
    if missing or BEGIN not in text or END not in text:
        return missing
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(f"{head}{BEGIN}\n{readme_section(names)}\n{END}{tail}")
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.zoo", description="Small models trained here from scratch.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="specs, their hash, built or not, and their folder")
    build_cmd = commands.add_parser("build", help="build a spec (cached stage by stage; an interrupted build resumes)")
    build_cmd.add_argument("name", choices=sorted(SPECS))
    build_cmd.add_argument("--out", help="also copy the final model folder here")
    build_cmd.add_argument("--seed", type=int, help="override the spec's seed (a different hash, so a different folder)")
    eval_cmd = commands.add_parser("eval", help="print a built model's evaluation (from zoo.json)")
    eval_cmd.add_argument("model", help="a spec name or a model folder")
    eval_cmd.add_argument("--rerun", action="store_true", help="play the evaluation again instead of reading zoo.json")
    path_cmd = commands.add_parser("path", help="the final folder of a built spec")
    path_cmd.add_argument("name")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for name, spec in SPECS.items():
                final = build_folder(spec) / "final"
                state = "built" if (final / "zoo.json").exists() else "not built"
                print(f"{name:16} {config_hash(spec)}  {state:9}  {final}")
        elif args.command == "build":
            build(_spec(args.name, args.seed), out=args.out)
            if missing := update_readme():
                print(f"training/README.md's zoo table left as it is: {', '.join(missing)} not built here", file=sys.stderr)
        elif args.command == "eval":
            path = resolve(args.model)
            info = manifest(path)
            if info and not args.rerun:
                results = info["evaluation"]
            else:  # another model: the base spec's evaluation, in the prompt style its zoo.json names (or the default)
                style = prompt_style_for(path)
                spec = SPECS.get(info.get("name", ""), SPECS["base-small"])
                spec = dataclasses.replace(spec, compact_tools=style.compact_tools, max_result_chars=style.max_result_chars)
                results = evaluate_model(str(path), spec)
            print(results_table({info.get("name", str(path)): results}))
            print(json.dumps(targets_reached(results), indent=2))
        else:
            print(resolve(args.name))
    except (ConfigError, ModelStoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
