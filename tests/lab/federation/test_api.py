"""The federation API: who may change what, what a stranger sees (404), and the bad-input table."""

from __future__ import annotations

import json

import pytest

from lab.federation.models import FederationRound, Peer, SharingPolicy

POLICIES, PEERS, ROUNDS = "/api/v1/federation/policies/", "/api/v1/federation/peers/", "/api/v1/federation/rounds/"
TRANSFERS, RECEIVED, INBOX = "/api/v1/federation/transfers/", "/api/v1/federation/received/", "/api/v1/federation/inbox/"
DECLARED = {"partner-lab": {"base_url": "https://partner.example.org/api", "key_env": ""}}


@pytest.fixture
def mallory_b(make_user, project_b, api):
    """Mallory owns another project (bravo) and nothing in acme."""
    from lab.projects.services import membership_set

    user = make_user("mallory-b")
    membership_set(project=project_b, user=user, role="owner")
    return api(user, project_b)


@pytest.fixture
def acme_federation(project_a, alice):
    return FederationRound.objects.create(
        project=project_a, name="acme only", mode="local", base_model="tiny", created_by=alice, results=[{"round": 0, "utility acme": 0.5}]
    )


@pytest.mark.parametrize("role", ["researcher", "expert", "viewer"])
def test_only_an_owner_changes_what_the_project_shares(role, role_users, api, project_a):
    answer = api(role_users[role], project_a).post(POLICIES, {"project": "acme", "kinds": ["adapter"]}, format="json")
    assert answer.status_code == 403 and f"A {role} may not change what the project shares" in answer.json()["error"]["message"]
    assert not SharingPolicy.objects.exists()


def test_the_owners_decision_is_recorded_and_its_canaries_never_shown(role_users, api, project_a):
    owner = api(role_users["owner"], project_a)
    body = {"project": "acme", "kinds": ["skills", "stats"], "canaries": {"catalogue.ref": "cnry-secret-123"}, "note": "q3 review"}
    answer = owner.post(POLICIES, body, format="json")
    assert answer.status_code == 201
    assert answer.json()["kinds"] == ["skills", "stats"] and answer.json()["canary_fields"] == ["catalogue.ref"]
    assert answer.json()["decided_by"] == "owner-user"
    owner.post(POLICIES, {"project": "acme", "kinds": []}, format="json")
    listing = api(role_users["viewer"], project_a).get(POLICIES)
    assert [p["kinds"] for p in listing.json()] == [[], ["skills", "stats"]]  # newest first: both decisions kept
    assert "cnry-secret-123" not in listing.content.decode()


def test_a_stranger_sees_404_for_everything_of_another_project(mallory_b, acme_federation):
    assert mallory_b.get(f"{ROUNDS}{acme_federation.pk}/").status_code == 404
    assert mallory_b.get(f"{ROUNDS}{acme_federation.pk}/exports/").status_code == 404
    assert mallory_b.post(f"{ROUNDS}{acme_federation.pk}/cancel/").status_code == 404
    assert mallory_b.get(ROUNDS).json() == []
    assert mallory_b.post(POLICIES, {"project": "acme", "kinds": ["adapter"]}, format="json").status_code == 404
    assert mallory_b.post(PEERS, {"project": "acme", "name": "x", "endpoint": "partner-lab"}, format="json").status_code == 404
    FederationRound.objects.filter(pk=acme_federation.pk).update(status="running")
    assert FederationRound.objects.get(pk=acme_federation.pk).status == "running"  # untouched


def test_members_read_rounds_and_writers_cancel(role_users, api, project_a, acme_federation):
    viewer = api(role_users["viewer"], project_a)
    assert viewer.get(f"{ROUNDS}{acme_federation.pk}/").json()["results"] == [{"round": 0, "utility acme": 0.5}]
    assert viewer.post(f"{ROUNDS}{acme_federation.pk}/cancel/").status_code == 403
    answer = api(role_users["researcher"], project_a).post(f"{ROUNDS}{acme_federation.pk}/cancel/")
    assert answer.status_code == 200 and answer.json()["status"] == "cancelled"


def test_peers_are_endpoints_the_operator_declared(settings, alice_api):
    settings.PRACTICUM_FEDERATION_PEERS = DECLARED
    by_name = alice_api.post(PEERS, {"project": "acme", "name": "partner", "endpoint": "partner-lab"}, format="json")
    assert by_name.status_code == 201 and by_name.json()["endpoint"] == "partner-lab"
    by_url = alice_api.post(PEERS, {"project": "acme", "name": "partner2", "endpoint": "https://partner.example.org/api/"}, format="json")
    assert by_url.status_code == 201 and by_url.json()["endpoint"] == "partner-lab"  # a declared base URL counts as its name
    free = alice_api.post(PEERS, {"project": "acme", "name": "evil", "endpoint": "https://evil.example.com/"}, format="json")
    assert (
        free.status_code == 400
        and free.json()["error"]["fields"] == ["endpoint"]
        and "declared: partner-lab" in free.json()["error"]["message"]
    )
    again = alice_api.post(PEERS, {"project": "acme", "name": "partner", "endpoint": "partner-lab"}, format="json")
    assert again.status_code == 409
    assert sorted(Peer.objects.values_list("name", flat=True)) == ["partner", "partner2"]


def test_a_researcher_may_not_declare_peers(settings, role_users, api, project_a):
    settings.PRACTICUM_FEDERATION_PEERS = DECLARED
    answer = api(role_users["researcher"], project_a).post(
        PEERS, {"project": "acme", "name": "p", "endpoint": "partner-lab"}, format="json"
    )
    assert answer.status_code == 403


def _round(**changes):
    body = {
        "project": "acme",
        "name": "f",
        "mode": "fedavg",
        "base_model": "tiny",
        "participants": [{"project": "acme", "task": "fedgym/a"}],
    }
    return {**body, **changes}


BAD = [
    (POLICIES, {"project": "acme", "kinds": "adapter"}, 400, "kinds"),
    (POLICIES, {"project": "acme", "kinds": ["weights"]}, 400, "kinds"),
    (POLICIES, {"project": "acme", "kinds": ["adapter", "adapter"]}, 400, "kinds"),
    (POLICIES, {"project": "acme", "kinds": [], "canaries": ["cnry"]}, 400, "canaries"),
    (POLICIES, {"project": "acme", "kinds": [], "canaries": {"ref": "short"}}, 400, "canaries.ref"),
    (POLICIES, {"project": "acme", "kinds": [], "canaries": {"bad field!": "cnry-12345678"}}, 400, "canaries.bad field!"),
    (POLICIES, {"project": "acme", "kinds": [], "note": "x" * 501}, 400, "note"),
    (POLICIES, {"project": "acme", "kinds": [], "note": 7}, 400, "note"),
    (PEERS, {"project": "acme", "name": "../x", "endpoint": "partner-lab"}, 400, "name"),
    (PEERS, {"project": "acme", "name": "p", "endpoint": "http://169.254.169.254/"}, 400, "endpoint"),
    (PEERS, {"project": "acme", "name": "p", "endpoint": ["partner-lab"]}, 400, "endpoint"),
    (ROUNDS, _round(mode="gossip"), 400, "mode"),
    (ROUNDS, _round(base_model="../../etc"), 400, "base_model"),
    (ROUNDS, _round(participants="acme"), 400, "participants"),
    (ROUNDS, _round(participants=[]), 400, "participants"),
    (ROUNDS, _round(participants=[{"project": "acme"}]), 400, "participants[0]"),
    (ROUNDS, _round(participants=[{"project": "acme", "task": "nosuch/task"}]), 400, "participants[0].task"),
    (ROUNDS, _round(participants=[{"project": "bravo", "task": "fedgym/b"}]), 404, "participants[0].project"),
    (ROUNDS, _round(), 400, "participants[0].project"),  # acme shares no adapter yet
    (ROUNDS, _round(mode="local"), 400, "participants[0].task"),  # and has no fedgym/a episodes
    (ROUNDS, _round(mode="local", config={"rounds": 0}), 400, "participants[0].task"),
    (ROUNDS, {**_round(), "name": "\x00"}, 400, None),
    (TRANSFERS, {"project": "acme", "export": "first", "peer": "partner", "target": "bravo"}, 400, "export"),
    (TRANSFERS, {"project": "acme", "export": [1], "peer": "partner", "target": "bravo"}, 400, "export"),
    (TRANSFERS, {"project": "acme", "export": 2**63, "peer": "partner", "target": "bravo"}, 400, None),  # the parser's refusal
    (TRANSFERS, {"project": "acme", "export": 999999, "peer": "partner", "target": "bravo"}, 404, "export"),
    (TRANSFERS, {"project": "bravo", "export": 1, "peer": "partner", "target": "bravo"}, 404, None),
    (f"{RECEIVED}999999/accept/", {}, 404, None),
    (f"{RECEIVED}abc/", None, 400, None),
    (INBOX, {"project": "acme"}, 401, None),
    (f"{ROUNDS}abc/", None, 400, None),
    (f"{ROUNDS}{2**63}/", None, 400, None),
]


@pytest.mark.parametrize(("url", "body", "status", "field"), BAD, ids=[f"{i}-{row[3]}" for i, row in enumerate(BAD)])
def test_bad_input_is_a_4xx_naming_the_field(url, body, status, field, settings, alice_api, project_b, tiny_model):
    settings.PRACTICUM_FEDERATION_PEERS = DECLARED
    answer = alice_api.get(url) if body is None else alice_api.post(url, json.dumps(body), content_type="application/json")
    assert answer.status_code == status, answer.content
    error = answer.json()["error"]
    assert error["code"] and error["message"]
    if field is not None:
        assert error.get("fields") == [field], error


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"rounds": 0}, "config.rounds"),
        ({"rounds": True}, "config.rounds"),
        ({"lora_r": 1.5}, "config.lora_r"),
        ({"learning_rate": "fast"}, "config.learning_rate"),
        ({"bogus": 1}, "config.bogus"),
        ({"max_advantage": 2}, "config.max_advantage"),
        ({"received": "all"}, "config.received"),
        ({"received": [1.5]}, "config.received[0]"),
    ],
)
def test_bad_config_is_refused_naming_the_setting(config, field):
    from lab.errors import DomainError
    from lab.federation.services import federation_config_check

    with pytest.raises(DomainError) as refused:
        federation_config_check(config)
    assert refused.value.details["fields"] == [field] and field in refused.value.message


@pytest.mark.django_db
def test_an_api_key_enters_only_its_own_project_into_a_federation(three_projects, fed_participants, api, tiny_model):
    """alice is a researcher of bravo too, but her acme key reaches acme alone: bravo's episodes stay out of reach."""
    acme_key = api(three_projects["owners"]["a"], three_projects["projects"]["a"])
    body = {"project": "acme", "name": "f", "mode": "fedavg", "base_model": "tiny", "participants": fed_participants[:2]}
    response = acme_key.post("/api/v1/federation/rounds/", body, format="json")
    assert response.status_code == 404 and response.json()["error"]["fields"] == ["participants[1].project"]
    assert not FederationRound.objects.exists()
    alone = acme_key.post("/api/v1/federation/rounds/", {**body, "participants": fed_participants[:1]}, format="json")
    assert alone.status_code == 201, alone.content
