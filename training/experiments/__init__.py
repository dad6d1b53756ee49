"""Experiments: a method against its baselines, from the same checkpoint, under one standard.

    python -m training.experiments list
    python -m training.experiments graphopd --smoke                      # <= 30 s; one per experiment in make test
    python -m training.experiments graphopd --base PATH --teacher PATH   # the full comparison -> training/README.md

An `Experiment` names its arms (each a recipe and the config fields that differ), the config every arm shares,
the grid every arm is tuned over on dev seeds (the same grid and so the same tuning budget for every arm), the
held-out evaluation and the training seeds. The runner (runner.py) enforces the standard (standard.py): same
start checkpoint, same compute, tuning on dev seeds only, >= 3 training seeds, mean +- 95% CI per arm, paired
differences against the method on the same evaluation seeds, and the smallest effect a null could have missed.
Experiments register themselves in `EXPERIMENTS` when their module is imported (`MODULES` lists them).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from training.config import ConfigError


@dataclass(frozen=True)
class Arm:
    name: str
    """Short name used in tables and folders (`graphopd`, `random`, `opd`)."""
    recipe: str
    """The training recipe (a key of training.RECIPES)."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """Config fields that differ from the experiment's shared config (for example selection="random")."""
    description: str = ""
    """One line for the table's legend."""


@dataclass(frozen=True)
class Evaluation:
    task: str
    """The task evaluated (greedy play), for example "toolgym/chain"."""
    dev_seeds: tuple[int, int]
    """[start, stop) of the dev seeds: hyper-parameters are chosen on these, never on test seeds."""
    test_seeds: tuple[int, int]
    """[start, stop) of the held-out test seeds reported in the table (answers differ by seed)."""
    max_turns: int = 6
    """Agent turns per evaluation episode."""
    max_new_tokens: int = 64
    """Token limit of one agent turn."""
    components: bool = False
    """Also report the score's components and the valid-call rate of the test episodes (mean +- CI over training
    seeds, beside the table): what moves when reward and pass rate sit on a floor (the service desk's composite is
    zero until the account state is right)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Environment options of the evaluation episodes (Env.options_schema; StoreBench {"reward": "daily"}: each
    episode also records `step_reward`, the running composite through the last day it ended). Empty: defaults."""
    episode_measures: str = ""
    """Per-episode figures read from each evaluation record: "module:function", called as function(record) ->
    {name: float}; stored with the episode ("extra") and reported as test-seed means beside the components."""


@dataclass(frozen=True)
class GpuConfig:
    """The same experiment at a real model's size, checked with a randomly initialised model of that architecture
    (benchmarks/gpu_check.sh): no weights can be downloaded here."""

    architecture: dict[str, Any]
    """transformers Qwen3Config fields (for example Qwen3-1.7B: hidden_size=2048, num_hidden_layers=28, ...)."""
    overrides: dict[str, Any] = field(default_factory=dict)
    """Config fields for the GPU run (bf16 is automatic on CUDA; batch sizes, lora_r, generation backend)."""
    steps: int = 3
    """Optimizer steps the check runs per arm."""


@dataclass(frozen=True)
class Experiment:
    name: str
    """The CLI name (`python -m training.experiments NAME`)."""
    question: str
    """What the comparison asks, in one sentence (the table's caption)."""
    method: str
    """The arm the paired differences are taken against (every other arm is a baseline)."""
    arms: tuple[Arm, ...]
    """The method and its baselines."""
    shared: dict[str, Any]
    """Config fields every arm shares in the full run (task, steps, rollouts per step, ...)."""
    evaluation: Evaluation
    """What is measured after training, on dev seeds (tuning) and test seeds (the table)."""
    tuning: dict[str, tuple[Any, ...]] = field(default_factory=dict)
    """Grid over config fields, searched on dev seeds with the first training seed, identically for every arm."""
    train_seeds: tuple[int, ...] = (0, 1, 2)
    """Training seeds of the full run (>= 3)."""
    smoke: dict[str, Any] = field(default_factory=dict)
    """Overrides of `shared` for --smoke (<= 30 s in all; tiny model, one seed, a few steps)."""
    needs_teacher: bool = True
    """Whether the arms read a teacher (`--teacher`)."""
    gpu: GpuConfig | None = None
    """The real-architecture configuration benchmarks/gpu_check.sh runs when a GPU is available."""
    measures: str = ""
    """Extra measures of each trained checkpoint on the test seeds, beside reward and pass rate: "module:function",
    called as function(checkpoint, base, values, seeds) -> {name: float} (values: the shared config with the arm's
    overrides; an experiment that needs a teacher also finds its path there as "teacher"). The report gives each as
    mean +- 95% CI over training seeds (RAISED's attack figures)."""
    prepare: str = ""
    """What a run needs made before it trains: "module:function", called as function(experiment, values) -> {field:
    value} once per run config before training (values: the run's recipe config); the overrides join that config (and
    so its hash). A resumed or re-evaluated run calls it again: make it idempotent, for example scripted
    demonstrations written once to a cached file under var/, returning {"data": path}."""
    report: str = ""
    """More of the report: "module:function", called as function(experiment, result) -> markdown appended to the
    table (StoreBench's per-scenario tables beside the anchors, AdvSim2Real's relative gains); "" adds nothing."""
    readme: str = "training/README.md"
    """The README (relative to the repository root) whose markers the full run's table goes between: an
    environment's own README when the experiment is that environment's reproduction."""

    def __post_init__(self) -> None:
        names = [arm.name for arm in self.arms]
        assert len(set(names)) == len(names), f"{self.name}: arm names repeat: {names}"
        assert self.method in names, f"{self.name}: method {self.method!r} is not one of the arms {names}"

    def arm(self, name: str) -> Arm:
        return next(a for a in self.arms if a.name == name)


QWEN3_1_7B: dict[str, Any] = {
    "hidden_size": 2048,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "intermediate_size": 6144,
    "vocab_size": 151936,
    "tie_word_embeddings": True,
    "max_position_embeddings": 40960,
    "rope_theta": 1_000_000.0,
}
"""Qwen3-1.7B's architecture (transformers Qwen3Config fields): every experiment's GpuConfig, random-initialised."""


# The real model's SFT bases (training/README.md "Defaults"): smol-base is kept in the repository as its adapter, so a
# fresh clone has it in seconds; a teacher that is not built here is an error naming its build command. base-small
# and teacher-small stay for fast runs (--base base-small --teacher teacher-small).
DEFAULT_BASE, DEFAULT_TEACHER = "smol-base", "smol-teacher"

EXPERIMENTS: dict[str, Experiment] = {}
MODULES: tuple[str, ...] = (
    "training.experiments.graphopd",
    "training.experiments.pivotopd",
    "training.experiments.ascent",
    "training.experiments.raised",
    "training.experiments.gated_sd",
    "training.experiments.selfdistill",
    "training.experiments.tjpo",
    "training.experiments.evoke",
    "training.experiments.horizon",
    "training.experiments.pgsft",
    "training.experiments.flowright",
    "training.experiments.caddie",
    "training.experiments.phantom_transfer",
    "training.experiments.sibyl",
    "training.experiments.constitution",
    "training.experiments.hat",
    "training.experiments.arex",
    "training.experiments.graphcert",
    "training.experiments.optionsdesk",
    "training.experiments.storebench_loop",
    "training.experiments.advsim",
    "training.experiments.federation",
    "training.experiments.hybridcua",
    "training.experiments.computersd",
    "training.experiments.gui_priors",
    "training.experiments.dreamer",
)


def register(experiment: Experiment) -> Experiment:
    assert experiment.name not in EXPERIMENTS, f"experiment {experiment.name!r} registered twice"
    EXPERIMENTS[experiment.name] = experiment
    return experiment


def load_all() -> dict[str, Experiment]:
    for module in MODULES:
        importlib.import_module(module)
    return EXPERIMENTS


def get(name: str) -> Experiment:
    experiments = load_all()
    if name not in experiments:
        raise ConfigError(f"unknown experiment {name!r}; choose one of {', '.join(sorted(experiments))}", ["experiment"])
    return experiments[name]
