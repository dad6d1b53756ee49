"""Agents' endpoints: the operator's named endpoints, free URLs only where allowed, checked on create, PATCH and
before each run; disabled agents keep their row and say why; keys never leave for the wrong host or into records."""

from __future__ import annotations

import importlib
import ipaddress
import json
import logging
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.apps import apps
from django.core.management import call_command

from lab.errors import DomainError
from lab.rollouts.services import rollout_launch, rollout_run
from lab.trajectories.endpoints import agent_connection, agents_review_endpoints
from lab.trajectories.models import AgentConfig
from lab.trajectories.services import episode_to_record, task_resolve
from tests.loopback_http import loopback_server
from training.policies import netguard

pytestmark = pytest.mark.django_db
KEY = "sk-operator-secret-4242"


@pytest.fixture
def endpoints(settings: Any, monkeypatch: Any) -> Any:
    """One declared endpoint with a key, free URLs off; DNS answers from a table the test can change."""
    monkeypatch.setenv("LAB_MODEL_KEY", KEY)
    settings.PRACTICUM_ENDPOINTS = {"hosted": {"base_url": "https://models.example.com/v1", "key_env": "LAB_MODEL_KEY"}}
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = False
    settings.PRACTICUM_ALLOWED_PRIVATE_NETWORKS = ()
    answers = {"public.example.com": ["93.184.216.34"], "internal.example.com": ["10.9.8.7"], "localhost": ["127.0.0.1"]}

    def resolve(host: str, port: int) -> list[str]:
        if host in answers:
            return answers[host]
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            raise OSError(f"unknown host {host}") from None

    monkeypatch.setattr(netguard, "resolve", resolve)
    return answers


class _Recorder:
    def __init__(self) -> None:
        self.authorizations: list[str | None] = []


@pytest.fixture
def failing_server() -> Iterator[tuple[_Recorder, str]]:
    """A chat server on loopback that records the Authorization header and answers every request with a 500."""
    state = _Recorder()

    def answer(request: Any) -> tuple[int, dict[str, str], bytes]:
        state.authorizations.append(request.headers.get("Authorization"))
        return 500, {"Content-Type": "application/json"}, json.dumps({"error": {"message": "boom"}}).encode()

    with loopback_server(answer) as port:
        yield state, f"http://127.0.0.1:{port}/v1"


def _agent(client: Any, **fields: Any) -> Any:
    return client.post("/api/v1/agents/", {"name": "gpt", "kind": "openai", "model": "m", **fields}, format="json")


def _field_error(response: Any, field: str) -> str:
    assert response.status_code == 400, response.content
    return str(response.json()["error"]["fields"][field])


def test_an_agent_names_a_declared_endpoint_and_the_key_comes_with_it(alice_api: Any, endpoints: Any) -> None:
    created = _agent(alice_api, endpoint="hosted")
    assert created.status_code == 201, created.content
    assert created.json()["endpoint"] == "hosted" and created.json()["disabled_reason"] == ""
    assert KEY not in json.dumps(created.json())
    connection = agent_connection(agent=AgentConfig.objects.get(name="gpt"))
    assert connection is not None
    assert (connection.base_url, connection.api_key, connection.name) == ("https://models.example.com/v1", KEY, "hosted")


def test_an_undeclared_name_or_an_empty_endpoint_without_an_openai_endpoint_is_refused(alice_api: Any, endpoints: Any) -> None:
    assert "'elsewhere' is not an endpoint the operator declared; declared: hosted" in _field_error(
        _agent(alice_api, endpoint="elsewhere"), "endpoint"
    )
    assert "which means 'openai'" in _field_error(_agent(alice_api, endpoint=""), "endpoint")


def test_a_free_url_is_refused_while_free_endpoints_are_off(alice_api: Any, endpoints: Any) -> None:
    message = _field_error(_agent(alice_api, endpoint="https://public.example.com/v1"), "endpoint")
    assert "'https://public.example.com/v1' is not an endpoint the operator declared" in message
    assert "PRACTICUM_ALLOW_FREE_ENDPOINTS" in message
    assert not AgentConfig.objects.filter(name="gpt").exists()


@pytest.mark.parametrize("url", ["file:///etc/passwd", "gopher://public.example.com/", "ftp://public.example.com/v1"])
def test_other_schemes_are_never_allowed(alice_api: Any, endpoints: Any, settings: Any, url: str) -> None:
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = True
    assert "only http and https are allowed" in _field_error(_agent(alice_api, endpoint=url), "endpoint")


def test_a_free_public_url_is_allowed_when_the_operator_allows_free_urls_and_gets_no_key(
    alice_api: Any, endpoints: Any, settings: Any
) -> None:
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = True
    assert _agent(alice_api, endpoint="https://public.example.com/v1").status_code == 201
    connection = agent_connection(agent=AgentConfig.objects.get(name="gpt"))
    assert connection is not None and connection.api_key == "EMPTY" and connection.any_address is False


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://localhost:8000/v1", "127.0.0.1 is a loopback address"),
        ("http://169.254.169.254/latest", "link-local"),
        ("http://internal.example.com/v1", "10.9.8.7 is a private address"),
        ("http://[::1]:80/v1", "loopback"),
    ],
)
def test_private_loopback_and_link_local_free_urls_are_refused(
    alice_api: Any, endpoints: Any, settings: Any, url: str, reason: str
) -> None:
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = True
    assert reason in _field_error(_agent(alice_api, endpoint=url), "endpoint")


def test_a_private_network_the_operator_listed_is_allowed(alice_api: Any, endpoints: Any, settings: Any) -> None:
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = True
    settings.PRACTICUM_ALLOWED_PRIVATE_NETWORKS = (ipaddress.ip_network("10.9.0.0/16"),)
    assert _agent(alice_api, endpoint="http://internal.example.com/v1").status_code == 201


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://[::1/v1", "is not a valid URL"),
        ("http://:80/v1", "names no host"),
        ("http://public.example.com:99999/v1", "invalid port"),
        ("http://nowhere.invalid/v1", "does not resolve"),
    ],
)
def test_malformed_free_urls_answer_400_naming_the_problem(alice_api: Any, endpoints: Any, settings: Any, url: str, message: str) -> None:
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = True
    assert message in _field_error(_agent(alice_api, endpoint=url), "endpoint")


def test_a_url_with_credentials_is_refused(alice_api: Any, endpoints: Any, settings: Any) -> None:
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = True
    assert "user or password" in _field_error(_agent(alice_api, endpoint="https://u:p@public.example.com/v1"), "endpoint")


def test_a_key_variable_in_sampling_is_refused(alice_api: Any, endpoints: Any) -> None:
    message = _field_error(_agent(alice_api, endpoint="hosted", sampling={"api_key_env": "SECRET_KEY"}), "sampling")
    assert "api_key_env='SECRET_KEY' is not accepted" in message


def test_a_patch_is_checked_against_the_merged_values(alice_api: Any, endpoints: Any, project_a: Any) -> None:
    # A scripted agent may carry a stray URL (it calls nothing); turning it into an openai agent must not smuggle it in.
    agent = AgentConfig.objects.create(project=project_a, name="anchor", kind="scripted", model="do-nothing", endpoint="http://10.0.0.1/v1")
    turned = alice_api.patch(f"/api/v1/agents/{agent.pk}/", {"kind": "openai"}, format="json")
    assert "'http://10.0.0.1/v1' is not an endpoint the operator declared" in _field_error(turned, "endpoint")
    assert AgentConfig.objects.get(pk=agent.pk).kind == "scripted"
    named = AgentConfig.objects.create(project=project_a, name="named", kind="openai", model="m", endpoint="hosted")
    keyed = alice_api.patch(f"/api/v1/agents/{named.pk}/", {"sampling": {"api_key_env": "DJANGO_SECRET_KEY"}}, format="json")
    assert "api_key_env" in _field_error(keyed, "sampling")
    assert alice_api.patch(f"/api/v1/agents/{named.pk}/", {"model": "m2"}, format="json").status_code == 200


def test_agents_no_longer_allowed_are_disabled_with_the_reason_not_deleted(
    alice_api: Any, endpoints: Any, project_a: Any, settings: Any
) -> None:
    kept = AgentConfig.objects.create(project=project_a, name="kept", kind="openai", model="m", endpoint="hosted")
    stale = AgentConfig.objects.create(
        project=project_a,
        name="stale",
        kind="openai",
        model="m",
        endpoint="https://evil.example.com/v1",
        sampling={"api_key_env": "DJANGO_SECRET_KEY"},
    )
    out = StringIO()
    call_command("review_agent_endpoints", stdout=out)
    stale.refresh_from_db()
    kept.refresh_from_db()
    assert kept.disabled_reason == ""
    assert stale.disabled_reason.startswith("sampling: api_key_env='DJANGO_SECRET_KEY' is not accepted")
    assert "stale: disabled: sampling" in out.getvalue() and "1 agent(s) changed" in out.getvalue()
    listed = {a["name"]: a["disabled_reason"] for a in alice_api.get("/api/v1/agents/").json()}
    assert listed["stale"] == stale.disabled_reason and listed["kept"] == ""
    task = task_resolve(project=project_a, env="toolgym", key="lookup")
    with pytest.raises(DomainError) as refused:
        rollout_launch(project=project_a, agent=stale, task=task, seed=0, enqueue=False)
    assert refused.value.code == "agent_disabled" and "is disabled: sampling: api_key_env" in refused.value.message
    over_api = alice_api.post("/api/v1/rollouts/", {"agent": "stale", "task": "toolgym/lookup", "seed": 0}, format="json")
    assert over_api.status_code == 409 and "is disabled" in over_api.json()["error"]["message"]
    # The operator changes the settings back: the next review enables it again.
    settings.PRACTICUM_ENDPOINTS = {**settings.PRACTICUM_ENDPOINTS, "evil": {"base_url": "https://evil.example.com/v1", "key_env": ""}}
    fixed = alice_api.patch(f"/api/v1/agents/{stale.pk}/", {"sampling": {}}, format="json")
    assert fixed.status_code == 200 and fixed.json()["disabled_reason"] == ""


def test_the_review_reenables_an_agent_the_settings_allow_again(endpoints: Any, project_a: Any, settings: Any) -> None:
    agent = AgentConfig.objects.create(project=project_a, name="vllm-agent", kind="openai", model="m", endpoint="vllm")
    assert [a.name for a in agents_review_endpoints()] == ["vllm-agent"]
    settings.PRACTICUM_ENDPOINTS = {**settings.PRACTICUM_ENDPOINTS, "vllm": {"base_url": "http://127.0.0.1:8001/v1", "key_env": ""}}
    assert [a.disabled_reason for a in agents_review_endpoints()] == [""]
    agent.refresh_from_db()
    assert agent.disabled_reason == ""


def test_the_migration_disables_refused_agents_without_dns(endpoints: Any, project_a: Any, monkeypatch: Any) -> None:
    agent = AgentConfig.objects.create(project=project_a, name="old", kind="openai", model="m", endpoint="http://127.0.0.1:9/v1")
    monkeypatch.setattr(netguard, "resolve", lambda host, port: pytest.fail("the migration must not resolve names"))
    migration = importlib.import_module("lab.trajectories.migrations.0003_agent_endpoint_policy")
    migration.disable_refused_agents(apps, None)
    agent.refresh_from_db()
    assert "is not an endpoint the operator declared" in agent.disabled_reason
    assert AgentConfig.objects.filter(pk=agent.pk).exists()


def test_a_run_checks_the_endpoint_again_when_the_settings_changed_after_launch(endpoints: Any, project_a: Any, settings: Any) -> None:
    agent = AgentConfig.objects.create(project=project_a, name="gpt", kind="openai", model="m", endpoint="hosted")
    task = task_resolve(project=project_a, env="toolgym", key="lookup")
    job = rollout_launch(project=project_a, agent=agent, task=task, seed=0, enqueue=False)
    settings.PRACTICUM_ENDPOINTS = {}
    job = rollout_run(job_id=job.pk)
    assert job.status == "failed" and job.episode is None
    assert job.error.startswith("agent 'gpt' may not run: endpoint: 'hosted' is not an endpoint the operator declared")


def test_a_dns_change_after_validation_cannot_send_a_rollout_to_loopback(
    endpoints: Any, project_a: Any, settings: Any, failing_server: tuple[_Recorder, str], monkeypatch: Any
) -> None:
    server, url = failing_server
    port = url.rsplit(":", 1)[1].split("/")[0]
    settings.PRACTICUM_ALLOW_FREE_ENDPOINTS = True
    agent = AgentConfig.objects.create(
        project=project_a,
        name="rebound",
        kind="openai",
        model="m",
        endpoint=f"http://public.example.com:{port}/v1",
        sampling={"max_retries": 0},
    )
    lookups: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        # Public for the checks at launch and before the run, loopback by the time the policy connects.
        lookups.append(host)
        return ["93.184.216.34"] if len(lookups) <= 2 else ["127.0.0.1"]

    monkeypatch.setattr(netguard, "resolve", rebinding)
    task = task_resolve(project=project_a, env="toolgym", key="lookup")
    job = rollout_run(job_id=rollout_launch(project=project_a, agent=agent, task=task, seed=0, enqueue=False).pk)
    assert len(lookups) == 3
    assert job.episode is not None
    job.episode.refresh_from_db()
    assert job.episode.termination_reason == "infrastructure_error"
    assert server.authorizations == []  # nothing reached the loopback server


def test_keys_never_reach_episodes_job_errors_or_logs(
    endpoints: Any, project_a: Any, settings: Any, failing_server: tuple[_Recorder, str], caplog: Any
) -> None:
    server, url = failing_server
    settings.PRACTICUM_ENDPOINTS = {"local": {"base_url": url, "key_env": "LAB_MODEL_KEY"}}
    agent = AgentConfig.objects.create(
        project=project_a, name="keyed", kind="openai", model="m", endpoint="local", sampling={"max_retries": 0}
    )
    task = task_resolve(project=project_a, env="toolgym", key="lookup")
    with caplog.at_level(logging.DEBUG):
        job = rollout_run(job_id=rollout_launch(project=project_a, agent=agent, task=task, seed=0, enqueue=False).pk)
    assert server.authorizations == [f"Bearer {KEY}"]  # the declared endpoint got the operator's key
    assert job.episode is not None
    job.episode.refresh_from_db()
    assert job.episode.termination_reason == "infrastructure_error"
    header = job.episode.meta["header"]
    assert header["policy"]["endpoint"] == url and header["policy"]["endpoint_name"] == "local"
    assert KEY not in json.dumps(job.episode.meta) and KEY not in json.dumps(episode_to_record(job.episode))
    assert KEY not in job.error
    assert KEY not in caplog.text
    assert KEY not in repr(agent_connection(agent=agent))


def test_the_evaluate_command_and_diagnosis_jobs_refuse_a_disabled_agent(endpoints: Any, project_a: Any, record_factory: Any) -> None:
    from django.core.management.base import CommandError

    from lab.diagnoses.jobs import diagnosis_job_launch
    from lab.trajectories.services import episodes_ingest

    episode = episodes_ingest(project=project_a, records=[record_factory(steps=2)])[0].episode

    agent = AgentConfig.objects.create(
        project=project_a,
        name="stale",
        kind="openai",
        model="m",
        endpoint="gone",
        disabled_reason="endpoint: 'gone' is not an endpoint the operator declared",
    )
    with pytest.raises(CommandError, match="agent 'stale' is disabled: endpoint: 'gone'"):
        call_command("evaluate", agent="stale", tasks="toolgym/lookup", seeds="0", project=project_a.slug, inline=True)
    with pytest.raises(DomainError, match="agent 'stale' is disabled"):
        diagnosis_job_launch(project=project_a, episode_ids=[episode.pk], agent=agent)


def test_a_pooled_endpoint_brings_all_its_servers_the_cap_and_the_key(endpoints: Any, settings: Any) -> None:
    from lab.trajectories.endpoints import endpoint_connection

    settings.PRACTICUM_ENDPOINTS = {
        **settings.PRACTICUM_ENDPOINTS,
        "fleet": {
            "base_url": "http://10.0.0.1:8000/v1",
            "key_env": "LAB_MODEL_KEY",
            "base_urls": ["http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"],
            "max_in_flight": 8,
        },
    }
    by_name = endpoint_connection(kind="openai", endpoint="fleet", sampling={})
    by_second_url = endpoint_connection(kind="openai", endpoint="http://10.0.0.2:8000/v1/", sampling={})
    assert by_name == by_second_url and by_name is not None
    assert (by_name.name, by_name.servers, by_name.max_in_flight, by_name.api_key, by_name.pooled) == (
        "fleet",
        ("http://10.0.0.1:8000/v1", "http://10.0.0.2:8000/v1"),
        8,
        KEY,
        True,
    )
