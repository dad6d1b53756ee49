"""Recipe configuration: dataclasses with one docstring per field, validated at the edge with the offending values.

    config = load_config(SFTConfig, {"model": "...", "data": "episodes.jsonl", "max_steps": 50})
    config = load_config(SFTConfig, tomllib.load(f))           # unknown keys are refused by name

Each recipe subclasses `TrainConfig` and adds its own fields and checks in `problems()`. A group of fields that several
recipes share (sampling, held-out evaluation, the clipped ratio, ...) is a mixin in training/config_fields.py, with its
docs and checks; every `problems()` extends `super().problems()`, so a config with several mixins runs all their checks.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

C = TypeVar("C", bound="TrainConfig")


class ConfigError(ValueError):
    """A bad configuration; the message names each offending field and value, and `fields` lists the field names."""

    def __init__(self, message: str, fields: list[str] | None = None) -> None:
        super().__init__(message)
        self.fields = list(fields or [])


@dataclass
class ConfigFields:
    """The root of every config class and field-group mixin: the end of the cooperative `problems()` chain."""

    def problems(self) -> list[str]:
        """Every invalid field as 'name=value: why'. Each class extends `super().problems()`."""
        return []


@dataclass
class TrainConfig(ConfigFields):
    # Fields that name a folder the run reads weights from; a caller that confines paths (the lab) checks each.
    MODEL_PATH_FIELDS: ClassVar[tuple[str, ...]] = ("model", "resume_from")
    # Recipes whose loop is written for several processes (every rank runs the same steps; training/distributed.py)
    DISTRIBUTED: ClassVar[bool] = False

    model: str = ""
    """`from_pretrained` path (or hub id) of the model to train."""
    output_dir: str = "var/training/run"
    """Folder for checkpoints (step-NNNNNN/) and the metrics log (metrics.jsonl)."""
    max_steps: int = 100
    """Optimizer steps to run in total (a resumed run continues up to this number)."""
    learning_rate: float = 1e-4
    """Peak learning rate of AdamW."""
    lr_schedule: str = "constant"
    """constant | linear | cosine decay after warmup."""
    warmup_steps: int = 0
    """Steps of linear warmup from 0 to the peak learning rate."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    grad_accum: int = 1
    """Micro-batches accumulated per optimizer step."""
    max_grad_norm: float = 1.0
    """Gradient-norm clip; 0 disables clipping."""
    lora_r: int = 0
    """LoRA rank; 0 means full fine-tuning."""
    lora_alpha: int = 16
    """LoRA scaling numerator (the scale is alpha / r)."""
    lora_target_modules: list[str] = field(default_factory=lambda: ["all-linear"])
    """Module names LoRA adapts (["all-linear"]: every linear layer of the decoder, peft's shorthand)."""
    lora_top_layers: int = 0
    """LoRA on the last N decoder layers only (0: every layer)."""
    gradient_checkpointing: bool = False
    """Recompute activations in backward to save memory."""
    device: str = "auto"
    """auto (cuda when present, else cpu) | cpu | cuda | cuda:N. bf16 on CUDA, fp32 on CPU."""
    cpu_bf16: bool = False
    """On CPU, compute forward and backward under bf16 autocast when the CPU has native bf16 (AVX512-BF16 or AMX;
    about 2.5x faster there); weights and optimizer stay fp32. Ignored elsewhere (CUDA already trains in bf16)."""
    seed: int = 0
    """Seeds data order, sampling and initialisation; a run is a function of its config."""
    save_every: int = 0
    """Save a checkpoint every N steps (0: only at the end)."""
    resume_from: str = ""
    """A checkpoint folder to continue from exactly (weights, optimizer, scheduler, RNG, step)."""
    parallel: str = "none"
    """none | ddp | fsdp: data-parallel training over several processes (DDP, or FSDP2 sharding of weights,
    gradients and optimizer state); a step's global batch stays grad_accum micro-batches (training/distributed.py)."""
    processes: int = 1
    """Processes the run starts on this node through torchrun when parallel is ddp or fsdp (one GPU each on CUDA);
    under a torchrun started by hand (several nodes) torchrun's --nnodes/--nproc-per-node decide instead."""

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError(f"{type(self).__name__}: " + "; ".join(problems), [p.split("=", 1)[0] for p in problems])

    def problems(self) -> list[str]:
        out = super().problems()
        if not self.model:
            out.append("model='': give a from_pretrained path")
        for name in ("max_steps", "grad_accum"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        for name in ("warmup_steps", "save_every", "lora_r", "lora_top_layers"):
            if getattr(self, name) < 0:
                out.append(f"{name}={getattr(self, name)!r}: must not be negative")
        if not self.learning_rate > 0:
            out.append(f"learning_rate={self.learning_rate!r}: must be positive")
        if self.lr_schedule not in ("constant", "linear", "cosine"):
            out.append(f"lr_schedule={self.lr_schedule!r}: must be constant, linear or cosine")
        if self.device != "auto" and not (self.device == "cpu" or self.device.startswith("cuda")):
            out.append(f"device={self.device!r}: must be auto, cpu, cuda or cuda:N")
        if self.max_grad_norm < 0:
            out.append(f"max_grad_norm={self.max_grad_norm!r}: must not be negative")
        return out + self.parallel_problems()

    def parallel_problems(self) -> list[str]:
        from training.distributed import PARALLEL_MODES

        if self.parallel not in PARALLEL_MODES:
            return [f"parallel={self.parallel!r}: must be one of {', '.join(PARALLEL_MODES)}"]
        out: list[str] = []
        if self.processes < 1:
            out.append(f"processes={self.processes!r}: must be at least 1")
        if self.parallel == "none":
            if self.processes != 1:
                out.append(f"processes={self.processes!r}: needs parallel='ddp' or 'fsdp' (parallel='none' is one process)")
            return out
        if not self.DISTRIBUTED:
            out.append(f"parallel={self.parallel!r}: {type(self).__name__} runs in one process only (multi-process recipes: sft)")
        if self.processes >= 1 and self.grad_accum % self.processes:
            out.append(
                f"grad_accum={self.grad_accum!r}: must be a multiple of processes={self.processes} (each process takes grad_accum/processes micro-batches a step)"
            )
        if self.parallel == "fsdp" and self.lora_r:
            out.append(f"lora_r={self.lora_r!r}: parallel='fsdp' shards full fine-tuning; use parallel='ddp' with LoRA")
        if self.processes > 1 and self.device.startswith("cuda:"):
            out.append(f"device={self.device!r}: each process takes cuda:LOCAL_RANK itself; give device='auto' or 'cuda'")
        return out

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def load_config(cls: type[C], values: dict[str, Any]) -> C:
    """Build a config from plain values, refusing unknown keys and wrong types by name."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown field(s) {', '.join(unknown)}; known: {', '.join(known)}", unknown)
    defaults = cls.__dataclass_fields__
    for name, value in values.items():
        default = defaults[name].default if defaults[name].default is not dataclasses.MISSING else defaults[name].default_factory()  # type: ignore[misc,operator]
        expected = type(default)
        ok = isinstance(value, expected) or (expected is float and isinstance(value, int)) or default is None
        if isinstance(value, bool) and expected is not bool and default is not None:
            ok = False
        if not ok:
            raise ConfigError(f"{cls.__name__}: {name}={value!r} should be {expected.__name__}", [name])
    coerced = {
        k: (float(v) if isinstance(getattr(cls, k, None), float) and isinstance(v, int) and not isinstance(v, bool) else v)
        for k, v in values.items()
    }
    return cls(**coerced)  # type: ignore[arg-type]  # types were checked field by field above


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field (for --help and the console's run form)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        body = tree.body[0].body  # type: ignore[attr-defined]
        for node, following in zip(body, body[1:], strict=False):
            is_field = isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
            doc = following.value.value if isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant) else None
            if is_field and isinstance(doc, str):
                docs[node.target.id] = doc  # type: ignore[union-attr]
    return docs
