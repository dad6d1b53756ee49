"""lab/jobs.py: a job's status moves only along TRANSITIONS, with its timestamps, and nothing else in lab/ moves it."""

from __future__ import annotations

import ast
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.utils import timezone

from lab.diagnoses.models import DiagnosisJob
from lab.errors import Conflict
from lab.jobs import TRANSITIONS, JobStatus

Q, R, FIN, F, C = JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELLED
# Written out, not read from TRANSITIONS: a change to the table has to change this test too.
LEGAL = {(Q, R), (Q, F), (Q, C), (R, R), (R, FIN), (R, F), (R, C), (F, Q), (F, R)}
MOVES = {
    Q: lambda job: job.mark_queued(),
    R: lambda job: job.mark_running(),
    FIN: lambda job: job.mark_finished(),
    F: lambda job: job.mark_failed("boom"),
    C: lambda job: job.mark_cancelled(),
}
EARLIER = timezone.now() - timedelta(hours=1)


def _job(project: Any, status: str) -> DiagnosisJob:
    started = None if status == Q else EARLIER
    ended = EARLIER if status in (FIN, F, C) else None
    return DiagnosisJob.objects.create(project=project, status=status, started_at=started, ended_at=ended)


def test_the_table_is_the_legal_set() -> None:
    assert {(a, b) for a, targets in TRANSITIONS.items() for b in targets} == LEGAL
    assert set(TRANSITIONS) == set(JobStatus.values)


@pytest.mark.parametrize("current, to", sorted(LEGAL))
def test_it_makes_each_legal_move_and_saves_it(project_a: Any, current: str, to: str) -> None:
    job = _job(project_a, current)
    MOVES[to](job)
    job.refresh_from_db()
    assert job.status == to
    if to == R:
        assert job.started_at is not None and job.ended_at is None
        if current != Q:
            assert job.started_at == EARLIER  # a resumed job keeps its first start
    elif to == Q:
        assert job.ended_at is None
    else:
        assert job.ended_at is not None and job.ended_at > EARLIER


@pytest.mark.parametrize("current, to", sorted({(a, b) for a in JobStatus.values for b in JobStatus.values} - LEGAL))
def test_it_refuses_each_illegal_move_with_its_code(project_a: Any, current: str, to: str) -> None:
    job = _job(project_a, current)
    with pytest.raises(Conflict) as caught:
        MOVES[to](job)
    assert caught.value.code == "illegal_transition"
    assert caught.value.status == 409
    assert caught.value.details == {"job": job.pk, "current": current, "requested": to}
    assert job.status == current  # neither the instance nor the row moved
    job.refresh_from_db()
    assert (job.status, job.ended_at) == (current, EARLIER if current in (FIN, F, C) else None)


def test_a_queued_job_gets_its_start_time_when_it_runs(project_a: Any) -> None:
    job = _job(project_a, Q)
    before = timezone.now()
    job.mark_running(done=0)
    job.refresh_from_db()
    assert job.started_at is not None and job.started_at >= before


def test_a_failed_job_run_again_has_no_end_time_until_it_ends(project_a: Any) -> None:
    job = _job(project_a, F)
    job.mark_running(error="")
    job.refresh_from_db()
    assert (job.status, job.error, job.started_at, job.ended_at) == (R, "", EARLIER, None)


def test_mark_failed_records_the_error_and_the_fields_in_the_same_write(project_a: Any) -> None:
    job = _job(project_a, R)
    job.mark_failed("ValueError: x", done=3)
    job.refresh_from_db()
    assert (job.status, job.error, job.done) == (F, "ValueError: x", 3)


def test_a_move_writes_only_its_own_columns(project_a: Any) -> None:
    job = _job(project_a, R)
    DiagnosisJob.objects.filter(pk=job.pk).update(done=7)  # another writer, after `job` was read
    job.mark_finished(summary={"errors": []})
    job.refresh_from_db()
    assert (job.status, job.summary, job.done) == (FIN, {"errors": []}, 7)


def test_it_will_not_take_a_life_cycle_field_as_a_plain_field(project_a: Any) -> None:
    job = _job(project_a, R)
    with pytest.raises(AssertionError, match="ended_at"):
        job.mark_finished(ended_at=EARLIER)


def test_a_cancelled_job_a_worker_still_runs_gets_its_end_time_when_the_worker_stops(project_a: Any) -> None:
    job = _job(project_a, R)
    job.mark_cancelled(stopping=True)
    job.refresh_from_db()
    assert (job.status, job.ended_at) == (C, None)
    assert DiagnosisJob.objects.filter(pk=job.pk).stop_cancelled(error="stopped") == 1
    job.refresh_from_db()
    assert job.ended_at is not None and job.error == "stopped"


def test_stop_cancelled_leaves_jobs_that_are_not_cancelled(project_a: Any) -> None:
    job = _job(project_a, R)
    assert DiagnosisJob.objects.filter(pk=job.pk).stop_cancelled() == 0
    job.refresh_from_db()
    assert (job.status, job.ended_at) == (R, None)


def test_transition_moves_only_rows_that_may_move(project_a: Any) -> None:
    running, cancelled, queued = _job(project_a, R), _job(project_a, C), _job(project_a, Q)
    moved = DiagnosisJob.objects.filter(pk__in=[running.pk, cancelled.pk, queued.pk]).transition(FIN, summary={"n": 1})
    assert moved == 1  # a queued job never finishes without running; a cancel wins over the worker's "finished"
    running.refresh_from_db()
    cancelled.refresh_from_db()
    queued.refresh_from_db()
    assert (running.status, running.summary) == (FIN, {"n": 1}) and running.ended_at > EARLIER
    assert (cancelled.status, cancelled.ended_at) == (C, EARLIER)
    assert queued.status == Q


def test_transition_to_running_keeps_a_first_start_and_sets_a_missing_one(project_a: Any) -> None:
    resumed, fresh = _job(project_a, R), _job(project_a, Q)
    assert DiagnosisJob.objects.filter(pk__in=[resumed.pk, fresh.pk]).transition(R) == 2
    resumed.refresh_from_db()
    fresh.refresh_from_db()
    assert resumed.started_at == EARLIER
    assert fresh.started_at is not None and fresh.started_at > EARLIER and fresh.ended_at is None


def test_transition_to_failed_stamps_the_end_and_the_error(project_a: Any) -> None:
    job = _job(project_a, Q)
    assert DiagnosisJob.objects.filter(pk=job.pk).transition(F, error="not queued") == 1
    job.refresh_from_db()
    assert (job.status, job.error) == (F, "not queued") and job.ended_at is not None


# --- the rule stays true: no status is assigned or bulk-updated outside the life-cycle methods ------------------

LAB = Path(__file__).resolve().parents[2] / "lab"
# Methods allowed to set `.status`: the life-cycle methods on models, and exception constructors (an HTTP status).
_ALLOWED_FUNCTIONS = ("mark_", "_move", "__init__")


def _names_status(keyword: ast.keyword) -> bool:
    """`status=...`, or `**{"status": ...}`."""
    if keyword.arg is not None:
        return keyword.arg == "status"
    return isinstance(keyword.value, ast.Dict) and any(isinstance(k, ast.Constant) and k.value == "status" for k in keyword.value.keys)


def _status_writes(path: Path, root: Path = LAB.parent) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: list[str] = []

    def visit(node: ast.AST, function: str, in_queryset: bool) -> None:
        for child in ast.iter_child_nodes(node):
            name, queryset = function, in_queryset
            if isinstance(child, ast.ClassDef):
                queryset = child.name.endswith("QuerySet")
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = child.name
            targets: list[ast.expr] = []
            if isinstance(child, ast.Assign):
                targets = list(child.targets)
            elif isinstance(child, (ast.AnnAssign, ast.AugAssign)):
                targets = [child.target]
            flat = [t for target in targets for t in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target])]
            if any(isinstance(t, ast.Attribute) and t.attr == "status" for t in flat) and not name.startswith(_ALLOWED_FUNCTIONS):
                found.append(f"{path.relative_to(root)}:{child.lineno} assigns .status in {name or 'module'}")
            if (
                isinstance(child, ast.Call)
                and isinstance(child.func, ast.Attribute)
                and child.func.attr == "update"
                and any(_names_status(k) for k in child.keywords)
                and not queryset
            ):
                found.append(f"{path.relative_to(root)}:{child.lineno} bulk-updates status in {name or 'module'}")
            visit(child, name, queryset)

    visit(tree, "", False)
    return found


def test_no_status_is_set_outside_the_life_cycle_methods() -> None:
    files = [p for p in LAB.rglob("*.py") if "migrations" not in p.parts and p != LAB / "jobs.py"]
    assert len(files) > 50
    offenders = [line for path in sorted(files) for line in _status_writes(path)]
    assert offenders == [], "set a status through Job.mark_* or JobQuerySet.transition (lab/jobs.py):\n" + "\n".join(offenders)


def test_the_scan_finds_the_assignments_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "def run(job):\n"
        "    job.status = JobStatus.FAILED\n"
        "    job.status, job.ended_at = 'failed', now\n"
        "    Job.objects.filter(pk=1).update(status='failed')\n"
        "    Job.objects.filter(pk=1).update(**{'status': 'failed'})\n"
        "class Thing:\n"
        "    def mark_done(self):\n"
        "        self.status = 'done'\n"
    )
    assert [line.split(" ", 1)[1] for line in _status_writes(bad, root=tmp_path)] == [
        "assigns .status in run",
        "assigns .status in run",
        "bulk-updates status in run",
        "bulk-updates status in run",
    ]
