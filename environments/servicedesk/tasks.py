"""The service desk's task templates: a caller's goal, the facts they know, and what a correct agent achieves.

    goal = build_goal("cancel-line-in-contract", seed)   # the seeded database, shaped for this caller, and the goal
    TEMPLATES["cancel-line-in-contract"].split             # train | dev | test: splits are by template, not by seed

A template picks a customer from the seeded database and shapes their records so the situation holds (an order
that is still processing, a roaming charge on a line with roaming off, ...). The goal says:
    requests    what the caller wants, in their words (the first opens the conversation)
    facts       what the caller knows and gives when asked: phone, date_of_birth, postcode, and the task's own
    gold        the changes a correct agent makes (the expected database is these, replayed on the initial one)
    statements  what the agent must tell the caller (a name and a regular expression over its messages)
    outcome     resolve | refuse | transfer;  decline: the caller says no when asked to confirm
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from environments.servicedesk.world import DB, TODAY, days_ago, iso, new_db

PERSONAS = (
    "a nurse calling on a short break, practical and direct",
    "a retired teacher, polite and careful with details",
    "a student between lectures, casual",
    "a small-business owner who is often on the phone for work",
    "a parent sorting out the family's phones in the evening",
    "a software developer who likes exact answers",
)


@dataclass
class Goal:
    template: str
    customer_id: str
    requests: list[str]
    facts: dict[str, str]
    persona: str
    gold: list[dict[str, Any]] = field(default_factory=list)
    statements: list[dict[str, str]] = field(default_factory=list)  # {"name", "pattern", "say"}
    outcome: str = "resolve"
    decline: bool = False
    needs: list[str] = field(default_factory=list)  # facts to ask for before acting, beyond identity
    wrong_identity: bool = False  # the caller's answers do not verify (the agent must not change anything)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def money(amount: float) -> str:
    return f"£{amount:.2f}"


def money_re(amount: float) -> str:
    whole, cents = f"{amount:.2f}".split(".")
    return rf"\b{whole}\.{cents}\b" if cents != "00" else rf"\b{whole}(\.00)?\b(?!\.\d)"


def date_re(day: str) -> str:
    d = dt.date.fromisoformat(day)
    month = d.strftime("%B")
    return rf"{day}|\b{d.day}(st|nd|rd|th)? {month}\b|\b{month} {d.day}(st|nd|rd|th)?\b"


def stmt(name: str, pattern: str, say: str) -> dict[str, str]:
    return {"name": name, "pattern": pattern, "say": say}


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool": tool, "arguments": arguments}


class Ctx:
    """One caller being shaped: their customer row, the line they call about, and helpers that add records."""

    def __init__(self, db: DB, rng: random.Random) -> None:
        self.db, self.rng = db, rng
        self.customer = db["customers"][rng.choice(sorted(db["customers"]))]
        self.line = next(line for line in db["lines"].values() if line["customer_id"] == self.customer["id"])
        self.persona = rng.choice(PERSONAS)

    def facts(self, **extra: str) -> dict[str, str]:
        c = self.customer
        return {"phone": self.line["number"], "date_of_birth": c["date_of_birth"], "postcode": c["postcode"], **extra}

    def goal(self, template: str, requests: list[str], **kw: Any) -> Goal:
        facts = kw.pop("facts", None) or self.facts()
        return Goal(template=template, customer_id=self.customer["id"], requests=requests, facts=facts, persona=self.persona, **kw)

    def bills(self) -> list[dict[str, Any]]:
        return sorted((b for b in self.db["bills"].values() if b["line_id"] == self.line["id"]), key=lambda b: b["issued"])

    def overdue_bill(self) -> dict[str, Any]:
        bill = self.bills()[-2]  # last month's: due before today
        bill["status"] = "unpaid"
        return bill

    def charge(self, bill: dict[str, Any], kind: str, description: str, amount: float) -> dict[str, Any]:
        charge = {
            "id": f"{bill['id']}-{len(bill['charges']) + 1}",
            "kind": kind,
            "description": description,
            "amount": amount,
            "credited": False,
        }
        bill["charges"].append(charge)
        return charge

    def order(self, status: str, *, delivered_days_ago: int = 0) -> dict[str, Any]:
        oid = f"O-{4001 + len(self.db['orders']) + 500}"
        item = self.rng.choice(["Falcon X2 phone", "Kestrel Hub router", "Wren earbuds", "Osprey tablet"])
        prices = {"Falcon X2 phone": 399.0, "Kestrel Hub router": 89.0, "Wren earbuds": 59.0, "Osprey tablet": 249.0}
        order = {
            "id": oid,
            "customer_id": self.customer["id"],
            "item": item,
            "price": prices[item],
            "status": status,
            "placed": days_ago(delivered_days_ago + 4),
            "delivered_on": days_ago(delivered_days_ago) if status == "delivered" else None,
            "tracking": f"KT{self.rng.randint(10**8, 10**9 - 1)}" if status != "processing" else None,
            "notes": [],
            "refunded": 0.0,
        }
        self.db["orders"][oid] = order
        return order

    def set_age(self, years: int) -> None:
        # born after 16 March of the year before: exactly `years` old today
        self.customer["date_of_birth"] = iso(dt.date(TODAY.year - years - 1, self.rng.randint(4, 12), self.rng.randint(1, 28)))

    def other_customer(self) -> dict[str, Any]:
        others = sorted(cid for cid in self.db["customers"] if cid != self.customer["id"])
        return self.db["customers"][self.rng.choice(others)]


Template = Callable[[Ctx], Goal]


@dataclass(frozen=True)
class TemplateSpec:
    key: str
    split: str
    title: str
    build: Template


TEMPLATES: dict[str, TemplateSpec] = {}


def template(key: str, split: str, title: str) -> Callable[[Template], Template]:
    def register(build: Template) -> Template:
        assert key not in TEMPLATES and split in ("train", "dev", "test"), f"template {key} ({split})"
        TEMPLATES[key] = TemplateSpec(key, split, title, build)
        return build

    return register


def build_goal(key: str, seed: int) -> tuple[DB, Goal]:
    """The initial database of (template, seed) and the caller's goal; a pure function of both."""
    db = new_db(seed)
    ctx = Ctx(db, random.Random(f"servicedesk/task/{key}/{seed}"))
    goal = TEMPLATES[key].build(ctx)
    return db, goal


def expected_db(db: DB, goal: Goal) -> DB:
    """The database a correct agent leaves: the goal's changes replayed on a copy of the initial one."""
    from environments.servicedesk.tools import Desk, run_tool

    desk = Desk(db=copy.deepcopy(db))
    for step in goal.gold:
        content, is_error, _ = run_tool(desk, step["tool"], step["arguments"], judged=False)
        assert not is_error, f"{goal.template}: gold call {step} failed: {content}"
    return desk.db


def statement_made(pattern: str, messages: list[str]) -> bool:
    return any(re.search(pattern, m, re.I) for m in messages)
