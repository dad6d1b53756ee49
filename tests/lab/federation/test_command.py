"""manage.py federate: the same roles as the API, and a federation run here to its end."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from lab.federation.models import FederationRound
from lab.federation.selectors import sharing_policy_current
from tests.lab.federation.exports import SKILL, make_export


def _federate(*args: str) -> str:
    out = StringIO()
    call_command("federate", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_policy_is_the_owners_to_set(role_users, project_a):
    with pytest.raises(CommandError, match="a researcher of acme may not change what the project shares"):
        _federate("policy", "acme", "--user", "researcher-user", "--share", "adapter")
    out = _federate("policy", "acme", "--user", "owner-user", "--share", "adapter,stats", "--canary", "catalogue.ref=cnry12345678")
    assert out.strip() == "acme shares adapter, stats; canaries: catalogue.ref"
    policy = sharing_policy_current(project=project_a)
    assert policy.kinds == ["adapter", "stats"] and policy.decided_by == role_users["owner"]
    with pytest.raises(CommandError, match="kinds: \\['weights'\\]"):
        _federate("policy", "acme", "--user", "owner-user", "--share", "weights")


def test_peer_needs_a_declared_endpoint(settings, alice, project_a):
    settings.PRACTICUM_FEDERATION_PEERS = {"partner-lab": {"base_url": "https://partner.example.org", "key_env": ""}}
    assert _federate("peer", "acme", "partner", "partner-lab", "--user", "alice").strip() == "peer partner -> partner-lab"
    with pytest.raises(CommandError, match="endpoint='https://elsewhere.example.com': a peer is an endpoint the operator declared"):
        _federate("peer", "acme", "other", "https://elsewhere.example.com", "--user", "alice")


@pytest.mark.slow
def test_start_run_federates_three_projects_here_and_list_shows_the_metrics(three_projects, tiny_model):
    out = _federate(
        "start",
        "acme",
        "--user",
        "alice",
        "--mode",
        "local",
        "--base-model",
        tiny_model,
        "--participant",
        "acme=fedgym/a",
        "--participant",
        "bravo=fedgym/b",
        "--participant",
        "charlie=fedgym/c",
        "--set",
        "rounds=1",
        "--set",
        "local_steps=1",
        "--set",
        "utility_episodes=1",
        "--set",
        "max_new_tokens=8",
        "--set",
        "max_turns=1",
        "--run",
    )
    federation = FederationRound.objects.get()
    assert f"federation {federation.pk}: finished" in out and "utility acme=" in out and "bytes exchanged=0.000" in out
    assert f"#{federation.pk}" in _federate("list", "--project", "acme")
    with pytest.raises(CommandError, match="--set rounds='two': give a number"):
        _federate("start", "acme", "--user", "alice", "--mode", "local", "--base-model", tiny_model, "--set", "rounds=two")


def test_start_without_workers_runs_here_and_names_a_base_model_missing_from_the_store(settings, three_projects):
    """Without REDIS_URL a queued federation would sit in this process's in-memory queue, which ends with it."""
    settings.CELERY_EMBEDDED = True
    out = _federate("start", "acme", "--user", "alice", "--mode", "local", "--base-model", "not-there", "--participant", "acme=fedgym/a")
    federation = FederationRound.objects.get()
    assert f"federation {federation.pk}: local, 1 participants (no REDIS_URL: running it here)" in out
    assert federation.status == "failed" and f"federation {federation.pk}: failed" in out
    assert federation.error == (
        f"FileNotFoundError: base_model 'not-there': no model at {settings.PRACTICUM_MODEL_STORE / 'not-there'} "
        "(a name is a folder in PRACTICUM_MODEL_STORE, holding config.json and the weights)"
    )


def test_list_shows_every_export_with_the_id_push_takes(project_a):
    passed = make_export(project_a, [SKILL])
    out = _federate("list", "--project", "acme")
    assert f"  export {passed.pk}: round 0, skills of acme, {passed.bytes} bytes, passed the gate" in out
    refused = make_export(project_a, [SKILL + " cnry-acme-ledger-7f3a9c"], canaries={"ledger.ref": "cnry-acme-ledger-7f3a9c"})
    out = _federate("list", "--project", "acme")
    assert f"  export {refused.pk}: round 0, skills of acme, {refused.bytes} bytes, refused: " in out
    assert "ledger.ref" in out and "cnry-acme-ledger-7f3a9c" not in out
