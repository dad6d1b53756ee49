"""Live steps (rollouts, human play) pass the same redaction as uploads, before they are stored or published; a
redacted step's sampled token ids, which spell the secret out, are dropped and the step is marked for training."""

from __future__ import annotations

from typing import Any

import pytest

from lab.live.models import LiveEvent
from lab.play.services import play_session_start, play_submit
from lab.trajectories.models import Episode, Step
from lab.trajectories.services import episode_append_step, episode_start, episode_to_record, task_resolve

pytestmark = pytest.mark.django_db

API_KEY = "prk_" + "Qx7_Lm2-Zp9vR4tW8nB3cK6dF0gS3eUaB9xQ7m"
DB_URL = "postgres://app:s3cr3t-pw@db:5432/lab"


@pytest.fixture
def running(project_a: Any, alice: Any) -> Episode:
    task = task_resolve(project=project_a, env="toyenv", key="live-redaction")
    return episode_start(project=project_a, task=task, source="rollout", seed=3, user=alice)


def _sampled(index: int, message: str, prompt: list[int]) -> dict[str, Any]:
    return {
        "index": index,
        "source": "agent",
        "message": message,
        "token_ids": [7, 8, 9],
        "logprobs": [-0.1, -0.2, -0.3],
        "prompt_token_ids": prompt,
    }


def test_a_live_steps_secrets_are_redacted_before_they_are_stored_or_published(running: Episode) -> None:
    step = {
        "index": 0,
        "source": "agent",
        "message": f"using {API_KEY}",
        "tool_calls": [{"id": "c0", "name": "connect", "arguments": {"url": DB_URL, "db_password": "hunter2hunter2"}}],
        "results": [{"call_id": "c0", "content": "GITHUB_TOKEN=abcdefgh12345 is set", "is_error": False}],
    }
    episode_append_step(episode=running, step=step)
    stored = episode_to_record(running)["steps"][0]
    assert stored["message"] == "using [REDACTED:practicum_key]"
    assert stored["tool_calls"][0]["arguments"] == {
        "url": "postgres://app:[REDACTED:url_credentials]@db:5432/lab",
        "db_password": "[REDACTED:assignment]",
    }
    assert stored["results"][0]["content"] == "GITHUB_TOKEN=[REDACTED:assignment] is set"
    published = LiveEvent.objects.get(stream=f"episode:{running.pk}", kind="step").payload
    assert published["message"] == "using [REDACTED:practicum_key]" and "s3cr3t-pw" not in str(published)
    assert stored.get("meta") is None  # no token ids: nothing to mark


def test_a_redacted_step_loses_its_sampled_ids_and_later_steps_their_prompt_ids(running: Episode) -> None:
    episode_append_step(episode=running, step=_sampled(0, "clean", [1, 2]))
    episode_append_step(episode=running, step=_sampled(1, f"the key is {API_KEY}", [1, 2, 7, 8, 9]))
    episode_append_step(episode=running, step=_sampled(2, "clean again", [1, 2, 7, 8, 9, 7, 8, 9]))
    clean, redacted, later = episode_to_record(running)["steps"]
    assert (clean["token_ids"], clean["prompt_token_ids"], clean.get("meta")) == ([7, 8, 9], [1, 2], None)
    assert redacted["message"] == "the key is [REDACTED:practicum_key]"
    assert (redacted["token_ids"], redacted["logprobs"]) == (None, None) and "prompt_token_ids" not in redacted
    assert redacted["meta"] == {"training_unusable": "redacted"}
    assert later["token_ids"] == [7, 8, 9] and "prompt_token_ids" not in later and later.get("meta") is None
    assert Episode.objects.get(pk=running.pk).meta["first_redacted_step"] == 1


def test_a_retried_redacted_step_is_the_same_write_not_a_conflict(running: Episode) -> None:
    first = episode_append_step(episode=running, step=_sampled(0, f"key {API_KEY}", [1]))
    again = episode_append_step(episode=running, step=_sampled(0, f"key {API_KEY}", [1]))
    assert again.pk == first.pk and Step.objects.filter(episode=running).count() == 1


def test_a_players_secret_is_redacted_in_the_stored_human_step(role_users: dict[str, Any], project_a: Any) -> None:
    expert = role_users["expert"]
    session = play_session_start(user=expert, project=project_a, task_id="storebench/cash-crunch", seed=1)
    play_submit(session=session, user=expert, expected_index=1, name="get_finance", arguments={}, message=f"my key: {API_KEY}")
    step = episode_to_record(session.episode)["steps"][1]
    assert step["message"] == "my key: [REDACTED:practicum_key]"
    assert API_KEY not in str(LiveEvent.objects.filter(stream=f"episode:{session.episode.pk}").values_list("payload", flat=True))


def test_an_uploaded_step_that_lost_a_secret_is_stored_without_its_ids_and_marked(alice_api: Any) -> None:
    step = {"index": 0, "source": "agent", "message": f"key {API_KEY}", "token_ids": [5, 6], "logprobs": [-0.1, -0.2]}
    record = {"schema_version": "practicum.trajectory/1", "header": {"env": "toyenv", "task": "t", "source": "rollout"}, "steps": [step]}
    created = alice_api.post("/api/v1/episodes/?project=acme", record, format="json")
    assert created.status_code == 201, created.content
    episode = created.json()["episodes"][0]["id"]
    [stored] = alice_api.get(f"/api/v1/episodes/{episode}/export/").json()["steps"]
    assert stored["message"] == "key [REDACTED:practicum_key]" and stored["meta"] == {"training_unusable": "redacted"}
    assert stored["token_ids"] is None and stored["logprobs"] is None
