"""FloWright's per-role rewards: hierarchical and structure-aware credit from one workflow episode's record.

    rewards = flowright_rewards(record, CreditWeights(outcome=1, node=1, graph=1, plan=1))
    rewards == {"generator": 0.5, "finder": 0.61, "reporter": 0.17}   # None for a role none of whose nodes ran

From the record's header (environments.workflow): the final composite O, the plan's graph and each node's status.
Per node n: q_n = 1 when it finished ("done"), else 0; desc(n) = every node that depends on n, directly or not;
ran(n) = it took a turn (done or failed: a skipped node never acted, so it says nothing about its role).

- subtree share g_n = (q_n + sum of q_d over d in desc(n)) / (1 + |desc(n)|): a node is credited for itself and for
  what it enabled, so a node that finished but whose dependents then failed earns less than one whose dependents
  finished too, and a failed node is blamed for the dependents it left skipped.
- a workflow role r, over its nodes that ran N_r:
      R_r = (w_o O + w_n mean_{N_r} q_n + w_g mean_{N_r} g_n) / (w_o + w_n + w_g)
  and None when no node of r ran (it took no turn: nothing to train, and it must not pull its group's baseline).
- the generator (the root every node depends on):
      R_gen = (w_o O + w_p F + w_g D) / (w_o + w_p + w_g),  F = |nodes that ran| / |nodes|,  D = mean over nodes of q_n
  F is the plan's feasibility: the share of its nodes the episode could carry out (a node is skipped when a
  dependency did not finish or the environment or the step budget ran out). A plan that did not validate earns 0.

Every reward lies in [0, 1] when O does. environments.workflow.role_rewards is the plain version (O times each
role's finished share); this one keeps the outcome as a shared term, so a role that did its part in a failed
episode still earns its node terms, and adds the graph's structure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from environments.records import Record, header_composite
from environments.workflow import GENERATOR


@dataclass(frozen=True)
class CreditWeights:
    outcome: float = 1.0
    """w_o: the episode's composite, shared by every role."""
    node: float = 1.0
    """w_n: a role's own nodes, the share of those that ran which finished."""
    graph: float = 1.0
    """w_g: a role's nodes with their dependents (subtree shares); for the generator, the whole graph's finished share."""
    plan: float = 1.0
    """w_p: the generator only: the plan's feasibility, the share of its nodes the episode could carry out."""

    def __post_init__(self) -> None:
        problems = [
            f"{name}={getattr(self, name)!r}: must not be negative"
            for name in ("outcome", "node", "graph", "plan")
            if getattr(self, name) < 0
        ]
        if self.outcome + self.node + self.graph <= 0:
            problems.append("outcome + node + graph must be positive: a workflow role's reward would be 0/0")
        if self.outcome + self.plan + self.graph <= 0:
            problems.append("outcome + plan + graph must be positive: the generator's reward would be 0/0")
        assert not problems, "; ".join(problems)


def dependents(graph: dict[str, Any]) -> dict[str, set[str]]:
    """Each node id -> every node that depends on it, directly or through others (the graph is acyclic)."""
    children: dict[str, set[str]] = {n["id"]: set() for n in graph["nodes"]}
    for node in graph["nodes"]:
        for dep in node.get("depends_on") or []:
            children[dep].add(node["id"])
    out: dict[str, set[str]] = {}

    def walk(node_id: str) -> set[str]:
        if node_id not in out:
            below = set(children[node_id])
            for child in children[node_id]:
                below |= walk(child)
            out[node_id] = below
        return out[node_id]

    for node_id in children:
        walk(node_id)
    return out


def subtree_shares(record: Record) -> dict[str, float]:
    """g_n for every node of the record's plan (module docstring); {} when the plan did not validate."""
    workflow = record["header"].get("workflow") or {}
    if not workflow.get("graph"):
        return {}
    finished = {n["id"]: float(n["status"] == "done") for n in workflow["nodes"]}
    return {
        node: (finished[node] + sum(finished[d] for d in below)) / (1 + len(below)) for node, below in dependents(workflow["graph"]).items()
    }


def flowright_rewards(record: Record, weights: CreditWeights = CreditWeights()) -> dict[str, float | None]:
    """Per-role rewards of one workflow record: the generator's and each team role's (module docstring)."""
    header = record["header"]
    outcome = float(header_composite(header, 0.0))
    workflow = header.get("workflow") or {}
    nodes = workflow.get("nodes") or []
    if not workflow.get("graph"):
        return {GENERATOR: 0.0}  # the plan did not validate: nothing ran, no role took a turn
    shares = subtree_shares(record)
    ran = [n for n in nodes if n["status"] in ("done", "failed")]
    feasibility = len(ran) / len(nodes)
    finished = sum(n["status"] == "done" for n in nodes) / len(nodes)
    out: dict[str, float | None] = {
        GENERATOR: (weights.outcome * outcome + weights.plan * feasibility + weights.graph * finished)
        / (weights.outcome + weights.plan + weights.graph)
    }
    for role in dict.fromkeys(n["role"] for n in nodes):
        mine = [n for n in ran if n["role"] == role]
        if not mine:
            out[role] = None
            continue
        own = sum(n["status"] == "done" for n in mine) / len(mine)
        graph = sum(shares[n["id"]] for n in mine) / len(mine)
        out[role] = (weights.outcome * outcome + weights.node * own + weights.graph * graph) / (
            weights.outcome + weights.node + weights.graph
        )
    return out
