"""World generation, scenarios, RNG streams and the incremental state hash."""

from __future__ import annotations

import hashlib
import json
import marshal

import pytest

from environments.core import EnvError, ToolCall
from environments.policies import make_policy
from environments.registry import list_tasks, make, task_set
from environments.storebench.entities import PurchaseOrder, Sku, Ticket
from environments.storebench.env import StoreBenchEnv
from environments.storebench.scenario import SCENARIO_DIR, load_scenarios, validate_scenario
from environments.storebench.world import World
from environments.storebench.world_hash import part_digest, tuple_hash

from .conftest import do, new_store


def test_it_registers_eleven_evaluation_and_five_training_scenarios() -> None:
    tasks = list_tasks("storebench")
    assert len(tasks) == 16
    assert len(task_set("storebench/eval")) == 11
    assert len(task_set("storebench/train")) == 5
    assert {t.split for t in task_set("storebench/eval")} == {"dev", "test"}
    horizons = sorted(int(t.horizon.split()[0]) for t in task_set("storebench/eval"))
    assert horizons[-1] == 365 and all(30 <= h <= 45 for h in horizons[:-1])
    assert all(len(t.public_seeds) == 3 for t in tasks)


def test_the_same_seed_builds_the_same_world_and_another_seed_a_different_one() -> None:
    a, b, c = new_store(seed=3), new_store(seed=3), new_store(seed=4)
    assert a.state_hash() == b.state_hash()
    assert a.state_hash() != c.state_hash()
    assert [s.base_demand for s in a.world.skus.values()] == [s.base_demand for s in b.world.skus.values()]


def test_header_carries_versions_seed_and_tool_schema_hash(store) -> None:
    header = store.header()
    assert header["env"] == "storebench" and header["env_version"] == "2.0.0"
    assert header["task_version"] == "1.0" and header["seed"] == 5 and len(header["tool_schema_hash"]) == 16


def test_it_refuses_an_invalid_scenario_naming_the_field() -> None:
    data = json.loads((SCENARIO_DIR / "heat-wave.json").read_text())
    data["world"]["ops_per_window"] = -3
    with pytest.raises(EnvError, match=r"scenario\.world\.ops_per_window: -3 is below the minimum 5"):
        validate_scenario(data, "heat-wave.json")
    data = json.loads((SCENARIO_DIR / "heat-wave.json").read_text())
    data["shocks"][0]["day"] = [20, 10]
    with pytest.raises(EnvError, match=r"shocks\[0\]\.day"):
        validate_scenario(data, "heat-wave.json")


def test_it_refuses_a_scenario_file_whose_key_differs_from_its_name(tmp_path) -> None:
    data = json.loads((SCENARIO_DIR / "heat-wave.json").read_text())
    (tmp_path / "other-name.json").write_text(json.dumps(data))
    with pytest.raises(EnvError, match="must match the file name"):
        load_scenarios(tmp_path)


def test_rng_streams_are_independent_per_subsystem() -> None:
    scenario = load_scenarios()[0]
    a, b = World(scenario, 9), World(scenario, 9)
    for _ in range(100):
        a.rng["demand"].random()
    assert a.rng["suppliers"].random() == b.rng["suppliers"].random()
    assert a.rng["demand"].random() != b.rng["demand"].random()


@pytest.mark.parametrize("version", ["2.0.0", "1.0.0"])
@pytest.mark.parametrize("policy_name", ["random-valid", "smart-triage"])
def test_the_cached_state_hash_always_equals_a_full_rehash(policy_name: str, version: str) -> None:
    """Every mutation must mark its state part; a missed touch would show up here as a mismatch."""
    env = make("storebench/quality-recall", seed=17, version=version)
    policy = make_policy(policy_name, env, 17)
    history: list = []
    for step in range(900):
        call = policy.act(history, env.tools()).tool_calls[0]
        result = env.step(call)
        history = [{"results": [{"content": result.content}]}]
        assert env.state_hash() == env.world.full_hash(), f"stale digest after {call.name} at step {step}"
        if env.done:
            break


def _played(version: str, steps: int) -> StoreBenchEnv:
    env = make("storebench/quality-recall", seed=17, version=version)
    policy = make_policy("smart-triage", env, 17)
    history: list = []
    for _ in range(steps):
        result = env.step(policy.act(history, env.tools()).tool_calls[0])
        history = [{"results": [{"content": result.content}]}]
    return env


@pytest.mark.parametrize("version", ["2.0.0", "1.0.0"])
def test_rows_hashed_piece_by_piece_give_the_bytes_of_one_marshal_of_every_row(version: str) -> None:
    """The SKU, PO and ticket parts keep one marshalled row each; their digest must be that of the whole list."""
    world = _played(version, 300).world
    assert world.pos and world.tickets
    for part, items, cls in (("skus", world.skus, Sku), ("pos", world.pos, PurchaseOrder), ("tickets", world.tickets, Ticket)):
        rows = [world._rows[cls](item) for item in items.values()]
        if part == "pos":
            rows = [(row[:-1], sorted(row[-1].items())) for row in rows]
        assert part_digest(world, part) == hashlib.sha256(marshal.dumps(rows, 2)).digest(), part


def test_tuple_hash_is_the_interpreters_hash_of_a_tuple_from_its_items_hashes() -> None:
    for items in [(), (1,), (-1, -2, 2**64, "x"), tuple(range(625)), ((1, 2), (3,), 0.5)]:
        assert tuple_hash([hash(item) for item in items]) == hash(items)


def test_the_open_orders_index_is_the_open_orders_of_the_book_oldest_first_also_after_a_restore() -> None:
    env = _played("2.0.0", 400)
    world = env.world
    scan = [o for o in world.orders.values() if o.status == "open"]
    assert scan and world.orders_with("open") == scan
    assert any(o.status != "open" for o in world.orders.values())  # shipped and cancelled orders left the index
    env.restore(env.snapshot())
    assert [o.id for o in env.world.orders_with("open")] == [o.id for o in scan]
    do(env, "fulfil_orders")
    assert env.world.orders_with("open") == [o for o in env.world.orders.values() if o.status == "open"]


def test_settlement_moves_the_clock_and_books_fixed_costs(store) -> None:
    cash = store.world.cash
    result = do(store, "end_window")
    assert result.content["day"] == 1
    assert store.world.ledger.fixed == store.world.fixed_cost
    assert store.world.cash != cash
    assert result.content["new_orders"] > 0


def test_a_full_horizon_of_end_window_finishes_the_episode() -> None:
    env = new_store("launch-week", seed=2)
    for _ in range(30):
        result = env.step(ToolCall(name="end_window", arguments={}))
    assert env.done and result.done and result.termination_reason == "horizon_reached"
    assert env.step(ToolCall(name="get_finance", arguments={})).is_error
