"""The evidence graph of one seeded organisation: its records, the figures derived from them, and where each
figure appears in the workspace, in which form and with which status.

    graph = build_graph(seed)
    graph.nodes["revenue_total/Q4"].value            # a figure, computed from the sales records
    graph.appearances_of("revenue/North/Q4")          # [Appearance(path="finance/sales_2026_final.csv", ...), ...]

Figures are nodes; traps are nodes too (a stale version's figure, a draft's wrong claim), linked to the true
figure by "supersedes" / "contradicts" edges, so a rubric can point at both the right figure and the wrong one
it must not use. Files are rendered from the graph by render.py, which records each Appearance.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

REGIONS = ("North", "South", "East", "West")
QUARTERS = ("Q1", "Q2", "Q3", "Q4")
DEPARTMENTS = ("Sales", "Engineering", "Support", "Operations")
WAREHOUSES = ("Lyon", "Leeds", "Lodz")
TEAMS = ("Billing", "Technical", "Onboarding")
ORGS = ("Harbor Tools", "Quill Analytics", "Meridian Foods", "Copperleaf Health", "Northwind Cycles", "Bluefern Energy")


@dataclass(frozen=True)
class Node:
    """A fact: a figure (value and unit), a named answer (text), or a trap (a wrong value some file shows)."""

    id: str
    kind: str  # figure | answer | trap
    label: str
    value: float = 0.0
    unit: str = ""
    text: str = ""


@dataclass(frozen=True)
class Appearance:
    """Where a node is shown: a file, the form it takes there and whether that file is the one to trust."""

    node: str
    path: str
    form: str  # csv-rows | sheet-cell | slide-bullet | prose
    status: str  # current | stale | draft


@dataclass
class Graph:
    org: str
    seed: int
    records: dict[str, list[dict[str, Any]]]
    nodes: dict[str, Node] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)  # (node, relation, node)
    appearances: list[Appearance] = field(default_factory=list)

    def add(self, node: Node, *, derived_from: tuple[str, ...] = ()) -> Node:
        assert node.id not in self.nodes, f"node {node.id} added twice"
        self.nodes[node.id] = node
        self.edges.extend((node.id, "derived_from", source) for source in derived_from)
        return node

    def appearances_of(self, node: str) -> list[Appearance]:
        return [a for a in self.appearances if a.node == node]

    def current_paths(self, node: str) -> list[str]:
        return sorted({a.path for a in self.appearances_of(node) if a.status == "current"})

    def grounded(self, node: str, files: dict[str, str]) -> bool:
        """The node shows in a current file, or every node it is derived from does (a total from its parts)."""
        if any(p in files for p in self.current_paths(node)):
            return True
        parts = [dst for src, rel, dst in self.edges if src == node and rel == "derived_from"]
        return bool(parts) and all(self.grounded(p, files) for p in parts)


def _records(rng: random.Random) -> dict[str, list[dict[str, Any]]]:
    """Raw records: every figure is computed from these, never drawn on its own."""
    sales = []
    for region in REGIONS:
        level = rng.uniform(800, 2400)
        for quarter in QUARTERS:
            level *= rng.uniform(0.9, 1.15)
            sales.append({"region": region, "quarter": quarter, "revenue_keur": round(level, 1)})
    ledger = []
    for i in range(28):
        department = DEPARTMENTS[i % len(DEPARTMENTS)]
        status = "rejected" if rng.random() < 0.15 else "approved"
        ledger.append(
            {"invoice_id": f"INV-{4100 + i}", "department": department, "amount_eur": round(rng.uniform(900, 9800), 2), "status": status}
        )
    # Invoices exported twice (the ledger's duplicate rows): spend counts each invoice once.
    approved = [str(r["invoice_id"]) for r in ledger if r["status"] == "approved"]
    duplicates = [{"invoice_id": i} for i in sorted(rng.sample(approved, 4))]
    roster = []
    for i in range(40):
        department = rng.choice(DEPARTMENTS)
        roster.append({"employee_id": f"E{300 + i}", "department": department, "status": "left" if rng.random() < 0.18 else "active"})
    shipments = []
    for i in range(30):
        warehouse = WAREHOUSES[i % len(WAREHOUSES)]
        shipments.append({"shipment_id": f"S-{7700 + i}", "warehouse": warehouse, "lead_time_days": round(rng.uniform(1.0, 9.0), 1)})
    tickets = []
    for i in range(36):
        team = rng.choice(TEAMS)
        closed = rng.random() < 0.7
        tickets.append(
            {
                "ticket_id": f"T-{5200 + i}",
                "team": team,
                "status": "closed" if closed else "open",
                "resolution_hours": round(rng.uniform(2, 72), 1) if closed else "",
            }
        )
    return {"sales": sales, "ledger": ledger, "duplicates": duplicates, "roster": roster, "shipments": shipments, "tickets": tickets}


def _derive(graph: Graph, rng: random.Random) -> None:
    rec = graph.records
    for row in rec["sales"]:
        graph.add(
            Node(
                f"revenue/{row['region']}/{row['quarter']}",
                "figure",
                f"{row['quarter']} revenue {row['region']}",
                row["revenue_keur"],
                "kEUR",
            )
        )
    for quarter in QUARTERS:
        parts = tuple(f"revenue/{r}/{quarter}" for r in REGIONS)
        total = round(sum(graph.nodes[p].value for p in parts), 1)
        graph.add(Node(f"revenue_total/{quarter}", "figure", f"{quarter} total revenue", total, "kEUR"), derived_from=parts)
        top = max(REGIONS, key=lambda r: graph.nodes[f"revenue/{r}/{quarter}"].value)
        graph.add(Node(f"top_region/{quarter}", "answer", f"{quarter} top region", text=top), derived_from=parts)
    growth = 100 * (graph.nodes["revenue_total/Q4"].value - graph.nodes["revenue_total/Q3"].value) / graph.nodes["revenue_total/Q3"].value
    graph.add(Node("growth/Q4", "figure", "Q4 growth vs Q3", round(growth, 2), "%"), derived_from=("revenue_total/Q4", "revenue_total/Q3"))
    # The stale first version of the sales file had different Q4 numbers for every region.
    for region in REGIONS:
        true = graph.nodes[f"revenue/{region}/Q4"]
        stale = graph.add(Node(f"stale/revenue/{region}/Q4", "trap", true.label, round(true.value * rng.uniform(0.85, 0.95), 1), "kEUR"))
        graph.edges.append((true.id, "supersedes", stale.id))
    stale_total = round(sum(graph.nodes[f"stale/revenue/{r}/Q4"].value for r in REGIONS), 1)
    graph.add(Node("stale/revenue_total/Q4", "trap", "Q4 total revenue", stale_total, "kEUR"))
    graph.edges.append(("revenue_total/Q4", "supersedes", "stale/revenue_total/Q4"))
    # The draft memo claims a total and a leader that no final file supports.
    true_top = graph.nodes["top_region/Q4"].text
    wrong_top = rng.choice([r for r in REGIONS if r != true_top])
    graph.add(Node("draft/top_region/Q4", "trap", "Q4 top region", text=wrong_top))
    graph.add(Node("draft/revenue_total/Q4", "trap", "Q4 total revenue", round(graph.nodes["revenue_total/Q4"].value * 1.08, 1), "kEUR"))
    graph.edges += [("draft/top_region/Q4", "contradicts", "top_region/Q4"), ("draft/revenue_total/Q4", "contradicts", "revenue_total/Q4")]

    for department in DEPARTMENTS:
        rows = [r for r in rec["ledger"] if r["department"] == department and r["status"] == "approved"]
        spend = round(sum(r["amount_eur"] for r in rows), 2)
        budget = round(spend * rng.uniform(0.8, 1.2) / 100) * 100.0
        graph.add(Node(f"spend/{department}", "figure", f"{department} approved spend", spend, "EUR"))
        graph.add(Node(f"budget/{department}", "figure", f"{department} budget", budget, "EUR"))
        doubled = {d["invoice_id"] for d in rec["duplicates"]}
        with_duplicates = round(spend + sum(r["amount_eur"] for r in rows if r["invoice_id"] in doubled), 2)
        if with_duplicates != spend:
            trap = graph.add(Node(f"dup/spend/{department}", "trap", f"{department} approved spend", with_duplicates, "EUR"))
            graph.edges.append((f"spend/{department}", "contradicts", trap.id))
        graph.add(
            Node(f"variance/{department}", "figure", f"{department} variance to budget", round(spend - budget, 2), "EUR"),
            derived_from=(f"spend/{department}", f"budget/{department}"),
        )
        staff = [r for r in rec["roster"] if r["department"] == department]
        active, left = sum(r["status"] == "active" for r in staff), sum(r["status"] == "left" for r in staff)
        graph.add(Node(f"headcount/{department}", "figure", f"{department} active headcount", float(active), "people"))
        graph.add(Node(f"attrition/{department}", "figure", f"{department} attrition", round(100 * left / max(1, active + left), 1), "%"))
        stale = graph.add(
            Node(
                f"stale/headcount/{department}",
                "trap",
                f"{department} active headcount",
                float(active + left + rng.randint(1, 3)),
                "people",
            )
        )
        graph.edges.append((f"headcount/{department}", "supersedes", stale.id))
    for warehouse in WAREHOUSES:
        times = [r["lead_time_days"] for r in rec["shipments"] if r["warehouse"] == warehouse]
        graph.add(Node(f"lead_time/{warehouse}", "figure", f"{warehouse} average lead time", round(sum(times) / len(times), 2), "days"))
    for team in TEAMS:
        rows = [r for r in rec["tickets"] if r["team"] == team]
        backlog = float(sum(r["status"] == "open" for r in rows))
        hours = [r["resolution_hours"] for r in rows if r["status"] == "closed"]
        graph.add(Node(f"backlog/{team}", "figure", f"{team} open backlog", backlog, "tickets"))
        graph.add(Node(f"resolution/{team}", "figure", f"{team} mean resolution time", round(sum(hours) / max(1, len(hours)), 1), "hours"))
        stale = graph.add(Node(f"stale/backlog/{team}", "trap", f"{team} open backlog", backlog + rng.randint(3, 8), "tickets"))
        graph.edges.append((f"backlog/{team}", "supersedes", stale.id))


def build_graph(seed: int) -> Graph:
    """The organisation of `seed`: records, figures and traps; render.py adds the files and appearances."""
    rng = random.Random(f"workdesk-graph-{seed}")
    graph = Graph(org=rng.choice(ORGS), seed=seed, records=_records(rng))
    _derive(graph, rng)
    return graph
