from __future__ import annotations

from typing import Any

import pytest
import torch

from environments.trajectory import make_step, new_record
from training.data import tokenize_record
from training.graph_credit import fuse_with_divergence, graph_step_weights

TOOLS = [
    {"type": "function", "function": {"name": "op", "description": "Do one thing.", "parameters": {"type": "object", "properties": {}}}}
]


def events(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"op": op, "entity": entity, "field": "*", "before": None, "after": None} for op, entity in pairs]


def credited_record() -> dict[str, Any]:
    """Edges 1->2, 1->3, 2->3: at damping 1/2 the credit is 15/33, 10/33, 8/33 (tests/environments/diagnosis)."""
    step_events = {
        1: events(("write", "x:1"), ("write", "y:1")),
        2: events(("read", "x:1"), ("write", "z:1")),
        3: events(("read", "y:1"), ("read", "z:1")),
    }
    steps = [make_step(index=0, source="env", message="Begin.")]
    for i in (1, 2, 3):
        steps.append(
            make_step(
                index=i,
                source="agent",
                message=f"step {i}",
                tool_calls=[{"id": f"c{i}", "name": "op", "arguments": {}}],
                results=[{"call_id": f"c{i}", "content": {"ok": i}, "is_error": False}],
                events=step_events[i],
            )
        )
    return new_record(header={"env": "ledger", "task": "tight", "seed": 0, "source": "rollout", "tools": TOOLS}, steps=steps)


def test_graph_weights_keep_the_top_steps_normalised_to_mean_one() -> None:
    weights = graph_step_weights(credited_record(), top_fraction=2 / 3, damping=0.5)
    # top 2 of 3 by credit: steps 1 (15/33) and 2 (10/33); their mean is 12.5/33
    assert weights == pytest.approx({1: 15 / 12.5, 2: 10 / 12.5, 3: 0.0})
    assert graph_step_weights(credited_record(), top_fraction=1 / 3, damping=0.5, floor=0.1) == pytest.approx({1: 1.0, 2: 0.1, 3: 0.1})


def test_a_record_without_dependency_edges_keeps_every_step() -> None:
    record = credited_record()
    for step in record["steps"]:
        step["events"] = []
    assert graph_step_weights(record, top_fraction=0.2) == {1: 1.0, 2: 1.0, 3: 1.0}


def test_the_data_pipeline_option_weights_tokens_by_graph_credit(tokenizer: Any) -> None:
    record = credited_record()
    expected = graph_step_weights(record, top_fraction=2 / 3)
    (episode,) = tokenize_record(record, tokenizer, graph_credit=2 / 3)
    (plain,) = tokenize_record(record, tokenizer)
    assert episode.input_ids == plain.input_ids and episode.mask == plain.mask  # only the weights change
    for step, start, end in episode.agent_spans:
        assert episode.weights[start:end] == pytest.approx([expected[step]] * (end - start))
    assert {s for s, _, _ in episode.agent_spans} == {1, 2, 3}
    assert all(w == 0.0 for w, m in zip(episode.weights, episode.mask, strict=True) if not m)
    with pytest.raises(AssertionError, match="not both"):
        tokenize_record(record, tokenizer, graph_credit=0.5, step_weight=lambda s: 1.0)


def test_fusion_moves_the_weight_to_divergent_tokens_and_keeps_each_sequences_total() -> None:
    weights = torch.tensor([[0.0, 2.0, 2.0, 0.0], [1.0, 1.0, 0.0, 0.0]])  # (B, T)
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    divergence = torch.tensor([[5.0, 1.0, 3.0, 9.0], [0.0, -0.5, 0.0, 0.0]])
    fused = fuse_with_divergence(weights, divergence, mask)
    # row 0: w·d = [0, 2, 6, 0], total 8 rescaled to Σ m·w = 4 -> [0, 1, 3, 0]
    # row 1: no positive divergence among credited tokens -> the graph weights stay
    assert torch.allclose(fused, torch.tensor([[0.0, 1.0, 3.0, 0.0], [1.0, 1.0, 0.0, 0.0]]))
    assert torch.allclose((fused * mask).sum(-1), (weights * mask).sum(-1))
