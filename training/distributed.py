"""Multi-process training on torch.distributed: DDP or FSDP2 (`fully_shard`), NCCL on GPUs and gloo on CPU.

    with process_group():                     # inside torchrun (RANK/WORLD_SIZE/LOCAL_RANK set), or a no-op
        ctx = current()                       # rank, world size, local rank; world 1 outside torchrun
        model = wrap(model, "fsdp", ctx)      # DDP wrapper, or FSDP2 applied per decoder layer and at the root

Semantics kept identical at every world size: a step's global batch is the config's `grad_accum` micro-batches;
rank r trains micro-batches r, r + W, r + 2W, ... (`shard`), DDP/FSDP average the gradients over ranks, so the
update equals the one-process update up to float rounding. Checkpoints hold full (unsharded) state only:
`full_model_state` and `full_optimizer_state` gather every shard (a collective: every rank calls them) and rank 0
writes the same files a one-process run writes, so a checkpoint resumes at any world size.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

PARALLEL_MODES = ("none", "ddp", "fsdp")
TIMEOUT = datetime.timedelta(minutes=float(os.environ.get("PRACTICUM_DIST_TIMEOUT_MIN", "10")))  # a hung peer fails, not waits


@dataclass(frozen=True)
class DistContext:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    grouped: bool = False  # a process group exists (torchrun started this process), even of one process

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def active(self) -> bool:
        return self.world_size > 1


def under_launcher() -> bool:
    """True inside a torchrun worker (it sets WORLD_SIZE for every process it starts)."""
    return "WORLD_SIZE" in os.environ and "RANK" in os.environ


def current() -> DistContext:
    if not dist.is_available() or not dist.is_initialized():
        return DistContext()
    return DistContext(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")), grouped=True)


@contextlib.contextmanager
def process_group() -> Iterator[DistContext]:
    """Join torchrun's process group for the duration (NCCL when CUDA is present, else gloo); outside torchrun, or
    when a group already exists, nothing is created or destroyed."""
    if not under_launcher() or dist.is_initialized():
        yield current()
        return
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend, timeout=TIMEOUT)
    try:
        yield current()
        # Every rank leaves its last collective before any rank tears the group down: a gloo peer destroyed while
        # the other still talks to it can abort the process ("terminate called without an active exception"; seen
        # once in CI on a loaded machine, rank 1 ending while rank 0 wrote its last checkpoint).
        dist.barrier()
    finally:
        dist.destroy_process_group()


def rank_device(requested: torch.device, ctx: DistContext) -> torch.device:
    """Each process of a node takes its own GPU (cuda:LOCAL_RANK); CPU processes share the CPU."""
    if ctx.active and requested.type == "cuda":
        return torch.device("cuda", ctx.local_rank)
    return requested


def wrap(model: Any, mode: str, ctx: DistContext) -> Any:
    """The model as the training forward must see it: DDP wrapper, FSDP2-sharded in place, or unchanged. A group of
    one process is wrapped too (a 1-GPU FSDP run takes the same path as eight)."""
    if not ctx.grouped or mode == "none":
        return model
    if mode == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        device_ids = [ctx.local_rank] if next(model.parameters()).is_cuda else None
        return DistributedDataParallel(model, device_ids=device_ids)
    assert mode == "fsdp", f"unknown parallel mode {mode!r}"
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cuda" if next(model.parameters()).is_cuda else "cpu", (ctx.world_size,))
    # one FSDP unit per decoder layer (all-gathered just in time), then the root for embeddings, norm and head
    for layer in getattr(getattr(model, "model", model), "layers", []):
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def unwrap(model: Any) -> Any:
    """The HF model under a DDP wrapper (FSDP2 shards in place, so there is nothing to peel)."""
    return getattr(model, "module", model)


def shard(items: list[Any], ctx: DistContext) -> list[Any]:
    """This rank's share of a step's micro-batches; every rank must get as many (gradient averaging assumes it)."""
    if not ctx.active:
        return items
    if len(items) % ctx.world_size:
        raise ValueError(
            f"a step has {len(items)} micro-batches, not divisible by world_size={ctx.world_size}: set grad_accum to a multiple of it"
        )
    return items[ctx.rank :: ctx.world_size]


@contextlib.contextmanager
def gradient_sync(model: Any, enabled: bool) -> Iterator[None]:
    """Skip the gradient all-reduce on the micro-batches before the last one of a step (DDP no_sync; FSDP2
    set_requires_gradient_sync); the last one reduces the accumulated sum once."""
    if enabled or not dist.is_initialized():
        yield
    elif hasattr(model, "no_sync"):
        with model.no_sync():
            yield
    elif hasattr(model, "set_requires_gradient_sync"):
        model.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            model.set_requires_gradient_sync(True)
    else:
        yield


def mean_metrics(metrics: dict[str, float], ctx: DistContext) -> dict[str, float]:
    """Each metric averaged over ranks (every rank trains the same number of micro-batches, so this is the global mean)."""
    if not ctx.active:
        return metrics
    keys = sorted(metrics)
    gathered: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(gathered, keys)
    assert all(g == keys for g in gathered), f"ranks logged different metrics: {gathered}"
    device = (
        torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")
    )  # NCCL: GPU tensors only
    values = torch.tensor([float(metrics[k]) for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(values)
    return {k: float(v) / ctx.world_size for k, v in zip(keys, values.tolist(), strict=True)}


def broadcast(value: Any, ctx: DistContext) -> Any:
    """Rank 0's value on every rank (a stop decision, a batch of rollout records)."""
    if not ctx.active:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier(ctx: DistContext) -> None:
    if ctx.active:
        dist.barrier()


def _full(value: Any) -> Any:
    from torch.distributed.tensor import DTensor

    return value.full_tensor() if isinstance(value, DTensor) else value


def full_model_state(model: Any) -> dict[str, torch.Tensor]:
    """The unsharded state dict on CPU (collective under FSDP2: every rank must call it). Tied weights (embeddings and
    head) stay one tensor under two names, as save_pretrained expects of tied weights."""
    module = unwrap(model)
    # state_dict() hands out a fresh DTensor per name, so ties are read from the parameters themselves
    owner = {name: id(param) for name, param in module.named_parameters(remove_duplicate=False)}
    gathered: dict[Any, torch.Tensor] = {}
    out: dict[str, torch.Tensor] = {}
    for name, value in module.state_dict().items():
        key = owner.get(name, name)
        if key not in gathered:
            gathered[key] = _full(value).detach().cpu()
        out[name] = gathered[key]
    return out


def full_optimizer_state(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    """optimizer.state_dict() with every sharded tensor gathered: the one-process format (collective under FSDP2)."""
    state = optimizer.state_dict()
    full = {
        index: {k: _full(v).cpu() if isinstance(v, torch.Tensor) else v for k, v in entry.items()}
        for index, entry in state["state"].items()
    }
    return {"state": full, "param_groups": state["param_groups"]}


def load_full_optimizer_state(optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
    """Load a full (one-process format) optimizer state into an optimizer whose parameters may be FSDP2 shards."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    params = [p for group in optimizer.param_groups for p in group["params"]]
    placed: dict[Any, Any] = {}
    for index, entry in state["state"].items():
        param = params[int(index)]
        placed[index] = {
            k: distribute_tensor(v.to(param.device), param.device_mesh, param.placements)
            if isinstance(param, DTensor) and isinstance(v, torch.Tensor) and v.dim() > 0
            else v
            for k, v in entry.items()
        }
    optimizer.load_state_dict({"state": placed, "param_groups": state["param_groups"]})
