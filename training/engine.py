"""What every recipe shares: the model under training, its optimizer and schedule, checkpoints, metrics, hooks.

    trainer = Trainer(config, recipe="sft", hooks=hooks)     # loads the model, or resumes from config.resume_from
    while trainer.step < config.max_steps and not trainer.stopping():
        metrics = trainer.optimize(micro_batches, loss_fn)    # grad accumulation, clipping, scheduler step
        trainer.log(metrics)                                  # metrics.jsonl + on_metric + progress bar
        trainer.maybe_save()
    trainer.finish()

A checkpoint folder holds the model (or LoRA adapter) and tokenizer via save_pretrained, `training_config.json`
(the recipe name and its full config), `trainer_state.pt` (tensors only: optimizer, scheduler, torch RNG states)
and `trainer_state.json` (step, python and numpy RNG states, recipe state), so a resumed run continues exactly
where the saved one stood. Under torch.distributed (config.parallel ddp|fsdp, inside torchrun) every rank runs
this same loop on its share of each step's micro-batches; rank 0 alone logs, reports and writes checkpoints, which
hold full state in the one-process format (training/distributed.py), so they resume at any world size. Nothing in a checkpoint is unpickled as code: `trainer_state.pt` loads with
`weights_only=True`, and a file that needs more than tensors and plain containers is refused.
"""

from __future__ import annotations

import json
import logging
import math
import pickle
import random
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

import training.decode as decode
import training.distributed as distributed  # the module, not the package: training/__init__ imports this one
from training.config import TrainConfig
from training.losses import ONPOLICY_WARN_DIFF, onpolicy_check
from training.model_store import cpu_computes_bf16
from training.modeling import LoraSpec, load_model, pick_device, token_logprobs, trainable_parameters

logger = logging.getLogger(__name__)

MetricCallback = Callable[[int, str, float], None]
CheckpointCallback = Callable[[int, str], None]


@dataclass
class Hooks:
    """How a caller (the CLI, a Celery task) watches and steers a run."""

    on_metric: MetricCallback | None = None  # (step, name, value) after every logged step
    on_checkpoint: CheckpointCallback | None = None  # (step, folder) after every saved checkpoint
    should_stop: Callable[[], bool] | None = None  # polled between steps; True stops cleanly with a checkpoint
    progress: bool = True  # a tqdm bar on stderr


@dataclass
class RunResult:
    recipe: str
    steps: int
    checkpoints: list[str] = field(default_factory=list)
    last_metrics: dict[str, float] = field(default_factory=dict)
    stopped: bool = False  # should_stop ended it before max_steps

    @property
    def final_checkpoint(self) -> str | None:
        return self.checkpoints[-1] if self.checkpoints else None


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _lr_lambda(config: TrainConfig) -> Callable[[int], float]:
    def factor(step: int) -> float:
        if step < config.warmup_steps:
            return (step + 1) / config.warmup_steps
        if config.lr_schedule == "constant":
            return 1.0
        progress = (step - config.warmup_steps) / max(1, config.max_steps - config.warmup_steps)
        if config.lr_schedule == "linear":
            return max(0.0, 1.0 - progress)
        return 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))

    return factor


class Trainer:
    def __init__(self, config: TrainConfig, *, recipe: str, hooks: Hooks | None = None) -> None:
        self.config, self.recipe, self.hooks = config, recipe, hooks or Hooks()
        self.dist = distributed.current() if config.parallel != "none" else distributed.DistContext()
        self.device = distributed.rank_device(pick_device(config.device), self.dist)
        self.output_dir = Path(config.output_dir)
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.step = 0
        self.state: dict[str, Any] = {}  # recipe state that must survive a resume (e.g. a refinement selection)
        self.services: dict[str, Any] = {}  # helpers the run starts (a generation pool); each .close()d by finish()
        self.checkpoints: list[str] = []
        self.last_metrics: dict[str, float] = {}
        self._cpu_bf16 = config.cpu_bf16 and self.device.type == "cpu" and cpu_computes_bf16()  # decided once, used every micro-batch
        seed_everything(config.seed)
        decode.set_run_token_budget(getattr(config, "decode_token_budget", 0))  # engines the sampler builds this run
        resume = Path(config.resume_from) if config.resume_from else None
        self.model, self.tokenizer = self._load(resume)
        self._architecture = type(self.model).__name__  # FSDP2 renames the class; checkpoints keep the real name
        self.model = distributed.wrap(self.model, config.parallel, self.dist)  # before the optimizer: FSDP2 swaps parameters
        self.optimizer = torch.optim.AdamW(trainable_parameters(self.model), lr=config.learning_rate, weight_decay=config.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, _lr_lambda(config))
        if resume is not None:
            self._restore(resume)
        self._bar = None
        if self.hooks.progress and self.dist.is_main:
            from tqdm import tqdm

            self._bar = tqdm(total=config.max_steps, initial=self.step, desc=recipe, dynamic_ncols=True)

    # --- model -------------------------------------------------------------------------------------------
    def _load(self, resume: Path | None) -> tuple[Any, Any]:
        config = self.config
        lora = (
            LoraSpec(
                r=config.lora_r,
                alpha=config.lora_alpha,
                target_modules=tuple(config.lora_target_modules),
                top_layers=config.lora_top_layers,
            )
            if config.lora_r
            else None
        )
        if resume is not None and lora is not None:
            from peft import PeftModel

            base, tokenizer = load_model(config.model, device=self.device, gradient_checkpointing=config.gradient_checkpointing)
            # an adapter folder carries no code to trust; peft reads safetensors, or a .bin with weights_only=True
            return PeftModel.from_pretrained(base, resume, is_trainable=True), tokenizer
        path = str(resume) if resume is not None else config.model
        return load_model(path, device=self.device, lora=lora, gradient_checkpointing=config.gradient_checkpointing)

    # --- one optimizer step ------------------------------------------------------------------------------
    def optimize(self, micro_batches: Iterable[Any], loss_fn: Callable[[Any], tuple[torch.Tensor, dict[str, float]]]) -> dict[str, float]:
        """Accumulate gradients over the micro-batches (each loss scaled by 1/count), clip, step, schedule.
        Under several processes each rank takes its share of the step's micro-batches (the gradients are averaged
        over ranks, so the update is the one-process update) and the metrics are averaged over ranks."""
        batches = distributed.shard(list(micro_batches), self.dist)
        assert batches, "an optimizer step needs at least one micro-batch"
        totals: dict[str, float] = self._onpolicy_metrics(batches) if getattr(self.config, "onpolicy_check", False) else {}
        self.model.train()
        for index, batch in enumerate(batches):
            with distributed.gradient_sync(self.model, enabled=index == len(batches) - 1), self._autocast():
                loss, metrics = loss_fn(batch)
                (loss / len(batches)).backward()
            for key, value in metrics.items():
                totals[key] = totals.get(key, 0.0) + value / len(batches)
        params = trainable_parameters(self.model)
        if self.config.max_grad_norm > 0:
            norm = torch.nn.utils.clip_grad_norm_(params, self.config.max_grad_norm)
            totals["grad_norm"] = float(distributed._full(norm))
        totals = distributed.mean_metrics(totals, self.dist)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        totals["lr"] = float(self.scheduler.get_last_lr()[0])
        self.scheduler.step()
        self.step += 1
        return totals

    def _autocast(self) -> Any:
        """bf16 autocast on a CPU that computes bf16 natively when the config asks for it; a no-op context otherwise."""
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=self._cpu_bf16)

    def _onpolicy_metrics(self, batches: list[Any]) -> dict[str, float]:
        """The on-policy check (on-policy recipes, OnPolicyConfig.onpolicy_check): before the update, the sampler's
        logprobs of the sampled tokens against this model's, as `onpolicy_logprob_diff` (mean absolute difference) and
        `onpolicy_kl` (k3 estimate); a batch's `old_logp` is reused where it is this model's at temperature 1, else the
        tokens are scored once more. A difference above losses.ONPOLICY_WARN_DIFF is logged as a warning and
        `onpolicy_warning` = 1."""
        temperature = float(getattr(self.config, "temperature", 1.0) or 1.0)  # greedy samples carry raw logprobs
        diff = kl = 0.0
        count = 0
        with torch.no_grad():
            for batch in batches:
                sampled = batch.get("sampled_logprobs") if isinstance(batch, dict) else None
                if sampled is None or "mask" not in batch or not (~torch.isnan(sampled[:, 1:]) & (batch["mask"][:, 1:] > 0)).any():
                    continue
                if "old_logp" in batch and temperature == 1.0:
                    mine = batch["old_logp"]
                else:
                    mine = token_logprobs(self.model, batch["input_ids"], batch["attention_mask"], temperature=temperature)
                d, k, n = onpolicy_check(sampled[:, 1:].to(mine.device), mine, batch["mask"][:, 1:])
                diff, kl, count = diff + d, kl + k, count + n
        if not count:
            return {}
        metrics = {"onpolicy_logprob_diff": diff / count, "onpolicy_kl": kl / count}
        metrics["onpolicy_warning"] = float(metrics["onpolicy_logprob_diff"] > ONPOLICY_WARN_DIFF)
        if metrics["onpolicy_warning"]:
            logger.warning(
                "step %d: the sampler's logprobs differ from the trainer's by %.3f on average (KL %.4f): the samples are not on-policy",
                self.step,
                metrics["onpolicy_logprob_diff"],
                metrics["onpolicy_kl"],
            )
        return metrics

    def skip_step(self) -> dict[str, float]:
        """Count a step that had nothing to train on: no optimizer update, but the step and the schedule advance
        (so max_steps still ends the run and the learning rate stays a function of the step)."""
        lr = float(self.scheduler.get_last_lr()[0])
        with warnings.catch_warnings():  # torch warns when the schedule moves before any optimizer step: intended here
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before")
            self.scheduler.step()
        self.step += 1
        return {"lr": lr}

    # --- metrics, stopping, checkpoints ------------------------------------------------------------------
    def log(self, metrics: dict[str, float]) -> None:
        self.last_metrics = {k: float(v) for k, v in metrics.items()}
        if not self.dist.is_main:
            return
        with open(self.output_dir / "metrics.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": self.step, **self.last_metrics}) + "\n")
        if self.hooks.on_metric:
            for name, value in self.last_metrics.items():
                self.hooks.on_metric(self.step, name, value)
        if self._bar is not None:
            self._bar.update(self.step - self._bar.n)
            shown = {k: f"{v:.4g}" for k, v in list(self.last_metrics.items())[:4]}
            self._bar.set_postfix(shown, refresh=False)

    def stopping(self) -> bool:
        """Rank 0 asks the hook; every rank gets its answer (all must stop at the same step)."""
        asked = bool(self.dist.is_main and self.hooks.should_stop and self.hooks.should_stop())
        return bool(distributed.broadcast(asked, self.dist))

    def maybe_save(self) -> None:
        if self.config.save_every and self.step % self.config.save_every == 0:
            self.save()

    def save(self) -> str:
        folder = self.output_dir / f"step-{self.step:06d}"
        if self.dist.grouped:
            self._save_gathered(folder)
        else:
            folder.mkdir(parents=True, exist_ok=True)
            self.model.save_pretrained(folder)
            self._save_state(folder, self.optimizer.state_dict())
        self.checkpoints.append(str(folder))
        if self.hooks.on_checkpoint and self.dist.is_main:
            self.hooks.on_checkpoint(self.step, str(folder))
        return str(folder)

    def _save_gathered(self, folder: Path) -> None:
        """Every rank gathers the full weights and optimizer state (collectives), rank 0 writes them; the others
        wait at the barrier so nobody reads a half-written checkpoint."""
        sharded = self.config.parallel == "fsdp"  # DDP replicas already hold the full weights
        weights = distributed.full_model_state(self.model) if sharded else None
        optimizer = distributed.full_optimizer_state(self.optimizer)
        if self.dist.is_main:
            folder.mkdir(parents=True, exist_ok=True)
            distributed.unwrap(self.model).save_pretrained(folder, state_dict=weights)
            if sharded:  # save_pretrained names the class it sees (FSDPQwen3ForCausalLM); from_pretrained needs the real one
                config_path = folder / "config.json"
                saved = json.loads(config_path.read_text())
                saved["architectures"] = [self._architecture]
                config_path.write_text(json.dumps(saved, indent=2, sort_keys=True) + "\n")
            self._save_state(folder, optimizer)
        distributed.barrier(self.dist)

    def _save_state(self, folder: Path, optimizer_state: dict[str, Any]) -> None:
        self.tokenizer.save_pretrained(folder)
        (folder / "training_config.json").write_text(json.dumps({"recipe": self.recipe, "config": self.config.to_dict()}, indent=2))
        tensors: dict[str, Any] = {
            "optimizer": optimizer_state,
            "scheduler": self.scheduler.state_dict(),
            "torch_rng": torch.get_rng_state(),
        }
        if torch.cuda.is_available():
            tensors["cuda_rng"] = torch.cuda.get_rng_state_all()
        torch.save(tensors, folder / "trainer_state.pt")
        plain = {
            "step": self.step,
            "python_rng": random.getstate(),
            "numpy_rng": _numpy_state_to_json(np.random.get_state()),
            "recipe_state": self.state,
        }
        (folder / "trainer_state.json").write_text(json.dumps(plain))

    def _restore(self, folder: Path) -> None:
        tensors = load_trainer_tensors(folder)
        plain = json.loads((folder / "trainer_state.json").read_text())
        distributed.load_full_optimizer_state(self.optimizer, tensors["optimizer"])
        self.scheduler.load_state_dict(tensors["scheduler"])
        self.step, self.state = int(plain["step"]), plain["recipe_state"]
        if self.dist.is_main:  # a run killed between logging a step and saving it logs that step again now
            trim_metrics(self.output_dir, self.step)
        version, internal, gauss = plain["python_rng"]
        random.setstate((version, tuple(internal), gauss))
        np.random.set_state(_numpy_state_from_json(plain["numpy_rng"]))
        torch.set_rng_state(tensors["torch_rng"])
        if "cuda_rng" in tensors and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(tensors["cuda_rng"])

    def finish(self) -> RunResult:
        stopped = self.step < self.config.max_steps
        if not self.checkpoints or not self.checkpoints[-1].endswith(f"step-{self.step:06d}"):
            self.save()
        if self._bar is not None:
            self._bar.close()
        for service in self.services.values():
            service.close()
        return RunResult(self.recipe, self.step, list(self.checkpoints), dict(self.last_metrics), stopped)


def trim_metrics(run_dir: Path, step: int) -> None:
    """Drop metric lines past `step` from a run folder's metrics.jsonl: a run resuming from that step logs them again,
    so every step appears once however often the run was interrupted."""
    path = run_dir / "metrics.jsonl"
    if path.exists():
        kept = [line for line in path.read_text().splitlines() if line.strip() and json.loads(line)["step"] <= step]
        path.write_text("".join(line + "\n" for line in kept))


def load_trainer_tensors(folder: Path) -> dict[str, Any]:
    """`trainer_state.pt` of a checkpoint, unpickled with weights_only=True: a checkpoint may come from anywhere the
    model store or a project reaches, and a full unpickle would run whatever code the file names."""
    path = folder / "trainer_state.pt"
    try:
        return torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:
        raise ValueError(
            f"resume_from={str(folder)!r}: {path.name} holds more than tensors and plain values; refusing to unpickle it"
        ) from exc


def _numpy_state_to_json(state: Any) -> list[Any]:  # numpy types it as dict | tuple; legacy form is the tuple
    name, keys, position, has_gauss, cached = state
    return [name, [int(k) for k in keys], int(position), int(has_gauss), float(cached)]


def _numpy_state_from_json(state: list[Any]) -> tuple[Any, ...]:
    name, keys, position, has_gauss, cached = state
    return (name, np.array(keys, dtype=np.uint32), position, has_gauss, cached)


def step_generator(seed: int, step: int) -> torch.Generator:
    """A generator that depends only on (seed, step): data order and sampling survive a resume unchanged."""
    return torch.Generator().manual_seed(seed * 1_000_003 + step)


def batch_indices(n_items: int, batch_size: int, seed: int, step: int) -> list[int]:
    """The items of step `step`: epochs are fresh permutations of range(n_items), a pure function of (seed, epoch)."""
    assert n_items > 0, "no training items"
    out: list[int] = []
    position = step * batch_size
    while len(out) < batch_size:
        epoch, offset = divmod(position, n_items)
        order = torch.randperm(n_items, generator=torch.Generator().manual_seed(seed * 7919 + epoch)).tolist()
        take = order[offset : offset + batch_size - len(out)]
        out.extend(take)
        position += len(take)
    return out
