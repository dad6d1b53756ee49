from __future__ import annotations

import json

import pytest
import torch

from training import ConfigError, run_recipe
from training.recipes.graphopd import (
    GraphOPDConfig,
    fuse,
    keep_count,
    normalised_ranks,
    rollout_credit,
    select_steps,
    step_divergence_sums,
)


def _select(divergence, credit, selection, fusion="rank", seed=0):
    return select_steps(
        divergence, credit, selection=selection, keep_fraction=0.5, fusion=fusion, generator=torch.Generator().manual_seed(seed)
    )


def _step(index, source="agent", events=()):
    return {"index": index, "source": source, "events": list(events)}


def test_it_keeps_the_ceiling_of_the_fraction_of_steps():
    assert [keep_count(n, 0.5) for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]
    assert keep_count(3, 1.0) == 3 and keep_count(3, 1 / 3) == 1


def test_ranks_are_normalised_and_ties_share_their_average_rank():
    assert normalised_ranks({0: 0.1, 1: 0.5, 2: 0.3}) == {0: 0.0, 1: 1.0, 2: 0.5}
    assert normalised_ranks({0: 0.2, 1: 0.2, 2: 0.9}) == {0: 0.25, 1: 0.25, 2: 1.0}
    assert normalised_ranks({7: -3.0}) == {7: 1.0}


def test_fusions_by_hand():
    credit, divergence = {0: 0.5, 2: 0.3, 4: 0.2}, {0: 0.0, 2: 0.4, 4: 0.2}
    # ranks: credit 1, 0.5, 0; divergence 0, 1, 0.5
    assert fuse(credit, divergence, "rank") == {0: 0.5, 2: 0.75, 4: 0.25}
    # product: credit / 0.5 = 1, 0.6, 0.4; divergence / 0.4 = 0, 1, 0.5
    assert fuse(credit, divergence, "product") == pytest.approx({0: 0.0, 2: 0.6, 4: 0.2})
    # mix:0.25: min-max credit 1, 1/3, 0; min-max divergence 0, 1, 0.5
    assert fuse(credit, divergence, "mix:0.25") == pytest.approx({0: 0.25, 2: 0.25 / 3 + 0.75, 4: 0.375})


def test_each_selection_keeps_its_top_steps():
    divergence = {0: 0.9, 2: 0.1, 4: 0.5}
    credit = {0: 0.2, 2: 0.5, 4: 0.3}
    assert _select(divergence, credit, "divergence") == {0, 4}
    assert _select(divergence, credit, "graph") == {2, 4}
    # ranks: credit 0, 1, 0.5; divergence 1, 0, 0.5 -> fused 0.5, 0.5, 0.5: all tied, the earlier steps win
    assert _select(divergence, credit, "graphopd") == {0, 2}
    assert _select(divergence, {0: 0.2, 2: 0.3, 4: 0.5}, "graphopd") == {0, 4}
    assert _select(divergence, credit, "all") == {0, 2, 4}


def test_without_graph_edges_graphopd_uses_divergence_and_graph_falls_back_to_random():
    divergence = {0: 0.1, 1: 0.7, 2: 0.3, 3: 0.9}
    assert _select(divergence, None, "graphopd") == {1, 3}
    for seed in range(5):
        assert _select(divergence, None, "graph", seed=seed) == _select(divergence, None, "random", seed=seed)


def test_random_keeps_the_same_count_and_depends_only_on_its_generator():
    divergence = {i: float(i) for i in range(6)}
    draws = [_select(divergence, None, "random", seed=s) for s in range(8)]
    assert all(len(d) == 3 for d in draws)
    assert draws == [_select(divergence, None, "random", seed=s) for s in range(8)]
    assert len({frozenset(d) for d in draws}) > 1


def test_credit_comes_from_the_events_and_flows_to_the_writers():
    record = {
        "header": {"env": "toolgym"},
        "steps": [
            _step(0, "env"),
            _step(1, events=[{"entity": "item:alice", "op": "write"}]),
            _step(2, "env"),
            _step(3, events=[{"entity": "item:alice", "op": "read"}, {"entity": "color:lamp", "op": "write"}]),
            _step(4, "env"),
            _step(5, events=[{"entity": "color:lamp", "op": "read"}]),
        ],
    }
    credit, writers = rollout_credit(record, damping=0.85)
    assert writers == {1, 3}
    assert credit is not None and set(credit) == {1, 3, 5}
    assert credit[1] > credit[3] > credit[5]  # step 1's write is what the whole chain was built on
    assert rollout_credit({"header": {}, "steps": [_step(1), _step(3)]}, damping=0.85) == (None, set())


def test_step_divergence_sums_score_each_token_at_the_position_before_it():
    kl = torch.tensor([[0.0, 1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0, 9.0]])  # (B=2, T-1=5) for T=6
    spans = [[(1, 2, 4), (3, 5, 6)], [(1, 1, 3), (1, 4, 6)]]
    assert step_divergence_sums(kl, spans) == [{1: (1.0 + 2.0, 2), 3: (4.0, 1)}, {1: (5.0 + 6.0 + 8.0 + 9.0, 4)}]


@pytest.mark.parametrize(
    "field, value", [("selection", "best"), ("keep_fraction", 0.0), ("keep_fraction", 1.5), ("fusion", "mix:2"), ("fusion", "sum")]
)
def test_it_rejects_bad_settings_by_name(field, value, tiny_path):
    with pytest.raises(ConfigError, match=field):
        GraphOPDConfig(model=str(tiny_path), teacher=str(tiny_path), **{field: value})


def test_a_graphopd_step_masks_out_the_dropped_steps_and_opd_keeps_all(tiny_path, tmp_path):
    from training.tiny import tiny_model_path

    common = {
        "model": str(tiny_path),
        "teacher": str(tiny_model_path(1)),
        "max_steps": 1,
        "tasks_per_step": 2,
        "group_size": 2,
        "max_turns": 3,
        "max_new_tokens": 16,
        "eval_episodes": 1,
        "eval_seed_start": 50_000,
        "task": "toolgym/chain",
    }
    rows = {}
    for selection in ("graphopd", "divergence", "all"):
        run_recipe("graphopd", {**common, "selection": selection, "output_dir": str(tmp_path / selection)})
        rows[selection] = [json.loads(line) for line in (tmp_path / selection / "metrics.jsonl").read_text().splitlines()][-1]
    kept, full = rows["graphopd"], rows["all"]
    assert full["kept_share"] == 1.0 and full["tokens"] == full["agent_tokens"]
    assert 0.5 <= kept["kept_share"] < 1.0 and kept["tokens"] < kept["agent_tokens"]
    assert kept["agent_tokens"] == full["agent_tokens"]  # same rollouts (same seed and step): only the mask differs
    # every rollout runs its 3 turns (a random model never answers), keeps 2 and drops 1: pooled means compare
    assert rows["divergence"]["divergence_kept"] > rows["divergence"]["divergence_dropped"] > 0


def test_on_chain_the_owner_step_carries_the_most_credit():
    from environments.toolgym.anchors import ExpertPolicy
    from training.scripted import scripted_episodes

    (record,) = scripted_episodes(ExpertPolicy(), "toolgym/chain", [0])
    credit, writers = rollout_credit(record, damping=0.85)
    assert credit is not None and writers == {1, 2}  # owner() and lookup() wrote what the next step read
    assert credit[1] > credit[2] > credit[3]
    assert _select({1: 0.0, 2: 0.0, 3: 0.0}, credit, "graph") == {1, 2}
