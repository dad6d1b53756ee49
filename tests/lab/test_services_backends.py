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
