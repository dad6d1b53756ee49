"""Per-role accounting and the role views of lab.trajectories.roles, on hand-built team records."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from environments.trajectory import make_step, new_record
from lab.trajectories.models import Episode
from lab.trajectories.roles import episode_role_stats, episodes_with_role, role_examples, role_stats
from lab.trajectories.services import episode_to_record, episodes_ingest

pytestmark = pytest.mark.django_db


def _call(i: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": f"c{i}", "name": name, "arguments": arguments}


def _ok(i: int, error: bool = False) -> list[dict[str, Any]]:
    return [{"call_id": f"c{i}", "content": "ok", "is_error": error}]


def _consult_record(*, roles: dict[str, Any] | None = None) -> dict[str, Any]:
    steps = [
        make_step(index=0, source="env", message="the store opens"),
        make_step(index=1, tool_calls=[_call(1, "consult", question="restock or wait?")], results=_ok(1), token_ids=[5, 6]),
        make_step(index=2, role="consultant", tool_calls=[_call(2, "restock", sku="A", qty=5)], reasoning="stock is low", token_ids=[7]),
        make_step(index=3, tool_calls=[_call(3, "restock", sku="A", qty=5)], results=_ok(3), token_ids=[8, 9, 10]),
        make_step(index=4, tool_calls=[_call(4, "ask_critic")], results=_ok(4)),
        make_step(index=5, role="critic", message="watch the supplier"),
        make_step(index=6, tool_calls=[_call(6, "order", sku="B")], results=_ok(6, error=True)),
        make_step(index=7, tool_calls=[_call(7, "consult", question="now?")], results=_ok(7)),
        # as the runner (environments.team) records a consultation: the suggestion and its cost in meta, no calls
        make_step(
            index=8,
            role="consultant",
            reasoning="wait for the truck",
            meta={"suggested_calls": [{"name": "wait", "arguments": {}}], "cost": 0.05, "asked_at": 7, "question": "now?"},
        ),
        make_step(index=9, tool_calls=[_call(9, "restock", sku="B", qty=1)], results=_ok(9)),
    ]
    header = {
        "env": "toyenv",
        "task": "team-task",
        "seed": 0,
        "source": "upload",
        "score": {"composite": 0.7, "passed": True},
        "reward": 0.66,
        "team": {"consultant": {"cost": 0.02}},
    }
    if roles is not None:
        header["roles"] = roles
    return new_record(header=header, steps=steps)


def _store(project: Any, user: Any, record: dict[str, Any]) -> Episode:
    [outcome] = episodes_ingest(project=project, records=[copy.deepcopy(record)], user=user)
    return outcome.episode


def test_the_consultant_view_gives_each_decision_with_the_question_following_and_cost(project_a: Any, alice: Any) -> None:
    record = episode_to_record(_store(project_a, alice, _consult_record()))
    first, second = role_examples(record, role="consultant")
    assert (first["step_index"], first["actor_step"], first["question"]) == (2, 1, {"question": "restock or wait?"})
    assert first["suggestion"]["calls"] == [_call(2, "restock", sku="A", qty=5)] and first["suggestion"]["reasoning"] == "stock is low"
    assert first["followed"] is True and first["cost"] == 0.02 and first["token_ids"] == [7]
    assert first["outcome"] == {"composite": 0.7, "passed": True, "reward": 0.66}
    assert (second["actor_step"], second["question"], second["followed"], second["cost"]) == (7, "now?", False, 0.05)  # wait; restocked
    assert second["suggestion"] == {"calls": [{"name": "wait", "arguments": {}}], "message": None, "reasoning": "wait for the truck"}
    assert [s["index"] for s in second["history"]] == list(range(7))  # what the consultant saw: before the asking step
    assert [s["index"] for s in first["history"]] == [0, 1]


def test_the_critic_view_says_whether_asked_and_how_the_actor_fared_next(project_a: Any, alice: Any) -> None:
    [advice] = role_examples(episode_to_record(_store(project_a, alice, _consult_record())), role="critic")
    assert (advice["step_index"], advice["advice"], advice["asked"]) == (5, "watch the supplier", True)
    assert advice["followup"] == {"steps": 2, "failed": 1, "succeeded": False}  # 6 failed, 7 only consulted, 9 ok


def test_stats_come_from_the_header_and_else_from_the_steps(project_a: Any, alice: Any) -> None:
    counted = _store(project_a, alice, _consult_record())
    assert episode_role_stats(counted) == {
        "actor": {"turns": 6, "tokens": 5, "cost": 0.0},
        "consultant": {"turns": 2, "tokens": 1, "cost": 0.0},
        "critic": {"turns": 1, "tokens": 0, "cost": 0.0},
    }
    accounted = _consult_record(
        roles={"actor": {"turns": 6, "tokens": 5, "cost": 0}, "consultant": {"turns": 2, "tokens": 1, "cost": 0.04}}
    )
    accounted["header"]["seed"] = 1
    told = _store(project_a, alice, accounted)
    assert episode_role_stats(told)["consultant"] == {"turns": 2, "tokens": 1, "cost": 0.04}
    totals = role_stats([counted, told])
    assert totals["consultant"] == {"episodes": 2, "turns": 4, "tokens": 2, "cost": pytest.approx(0.04)}
    assert totals["critic"] == {"episodes": 1, "turns": 1, "tokens": 0, "cost": 0.0}


def test_episodes_with_a_role_are_found_by_its_column(project_a: Any, alice: Any, record_factory: Any) -> None:
    team = _store(project_a, alice, _consult_record())
    _store(project_a, alice, record_factory(steps=2))
    assert list(episodes_with_role(Episode.objects.all(), "critic")) == [team]
    assert list(episodes_with_role(Episode.objects.all(), "user")) == []


def test_the_cli_exports_a_roles_view_like_the_api(project_a: Any, alice: Any, alice_api: Any, tmp_path: Any) -> None:
    import json

    from django.core.management import CommandError, call_command

    _store(project_a, alice, _consult_record())
    out = tmp_path / "consultant.jsonl"
    call_command("export_dataset", project="acme", view="role", role="consultant", out=str(out))
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(line["step_index"], line["followed"]) for line in lines] == [(2, True), (8, False)]
    api_body = b"".join(alice_api.get("/api/v1/datasets/export?view=role&role=consultant").streaming_content)
    assert api_body.decode() == out.read_text()
    with pytest.raises(CommandError, match="role='' is not a role name"):
        call_command("export_dataset", project="acme", view="role", out=str(out))
    bad = alice_api.get("/api/v1/datasets/export?view=roles").json()["error"]
    assert (bad["code"], bad["path"]) == ("unknown_view", "view")
