"""The human beside every agent on a seed, turn by turn (lab/console/turns.py, /episodes/<id>/turns): turns aligned
across steps the environment interleaves, each column's first divergence by tool name or canonical arguments, the
reference chosen, the page bounded, scoped and read in a fixed number of queries however many columns (issue 44)."""

from __future__ import annotations

from typing import Any

import pytest

from environments.trajectory import make_step, new_record
from lab.console import turns
from lab.console.turns import canonical_arguments, first_turn_divergence, turn_action, turn_table
from lab.trajectories.models import Provenance
from lab.trajectories.services import episodes_ingest

pytestmark = pytest.mark.django_db


def _turn(index: int, name: str, arguments: Any, observation: Any = "ok", source: str = "agent", **extra: Any) -> dict[str, Any]:
    return make_step(
        index=index,
        source=source,
        tool_calls=[{"id": f"c{index}", "name": name, "arguments": arguments}],
        results=[{"call_id": f"c{index}", "content": observation, "is_error": False}],
        **extra,
    )


def _episode(
    project: Any,
    user: Any,
    calls: list[tuple[str, Any]],
    *,
    agent: str,
    source: str = "rollout",
    composite: float = 0.5,
    seed: int = 7,
    env_steps: bool = False,
    version: str = "1.0",
) -> Any:
    steps: list[dict[str, Any]] = []
    for name, arguments in calls:
        if env_steps:  # a world tick between decisions, as some records carry
            steps.append(make_step(index=len(steps), source="env", message="tick"))
        steps.append(_turn(len(steps), name, arguments, observation={"seen": name}, source="human" if source == "human" else "agent"))
    header = {
        "env": "toyenv",
        "env_version": version,
        "task": "shop",
        "seed": seed,
        "source": source,
        "policy": {"name": agent},
        "score": {"composite": composite, "passed": composite >= 0.5},
    }
    record = new_record(header=header, steps=steps)
    return episodes_ingest(project=project, records=[record], user=user, provenance=Provenance.RECORDED)[0].episode


HUMAN = [("look", {"sku": "A1", "qty": 2}), ("buy", {"sku": "A1", "qty": 2}), ("wait", {})]


def test_arguments_are_the_same_in_any_key_order_number_form_or_json_string_and_differ_otherwise() -> None:
    assert canonical_arguments({"sku": " A1 ", "qty": 2.0}) == canonical_arguments('{"qty": 2, "sku": "A1"}')
    assert canonical_arguments({"n": True}) != canonical_arguments({"n": 1})
    assert canonical_arguments({"sku": "a1"}) != canonical_arguments({"sku": "A1"})
    assert canonical_arguments({"qty": 2.5}) != canonical_arguments({"qty": 2})
    same, other_tool = _turn(0, "buy", {"a": 1}), _turn(0, "sell", {"a": 1})
    assert turn_action(same) == turn_action(_turn(5, "buy", '{"a": 1.0}'))  # call ids and indices never count
    assert turn_action(same) != turn_action(other_tool)


def test_a_column_diverges_at_its_first_different_turn_or_where_one_side_stops() -> None:
    ref = [_turn(i, name, args) for i, (name, args) in enumerate(HUMAN)]
    assert first_turn_divergence(ref, list(ref)) is None
    assert first_turn_divergence(ref, [ref[0], _turn(1, "buy", {"sku": "A1", "qty": 3}), ref[2]]) == 1  # arguments differ
    assert first_turn_divergence(ref, [ref[0], ref[1], _turn(2, "leave", {})]) == 2  # tool differs
    assert first_turn_divergence(ref, ref[:2]) == 2  # the agent stopped where the human went on
    assert first_turn_divergence(ref[:1], ref) == 1


def test_the_human_is_the_reference_beside_every_agent_aligned_by_turn(role_users: dict[str, Any], project_a: Any) -> None:
    owner = role_users["owner"]
    human = _episode(project_a, owner, HUMAN, agent="erin", source="human", composite=0.9)
    # The same decisions with world ticks between them: turn-aligned, it never diverges.
    twin = _episode(project_a, owner, HUMAN, agent="twin", composite=0.8, env_steps=True)
    rival = _episode(project_a, owner, [HUMAN[0], ("buy", {"qty": 5, "sku": "A1"}), ("wait", {})], agent="rival", composite=0.3)
    _episode(project_a, owner, HUMAN, agent="other-seed", seed=8)
    table = turn_table(episode=rival)  # opened from an agent's episode: the human is still the reference
    assert table.reference == human and [c.episode for c in table.columns] == [human, rival, twin]
    by_agent = {c.episode.agent.name if c.episode.agent else c.episode.source: c for c in table.columns}
    assert by_agent["twin"].divergence is None and by_agent["rival"].divergence == 1
    assert [row["index"] for row in table.rows] == [0, 1, 2]
    row = table.rows[1]
    assert row["any_first"] and [cell["first"] for cell in row["cells"]] == [False, True, False]
    assert row["cells"][2]["turn"]["results"][0]["content"] == {"seen": "buy"}  # the observation beside the action


def test_the_page_shows_columns_scores_and_the_marked_divergence(login: Any, role_users: dict[str, Any], project_a: Any) -> None:
    owner = role_users["owner"]
    human = _episode(project_a, owner, HUMAN, agent="erin", source="human", composite=0.9)
    rival = _episode(project_a, owner, [HUMAN[0], ("sell", {"sku": "A1"})], agent="rival", composite=0.25)
    html = login(role_users["viewer"]).get(f"/episodes/{human.pk}/turns").content.decode()
    assert html.count('class="turn-col') == 2 and "score 0.900" in html and "score 0.250" in html
    first = html.split('class="turn-cell first-divergence"', 1)[1].split("</td>", 1)[0]
    assert "diverges" in first and "<strong>sell</strong>" in first
    assert "diverges at <a" in html and "#turn-1" in html and f"?a={human.pk}&amp;b={rival.pk}" in html
    viewer = login(role_users["viewer"]).get(f"/episodes/{rival.pk}/").content.decode()
    assert f'href="/episodes/{rival.pk}/turns"' in viewer


def test_it_is_bounded_in_columns_and_turns_and_says_so(login: Any, role_users: dict[str, Any], project_a: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(turns, "MAX_COLUMNS", 3)
    monkeypatch.setattr(turns, "ROWS", 2)
    owner = role_users["owner"]
    human = _episode(project_a, owner, HUMAN, agent="erin", source="human")
    for i in range(4):
        _episode(project_a, owner, HUMAN[: i % 3 + 1], agent=f"agent-{i}", composite=i / 10)
    table = turn_table(episode=human)
    assert len(table.columns) == 3 and table.others == 4 and table.hidden == 2
    assert [row["index"] for row in table.rows] == [0, 1] and table.turn_count == 3
    html = login(role_users["viewer"]).get(f"/episodes/{human.pk}/turns", {"start": 2}).content.decode()
    assert "4 other episodes played this seed: the first 2 are shown" in html and 'id="turn-2"' in html and 'id="turn-0"' not in html


def test_it_reads_a_fixed_number_of_queries_however_many_columns(
    login: Any, role_users: dict[str, Any], project_a: Any, django_assert_max_num_queries: Any
) -> None:
    owner = role_users["owner"]
    human = _episode(project_a, owner, HUMAN, agent="erin", source="human")
    client = login(role_users["viewer"])
    client.get(f"/episodes/{human.pk}/turns")  # sessions and caches warm
    with django_assert_max_num_queries(8) as alone:
        client.get(f"/episodes/{human.pk}/turns")
    for i in range(6):
        _episode(project_a, owner, HUMAN[: i % 3 + 1], agent=f"agent-{i}", composite=i / 10)
    with django_assert_max_num_queries(len(alone.captured_queries)) as full:
        html = client.get(f"/episodes/{human.pk}/turns").content.decode()
    assert html.count('class="turn-col') == 7 and len(full.captured_queries) == len(alone.captured_queries) <= 8


def test_a_stranger_sees_no_episode(client: Any, bob: Any, role_users: dict[str, Any], project_a: Any) -> None:
    human = _episode(project_a, role_users["owner"], HUMAN, agent="erin", source="human")
    client.force_login(bob)
    assert client.get(f"/episodes/{human.pk}/turns").status_code == 404
