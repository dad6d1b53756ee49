"""Kestrel Telecom's database: customers, lines, plans, bills, orders; seeded, plain JSON, no wall clock.

    db = new_db(seed)          # {"customers": {...}, "lines": {...}, "bills": {...}, "orders": {...}}
    db_hash(db)                # what the state hash and the expected-state comparison read

Everything is a dict of plain JSON values so a copy is `copy.deepcopy`, a comparison is `==` and a hash is a
hash of sorted JSON. "Today" is fixed (TODAY): dates in the data are relative to it, never to a clock.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import random
from typing import Any

TODAY = dt.date(2026, 3, 16)
DB = dict[str, Any]

# The catalogue is fixed: policy and tasks refer to these ids.
PLANS: dict[str, dict[str, Any]] = {
    "basic-5": {"name": "Basic 5GB", "monthly": 12.0, "data_gb": 5, "student_only": False},
    "plus-25": {"name": "Plus 25GB", "monthly": 22.0, "data_gb": 25, "student_only": False},
    "max-unlimited": {"name": "Max Unlimited", "monthly": 35.0, "data_gb": None, "student_only": False},
    "student-15": {"name": "Student 15GB", "monthly": 10.0, "data_gb": 15, "student_only": True},
}
PLAN_ORDER = ("basic-5", "student-15", "plus-25", "max-unlimited")  # by price; moving left is a downgrade
DEVICES = {"Falcon X2 phone": 399.0, "Kestrel Hub router": 89.0, "Wren earbuds": 59.0, "Osprey tablet": 249.0, "Fast charger": 19.0}

_FIRST = (
    "Amira",
    "Ben",
    "Chloe",
    "Dev",
    "Elena",
    "Farid",
    "Grace",
    "Hugo",
    "Ines",
    "Jonah",
    "Kira",
    "Liam",
    "Maya",
    "Noah",
    "Olga",
    "Priya",
    "Quinn",
    "Rosa",
    "Sami",
    "Tara",
    "Umar",
    "Vera",
    "Wes",
    "Yara",
)
_LAST = (
    "Okafor",
    "Lindqvist",
    "Moreau",
    "Patel",
    "Novak",
    "Haddad",
    "Brennan",
    "Silva",
    "Kowalski",
    "Ahmed",
    "Reyes",
    "Tanaka",
    "Fischer",
    "Osei",
    "Marsh",
    "Duarte",
)
_AREAS = ("KT1", "LS6", "BS3", "M14", "EH9", "CF24", "NG7", "G12", "B29", "SO17")
N_CUSTOMERS = 24


def iso(day: dt.date) -> str:
    return day.isoformat()


def days_ago(n: int) -> str:
    return iso(TODAY - dt.timedelta(days=n))


def days_ahead(n: int) -> str:
    return iso(TODAY + dt.timedelta(days=n))


def age_on_today(date_of_birth: str) -> int:
    born = dt.date.fromisoformat(date_of_birth)
    return TODAY.year - born.year - ((TODAY.month, TODAY.day) < (born.month, born.day))


def _customer(rng: random.Random, index: int) -> dict[str, Any]:
    first, last = rng.choice(_FIRST), rng.choice(_LAST)
    young = rng.random() < 0.3
    born = dt.date(2026 - (rng.randint(19, 24) if young else rng.randint(27, 70)), rng.randint(1, 12), rng.randint(1, 28))
    cid = f"C-{1001 + index}"
    return {
        "id": cid,
        "name": f"{first} {last}",
        "email": f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@example.net",
        "date_of_birth": iso(born),
        "postcode": f"{rng.choice(_AREAS)} {rng.randint(1, 9)}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}{rng.choice('ABDEFGHJLNPQRSTUWXYZ')}",
        "student": young and rng.random() < 0.7,
        "late_fee_waived_on": days_ago(rng.randint(30, 300)) if rng.random() < 0.3 else None,
        "payment_methods": [
            {"id": f"PM-{cid[2:]}{k}", "kind": kind, "last4": f"{rng.randint(0, 9999):04d}"}
            for k, kind in enumerate(rng.sample(["visa", "mastercard", "bank"], rng.randint(1, 2)))
        ],
        "notes": [],
    }


def _line(rng: random.Random, cid: str, index: int) -> dict[str, Any]:
    in_contract = rng.random() < 0.5
    return {
        "id": f"L-{2001 + index}",
        "customer_id": cid,
        "number": f"07{rng.randint(100, 999)} {rng.randint(100000, 999999)}",
        "plan_id": rng.choice(["basic-5", "plus-25", "plus-25", "max-unlimited"]),
        "status": "active",
        "roaming": rng.random() < 0.3,
        "contract_end": days_ahead(30 * rng.randint(2, 14)) if in_contract else None,
        "pac_issued": False,
    }


def _bill(rng: random.Random, cid: str, line: dict[str, Any], index: int, months_back: int) -> dict[str, Any]:
    year, month = divmod(TODAY.year * 12 + TODAY.month - 1 - months_back, 12)
    issued = dt.date(year, month + 1, 1)
    bid = f"B-{3001 + index}"
    charges = [
        {
            "id": f"{bid}-1",
            "kind": "plan",
            "description": f"{PLANS[line['plan_id']]['name']} monthly",
            "amount": PLANS[line["plan_id"]]["monthly"],
            "credited": False,
        }
    ]
    if rng.random() < 0.35:
        charges.append(
            {
                "id": f"{bid}-2",
                "kind": "roaming",
                "description": "Roaming data, EU",
                "amount": float(rng.choice([8, 14, 19, 27])),
                "credited": False,
            }
        )
    return {
        "id": bid,
        "customer_id": cid,
        "line_id": line["id"],
        "issued": iso(issued),
        "due": iso(issued + dt.timedelta(days=21)),
        "status": "paid" if months_back > 0 else "unpaid",
        "paid_with": None,
        "charges": charges,
    }


def _order(rng: random.Random, cid: str, index: int) -> dict[str, Any]:
    item = rng.choice(sorted(DEVICES))
    status = rng.choice(["processing", "shipped", "delivered", "delivered"])
    placed = rng.randint(2, 40)
    return {
        "id": f"O-{4001 + index}",
        "customer_id": cid,
        "item": item,
        "price": DEVICES[item],
        "status": status,
        "placed": days_ago(placed),
        "delivered_on": days_ago(rng.randint(0, placed - 1)) if status == "delivered" else None,
        "tracking": f"KT{rng.randint(10**8, 10**9 - 1)}" if status != "processing" else None,
        "notes": [],
        "refunded": 0.0,
    }


def new_db(seed: int) -> DB:
    """The database every task of `seed` starts from (a task then shapes its own customer: tasks.py)."""
    rng = random.Random(f"servicedesk/db/{seed}")
    db: DB = {"customers": {}, "lines": {}, "bills": {}, "orders": {}}
    n_lines = n_bills = n_orders = 0
    for i in range(N_CUSTOMERS):
        customer = _customer(rng, i)
        db["customers"][customer["id"]] = customer
        for _ in range(rng.randint(1, 2)):
            line = _line(rng, customer["id"], n_lines)
            n_lines += 1
            db["lines"][line["id"]] = line
            for back in (2, 1, 0):
                bill = _bill(rng, customer["id"], line, n_bills, back)
                n_bills += 1
                db["bills"][bill["id"]] = bill
        for _ in range(rng.randint(0, 2)):
            order = _order(rng, customer["id"], n_orders)
            n_orders += 1
            db["orders"][order["id"]] = order
    return db


def db_hash(db: DB) -> str:
    return hashlib.sha256(json.dumps(db, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


def bill_total(bill: dict[str, Any]) -> float:
    return round(sum(c["amount"] for c in bill["charges"] if not c["credited"]), 2)


def owner_of(db: DB, table: str, entity_id: str) -> str | None:
    row = db.get(table, {}).get(entity_id)
    if row is None:
        return None
    return str(row["id"] if table == "customers" else row["customer_id"])
