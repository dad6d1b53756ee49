"""The fidelity report page and API: human user sessions against a simulator's, by project, with bad filters refused."""

from __future__ import annotations

import random
from typing import Any

import pytest

from environments.trajectory import make_step, new_record
from lab.trajectories.models import Provenance
from lab.trajectories.services import episodes_ingest

pytestmark = pytest.mark.django_db

TERSE = ["yes", "ok", "BK-{n}", "no", "fine", "{n}", "sure thing"]
VERBOSE = [
    "Hello there, I was hoping you could help me with my booking {n}, because I need to change the date please",
    "Actually, I would rather have the later flight instead, if that is at all possible for you to arrange",
    "Could you tell me what the fee would be? And also whether I keep my seat?",
]


def _session(rng: random.Random, templates: list[str], *, human: bool, simulator: str = "", seed: int = 0) -> dict[str, Any]:
    steps = [make_step(index=0, source="env", message="A customer writes in.")]
    for _ in range(6):
        steps.append(make_step(index=len(steps), source="agent", message="How can I help?"))
        text = rng.choice(templates).format(n=rng.randint(100, 9999))
        steps.append(make_step(index=len(steps), source="human" if human else "user", role="user", message=text))
    header: dict[str, Any] = {"env": "chatdesk", "task": "ask", "seed": seed, "source": "human" if human else "rollout"}
    if simulator:
        header["team"] = {"slots": {"user": {"policy": {"name": simulator, "kind": "hf", "role": "user"}, "default": False}}}
    return new_record(header=header, steps=steps)


@pytest.fixture
def sessions(project_a: Any, role_users: dict[str, Any]) -> None:
    rng = random.Random(0)
    records = [_session(rng, TERSE, human=True, seed=k) for k in range(12)]
    records += [_session(rng, VERBOSE, human=False, simulator="verbose-sim", seed=100 + k) for k in range(12)]
    records += [_session(rng, TERSE, human=False, simulator="terse-sim", seed=200 + k) for k in range(12)]
    episodes_ingest(project=project_a, records=records, user=role_users["owner"], provenance=Provenance.RECORDED)


def test_a_viewer_sees_the_difference_between_terse_humans_and_a_verbose_simulator(
    login: Any, role_users: dict[str, Any], project_a: Any, sessions: None
) -> None:
    response = login(role_users["viewer"]).get("/fidelity/", {"project": "acme", "sim_user_agent": "verbose-sim"})
    assert response.status_code == 200
    result = response.context["result"]
    assert result["human"]["episodes"] == 12 and result["simulated"]["episodes"] == 12 and result["simulated"]["matching"] == 12
    report = result["report"]
    assert report["sets"]["human"]["turns"] == report["sets"]["simulated"]["turns"] == 72
    assert report["sets"]["human"]["length"]["mean"] < 2 < 14 < report["sets"]["simulated"]["length"]["mean"]
    assert report["length"]["ks"] == 1.0 and report["turing"]["accuracy"] >= 0.95
    html = response.content.decode()
    assert html.count('<rect class="bar human"') >= 12 and '<rect class="bar simulated"' in html and "held-out accuracy" in html
    assert "<script" not in html.split('id="fidelity-report"')[1]  # plots are SVG drawn here, no script
    api = login(role_users["viewer"]).get("/api/v1/fidelity", {"project": project_a.pk, "sim_user_agent": "verbose-sim"})
    assert api.status_code == 200 and api.json()["report"] == report


def test_a_simulator_like_the_humans_is_hard_to_tell_apart(alice_api: Any, alice: Any, sessions: None) -> None:
    body = alice_api.get("/api/v1/fidelity", {"project": "acme", "sim_user_agent": "terse-sim", "max_episodes": 10}).json()
    assert body["human"]["episodes"] == body["simulated"]["episodes"] == 10 and body["max_episodes"] == 10
    assert body["report"]["length"]["ks"] < 0.2 and body["report"]["turing"]["accuracy"] <= 0.7


def test_the_simulated_set_never_holds_human_turns_nor_the_human_set_simulated_ones(alice_api: Any, alice: Any, sessions: None) -> None:
    body = alice_api.get("/api/v1/fidelity", {"project": "acme"}).json()
    assert body["human"]["episodes"] == 12 and body["simulated"]["episodes"] == 24


@pytest.mark.parametrize(
    ("params", "status", "words"),
    [
        ({}, 400, "project: name the project"),
        ({"project": "bravo"}, 404, "No project 'bravo'"),
        ({"project": "acme", "max_episodes": "lots"}, 400, "max_episodes='lots' is not an integer"),
        ({"project": "acme", "max_episodes": "100000"}, 400, "max_episodes=100000 is outside [1, 200]"),
        ({"project": "acme", "human_passed": "maybe"}, 400, "passed='maybe'"),
        ({"project": "acme", "sim_after": "yesterday"}, 400, "after='yesterday' is not an ISO 8601"),
        ({"project": "acme", "sim_provenance": "forged"}, 400, "provenance='forged'"),
    ],
)
def test_it_refuses_bad_parameters_with_a_message_never_a_500(
    alice_api: Any, login: Any, alice: Any, params: dict[str, str], status: int, words: str
) -> None:
    api = alice_api.get("/api/v1/fidelity", params)
    assert api.status_code == status and words in api.json()["error"]["message"]
    if params:  # the page with no project is the empty form
        page = login(alice).get("/fidelity/", params)
        assert page.status_code == status and words in page.content.decode().replace("&#x27;", "'")


def test_the_page_without_a_project_is_the_form(login: Any, alice: Any) -> None:
    response = login(alice).get("/fidelity/")
    assert response.status_code == 200 and "Choose a project" in response.content.decode() and response.context["result"] is None


def test_an_outsider_cannot_read_another_projects_sessions(api: Any, bob: Any, project_b: Any, sessions: None) -> None:
    response = api(bob, project_b).get("/api/v1/fidelity", {"project": "acme"})
    assert response.status_code == 404
