"""docker-compose.yml agrees with the settings: no Docker engine runs here, so the file is parsed and checked."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab import env as lab_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def settings_variables() -> set[str]:
    source = (ROOT / "lab" / "settings.py").read_text()
    return set(re.findall(r'env_(?:str|bool|int|url|endpoints|networks)\(\s*"([A-Z0-9_]+)"', source))


def test_it_has_every_service_of_the_deployment(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) == {"postgres", "redis", "web", "worker", "gpu-worker", "vllm", "cpu-workers", "gpu-worker-cuda"}


def test_web_serves_the_asgi_app_with_daphne_after_migrating(compose: dict[str, Any]) -> None:
    command = " ".join(compose["services"]["web"]["command"])
    assert "manage.py migrate" in command and "daphne" in command and "lab.asgi:application" in command


def test_workers_consume_the_cpu_and_gpu_queues(compose: dict[str, Any]) -> None:
    from lab.celery import app

    queues = {q.name for q in app.conf.task_queues}
    worker, gpu = compose["services"]["worker"]["command"], compose["services"]["gpu-worker"]["command"]
    assert worker[:3] == ["celery", "-A", "lab"] and worker[worker.index("-Q") + 1] == "cpu"
    assert gpu[gpu.index("-Q") + 1] == "gpu"
    assert {"cpu", "gpu"} <= queues
    device = compose["services"]["gpu-worker"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert device["driver"] == "nvidia" and "gpu" in device["capabilities"]


def test_vllm_is_optional_and_openai_compatible(compose: dict[str, Any]) -> None:
    vllm = compose["services"]["vllm"]
    assert vllm["profiles"] == ["vllm", "scaled"]
    assert "vllm-openai" in vllm["image"]


@pytest.mark.parametrize("service", ["web", "worker", "gpu-worker", "cpu-workers", "gpu-worker-cuda"])
def test_app_services_set_only_variables_the_settings_read(compose: dict[str, Any], service: str) -> None:
    environment = compose["services"][service]["environment"]
    known = settings_variables()
    assert set(environment) <= known, f"{service} sets variables nothing reads: {set(environment) - known}"
    for required in ("DATABASE_URL", "REDIS_URL", "DJANGO_SECRET_KEY"):
        assert required in environment


def test_compose_urls_pass_the_settings_checks(compose: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    environment = compose["services"]["web"]["environment"]
    monkeypatch.setenv("DATABASE_URL", environment["DATABASE_URL"])
    monkeypatch.setenv("REDIS_URL", environment["REDIS_URL"])
    assert lab_env.env_url("DATABASE_URL", schemes=("postgres", "postgresql", "sqlite")).startswith("postgres://")
    assert lab_env.env_url("REDIS_URL", schemes=("redis", "rediss")).startswith("redis://")
    assert lab_env.env_bool("DJANGO_DEBUG") is False or environment["DJANGO_DEBUG"] == "0"


def test_settings_refuse_bad_values_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("REDIS_URL", "http://redis:6379")
    with pytest.raises(ImproperlyConfigured, match="REDIS_URL"):
        lab_env.env_url("REDIS_URL", schemes=("redis", "rediss"))
    monkeypatch.setenv("PRACTICUM_MAX_UPLOAD_BYTES", "lots")
    with pytest.raises(ImproperlyConfigured, match="not an integer"):
        lab_env.env_int("PRACTICUM_MAX_UPLOAD_BYTES", 1)
    monkeypatch.setenv("DJANGO_DEBUG", "maybe")
    with pytest.raises(ImproperlyConfigured, match="not a boolean"):
        lab_env.env_bool("DJANGO_DEBUG")
    monkeypatch.setenv("PRACTICUM_ALLOWED_PRIVATE_NETWORKS", "10.0.0.0/8, lan")
    with pytest.raises(ImproperlyConfigured, match="'lan' is not a CIDR network"):
        lab_env.env_networks("PRACTICUM_ALLOWED_PRIVATE_NETWORKS")


@pytest.mark.parametrize(
    ("raw", "message"),
    [("{not json", "is not valid JSON"), ('["openai"]', "must be a JSON object"),
     ('{"x": {"base_url": "file:///etc/passwd"}}', "must be an http(s) URL"),
     ('{"x": {"base_url": "https://u:p@h/v1"}}', "no user:password"),
     ('{"x": {"base_url": "https://h/v1", "key_env": "A B"}}', "must be the name of an environment variable"),
     ('{"x": {"base_url": "https://h/v1", "key": "sk-inline"}}', "must be an object with base_url"),
     ('{"a b": {"base_url": "https://h/v1"}}', "a name is letters"),
     ('{"x": {"base_url": "https://h/v1", "base_urls": ["https://h/v1"]}}', "base_url (or base_urls, a list)"),
     ('{"x": {"base_urls": []}}', "base_urls=[] must be a non-empty list"),
     ('{"x": {"base_urls": ["http://a/v1", "ftp://b"]}}', "['x'].base_urls[1]='ftp://b' must be an http(s) URL"),
     ('{"x": {"base_urls": ["http://a/v1", "http://a/v1/"]}}', "lists a URL twice"),
     ('{"x": {"base_urls": ["http://a/v1"], "max_in_flight": -1}}', "max_in_flight=-1 must be an integer")],
)  # fmt: skip
def test_endpoint_settings_refuse_bad_values_loudly(monkeypatch: pytest.MonkeyPatch, raw: str, message: str) -> None:
    from django.core.exceptions import ImproperlyConfigured

    monkeypatch.setenv("PRACTICUM_ENDPOINTS", raw)
    with pytest.raises(ImproperlyConfigured, match=re.escape(message)):
        lab_env.env_endpoints("PRACTICUM_ENDPOINTS", defaults={})


def test_older_variables_imply_endpoints_that_the_declared_ones_override(monkeypatch: pytest.MonkeyPatch) -> None:
    implied = {
        "openai": {"base_url": "https://api.openai.com/v1", "key_env": "OPENAI_API_KEY"},
        "vllm": {"base_url": "http://vllm:8000/v1"},
    }
    monkeypatch.delenv("PRACTICUM_ENDPOINTS", raising=False)
    assert lab_env.env_endpoints("PRACTICUM_ENDPOINTS", defaults=implied) == {
        "openai": {"base_url": "https://api.openai.com/v1", "key_env": "OPENAI_API_KEY"},
        "vllm": {"base_url": "http://vllm:8000/v1", "key_env": ""},
    }
    monkeypatch.setenv("PRACTICUM_ENDPOINTS", '{"openai": {"base_url": "https://gateway.example.com/v1/", "key_env": "GATEWAY_KEY"}}')
    assert lab_env.env_endpoints("PRACTICUM_ENDPOINTS", defaults=implied)["openai"] == {
        "base_url": "https://gateway.example.com/v1",
        "key_env": "GATEWAY_KEY",
    }


def test_a_pool_of_servers_is_declared_under_one_name_with_a_cap_per_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "PRACTICUM_ENDPOINTS", '{"fleet": {"base_urls": ["http://gpu-1:8000/v1/", "http://gpu-2:8000/v1"], "max_in_flight": 16}}'
    )
    assert lab_env.env_endpoints("PRACTICUM_ENDPOINTS", defaults={}) == {
        "fleet": {
            "base_url": "http://gpu-1:8000/v1",
            "key_env": "",
            "base_urls": ["http://gpu-1:8000/v1", "http://gpu-2:8000/v1"],
            "max_in_flight": 16,
        }
    }


def test_the_scaled_profile_adds_cpu_workers_a_cuda_gpu_worker_and_a_pooled_vllm(compose: dict[str, Any]) -> None:
    services = compose["services"]
    cpu, gpu = services["cpu-workers"], services["gpu-worker-cuda"]
    assert cpu["profiles"] == gpu["profiles"] == ["scaled"] and cpu["deploy"]["replicas"] >= 2
    assert cpu["command"][cpu["command"].index("-Q") + 1] == "cpu" and gpu["command"][gpu["command"].index("-Q") + 1] == "gpu"
    assert "cu1" in gpu["build"]["args"]["TORCH_SPEC"] and "gpu" in gpu["build"]["args"]["EXTRAS"]
    assert gpu["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    # the same database and broker as the rest; the vLLM server reached as a pool through a declared endpoint
    for service in (cpu, gpu):
        assert service["environment"]["DATABASE_URL"] == services["web"]["environment"]["DATABASE_URL"]
        assert service["environment"]["REDIS_URL"] == services["web"]["environment"]["REDIS_URL"]
    pool = json.loads(cpu["environment"]["PRACTICUM_ENDPOINTS"])["vllm"]
    assert pool["base_urls"] == ["http://vllm:8000/v1"] and pool["max_in_flight"] > 0
