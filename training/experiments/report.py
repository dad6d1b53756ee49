"""An experiment's result as a markdown section, and the README block it lives in.

    text = experiment_markdown(experiment, result, command="python -m training.experiments graphopd")
    write_readme_section(Path("training/README.md"), "graphopd", text)

The section is the text between `<!-- experiment:NAME:begin -->` and `<!-- experiment:NAME:end -->`; a README
without those markers gets them appended under an "## Experiments" heading (created when absent).
"""

from __future__ import annotations

import json
from pathlib import Path

from training.experiments import Experiment
from training.experiments.runner import ExperimentResult, dotted_function
from training.experiments.standard import paired_difference, summarise
from training.zoo import manifest


def _model_hash(path: str, recorded: str) -> str:
    """ "hash <hash>": the one the result recorded (a table made from files), else the model folder's zoo.json."""
    value = recorded or manifest(path).get("hash")
    return f"hash {value}" if value else "not from the zoo"


def _point(point: dict[str, object]) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items()) or "-"


def experiment_markdown(experiment: Experiment, result: ExperimentResult, *, command: str) -> str:
    """The table (module docstring of training/experiments/standard.py for the statistics), the MDE, the setup."""
    dev = experiment.evaluation.dev_seeds
    tuned = "smoke: the first grid point, untuned" if result.smoke else f"tuned on dev seeds [{dev[0]}, {dev[1]})"
    lines = [
        f"### {experiment.name}: {experiment.question}",
        "",
        f"Task `{experiment.evaluation.task}`, greedy, {len(result.test_seeds)} test seeds "
        f"[{result.test_seeds[0]}, {result.test_seeds[-1] + 1}); {tuned}; "
        f"training seeds {sorted(next(iter(result.arms.values())).rewards)}.",
        "",
        f"| arm | what | test reward | pass rate | {experiment.method} − arm (95% CI) | chosen | wall time |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    method = result.arms.get(experiment.method)
    mdes = []
    for name, arm in result.arms.items():
        reward, passed = summarise(arm.rewards), summarise(arm.passed)
        if name == experiment.method or method is None:
            diff = "(method)" if name == experiment.method else "-"
        else:
            paired = paired_difference(method.rewards, arm.rewards)
            mdes.append(f"{name} {paired.mde:.3f}")
            diff = f"{paired.mean:+.3f} [{paired.low:+.3f}, {paired.high:+.3f}]"
        what = experiment.arm(name).description
        lines.append(
            f"| {name} | {what} | {reward.mean:.3f} ± {reward.ci:.3f} | {passed.mean:.3f} ± {passed.ci:.3f} | {diff} "
            f"| {_point(arm.chosen)} | {arm.wall_s / 60:.1f} min |"
        )
    lines += _measures_table(result)
    if experiment.report and (more := str(dotted_function(experiment.report)(experiment, result)).rstrip()):
        lines += ["", more]
    lines += [
        "",
        "Mean ± 95% t-interval over training seeds of the per-seed mean; paired differences on the same (training seed, "
        "test seed) cells with a seeded two-level bootstrap interval (training seeds, then test seeds).",
        f"Minimum detectable effect (80% power, 5% two-sided; (1.96 + 0.84) × SE of the paired difference): {', '.join(mdes) or '-'}.",
        "",
        f"Shared config: `{json.dumps(result.shared, sort_keys=True)}`; grid {json.dumps({k: list(v) for k, v in experiment.tuning.items()})}.",
        "",
        f"Command: `{command}`. Base `{result.base}` ({_model_hash(result.base, result.base_hash)}), teacher `{result.teacher}` "
        f"({_model_hash(result.teacher, result.teacher_hash) if experiment.needs_teacher else 'unused'}). Run {result.started}, {result.wall_s / 60:.1f} min"
        f"{' (smoke)' if result.smoke else ''}.",
    ]
    return "\n".join(lines) + "\n"


def _measures_table(result: ExperimentResult) -> list[str]:
    """The experiment's extra measures (Experiment.measures), one row each, mean ± 95% CI over training seeds."""
    arms = {name: arm for name, arm in result.arms.items() if arm.measures}
    names = sorted({m for arm in arms.values() for per_seed in arm.measures.values() for m in per_seed})
    if not names:
        return []
    lines = ["", "| measure | " + " | ".join(arms) + " |", "| --- |" + " --- |" * len(arms)]
    for measure in names:
        cells = []
        for arm in arms.values():
            per_seed = {seed: [values[measure]] for seed, values in arm.measures.items() if measure in values}
            cells.append(f"{summarise(per_seed).mean:.3f} ± {summarise(per_seed).ci:.3f}" if per_seed else "-")
        lines.append(f"| {measure} | " + " | ".join(cells) + " |")
    return lines


def read_readme_section(path: Path, name: str) -> str | None:
    """The text between the experiment's markers, or None when the README has none."""
    begin, end = f"<!-- experiment:{name}:begin -->", f"<!-- experiment:{name}:end -->"
    readme = path.read_text() if path.exists() else ""
    if begin not in readme or end not in readme:
        return None
    return readme.split(begin, 1)[1].split(end, 1)[0].strip()


def write_readme_section(path: Path, name: str, text: str) -> None:
    """Replace the text between the experiment's markers (appending them under "## Experiments" when absent)."""
    begin, end = f"<!-- experiment:{name}:begin -->", f"<!-- experiment:{name}:end -->"
    readme = path.read_text() if path.exists() else ""
    block = f"{begin}\n{text.rstrip()}\n{end}"
    if begin in readme and end in readme:
        head, rest = readme.split(begin, 1)
        _, tail = rest.split(end, 1)
        readme = head + block + tail
    else:
        if "\n## Experiments" not in "\n" + readme:
            readme = readme.rstrip() + ("\n\n" if readme.strip() else "") + "## Experiments\n"
        heading = ("\n" + readme).index("\n## Experiments")
        following = readme.find("\n## ", heading + 1)  # the block goes last in the Experiments section
        cut = len(readme) if following < 0 else following + 1
        readme = readme[:cut].rstrip() + "\n\n" + block + "\n" + ("\n" + readme[cut:] if cut < len(readme) else "")
    path.write_text(readme)
