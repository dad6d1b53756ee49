"""The API's shared readers of bodies and parameters (lab.api_params, lab.edge): the same 400 on every endpoint."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def post_json(client: Any, url: str, payload: Any) -> Any:
    return client.post(url, data=json.dumps(payload), content_type="application/json")


@pytest.mark.parametrize("url", ["/api/v1/runs/?project=acme", "/api/v1/diagnoses/propose/", "/api/v1/diagnoses/jobs/"])
@pytest.mark.parametrize("body", [[1, 2], "text", 7])
def test_a_body_that_is_not_an_object_is_refused_naming_the_body(alice_api: Any, url: str, body: Any) -> None:
    response = post_json(alice_api, url, body)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == {"code": "invalid_body", "message": "send a JSON object", "fields": ["body"]}


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("offset=abc", "offset='abc' is not an integer"),
        ("offset=-1", "offset=-1 is outside [0, 1000000000]"),
        ("limit=0", "limit=0 is outside [1, 1000]"),
        ("limit=1001", "limit=1001 is outside [1, 1000]"),
    ],
)
def test_episode_steps_refuse_a_bad_offset_or_limit_naming_it(alice_api: Any, record_factory: Any, query: str, message: str) -> None:
    episode_id = post_json(alice_api, "/api/v1/episodes/", record_factory(steps=3)).json()["episodes"][0]["id"]
    response = alice_api.get(f"/api/v1/episodes/{episode_id}/steps/?{query}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["code"], error["message"], error["path"]) == ("invalid_parameter", message, query.split("=")[0])


def test_episode_steps_default_to_the_first_hundred(alice_api: Any, record_factory: Any) -> None:
    episode_id = post_json(alice_api, "/api/v1/episodes/", record_factory(steps=3)).json()["episodes"][0]["id"]
    page = alice_api.get(f"/api/v1/episodes/{episode_id}/steps/?offset=&limit=").json()
    assert [s["index"] for s in page["steps"]] == [0, 1, 2] and page["offset"] == 0


@pytest.mark.parametrize("value", ["true", "1.0", "%2B1", "1_0", "0", "-3"])
def test_an_id_filter_takes_digits_only(alice_api: Any, value: str) -> None:
    response = alice_api.get(f"/api/v1/diagnoses/attempts/?episode={value}")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_parameter" and error["path"] == "episode"


def test_an_id_in_a_body_is_refused_when_it_is_a_boolean(alice_api: Any) -> None:
    response = post_json(alice_api, "/api/v1/diagnoses/rule/", {"episode": True})
    assert response.status_code == 400
    assert response.json()["error"] == {"code": "invalid_parameter", "message": "episode must be an id, got True", "path": "episode"}
