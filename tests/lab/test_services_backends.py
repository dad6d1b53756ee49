"""The production backends: PostgreSQL storage (JSONB, COPY) and the Redis channel layer."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import connection

from lab.trajectories.models import Step
from lab.trajectories.services import episode_to_record, episodes_ingest


@pytest.mark.postgres
@pytest.mark.django_db
def test_steps_are_copied_into_jsonb_columns_and_read_back_unchanged(project_a: Any, alice: Any, record_factory: Any) -> None:
    record = record_factory(steps=5)
    record["steps"][2]["token_ids"] = [1, 2, 3]
    [outcome] = episodes_ingest(project=project_a, records=[record], user=alice)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_name = %s AND column_name = 'tool_calls'", [Step._meta.db_table]
        )
        assert cursor.fetchone()[0] == "jsonb"
    back = episode_to_record(outcome.episode)
    assert back["steps"][2]["token_ids"] == [1, 2, 3]
    assert back["steps"][4]["tool_calls"] == record["steps"][4]["tool_calls"]
    assert Step.objects.filter(episode=outcome.episode, tool_calls__0__name="lookup").count() == 5


@pytest.mark.redis
def test_the_channel_layer_is_redis_and_delivers_group_messages() -> None:
    layer = get_channel_layer()
    assert type(layer).__name__ == "RedisChannelLayer"

    async def round_trip() -> dict[str, Any]:
        channel = await layer.new_channel()
        await layer.group_add("practicum-test", channel)
        await layer.group_send("practicum-test", {"type": "live.event", "event": {"seq": 1}})
        message = await layer.receive(channel)
        await layer.group_discard("practicum-test", channel)
        return message

    assert async_to_sync(round_trip)()["event"] == {"seq": 1}


@pytest.mark.postgres
@pytest.mark.django_db
def test_episodes_copied_in_bulk_get_ids_timestamps_and_every_column(project_a: Any, alice: Any, record_factory: Any) -> None:
    from lab.trajectories.models import Episode

    records = [record_factory(steps=2, seed=s, score={"composite": s / 10, "passed": s > 1, "components": {"p": 1.0}}) for s in range(3)]
    outcomes = episodes_ingest(project=project_a, records=records, user=alice)
    stored = {e.pk: e for e in Episode.objects.filter(project=project_a)}
    assert sorted(stored) == sorted(o.episode.pk for o in outcomes)
    for outcome, record in zip(outcomes, records, strict=True):
        row = stored[outcome.episode.pk]
        assert row.created_at is not None and row.created_by == alice and row.step_count == 2
        assert (row.seed, row.composite, row.passed, row.score) == (
            record["header"]["seed"],
            *(record["header"]["score"][k] for k in ("composite", "passed")),
            record["header"]["score"],
        )
        assert row.meta["header"] == record["header"] and row.raw is None
        assert episode_to_record(row)["steps"][1]["tool_calls"] == record["steps"][1]["tool_calls"]
    again = episodes_ingest(project=project_a, records=records, user=alice)
    assert [o.created for o in again] == [False] * 3 and Episode.objects.filter(project=project_a).count() == 3
