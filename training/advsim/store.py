"""The co-evolution's files: one JSON per round (proposals, pairs, rewards, role states, metrics) and its records.

    output_dir/advsim/rounds/round-000003.json     {"round", "phase", "pairs": [...], "metrics", "roles"}
    output_dir/advsim/records/round-000003.jsonl   every episode of the round (clean and injected, linked by ids)
    output_dir/advsim/evals/step-000003.json       {"step", "figures"} (sim, real and gap), records beside it (.jsonl)

A rerun of the same output_dir resumes from its latest agent checkpoint (training.engine) and writes the rounds after
it again; rounds up to that checkpoint are not played again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from environments.records import Record


class RoundStore:
    def __init__(self, output_dir: str | Path) -> None:
        self.root = Path(output_dir) / "advsim"
        for sub in ("rounds", "records", "evals"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)

    def write_round(self, round_: int, payload: dict[str, Any], records: list[Record]) -> Path:
        path = self.root / "rounds" / f"round-{round_:06d}.json"
        path.write_text(json.dumps({"round": round_, **payload}, indent=1, sort_keys=True))
        _write_jsonl(self.root / "records" / f"round-{round_:06d}.jsonl", records)
        return path

    def round(self, round_: int) -> dict[str, Any] | None:
        path = self.root / "rounds" / f"round-{round_:06d}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def rounds(self) -> list[int]:
        return sorted(int(p.stem.split("-")[1]) for p in (self.root / "rounds").glob("round-*.json"))

    def write_eval(self, name: str, figures: dict[str, Any], records: list[Record], extra: dict[str, Any] | None = None) -> Path:
        path = self.root / "evals" / f"{name}.json"
        path.write_text(json.dumps({"name": name, "figures": figures, **(extra or {})}, indent=1, sort_keys=True))
        _write_jsonl(self.root / "evals" / f"{name}.jsonl", records)
        return path

    def eval(self, name: str) -> dict[str, Any] | None:
        path = self.root / "evals" / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None


def _write_jsonl(path: Path, records: list[Record]) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, sort_keys=True, default=str) + "\n")


def latest_checkpoint(output_dir: str | Path, recipe: str) -> str | None:
    """The newest step-NNNNNN folder of `recipe` in output_dir with its trainer state written (a finished save)."""
    folders = sorted(Path(output_dir).glob("step-*"))
    for folder in reversed(folders):
        config = folder / "training_config.json"
        if (folder / "trainer_state.json").exists() and config.exists() and json.loads(config.read_text()).get("recipe") == recipe:
            return str(folder)
    return None
