"""Grading: the oracle's deliverable passes, and the cheap ways to satisfy a keyword rubric fail (listing every
candidate figure, copying whole files, flooding numbers, citing files never read, doing nothing)."""

from __future__ import annotations

from environments.workdesk.rubric import Item, check_item, numbers_in
from environments.workdesk.tasks import oracle_text
from tests.environments.workdesk.conftest import do, new_desk


def _hand_in(task: str, seed: int, text: str, *, read: bool = True) -> dict:
    env = new_desk(task, seed)
    if read:
        for path in env.desk.task.sources:
            do(env, "read_file", path=path)
    do(env, "write_file", path=env.desk.task.deliverable, content=text)
    do(env, "submit")
    return env.score().details


def _oracle(task: str, seed: int) -> str:
    env = new_desk(task, seed)
    return oracle_text(env.desk.task, env.graph)


def test_the_oracle_deliverable_scores_one_and_passes() -> None:
    report = _hand_in("analyst", 1000, _oracle("analyst", 1000))
    assert (report["score"], report["rubric"], report["audit"], report["passed"]) == (1.0, 1.0, 1.0, True)
    assert report["cited"] == ["finance/sales_2026_final.csv"] and report["gates"] == []


def test_listing_every_candidate_figure_fails() -> None:
    env = new_desk("analyst", 1000)
    nodes = env.graph.nodes
    right, stale, draft = (nodes[n].value for n in ("revenue_total/Q4", "stale/revenue_total/Q4", "draft/revenue_total/Q4"))
    hedged = _oracle("analyst", 1000).replace(
        f"- Q4 total revenue: {right:.2f}", f"- Q4 total revenue: {right} (v1: {stale}, draft: {draft})"
    )
    report = _hand_in("analyst", 1000, hedged)
    failed = {i["id"] for i in report["items"] if not i["ok"]}
    assert failed == {"figure:revenue_total/Q4", "forbid:stale/revenue_total/Q4", "forbid:draft/revenue_total/Q4"}
    assert not report["passed"] and report["score"] < 0.5  # 9 of 18.5 earned, minus 2 x 2 for the traps shown
    # The right line alone does not help when the candidates are listed elsewhere in the text.
    appendix = _oracle("analyst", 1000) + f"\n## Other candidates\n- v1 total {stale}\n- draft total {draft}\n"
    assert not _hand_in("analyst", 1000, appendix)["passed"]


def test_naming_every_region_as_the_leader_fails() -> None:
    env = new_desk("analyst", 1001)
    top = env.graph.nodes["top_region/Q4"].text
    text = _oracle("analyst", 1001).replace(f"- Q4 top region: {top}", "- Q4 top region: North, South, East or West")
    report = _hand_in("analyst", 1001, text)
    failed = {i["id"] for i in report["items"] if not i["ok"]}
    assert failed == {"answer:top_region/Q4", "forbid:draft/top_region/Q4"} and not report["passed"]


def test_copying_whole_files_is_refused() -> None:
    env = new_desk("hr", 1002)
    text = _oracle("hr", 1002) + "\n## Appendix\n" + env.desk.files["hr/roster.csv"]
    report = _hand_in("hr", 1002, text)
    assert report["score"] == 0.0 and not report["passed"]
    assert report["gates"] == ["41 lines copied verbatim from workspace files"]  # the header and 40 rows


def test_a_flood_of_numbers_is_refused() -> None:
    text = _oracle("operations", 1003) + "\n## Notes\n" + " ".join(str(x) for x in range(3, 30)) + "\n"
    report = _hand_in("operations", 1003, text)
    assert report["score"] == 0.0 and report["gates"] == ["28 numbers for 1 asked figures"]


def test_citing_a_file_never_read_fails_the_audit() -> None:
    text = _oracle("accountant", 1000)
    report = _hand_in("accountant", 1000, text, read=False)
    assert report["audit"] == 0.0 and report["score"] == 0.0 and not report["passed"]
    assert report["unread"] == ["finance/budget_2026.sheet.json", "finance/ledger_q4.csv"]
    # A 3-line peek at the ledger is not reading it; the whole ledger (33 lines, in two ranges) is: the grade halves.
    env = new_desk("accountant", 1000)
    do(env, "read_file", path="finance/ledger_q4.csv", start=1, end=3)
    assert env.desk.reads == set()
    do(env, "read_file", path="finance/ledger_q4.csv", start=4, end=17)
    do(env, "write_file", path=env.desk.task.deliverable, content=text)
    do(env, "submit")
    assert env.desk.reads == {"finance/ledger_q4.csv"}
    assert env.score().details["audit"] == 0.5 and env.score().composite == 0.5


def test_a_calc_table_counts_as_reading_the_file() -> None:
    env = new_desk("operations", 1004)
    w = env.desk.task.items[0].label.split()[0]
    got = do(env, "calc", program=f"round(avg(col(where(table('ops/shipments.csv'), 'warehouse', '==', '{w}'), 'lead_time_days')), 2)")
    assert got.content["value"] == env.desk.task.items[0].value
    do(env, "write_file", path=env.desk.task.deliverable, content=oracle_text(env.desk.task, env.graph))
    do(env, "submit")
    assert env.score().passed and env.score().details["audit"] == 1.0


def test_doing_nothing_scores_zero() -> None:
    env = new_desk("support-lead", 1000)
    do(env, "submit")
    score = env.score()
    assert (score.composite, score.passed, score.termination_reason) == (0.0, False, "agent_stop")
    assert score.details["gates"] == ["no deliverable written"]


def test_a_figure_line_must_hold_exactly_one_number() -> None:
    item = Item("figure:x", "figure", "x", label="Lyon average lead time", value=5.25, tolerance=0.02)
    assert check_item(item, "- Lyon average lead time: 5.26 days") == (True, "5.26 vs 5.25 (±0.02)")
    assert check_item(item, "- Lyon average lead time: 5.25 or 126")[0] is False
    assert check_item(item, "- Lyon average lead time: 5.3")[0] is False
    assert numbers_in("INV-4101 cost 1,234.50 EUR in Q4 from sales_2026_v1.csv") == [4101.0, 1234.5]


def test_the_drafts_claim_is_the_name_with_a_leading_cue_not_any_mention() -> None:
    claim = Item("forbid:c", "forbidden-claim", "c", answer="North", choices=("led", "top", "highest"))
    assert check_item(claim, "North grew slowest this quarter.\nSouth led Q4.")[0] is True
    assert check_item(claim, "Q4 was led by the North region.") == (False, "claims it: 'Q4 was led by the North region.'")
    assert check_item(claim, "- Q4 top region: north")[0] is False
