"""Helpers shared by the evidence scripts."""

from __future__ import annotations

import json
from pathlib import Path

from environments.records import Record
from training.data import PromptStyle
from training.modeling import load_model
from training.sampling import episode_stats, rollout_episodes


def parse_range(text: str) -> list[int]:
    """'0-199' or '3,5,8' -> seeds."""
    if "-" in text and "," not in text:
        start, end = (int(x) for x in text.split("-"))
        return list(range(start, end + 1))
    return [int(x) for x in text.split(",") if x]


def write_records(path: Path, records: list[Record]) -> Path:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")
    return path


def evaluate_checkpoint(
    path: str,
    task: str,
    seeds: list[int],
    *,
    max_turns: int = 4,
    temperature: float = 0.0,
    max_new_tokens: int = 64,
    style: PromptStyle = PromptStyle(),
    system_prompt: str | None = None,
    batch: int = 16,
) -> dict[str, float]:
    """Greedy (or sampled) play on the seeds; `system_prompt` and `style` must be those the model was trained with."""
    model, tokenizer = load_model(path, trainable=False)
    records = []
    for start in range(0, len(seeds), batch):  # bounded memory on long prompts
        jobs = [(task, s) for s in seeds[start : start + batch]]
        records += rollout_episodes(
            model,
            tokenizer,
            jobs,
            max_turns=max_turns,
            max_new_tokens=max_new_tokens,
            temperature=temperature,
            style=style,
            system_prompt=system_prompt,
        )
    return episode_stats(records)
