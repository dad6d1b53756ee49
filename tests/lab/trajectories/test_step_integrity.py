"""Steps always belong to an existing episode, on SQLite and on PostgreSQL.

The foreign key's per-row check gave way to triggers (migration trajectories 0002) that check a whole
statement at once and cascade deletes; these tests fail if a later migration drops them.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction

from lab.trajectories.models import Episode, Step
from lab.trajectories.services import episodes_ingest

pytestmark = pytest.mark.django_db


def _stored_episode(project: Any, user: Any, record_factory: Any, steps: int = 3) -> Episode:
    [outcome] = episodes_ingest(project=project, records=[record_factory(steps=steps)], user=user)
    return outcome.episode


def _refused(write: Any) -> None:
    """`write` fails by the end of its transaction: at once on SQLite, at commit on PostgreSQL (a deferred check,
    which check_constraints fires here as a commit would)."""
    with pytest.raises(IntegrityError), transaction.atomic():
        write()
        connection.check_constraints()


def test_a_step_naming_a_missing_episode_is_refused(project_a: Any, alice: Any, record_factory: Any) -> None:
    episode = _stored_episode(project_a, alice, record_factory)
    missing = Episode.objects.order_by("-pk").values_list("pk", flat=True).first() + 1000
    _refused(lambda: Step.objects.create(episode_id=missing, index=0, source="agent"))
    _refused(lambda: Step.objects.filter(episode=episode, index=1).update(episode_id=missing))
    assert list(Step.objects.filter(episode=episode).values_list("index", flat=True)) == [0, 1, 2]


def test_a_bulk_insert_with_one_orphan_stores_none_of_its_rows(project_a: Any, alice: Any, record_factory: Any) -> None:
    episode = _stored_episode(project_a, alice, record_factory, steps=1)
    rows = [Step(episode=episode, index=i, source="agent") for i in range(1, 4)] + [
        Step(episode_id=episode.pk + 1000, index=0, source="agent")
    ]
    _refused(lambda: Step.objects.bulk_create(rows))
    assert Step.objects.filter(episode=episode).count() == 1


@pytest.mark.postgres
def test_on_postgresql_steps_may_come_before_their_episode_within_a_transaction(project_a: Any, alice: Any, record_factory: Any) -> None:
    model = _stored_episode(project_a, alice, record_factory, steps=1)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT nextval(pg_get_serial_sequence(%s, 'id'))", [Episode._meta.db_table])
            new_id = cursor.fetchone()[0]
        Step.objects.create(episode_id=new_id, index=0, source="agent")
        fields = {f.attname: getattr(model, f.attname) for f in Episode._meta.concrete_fields if f.attname not in ("id", "content_hash")}
        Episode.objects.create(**fields, id=new_id)
        connection.check_constraints()
    assert Step.objects.filter(episode_id=new_id).count() == 1
    _refused(lambda: Step.objects.create(episode_id=new_id + 1000, index=0, source="agent"))


def test_deleting_an_episode_behind_djangos_back_deletes_its_steps_too(project_a: Any, alice: Any, record_factory: Any) -> None:
    episode = _stored_episode(project_a, alice, record_factory)
    other = _stored_episode(project_a, alice, lambda steps: record_factory(steps=steps, seed=7))
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Episode._meta.db_table} WHERE id = %s", [episode.pk])
    assert not Step.objects.filter(episode_id=episode.pk).exists()
    assert Step.objects.filter(episode=other).count() == 3


def test_deleting_an_episode_through_django_takes_its_steps_along(project_a: Any, alice: Any, record_factory: Any) -> None:
    episode = _stored_episode(project_a, alice, record_factory)
    other = _stored_episode(project_a, alice, lambda steps: record_factory(steps=steps, seed=7))
    episode.delete()
    assert not Step.objects.filter(episode_id=episode.pk).exists()
    assert Step.objects.filter(episode=other).count() == 3
