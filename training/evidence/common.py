"""Helpers shared by the evidence scripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.modeling import load_model
from training.sampling import episode_stats, rollout_episodes


def parse_range(text: str) -> list[int]:
    """'0-199' or '3,5,8' -> seeds."""
    if "-" in text and "," not in text:
        start, end = (int(x) for x in text.split("-"))
        return list(range(start, end + 1))
    return [int(x) for x in text.split(",") if x]


def write_records(path: Path, records: list[dict[str, Any]]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return path


def evaluate_checkpoint(
    path: str, task: str, seeds: list[int], *, max_turns: int = 4, temperature: float = 0.0, max_new_tokens: int = 64
) -> dict[str, float]:
    model, tokenizer = load_model(path, trainable=False)
    records = rollout_episodes(
        model, tokenizer, [(task, s) for s in seeds], max_turns=max_turns, max_new_tokens=max_new_tokens, temperature=temperature
    )
    return episode_stats(records)
