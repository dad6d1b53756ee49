"""Schemathesis over the whole REST API, in-process, as a researcher: no server errors, answers match the schema.

Fixed seed and ~25 generated requests per operation keep it reproducible and about two minutes long. Celery
enqueueing is stubbed, so a generated launch stores its job row but never starts a rollout or a training run.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

pytestmark = [pytest.mark.slow, pytest.mark.django_db]

EXAMPLES_PER_OPERATION = 25
FUZZ_CONFIG = {
    "seed": 20261130,
    "phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}},
    "generation": {"max-examples": 25},
}


@pytest.fixture
def enqueued(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every Celery enqueue is recorded here instead of sent."""
    from celery.app.task import Task

    sent: list[str] = []

    def record(self: Task, *args: Any, **kwargs: Any) -> None:
        sent.append(self.name)

    monkeypatch.setattr(Task, "apply_async", record)
    monkeypatch.setattr(Task, "delay", lambda self, *a, **k: record(self))
    return sent


@pytest.fixture
def fuzz_world(record_factory: Any, role_users: dict[str, Any], project_a: Any, key_for: Any, enqueued: list[str]) -> str:
    """One of each object in project A, so generated small ids sometimes hit real rows; the researcher's key."""
    from lab.diagnoses.models import Diagnosis
    from lab.rollouts.models import Evaluation
    from lab.runs.models import Checkpoint, TrainingRun
    from lab.trajectories.models import AgentConfig
    from lab.trajectories.services import episodes_ingest

    researcher = role_users["researcher"]
    [outcome] = episodes_ingest(project=project_a, records=[record_factory(steps=3)], user=researcher)
    agent = AgentConfig.objects.create(project=project_a, name="smart-triage", kind="scripted", model="smart-triage")
    Diagnosis.objects.create(episode=outcome.episode, step_index=1, category="wrong_tool", explanation="x")
    run = TrainingRun.objects.create(project=project_a, name="run", recipe="sft", base_model="tiny")
    Checkpoint.objects.create(run=run, step=10, path="ckpt-10")
    Evaluation.objects.create(project=project_a, agent=agent, task_set="toyenv/eval", seeds=[0])
    return key_for(researcher, project_a)


def _operation_failures(operation: Any, headers: dict[str, str], statuses: Counter[int]) -> list[str]:
    """Run ~25 generated requests (valid and invalid ones) against one operation; the failures, described."""
    failures: dict[str, str] = {}
    from django.db import transaction

    strategy = st.one_of(operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE))

    # No shrinking: a failure is reported as found, and the time stays bounded.
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        try:
            # Each request in its own savepoint, rolled back: one case's rows or a failed query do not leak into the next.
            with transaction.atomic():
                try:
                    response = case.call(headers=headers)
                    statuses[response.status_code] += 1
                    case.validate_response(response, checks=[not_a_server_error, response_schema_conformance], headers=headers)
                finally:
                    transaction.set_rollback(True)
        except (Exception, BaseExceptionGroup) as exc:  # collected, so one run names every failing operation
            for failure in getattr(exc, "exceptions", [exc]):
                title = getattr(failure, "title", type(failure).__name__)
                failures.setdefault(title, f"{operation.label}: {title}: {str(failure)[:600]}\n  {case.as_curl_command()}")

    run()
    return list(failures.values())


@pytest.fixture
def keep_connection() -> Any:
    """The WSGI handler closes the connection after each request; the test database lives in it (as Django's
    test client does, the closing is switched off)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.usefixtures("keep_connection")
def test_no_operation_answers_a_server_error_or_off_schema(fuzz_world: str) -> None:
    from django.core.wsgi import get_wsgi_application

    config = schemathesis.Config.from_dict(FUZZ_CONFIG)
    loaded = schemathesis.openapi.from_wsgi("/api/v1/schema/", get_wsgi_application(), config=config)
    headers = {"Authorization": f"Bearer {fuzz_world}"}
    operations = [result.ok() for result in loaded.get_all_operations()]
    assert len(operations) >= 40, [op.label for op in operations]
    statuses: Counter[int] = Counter()
    failures = []
    for operation in operations:
        # Another installation's inbox authenticates by a peer's signature alone: every generated request is rightly a 401.
        counted: Counter[int] = Counter() if operation.path.startswith("/api/v1/federation/inbox") else statuses
        failures += _operation_failures(operation, headers, counted)
    assert not failures, "\n\n".join(failures[:20])
    # The fuzzing reached the views, not only the authentication: many requests succeeded, none was refused as unauthenticated.
    assert sum(n for code, n in statuses.items() if code < 300) >= 100, statuses
    assert statuses[401] == 0, statuses


# Fields that hold free JSON (an agent's sampling, harness and team; a loop's and a federation's config) are where
# schema-driven generation reaches least: the schema says "object", so a `true` or a nested list in them is rarely
# sent. Here every JSON shape goes into each of them, and no answer may be a server error.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=12), inner, max_size=3),
    max_leaves=8,
)
_SETTING_NAMES = st.sampled_from(["temperature", "max_tokens", "seed", "window_turns", "max_new_tokens", "stop", "x"])
# Bare scalars first: hypothesis tries the strategies of one_of in order when it shrinks, and these are what broke.
_SETTINGS = st.one_of(st.sampled_from([True, False, 0, 1.5, "text", [1, "a"]]), _JSON, st.dictionaries(_SETTING_NAMES, _JSON, max_size=3))


@settings(max_examples=120, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(["sampling", "harness", "team"]), value=_SETTINGS)
def test_agent_json_settings_of_any_shape_never_answer_a_server_error(alice_api: Any, field: str, value: Any) -> None:
    from django.db import transaction

    with transaction.atomic():
        body = {"name": "fuzzed", "kind": "scripted", "model": "smart-triage", field: value}
        response = alice_api.post("/api/v1/agents/", body, format="json")
        assert response.status_code < 500, (field, value, response.content[:300])
        transaction.set_rollback(True)
