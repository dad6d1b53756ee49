"""`python -m training.zoo list | build NAME [--out PATH] [--seed N] | eval PATH_OR_NAME | path NAME | report | keep NAME`.

`build` prints a line per stage with the elapsed time, writes the build's evaluation as the committed result file
`training/results/zoo/<name>.json` (with the commit and the machine), and rewrites training/README.md's zoo table
from those files (`report` rewrites it alone).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from training.config import ConfigError
from training.model_store import ModelStoreError
from training.provenance import provenance, write_result
from training.zeroshot import RESULTS as ZEROSHOT_RESULTS
from training.zoo import manifest, prompt_style_for, resolve
from training.zoo.adapters import adapter_folder, keep_adapter
from training.zoo.build import REPO_ROOT, build, build_folder
from training.zoo.evaluate import evaluate_model, results_table, targets_reached
from training.zoo.specs import SPECS, ZooSpec, config_hash, get_spec

BEGIN, END = "<!-- zoo:begin -->", "<!-- zoo:end -->"
README_SPECS = ("smol-base", "smol-teacher", "base-small", "teacher-small", "desk-small")  # the models training/README.md shows
RESULTS = REPO_ROOT / "training" / "results" / "zoo"


def _spec(name: str, seed: int | None) -> ZooSpec:
    spec = get_spec(name)
    return spec if seed is None else dataclasses.replace(spec, seed=seed)


def result_path(name: str, root: Path = RESULTS) -> Path:
    return root / f"{name}.json"


def publish(spec: ZooSpec, root: Path = RESULTS) -> Path:
    """Write a built spec's zoo.json (spec, hash, evaluation, targets, stage times) with the commit and the machine as
    the committed result file `training/results/zoo/<name>.json` (`<name>-seed<N>` for another seed)."""
    final = build_folder(spec) / "final"
    info = manifest(final)
    if not info:
        raise ConfigError(f"{spec.name} is not built here; run `python -m training.zoo build {spec.name}` first", ["name"])
    name = spec.name if spec.seed == SPECS[spec.name].seed else f"{spec.name}-seed{spec.seed}"
    return write_result(result_path(name, root), {"experiment": "zoo", **info, **provenance()})


def complete_pending(final: Path, results: dict[str, Any]) -> Path:
    """A build whose evaluation was left pending (zoo.json `evaluation_pending`: the model trained, its evaluation
    stopped) gets `results` as its evaluation: written into its zoo.json and its kept adapter's, published as its
    result file, and the README's zoo table rewritten. Returns the result file."""
    info = manifest(final)
    spec = get_spec(info["name"])
    if info.get("hash") != config_hash(spec):
        raise ConfigError(f"{final}: its zoo.json has hash {info.get('hash')}, the spec {spec.name}'s is {config_hash(spec)}", ["model"])
    info.pop("evaluation_pending")
    info.update(evaluation=results, targets_reached=targets_reached(results))
    (final / "zoo.json").write_text(json.dumps(info, indent=2))
    kept = adapter_folder(spec) / "zoo.json"
    if kept.exists():  # the adapter's copy, so a clone materializes the evaluated model
        kept_info = json.loads(kept.read_text())
        kept_info.pop("evaluation_pending", None)
        kept_info.update(evaluation=results, targets_reached=info["targets_reached"])
        kept.write_text(json.dumps(kept_info, indent=2))
    path = publish(spec)
    update_readme()
    return path


def load_results(names: tuple[str, ...], root: Path = RESULTS) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """{name: result} for the names with a readable file, and a line for each file that could not be read."""
    found: dict[str, dict[str, Any]] = {}
    problems = []
    for name in names:
        path = result_path(name, root)
        if not path.exists():
            continue
        try:
            data = json.loads(path.read_text())
            _ = (data["hash"], data["evaluation"], data["targets_reached"], data["wall_s"], data["parameters"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            problems.append(f"{path.name}: skipped ({type(exc).__name__}: {exc})")
            continue
        found[name] = data
    return found, problems


def storebench_short_targets(name: str, root: Path = ZEROSHOT_RESULTS) -> dict[str, bool]:
    """The issue's StoreBench targets for a real-model base, read from the zero-shot table's files (the held-out test
    scenarios played to 40 turns): valid calls >= 0.95 and a mean composite above the do-nothing anchor's."""
    try:
        model = json.loads((root / name / "storebench-short.json").read_text())["summary"]
        anchor = json.loads((root / "do-nothing" / "storebench-short.json").read_text())["summary"]
    except (OSError, ValueError, KeyError):
        return {}
    return {
        "storebench-short valid calls >= 0.95": (model["valid_call_rate"] or 0.0) >= 0.95,
        "storebench-short composite > do-nothing": model["composite"] > anchor["composite"],
    }


def readme_section(names: tuple[str, ...] = README_SPECS, root: Path = RESULTS) -> str:
    """The evaluation table of the specs among `names` that have a committed result file, with their targets, build
    times, and where a result was made from an older spec than today's (its hash differs), that fact."""
    results, problems = load_results(names, root)
    if not results:
        return "No zoo model has a result file yet."
    columns = {f"{name} ({data['hash']})": data["evaluation"] for name, data in results.items()}
    notes = []
    for name, data in results.items():
        targets = {**data["targets_reached"], **storebench_short_targets(name)}
        reached = ", ".join(f"{k}: {'yes' if v else 'NO'}" for k, v in targets.items()) or "none set"
        walls = ", ".join(f"{k} {v:.0f}s" for k, v in data["wall_s"].items())
        stale = (
            ""
            if name not in SPECS or data["hash"] == config_hash(SPECS[name])
            else f"; built from an older spec (today's hash {config_hash(SPECS[name])})"
        )
        where = (
            data.get("reconstructed_from")
            or f"commit {str(data.get('commit', ''))[:10]}, {data.get('machine', {}).get('cores', '?')} cores"
        )
        notes.append(f"- {name}: {data['parameters']:,} parameters; stages {walls}; targets: {reached} ({where}{stale})")
    return results_table(columns) + "\n\n" + "\n".join(notes + [f"- {line}" for line in problems])


def update_readme(path: Path = REPO_ROOT / "training" / "README.md", names: tuple[str, ...] = README_SPECS, root: Path = RESULTS) -> None:
    """Rewrite the README's zoo table from the committed result files (files, not local builds: every machine agrees)."""
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise ConfigError(f"{path} has no {BEGIN} ... {END} block to write the zoo table into", ["readme"])
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(f"{head}{BEGIN}\n{readme_section(names, root)}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.zoo", description="Small models trained here from scratch.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="specs, their hash, built / kept (an adapter in the repository) / not built, and their folder")
    build_cmd = commands.add_parser("build", help="build a spec (cached stage by stage; an interrupted build resumes)")
    build_cmd.add_argument("name", choices=sorted(SPECS))
    build_cmd.add_argument("--out", help="also copy the final model folder here")
    build_cmd.add_argument("--seed", type=int, help="override the spec's seed (a different hash, so a different folder)")
    eval_cmd = commands.add_parser("eval", help="print a built model's evaluation (from zoo.json)")
    eval_cmd.add_argument("model", help="a spec name or a model folder")
    eval_cmd.add_argument("--rerun", action="store_true", help="play the evaluation again instead of reading zoo.json")
    commands.add_parser("report", help="rewrite training/README.md's zoo table from training/results/zoo/")
    keep_cmd = commands.add_parser("keep", help="keep a built LoRA spec's adapter in training/zoo/adapters/ (build does it)")
    keep_cmd.add_argument("name", choices=sorted(SPECS))
    path_cmd = commands.add_parser("path", help="the final folder of a built spec")
    path_cmd.add_argument("name")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            for name, spec in SPECS.items():
                final = build_folder(spec) / "final"
                state = (
                    "built" if (final / "zoo.json").exists() else "kept" if (adapter_folder(spec) / "zoo.json").exists() else "not built"
                )
                print(f"{name:16} {config_hash(spec)}  {state:9}  {final}")
        elif args.command == "build":
            spec = _spec(args.name, args.seed)
            build(spec, out=args.out)
            print(f"result: {publish(spec).relative_to(REPO_ROOT)}")
            if spec.lora_r and spec.base_model is not None and spec.seed == SPECS[spec.name].seed:
                print(
                    f"adapter kept: {keep_adapter(spec).relative_to(REPO_ROOT)} (commit it: a fresh clone then makes the model in seconds)"
                )
            update_readme()
        elif args.command == "keep":
            print(keep_adapter(_spec(args.name, None)).relative_to(REPO_ROOT))
        elif args.command == "report":
            update_readme()
            print(readme_section())
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
            if args.rerun and info.get("evaluation_pending"):
                print(f"result: {complete_pending(path, results).relative_to(REPO_ROOT)}")
        else:
            print(resolve(args.name))
    except (ConfigError, ModelStoreError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
