"""Tokens/s of multi-process training (DDP or FSDP2) at 1 and N processes, through the real Trainer.

    python benchmarks/train_scaling.py                                     # CPU, gloo: 1 and 2 processes
    python benchmarks/train_scaling.py --device cuda --processes 1 8 --parallel fsdp --hidden 1024 --layers 16

Each point is a torchrun launch of this file in worker mode: every rank builds training.engine.Trainer with
`parallel` set (so DDP/FSDP2 wrapping, micro-batch sharding and gradient averaging are the ones runs use), takes
`--warmup` steps, then times `--steps` optimizer steps between barriers. The global batch is fixed
(grad_accum micro-batches of batch x seq tokens; grad_accum a multiple of every process count), so tokens/s
at N processes over tokens/s at 1 is the scaling. On CPU each process runs `--threads` torch threads (default 1,
torchrun's own default for several processes): N processes use N cores. With `--threads 0` each gets
cores // N, the same cores at every N; on two cores shared with other jobs that is a poor test: two OpenMP
threads in one descheduled process spin on each other (measured here: 30-39 tokens/s for one process with two
threads, against 836-1,187 for two processes of one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def worker(args: argparse.Namespace) -> None:
    import torch
    import torch.nn.functional as F

    from training import distributed
    from training.engine import Hooks, Trainer
    from training.modeling import forward_logits
    from training.recipes.sft import SFTConfig

    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.device == "cpu":
        torch.set_num_threads(args.threads or max(1, (os.cpu_count() or 1) // world))
    with distributed.process_group() as ctx:
        config = SFTConfig(
            model=args.model,
            data="(unused: synthetic batches)",
            output_dir=args.out,
            grad_accum=args.grad_accum,
            device=args.device,
            parallel=args.parallel,
            processes=world,
            max_steps=args.warmup + args.steps,
        )
        trainer = Trainer(config, recipe="scaling", hooks=Hooks(progress=False))
        vocab = trainer.model.config.vocab_size if hasattr(trainer.model, "config") else distributed.unwrap(trainer.model).config.vocab_size
        g = torch.Generator().manual_seed(0)
        micro = [torch.randint(10, vocab, (args.batch, args.seq), generator=g) for _ in range(args.grad_accum)]

        def loss_fn(ids: torch.Tensor) -> tuple[torch.Tensor, dict[str, float]]:
            ids = ids.to(trainer.device)
            logits = forward_logits(trainer.model, ids, torch.ones_like(ids))[:, :-1]  # (B, T-1, V)
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), ids[:, 1:].reshape(-1))
            return loss, {"loss": float(loss.detach())}

        for _ in range(args.warmup):
            trainer.optimize(micro, loss_fn)
        distributed.barrier(ctx)
        if args.device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(args.steps):
            trainer.optimize(micro, loss_fn)
        if args.device == "cuda":
            torch.cuda.synchronize()
        distributed.barrier(ctx)
        seconds = time.perf_counter() - start
        if ctx.is_main:
            tokens = args.steps * args.grad_accum * args.batch * args.seq
            print(json.dumps({"processes": world, "tokens_per_s": tokens / seconds, "step_s": seconds / args.steps}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--parallel", choices=["ddp", "fsdp"], default="ddp")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--model", default="", help="a from_pretrained folder (default: a tiny model built here)")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--batch", type=int, default=4, help="episodes per micro-batch")
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument(
        "--grad-accum", type=int, default=4, help="micro-batches per step (the global batch); a multiple of every process count"
    )
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per CPU process (0: cores // processes)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    bad = [n for n in args.processes if args.grad_accum % n]
    if bad:
        parser.error(f"--grad-accum {args.grad_accum} must be a multiple of every process count (not of {bad})")
    from training.launch import free_port
    from training.tiny import build_tiny_model

    work = Path(tempfile.mkdtemp(prefix="train-scaling-"))
    model = args.model or str(
        build_tiny_model(work / "model", hidden_size=args.hidden, num_layers=args.layers, num_heads=4, num_kv_heads=2)
    )
    figures = {}
    for n in args.processes:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nnodes=1",
            f"--nproc-per-node={n}",
            "--master-addr=127.0.0.1",
            f"--master-port={free_port()}",
            __file__,
            "--worker",
            "--model",
            model,
            "--out",
            str(work / f"run-{n}"),
            "--parallel",
            args.parallel,
            "--device",
            args.device,
            "--batch",
            str(args.batch),
            "--seq",
            str(args.seq),
            "--grad-accum",
            str(args.grad_accum),
            "--steps",
            str(args.steps),
            "--warmup",
            str(args.warmup),
            "--threads",
            str(args.threads),
        ]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=1800,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        if done.returncode != 0 or not rows:
            sys.exit(f"{n} processes failed ({done.returncode}):\n{done.stderr[-3000:]}")
        figures[n] = rows[0]
        print(f"{args.parallel} x{n} on {args.device}: {rows[0]['tokens_per_s']:,.0f} tokens/s ({rows[0]['step_s']:.3f} s/step)")
    base = figures[args.processes[0]]["tokens_per_s"]
    for n, row in figures.items():
        print(f"  x{n} / x{args.processes[0]}: {row['tokens_per_s'] / base:.2f}")
    print(f"global batch {args.grad_accum} x {args.batch} x {args.seq} tokens; {os.cpu_count()} CPU cores here")


if __name__ == "__main__":
    main()
