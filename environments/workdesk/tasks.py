"""Occupation-grounded task templates, composed into tasks, and the synthesis check that keeps only tasks whose
rubric the evidence graph confirms.

Each template (analyst, accountant, HR, operations, support lead) draws its subject (a department, a
warehouse, a team) from the task's RNG and returns an Ask: the lines of the brief, the rubric items tied to
graph nodes, the files a careful worker reads. A task composes asks (one occupation, or several for
`quarter-close`) and adds the required sections and citations. `verify` re-derives every expected value
from the graph, checks each trap differs from every right answer and each evidence node shows in a current
file, and grades the oracle's deliverable: a task that fails any of this is redrawn, never served.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from environments.workdesk.graph import DEPARTMENTS, REGIONS, TEAMS, WAREHOUSES, Graph
from environments.workdesk.rubric import Item, grade

CLAIM_CUES = ("led", "lead", "leading", "leader", "top", "highest", "largest", "best")  # words that make a region the leader


@dataclass(frozen=True)
class Ask:
    lines: tuple[str, ...]
    items: tuple[Item, ...]
    sources: tuple[str, ...]


@dataclass(frozen=True)
class WorkTask:
    key: str
    brief: str
    deliverable: str
    items: tuple[Item, ...]
    sources: tuple[str, ...]  # what the oracle reads and cites


def _figure(graph: Graph, node: str, tolerance: float, *, digits: int = 2) -> Item:
    n = graph.nodes[node]
    return Item(f"figure:{node}", "figure", f"{n.label} = {n.value:.{digits}f} {n.unit}", (node,), n.label, n.value, tolerance)


def _forbid(graph: Graph, node: str, tolerance: float) -> Item:
    n = graph.nodes[node]
    return Item(
        f"forbid:{node}", "forbidden-value", f"the wrong {n.label} {n.value:g} is absent", (node,), value=n.value, tolerance=tolerance
    )


def _line(graph: Graph, node: str, how: str) -> str:
    n = graph.nodes[node]
    return f"- {n.label}: ... ({n.unit}; {how})"


def analyst(graph: Graph, rng: random.Random) -> Ask:
    items = (
        _figure(graph, "revenue_total/Q4", 0.5, digits=1),
        _figure(graph, "growth/Q4", 0.05),
        Item(
            "answer:top_region/Q4",
            "answer",
            f"Q4 top region = {graph.nodes['top_region/Q4'].text}",
            ("top_region/Q4",),
            "Q4 top region",
            answer=graph.nodes["top_region/Q4"].text,
            choices=REGIONS,
        ),
        _forbid(graph, "stale/revenue_total/Q4", 0.5),
        _forbid(graph, "draft/revenue_total/Q4", 0.5),
        Item(
            "forbid:draft/top_region/Q4",
            "forbidden-claim",
            "the draft's leading region is not repeated",
            ("draft/top_region/Q4",),
            answer=graph.nodes["draft/top_region/Q4"].text,
            choices=CLAIM_CUES,
        ),
        Item(
            "forbid-source:stale-sales",
            "forbidden-source",
            "the superseded sales file is not cited",
            ("stale/revenue_total/Q4",),
            paths=("finance/sales_2026_v1.csv", "drafts/q4_memo_draft.md"),
        ),
    )
    lines = (
        _line(graph, "revenue_total/Q4", "sum of the regions"),
        _line(graph, "growth/Q4", "Q4 against Q3, 2 decimals"),
        "- Q4 top region: ... (the region with the highest Q4 revenue)",
    )
    return Ask(lines, items, ("finance/sales_2026_final.csv",))


def accountant(graph: Graph, rng: random.Random) -> Ask:
    department = rng.choice([d for d in DEPARTMENTS if f"dup/spend/{d}" in graph.nodes] or list(DEPARTMENTS))
    items = [_figure(graph, f"spend/{department}", 1.0), _figure(graph, f"variance/{department}", 1.0)]
    if f"dup/spend/{department}" in graph.nodes:  # a department without a doubled invoice has no duplicate trap
        items.append(_forbid(graph, f"dup/spend/{department}", 1.0))
    lines = (
        _line(graph, f"spend/{department}", "approved invoices, each counted once"),
        _line(graph, f"variance/{department}", "approved spend minus budget"),
    )
    return Ask(lines, tuple(items), ("finance/ledger_q4.csv", "finance/budget_2026.sheet.json"))


def hr(graph: Graph, rng: random.Random) -> Ask:
    department = rng.choice(DEPARTMENTS)
    items = (
        _figure(graph, f"headcount/{department}", 0.0),
        _figure(graph, f"attrition/{department}", 0.05),
        _forbid(graph, f"stale/headcount/{department}", 0.0),
        Item(
            f"forbid-source:{department}-chart",
            "forbidden-source",
            "the 2025 org chart is not cited",
            (f"stale/headcount/{department}",),
            paths=("hr/org_chart_2025.slides.json",),
        ),
    )
    lines = (
        _line(graph, f"headcount/{department}", "employees still active"),
        _line(graph, f"attrition/{department}", "leavers over everyone on the roster, 1 decimal"),
    )
    return Ask(lines, items, ("hr/roster.csv",))


def operations(graph: Graph, rng: random.Random) -> Ask:
    warehouse = rng.choice(WAREHOUSES)
    node = graph.nodes[f"lead_time/{warehouse}"]
    hours = Item(
        f"forbid:hours/{warehouse}",
        "forbidden-value",
        "the lead time is not reported in hours",
        (node.id,),
        value=round(node.value * 24),
        tolerance=0.5,
    )
    lines = (_line(graph, node.id, "mean over the warehouse's shipments, in days, 2 decimals"),)
    return Ask(lines, (_figure(graph, node.id, 0.02), hours), ("ops/shipments.csv",))


def support_lead(graph: Graph, rng: random.Random) -> Ask:
    team = rng.choice(TEAMS)
    items = (
        _figure(graph, f"backlog/{team}", 0.0),
        _figure(graph, f"resolution/{team}", 0.05),
        _forbid(graph, f"stale/backlog/{team}", 0.0),
        Item(
            f"forbid-source:{team}-w48",
            "forbidden-source",
            "last week's summary is not cited",
            (f"stale/backlog/{team}",),
            paths=("support/weekly_summary_w48.md",),
        ),
    )
    lines = (_line(graph, f"backlog/{team}", "tickets open now"), _line(graph, f"resolution/{team}", "mean over closed tickets, 1 decimal"))
    return Ask(lines, items, ("support/tickets.csv",))


Template = Callable[[Graph, random.Random], Ask]
TEMPLATES: dict[str, tuple[str, tuple[Template, ...], str]] = {
    # key: (the worker, the asks composed, the deliverable)
    "analyst": ("an analyst preparing the Q4 revenue brief", (analyst,), "out/q4_revenue_brief.md"),
    "accountant": ("an accountant reconciling Q4 spend against budget", (accountant,), "out/spend_variance.md"),
    "hr": ("an HR partner reporting headcount and attrition", (hr,), "out/headcount_report.md"),
    "operations": ("an operations lead reviewing warehouse lead times", (operations,), "out/lead_times.md"),
    "support-lead": ("a support lead reporting the team's backlog", (support_lead,), "out/support_status.md"),
    "quarter-close": ("the chief of staff closing the quarter", (analyst, accountant, hr), "out/quarter_close.md"),
}


def compose(key: str, graph: Graph, rng: random.Random) -> WorkTask:
    who, templates, deliverable = TEMPLATES[key]
    asks = [template(graph, rng) for template in templates]
    sources = tuple(dict.fromkeys(s for a in asks for s in a.sources))
    items = [i for a in asks for i in a.items]
    items += [Item(f"section:{s}", "section", f"a '## {s}' section", label=s, critical=False) for s in ("Summary", "Figures", "Sources")]
    items += [Item(f"source:{p}", "source", f"{p} is cited", (p,), paths=(p,)) for p in sources]
    brief = (
        f"You are {who} at {graph.org}. The shared drive is in the workspace (list_files, read_file, search; calc for "
        f"arithmetic over tables). Write {deliverable} in Markdown with the sections '## Summary', '## Figures' and "
        "'## Sources'. Under Figures, one line per figure exactly as below, the value alone after the colon:\n"
        + "\n".join(line for a in asks for line in a.lines)
        + "\nUnder Sources, the workspace paths you used. Use final files over stale versions and drafts; call submit when done."
    )
    return WorkTask(key, brief, deliverable, tuple(items), sources)


def oracle_text(task: WorkTask, graph: Graph) -> str:
    """The deliverable written from the graph itself: every figure right, every source current."""
    lines = ["# " + task.deliverable.rsplit("/", 1)[-1].removesuffix(".md").replace("_", " ").title(), "", "## Summary",
             f"Figures for {graph.org} from the final records.", "", "## Figures"]  # fmt: skip
    for item in task.items:
        if item.kind == "figure":
            lines.append(f"- {item.label}: {item.value:.2f}")
        elif item.kind == "answer":
            lines.append(f"- {item.label}: {item.answer}")
    lines += ["", "## Sources", *(f"- {p}" for p in task.sources)]
    return "\n".join(lines) + "\n"


def verify(task: WorkTask, graph: Graph, files: dict[str, str]) -> list[str]:
    """Why the task cannot be served (empty when its rubric is consistent with the graph)."""
    problems = []
    truths = [i for i in task.items if i.kind in ("figure", "answer")]
    for item in truths:
        node = graph.nodes[item.evidence[0]]
        if item.kind == "figure" and node.value != item.value:
            problems.append(f"{item.id}: expects {item.value}, the graph says {node.value}")
        if not graph.grounded(node.id, files):
            problems.append(f"{item.id}: no current file shows it or what it is derived from")
    for item in task.items:
        if item.kind == "forbidden-value":
            clashes = [t.id for t in truths if t.kind == "figure" and abs(t.value - item.value) <= max(t.tolerance, item.tolerance) + 0.01]
            problems += [f"{item.id}: the trap equals the right figure of {c}" for c in clashes]
        if item.kind in ("forbidden-claim",) and any(t.answer == item.answer for t in truths):
            problems.append(f"{item.id}: the forbidden claim is a right answer")
        if item.kind in ("source", "forbidden-source") and not all(p in files for p in item.paths):
            problems.append(f"{item.id}: cites a file the workspace lacks")
    report = grade(task.items, oracle_text(task, graph), files, set(task.sources), threshold=1.0)
    problems += [f"oracle fails {r['id']}: {r['why']}" for r in report["items"] if not r["ok"]] + report["gates"]
    return problems


def synthesize(key: str, graph: Graph, files: dict[str, str], seed: int, *, tries: int = 8) -> WorkTask:
    """The task `key` for this seed: the first draw whose rubric verifies against the graph."""
    rng = random.Random(f"workdesk-task-{key}-{seed}")
    failures: list[str] = []
    for _ in range(tries):
        task = compose(key, graph, rng)
        failures = verify(task, graph, files)
        if not failures:
            return task
    raise AssertionError(f"workdesk/{key} seed {seed}: no task verified in {tries} draws; last: {failures}")
