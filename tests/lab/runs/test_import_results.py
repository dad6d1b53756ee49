"""Committed experiment result files imported as finished runs of a project (manage.py import_results), so the runs
comparison shows them; importing again adds nothing; a file that cannot be read stops the import naming it."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from lab.runs.models import TrainingRun
from training.experiments.horizon import HORIZON
from training.experiments.results import run_file, write_run

pytestmark = pytest.mark.django_db


def _result(arm: str, seed: int, rewards: list[float]) -> dict[str, Any]:
    episodes = [{"seed": 100_000 + i, "reward": r, "passed": r >= 0.5, "valid_call_rate": 1.0} for i, r in enumerate(rewards)]
    return {
        "arm": arm,
        "recipe": "sft" if arm != "none" else "none",
        "point": {"learning_rate": 0.0003},
        "seed": seed,
        "config": {"learning_rate": 0.0003, "max_steps": 8},
        "config_hash": f"h{seed}",
        "checkpoint": "var/x",
        "steps": 8,
        "trained_tokens": 100,
        "last_metrics": {"loss": 0.25, "flag": True},
        "evaluations": {"test": {"episodes": episodes, "eval_s": 1.0}},
        "train_s": 2.0,
    }


def _write(results: Path, arm: str, seed: int, rewards: list[float]) -> None:
    base = {"name": "smol-base", "hash": "355f7f5f5998"}
    write_run(
        run_file(results, "horizon", arm, f"learning_rate=0.0003-seed{seed}-h{seed}"),
        _result(arm, seed, rewards),
        experiment=HORIZON,
        base=base,
        teacher=None,
        models={},
        command="python -m training.experiments horizon --base smol-base",
    )


def test_result_files_become_finished_runs_once_and_compare_in_the_console(tmp_path: Path, project_a: Any, alice: Any, client: Any) -> None:
    results = tmp_path / "results"
    _write(results, "full", 0, [1.0, 0.0, 1.0, 1.0])
    _write(results, "turns-1", 0, [0.0, 0.0, 1.0, 0.0])
    (results / "zoo").mkdir()
    (results / "zoo" / "smol-base.json").write_text("{}")  # not an experiment's folder: left alone
    out = StringIO()
    call_command("import_results", "acme", "--results", str(results), stdout=out)
    assert "horizon: 2 run(s) imported, 0 already there" in out.getvalue()
    full = TrainingRun.objects.get(project=project_a, name="horizon/full/learning_rate=0.0003-seed0-h0")
    assert (
        full.status == "finished" and full.provenance == "upload" and full.recipe == "sft" and full.base_model == "smol-base@355f7f5f5998"
    )
    assert full.config["imported_from"]["arm"] == "full" and full.config["imported_from"]["commit"]
    metrics = {m.name: m.value for m in full.metrics.all()}
    assert metrics == {"test reward": 0.75, "test pass rate": 0.75, "test valid call rate": 1.0, "train loss": 0.25}
    assert {m.step for m in full.metrics.all()} == {8}

    again = StringIO()
    call_command("import_results", "acme", "horizon", "--results", str(results), stdout=again)
    assert "0 run(s) imported, 2 already there" in again.getvalue() and TrainingRun.objects.filter(project=project_a).count() == 2

    other = TrainingRun.objects.get(project=project_a, name__startswith="horizon/turns-1/")
    client.force_login(alice)
    html = client.get(f"/runs/compare?ids={full.pk},{other.pk}").content.decode()
    final = html.split('id="compare-final"', 1)[1].split("</section>", 1)[0]
    assert "test reward" in final and "0.7500" in final and "0.2500" in final


def test_a_bad_project_experiment_or_file_is_refused_by_name(tmp_path: Path, project_a: Any) -> None:
    results = tmp_path / "results"
    _write(results, "full", 0, [1.0])
    with pytest.raises(CommandError, match="no project 'nope'"):
        call_command("import_results", "nope", "--results", str(results))
    with pytest.raises(CommandError, match="unknown experiment"):
        call_command("import_results", "acme", "zoo", "--results", str(results))
    (results / "horizon" / "full" / "broken.json").write_text(json.dumps([1]))
    with pytest.raises(CommandError, match=r"broken.json: not a result .*nothing of horizon was imported"):
        call_command("import_results", "acme", "--results", str(results))
    assert not TrainingRun.objects.exists()
