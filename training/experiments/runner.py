"""Run an Experiment under the standard: tune every arm on dev seeds with the same grid, train every arm on every
training seed with its chosen point, evaluate greedily on the same test seeds, resume what was finished.

    result = run_experiment(get("graphopd"), base=path, teacher=path, out=Path("var/experiments/graphopd"))

Folders: `out/<arm>/<point>-seed<S>-<hash>/` is one training run (the recipe's output_dir: metrics.jsonl, the
final checkpoint only) with `result.json`: the config hash, wall times, trained tokens, and one evaluation per
split played (dev: tuning, test: the table). The hash covers the recipe config and the evaluation, so a finished
run is reused only when nothing that defines it changed. The tuning run of the first training seed with the
chosen point IS that seed's training run (same config, same hash): it is evaluated again on the test seeds
rather than trained twice.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import itertools
import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from environments.records import Record, record_score
from training.data import PromptStyle
from training.experiments import Experiment
from training.experiments.results import (
    NoRoom,
    definition_hash,
    identity_label,
    model_identity,
    portable,
    room_file,
    room_verdict,
    run_file,
    write_run,
)
from training.provenance import REPO_ROOT, provenance, write_result
from training.zoo import manifest, prompt_style_for

DEFAULT_SMOKE_EVAL_EPISODES = 4
NO_TRAINING = "none"  # an arm with recipe "none" is the start checkpoint itself, evaluated like the others


def recipe_fields(recipe: str) -> set[str]:
    from training import recipe_config_class

    if recipe == NO_TRAINING:
        return {"model", "seed"}
    return {f.name for f in dataclasses.fields(recipe_config_class(recipe))}


@dataclass
class ArmResult:
    name: str
    chosen: dict[str, Any]
    dev: list[dict[str, Any]] = field(default_factory=list)  # [{"point": ..., "reward_mean": ...}] per grid point
    rewards: dict[int, list[float]] = field(default_factory=dict)  # training seed -> reward per test seed
    passed: dict[int, list[float]] = field(default_factory=dict)  # training seed -> 1.0/0.0 per test seed
    measures: dict[int, dict[str, float]] = field(default_factory=dict)  # training seed -> the experiment's extra measures
    runs: list[dict[str, Any]] = field(default_factory=list)  # the result.json of every run this arm used
    wall_s: float = 0.0  # training + evaluation seconds of the arm's runs (as first measured, also when reused)


@dataclass
class ExperimentResult:
    experiment: str
    base: str
    teacher: str
    smoke: bool
    out: str
    test_seeds: list[int]
    shared: dict[str, Any]
    arms: dict[str, ArmResult]
    started: str
    wall_s: float
    trained: int  # runs trained by this call (0 when everything was resumed)
    base_hash: str = ""  # the models' identities (results.model_identity): what a table made from files names
    teacher_hash: str = ""


def prompt_style_of(base: str, config: dict[str, Any]) -> PromptStyle:
    """The style the base was trained with (its zoo.json); a model from elsewhere keeps the experiment's own fields."""
    if manifest(base).get("prompt_style"):
        return prompt_style_for(base)
    return PromptStyle(compact_tools=bool(config.get("compact_tools", False)), max_result_chars=int(config.get("max_result_chars", 0)))


def grid_points(tuning: dict[str, tuple[Any, ...]]) -> list[dict[str, Any]]:
    names = list(tuning)
    return [dict(zip(names, values, strict=True)) for values in itertools.product(*(tuning[n] for n in names))] or [{}]


def config_hash(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:10]


def dotted_function(dotted: str) -> Callable[..., dict[str, Any]]:
    """The callable named "package.module:function"."""
    module, _, name = dotted.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _say(progress: bool, text: str) -> None:
    if progress:
        print(text, file=sys.stderr, flush=True)


def evaluation_jobs(task: str, seeds: list[int]) -> list[tuple[str, int]]:
    """(task id, seed) per seed: the task itself, or for a task set ("servicedesk/eval") its tasks in turn."""
    from environments import registry
    from environments.core import EnvError

    try:
        registry.get_task(task)
        return [(task, s) for s in seeds]
    except EnvError:  # not a single task: a task set (whose own error names the bad name if it is neither)
        tasks = registry.task_set(task)
        return [(tasks[i % len(tasks)].id, s) for i, s in enumerate(seeds)]


def load_checkpoint(folder: str, base: str) -> tuple[Any, Any]:
    """A trained run's final checkpoint (full weights, or a LoRA adapter over `base`) and its tokenizer, frozen."""
    from training.modeling import load_model

    if (Path(folder) / "adapter_config.json").exists():
        from peft import PeftModel

        model, tokenizer = load_model(base, trainable=False)
        return PeftModel.from_pretrained(model, folder).eval(), tokenizer
    return load_model(folder, trainable=False)


def evaluate_checkpoint(
    folder: str, base: str, seeds: list[int], config: dict[str, Any], experiment: Experiment, limits: tuple[int, int]
) -> list[dict[str, Any]]:
    """Greedy play of the checkpoint on `seeds` with (max turns, max new tokens): [{"seed", "reward", "passed"}]."""
    import torch

    from training.sampling import rollout_episodes

    model, tokenizer = load_checkpoint(folder, base)
    ev = experiment.evaluation
    style = prompt_style_of(base, config)  # the base's style, also for recipes whose config does not carry it
    jobs = evaluation_jobs(ev.task, seeds)
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            jobs,
            max_turns=limits[0],
            max_new_tokens=limits[1],
            temperature=0.0,
            style=style,
            max_prompt_tokens=config.get("max_prompt_tokens", 4096),
            env_options=dict(ev.options) or None,
        )
    extra = dotted_function(ev.episode_measures) if ev.episode_measures else None
    return [
        {
            "seed": s,
            "task": task,
            "reward": float(record_score(r)["composite"]),
            "passed": bool(record_score(r)["passed"]),
            "components": {k: float(v) for k, v in (record_score(r).get("components") or {}).items()},
            "valid_call_rate": _valid_call_rate(r["header"].get("metrics") or {}),
            "agent_turns": sum(1 for step in r["steps"] if step.get("source") == "agent"),
            **({"step_reward": step_reward(r)} if ev.options else {}),
            **({"extra": extra(r)} if extra else {}),
        }
        for (task, s), r in zip(jobs, records, strict=True)
    ]


def step_reward(record: Record) -> float:
    """The sum of the agent steps' rewards (with StoreBench's reward="daily": the running composite through the last
    day the agent ended; the composite of an episode the turn cap cut is 0)."""
    return round(sum(float(s.get("reward") or 0.0) for s in record["steps"] if s.get("source") == "agent"), 6)


def _valid_call_rate(metrics: dict[str, Any]) -> float:
    valid, invalid = metrics.get("valid_calls", 0), metrics.get("invalid_calls", 0)
    return float(valid / (valid + invalid)) if valid + invalid else 1.0


def episode_measures(episodes: list[dict[str, Any]]) -> dict[str, float]:
    """Means over the test episodes of each score component, the valid-call rate, the agent's turns per episode, and
    where recorded the step reward and the Evaluation.episode_measures figures (Evaluation.components)."""
    names = sorted({name for e in episodes for name in e.get("components", {})})
    out = {f"component {name}": sum(e["components"].get(name, 0.0) for e in episodes) / len(episodes) for name in names}
    out["valid call rate"] = sum(e.get("valid_call_rate", 1.0) for e in episodes) / len(episodes)
    if all("step_reward" in e for e in episodes):
        out["step reward"] = sum(e["step_reward"] for e in episodes) / len(episodes)
    for name in sorted({name for e in episodes for name in e.get("extra", {})}):
        out[name] = sum(e.get("extra", {}).get(name, 0.0) for e in episodes) / len(episodes)
    if all("agent_turns" in e for e in episodes):  # evaluations stored before it was recorded lack it
        out["agent turns"] = sum(e["agent_turns"] for e in episodes) / len(episodes)
    return out


def _trained_tokens(folder: Path, grad_accum: int) -> int:
    rows = [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return int(round(sum(row.get("tokens", 0.0) for row in rows) * grad_accum))  # logged as a micro-batch mean


class _Runs:
    """One arm's training runs and their evaluations, with resume."""

    def __init__(
        self,
        experiment: Experiment,
        arm: str,
        *,
        base: str,
        teacher: str,
        values: dict[str, Any],
        out: Path,
        progress: bool,
        smoke: bool = False,
        files: RunFiles | None = None,
        start: dict[str, dict[str, Any]] | None = None,
        device: str = "auto",
    ):
        self.device = device  # where the recipes train; not part of a run's identity (a series may move to a GPU)
        self.experiment, self.arm, self.base, self.values = experiment, experiment.arm(arm), base, values
        self.files = files  # where the run's committed result file goes (None: a smoke run, kept under `out` only)
        ev = experiment.evaluation  # a smoke run plays its evaluation within the smoke's (smaller) turn and token limits
        self.limits = (ev.max_turns, ev.max_new_tokens)
        if smoke:
            self.limits = (
                min(ev.max_turns, values.get("max_turns", ev.max_turns)),
                min(ev.max_new_tokens, values.get("max_new_tokens", ev.max_new_tokens)),
            )
        self.teacher, self.out, self.progress, self.trained = teacher, out, progress, 0
        self.used: dict[str, dict[str, Any]] = {}  # config hash -> result.json of every run this call used
        self.measured: dict[str, dict[str, float]] = {}  # (checkpoint, seeds, values) -> its extra measures
        # (checkpoint, split, seeds, limits) -> a `none` arm's evaluation; shared by the arms (and the room check)
        self.start: dict[str, dict[str, Any]] = {} if start is None else start

    def config(self, point: dict[str, Any], seed: int) -> dict[str, Any]:
        """The run's recipe config. Harness fields (prompt style, the recipe's own monitoring evaluation, cut to one
        episode: the runner's evaluation is the one reported) are set only where the recipe's config has them."""
        config = {**self.values, **self.arm.overrides, **point, "model": self.base, "seed": seed, "save_every": 0}
        if self.experiment.prepare:
            config.update(dotted_function(self.experiment.prepare)(self.experiment, config))
        style = prompt_style_of(self.base, config)
        harness: dict[str, Any] = {
            "compact_tools": style.compact_tools,
            "max_result_chars": style.max_result_chars,
            "eval_every": 0,
            "eval_episodes": min(1, int(config.get("eval_episodes", 1))),  # an experiment may turn it off altogether
        }
        harness["eval_seed_start"] = self.experiment.evaluation.dev_seeds[0]
        if self.device != "auto":
            harness["device"] = self.device
        if self.experiment.needs_teacher:
            harness["teacher"] = self.teacher
        known = recipe_fields(self.arm.recipe)
        config.update({k: v for k, v in harness.items() if k in known})
        if self.arm.recipe == NO_TRAINING:
            return {k: v for k, v in config.items() if k in known}
        # arms of different recipes share one config: a field only another arm's recipe reads is dropped here, and a
        # field no arm's recipe knows still reaches the recipe, which refuses it by name
        others = {f for arm in self.experiment.arms for f in recipe_fields(arm.recipe)} - known
        return {k: v for k, v in config.items() if k not in others}

    def evaluate(self, point: dict[str, Any], seed: int, split: str, seeds: list[int]) -> dict[str, Any]:
        """result.json of the run (trained now or resumed) with an evaluation on `split` over `seeds`."""
        from training import run_recipe

        config = self.config(point, seed)
        ev = self.experiment.evaluation
        evaluated = [ev.task, *self.limits] + ([ev.options] if ev.options else [])  # no options: the hash runs always had
        # hashed without this machine's paths, so a run's committed file resumes it on another machine or clone
        portable_config = portable(config, self.files.models) if self.files else config
        identity = {k: v for k, v in portable_config.items() if k != "device"}  # a run continued on a GPU is the same run
        digest = config_hash({"recipe": self.arm.recipe, "config": identity, "eval": evaluated})
        label = ",".join(f"{k}={v}" for k, v in point.items()) or "default"
        run_name = f"{label}-seed{seed}-{digest}"
        folder = self.out / self.arm.name / run_name
        path = folder / "result.json"
        result: dict[str, Any] | None = json.loads(path.read_text()) if path.exists() else None
        if (result is None or result.get("config_hash") != digest) and self.files:
            result = self.files.adopt(self.arm.name, run_name, digest, path)
        if result is not None and self._needs_checkpoint(result, split, seeds) and not Path(result["checkpoint"]).exists():
            _say(self.progress, f"[{self.experiment.name}] {self.arm.name} {label} seed {seed}: its checkpoint is not on this machine")
            result = None  # the committed file lacks what is asked now, and only the checkpoint could give it: train again
        save = self._saver(path, run_name)
        if result is None or result.get("config_hash") != digest:
            shutil.rmtree(folder, ignore_errors=True)  # a run interrupted mid-way starts again from scratch
            _say(self.progress, f"[{self.experiment.name}] {self.arm.name} {label} seed {seed}: training")
            start = time.perf_counter()
            result = {
                "arm": self.arm.name,
                "recipe": self.arm.recipe,
                "point": point,
                "seed": seed,
                "config": config,
                "config_hash": digest,
                "checkpoint": self.base,
                "steps": 0,
                "trained_tokens": 0,
                "last_metrics": {},
                "evaluations": {},
            }
            if self.arm.recipe != NO_TRAINING:
                run = run_recipe(self.arm.recipe, {**config, "output_dir": str(folder)})
                self.trained += 1
                result.update(checkpoint=run.final_checkpoint, steps=run.steps, last_metrics=run.last_metrics)
                result["trained_tokens"] = _trained_tokens(folder, config.get("grad_accum", 1))
            folder.mkdir(parents=True, exist_ok=True)
            result["train_s"] = time.perf_counter() - start
            save(result)
        done = result["evaluations"].get(split)
        shared = start_key(result["checkpoint"], split, seeds, self.limits)  # a `none` arm: one checkpoint for every seed
        if (done is None or [e["seed"] for e in done["episodes"]] != seeds) and self.arm.recipe == NO_TRAINING and shared in self.start:
            # greedy play of the same checkpoint on the same jobs is the same play: the start is evaluated once per call
            result["evaluations"][split] = {**self.start[shared], "eval_s": 0.0, "reused": True}
            save(result)
            done = result["evaluations"][split]
        if done is None or [e["seed"] for e in done["episodes"]] != seeds:
            _say(self.progress, f"[{self.experiment.name}] {self.arm.name} {label} seed {seed}: evaluating on {len(seeds)} {split} seeds")
            start = time.perf_counter()
            # the shared values too: a `none` arm's config keeps only model and seed, yet plays in the experiment's prompt style
            played = {**self.values, **self.arm.overrides, **point, **config}
            episodes = evaluate_checkpoint(result["checkpoint"], self.base, seeds, played, self.experiment, self.limits)
            result["evaluations"][split] = {"episodes": episodes, "eval_s": time.perf_counter() - start}
            save(result)
            if self.arm.recipe == NO_TRAINING:
                self.start[shared] = {"episodes": episodes, "eval_s": result["evaluations"][split]["eval_s"]}
        if split == "test" and self.experiment.measures and "measures" not in result["evaluations"][split]:
            _say(self.progress, f"[{self.experiment.name}] {self.arm.name} {label} seed {seed}: measuring ({self.experiment.measures})")
            start = time.perf_counter()
            values = {**self.values, **self.arm.overrides, **point}
            if self.experiment.needs_teacher:
                values["teacher"] = self.teacher  # a measure may play the teacher too (caddie: a second actor)
            key = json.dumps([result["checkpoint"], seeds, values], sort_keys=True, default=str)
            if key not in self.measured:  # the start checkpoint of a `none` arm is the same for every training seed
                self.measured[key] = dotted_function(self.experiment.measures)(result["checkpoint"], self.base, values, seeds)
            result["evaluations"][split]["measures"] = self.measured[key]
            result["evaluations"][split]["eval_s"] += time.perf_counter() - start
            save(result)
        self.used[digest] = result
        return result

    def _needs_checkpoint(self, result: dict[str, Any], split: str, seeds: list[int]) -> bool:
        """Whether evaluating `split` on `seeds` (and its measures) would play the run's checkpoint again."""
        done = result["evaluations"].get(split)
        if done is None or [e["seed"] for e in done["episodes"]] != seeds:
            return result.get("recipe") != NO_TRAINING
        return split == "test" and bool(self.experiment.measures) and "measures" not in done

    def _saver(self, path: Path, run_name: str) -> Callable[[dict[str, Any]], None]:
        """Writes the run's result.json under `out`, and its committed file where there is one."""

        def save(result: dict[str, Any]) -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(result, indent=1))
            if self.files:
                self.files.write(self.arm.name, run_name, result)

        return save


@dataclass
class RunFiles:
    """Where a full run's committed result files go (training/experiments/results.py), and what they record."""

    experiment: Experiment
    results: Path
    base: str
    teacher: str
    command: str

    def __post_init__(self) -> None:
        self.base_identity = model_identity(self.base)
        self.teacher_identity = model_identity(self.teacher) if self.experiment.needs_teacher else None
        self.models = {self.base: "model:" + identity_label(self.base_identity)}
        if self.teacher_identity:
            self.models[self.teacher] = "model:" + identity_label(self.teacher_identity)

    def write(self, arm: str, run_name: str, result: dict[str, Any]) -> None:
        write_run(
            run_file(self.results, self.experiment.name, arm, run_name),
            result,
            experiment=self.experiment,
            base=self.base_identity,
            teacher=self.teacher_identity,
            models=self.models,
            command=self.command,
        )

    def adopt(self, arm: str, run_name: str, digest: str, path: Path) -> dict[str, Any] | None:
        """The committed file of this run as the run's result.json (made on another machine, or before `out` was
        cleared), or None. Its checkpoint path is made this machine's again (relative to the repository)."""
        committed = run_file(self.results, self.experiment.name, arm, run_name)
        if not committed.exists():
            return None
        record = json.loads(committed.read_text())
        if record.get("config_hash") != digest:
            return None
        keys = (
            "arm",
            "recipe",
            "point",
            "seed",
            "config",
            "config_hash",
            "checkpoint",
            "steps",
            "trained_tokens",
            "last_metrics",
            "evaluations",
            "train_s",
        )
        result = {k: record[k] for k in keys if k in record}
        checkpoint = str(result.get("checkpoint", ""))
        if checkpoint.startswith("model:"):  # the start checkpoint itself (a `none` arm)
            result["checkpoint"] = self.base
        elif checkpoint and not Path(checkpoint).is_absolute():
            result["checkpoint"] = str(REPO_ROOT / checkpoint)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1))
        return result


def run_experiment(
    experiment: Experiment,
    *,
    base: str | Path,
    teacher: str | Path,
    out: str | Path,
    smoke: bool = False,
    seeds: list[int] | None = None,
    arms: list[str] | None = None,
    progress: bool = True,
    results: Path | None = None,
    command: str = "",
    room_check: bool = True,
    device: str = "auto",
) -> ExperimentResult:
    """Tune, train and evaluate every arm (module docstring); see ExperimentResult for what comes back.

    With `results` (a full run from the CLI: training/results), every run also writes its committed result file there
    and resumes from it, and the room check runs first: NoRoom when the base leaves the arms no room, unless
    `room_check` is False (training/experiments/results.py)."""
    started, clock = time.strftime("%Y-%m-%d %H:%M"), time.perf_counter()
    out = Path(out)
    values = dict(experiment.shared)
    smoke_eval = DEFAULT_SMOKE_EVAL_EPISODES
    if smoke:
        smoke_values = dict(experiment.smoke)
        smoke_eval = int(smoke_values.pop("eval_episodes", DEFAULT_SMOKE_EVAL_EPISODES))
        values.update(smoke_values)
    train_seeds = list(seeds) if seeds else list(experiment.train_seeds[:1] if smoke else experiment.train_seeds)
    points = grid_points(experiment.tuning)[:1] if smoke else grid_points(experiment.tuning)
    test_start, test_stop = experiment.evaluation.test_seeds
    test_seeds = list(range(test_start, test_stop))[: smoke_eval if smoke else None]
    dev_seeds = list(range(*experiment.evaluation.dev_seeds))
    files = RunFiles(experiment, Path(results), str(base), str(teacher), command) if results is not None and not smoke else None
    start: dict[str, dict[str, Any]] = {}  # the start checkpoint's evaluations, shared by the room check and `none` arms
    if files:
        room = check_room(experiment, files, values, test_seeds, start, progress)
        if room_verdict(room["reward_mean"]) != "room" and room_check:
            raise NoRoom(
                f"{experiment.name}: the base {identity_label(files.base_identity)} scores {room['reward_mean']:.3f} on the "
                f"{len(test_seeds)} test seeds of {experiment.evaluation.task}, outside the room bounds; pick a split or "
                "difficulty where it has room, or pass --no-room-check (the table will say it is not evidence)"
            )
    results_by_arm: dict[str, ArmResult] = {}
    trained = 0
    for name in arms or [a.name for a in experiment.arms]:
        runs = _Runs(
            experiment,
            name,
            base=str(base),
            teacher=str(teacher),
            values=values,
            out=out,
            progress=progress,
            smoke=smoke,
            files=files,
            start=start,
            device=device,
        )
        arm = ArmResult(name, chosen=points[0])
        if len(points) > 1:  # a one-point grid has nothing to choose: no dev evaluation is spent on it
            for point in points:
                result = runs.evaluate(point, train_seeds[0], "dev", dev_seeds)
                episodes = result["evaluations"]["dev"]["episodes"]
                arm.dev.append({"point": point, "reward_mean": sum(e["reward"] for e in episodes) / len(episodes)})
            arm.chosen = max(arm.dev, key=lambda d: d["reward_mean"])["point"]  # max keeps the first of equals
        for seed in train_seeds:
            result = runs.evaluate(arm.chosen, seed, "test", test_seeds)
            episodes = result["evaluations"]["test"]["episodes"]
            arm.rewards[seed] = [e["reward"] for e in episodes]
            arm.passed[seed] = [1.0 if e["passed"] else 0.0 for e in episodes]
            if experiment.evaluation.components:
                arm.measures[seed] = episode_measures(episodes)
            if "measures" in result["evaluations"]["test"]:
                arm.measures[seed] = {**arm.measures.get(seed, {}), **result["evaluations"]["test"]["measures"]}
        arm.runs = list(runs.used.values())
        arm.wall_s = sum(r["train_s"] + sum(e["eval_s"] for e in r["evaluations"].values()) for r in arm.runs)
        results_by_arm[name] = arm
        trained += runs.trained
    return ExperimentResult(
        experiment.name,
        str(base),
        str(teacher),
        smoke,
        str(out),
        test_seeds,
        values,
        results_by_arm,
        started,
        time.perf_counter() - clock,
        trained,
        base_hash=files.base_identity["hash"] if files else "",
        teacher_hash=files.teacher_identity["hash"] if files and files.teacher_identity else "",
    )


def room_only(experiment: Experiment, *, base: str | Path, results: Path, command: str = "", progress: bool = True) -> dict[str, Any]:
    """The room check alone (`python -m training.experiments room NAME`): the base played greedily on the experiment's
    test seeds, its room file written (or read back when it is current), no arm trained and no teacher read."""
    files = RunFiles(dataclasses.replace(experiment, needs_teacher=False), Path(results), str(base), str(base), command)
    test_seeds = list(range(*experiment.evaluation.test_seeds))
    return check_room(experiment, files, dict(experiment.shared), test_seeds, {}, progress)


def start_key(checkpoint: str, split: str, seeds: list[int], limits: tuple[int, int]) -> str:
    """The key of the start checkpoint's evaluations that the room check and `none` arms share (greedy play of one
    checkpoint on the same jobs is the same play)."""
    return json.dumps([checkpoint, split, seeds, list(limits)])


def check_room(
    experiment: Experiment, files: RunFiles, values: dict[str, Any], test_seeds: list[int], start: dict[str, dict[str, Any]], progress: bool
) -> dict[str, Any]:
    """The base played greedily on the test seeds, once per base and definition (its room file, committed): the record
    with reward_mean and passed_mean. The evaluation seeds `start`, so a `none` arm reuses it rather than play again."""
    path = room_file(files.results, experiment.name, files.base_identity)
    ev = experiment.evaluation
    limits = (ev.max_turns, ev.max_new_tokens)
    key = start_key(files.base, "test", test_seeds, limits)
    if path.exists():
        room = json.loads(path.read_text())
        if room.get("definition") == definition_hash(experiment) and room.get("test_seeds") == test_seeds:
            start[key] = {"episodes": room["episodes"], "eval_s": room["eval_s"]}
            return room
    _say(progress, f"[{experiment.name}] room check: the base on {len(test_seeds)} test seeds")
    clock = time.perf_counter()
    episodes = evaluate_checkpoint(files.base, files.base, test_seeds, values, experiment, limits)
    eval_s = time.perf_counter() - clock
    start[key] = {"episodes": episodes, "eval_s": eval_s}
    room = {
        "experiment": experiment.name,
        "definition": definition_hash(experiment),
        "base": files.base_identity,
        "task": ev.task,
        "test_seeds": test_seeds,
        "reward_mean": sum(e["reward"] for e in episodes) / len(episodes),
        "passed_mean": sum(1.0 for e in episodes if e["passed"]) / len(episodes),
        "episodes": episodes,
        "eval_s": eval_s,
        **provenance(),
    }
    room["verdict"] = room_verdict(room["reward_mean"])
    write_result(path, room)
    _say(progress, f"[{experiment.name}] room check: {room['reward_mean']:.3f} ({room['verdict']})")
    return room
