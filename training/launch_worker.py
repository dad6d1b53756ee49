"""One torchrun worker of a multi-process run that training.launch started: `-m training.launch_worker RECIPE
CONFIG_JSON CONTROL_DIR`. It runs the recipe through training.run_recipe with hooks that write to the control folder,
which the launching process tails. A module of its own: run_recipe starts launch, and the worker calls run_recipe,
so the two halves sit on either side of the training package instead of importing each other.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from training import run_recipe


def worker_main(argv: list[str]) -> int:
    """One torchrun worker: run the recipe with hooks that write to the control folder (rank 0 alone calls them)."""
    recipe, config_file, control_dir = argv
    control = Path(control_dir)

    def on_checkpoint(step: int, folder: str) -> None:
        with open(control / "checkpoints.jsonl", "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"step": step, "folder": folder}) + "\n")

    result = run_recipe(
        recipe, json.loads(Path(config_file).read_text()), on_checkpoint=on_checkpoint, should_stop=lambda: (control / "stop").exists()
    )
    if os.environ.get("RANK", "0") == "0":
        (control / "result.json").write_text(
            json.dumps({"steps": result.steps, "last_metrics": result.last_metrics, "stopped": result.stopped})
        )
    return 0


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
