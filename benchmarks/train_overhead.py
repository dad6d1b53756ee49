"""Tokens/s of the SFT recipe's optimizer step against a bare forward/backward loop on the same model and batch.

    python benchmarks/train_overhead.py [--model PATH] [--steps 20] [--batch 8] [--seq 512]

The bare loop is the floor: model(input_ids).logits -> cross-entropy -> backward -> AdamW step. The recipe side
runs Trainer.optimize with the sft loss (masks, weights, metrics, grad clipping, scheduler), on an identical
batch built by training.data.collate. Both count trained positions the same way (all B·(T-1) positions).
Goal: recipe >= 0.9x bare.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.data import TokenizedEpisode, collate  # noqa: E402
from training.engine import Hooks, Trainer  # noqa: E402
from training.modeling import load_model  # noqa: E402
from training.recipes.sft import SFTConfig, sft_step_loss  # noqa: E402
from training.tiny import build_tiny_model  # noqa: E402


def _batch(vocab: int, batch: int, seq: int, pad_id: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    episodes = []
    for _ in range(batch):
        ids = torch.randint(10, vocab, (seq,), generator=g).tolist()
        episodes.append(TokenizedEpisode(ids, [1] * seq, [0] * seq, [1.0] * seq, [0] * seq, [(0, 0, seq)], [float("nan")] * seq))
    return collate(episodes, pad_id=pad_id)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    path = args.model or str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny", hidden_size=128))
    tokens = args.batch * (args.seq - 1) * args.steps

    model, tokenizer = load_model(path)
    device = next(model.parameters()).device
    batch = {k: v.to(device) for k, v in _batch(len(tokenizer), args.batch, args.seq, tokenizer.pad_token_id).items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def bare_step() -> None:
        logits = model(input_ids=batch["input_ids"]).logits
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1).float(), batch["input_ids"][:, 1:].flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    results = {}
    for name in ("bare", "recipe", "bare_again", "recipe_again"):  # interleaved, so background load hits both alike
        if name.startswith("bare"):
            step = bare_step
        else:
            config = SFTConfig(model=path, data="(benchmark)", output_dir=tempfile.mkdtemp(), max_steps=10**6, device=args.device)
            trainer = Trainer(config, recipe="sft", hooks=Hooks(progress=False))
            trainer.model = model  # the same weights object, so only the loop differs
            trainer.optimizer = optimizer
            trainer.scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)

            def step(trainer: Trainer = trainer) -> None:
                trainer.optimize([batch], lambda b: sft_step_loss(trainer.model, b))

        step()  # warm-up
        sync()
        start = time.perf_counter()
        for _ in range(args.steps):
            step()
        sync()
        results[name] = tokens / (time.perf_counter() - start)
    bare = (results["bare"] + results["bare_again"]) / 2
    recipe = (results["recipe"] + results["recipe_again"]) / 2
    print(f"device={device} batch={args.batch}x{args.seq} steps={args.steps}")
    print(f"bare forward/backward: {bare:,.0f} tokens/s")
    print(f"sft recipe step:       {recipe:,.0f} tokens/s")
    print(f"ratio recipe/bare:     {recipe / bare:.3f}")


if __name__ == "__main__":
    main()
