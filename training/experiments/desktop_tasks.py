"""Which experiments train and evaluate on which desktop tasks: environments/desktop/README.md's table, made from the
experiment definitions (a test keeps the README equal to it).

    python -m training.experiments.desktop_tasks      # rewrites the table between the README's trained-on markers
"""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[2] / "environments" / "desktop" / "README.md"
START, END = "<!-- trained-on:start -->", "<!-- trained-on:end -->"


def task_table() -> str:
    """Per desktop task: its split, the experiments (and their trained arms) that train on it, those that test on it."""
    import training.experiments as experiments
    from environments.registry import list_tasks, task_set

    trained: dict[str, list[str]] = {}
    tested: dict[str, list[str]] = {}
    for name, e in sorted(experiments.load_all().items()):
        arms = [a.name for a in e.arms if a.recipe != "none"]
        if str(e.shared.get("task", "")).startswith("desktop/") and arms:
            for t in task_set(e.shared["task"]):
                trained.setdefault(t.key, []).append(f"{name} ({', '.join(arms)})")
        if e.evaluation.task.startswith("desktop/"):
            for t in task_set(e.evaluation.task):
                tested.setdefault(t.key, []).append(name)
    order = {"train": 0, "dev": 1, "test": 2}
    rows = ["| task | split | trained on by (arms) | evaluated by |", "| --- | --- | --- | --- |"]
    for t in sorted(list_tasks("desktop"), key=lambda t: (order[t.split], t.key)):
        rows.append(f"| {t.key} | {t.split} | {'; '.join(trained.get(t.key, [])) or '-'} | {', '.join(tested.get(t.key, [])) or '-'} |")
    return "\n".join(rows)


def main() -> int:
    from environments.stats import write_between_markers

    write_between_markers(README, START, END, task_table())
    print(task_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
