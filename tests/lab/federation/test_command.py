"""manage.py federate: the same roles as the API, and a federation run here to its end."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from lab.federation.models import FederationRound
from lab.federation.selectors import sharing_policy_current


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
    out = _federate("start", "acme", "--user", "alice", "--mode", "local", "--base-model", tiny_model, "--participant", "acme=fedgym/a",
                    "--participant", "bravo=fedgym/b", "--participant", "charlie=fedgym/c", "--set", "rounds=1", "--set", "local_steps=1",
                    "--set", "utility_episodes=1", "--set", "max_new_tokens=8", "--set", "max_turns=1", "--run")  # fmt: skip
    federation = FederationRound.objects.get()
    assert f"federation {federation.pk}: finished" in out and "utility acme=" in out and "bytes exchanged=0.000" in out
    assert f"#{federation.pk}" in _federate("list", "--project", "acme")
    with pytest.raises(CommandError, match="--set rounds='two': give a number"):
        _federate("start", "acme", "--user", "alice", "--mode", "local", "--base-model", tiny_model, "--set", "rounds=two")
