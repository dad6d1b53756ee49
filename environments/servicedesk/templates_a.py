"""Task templates: plans, roaming and bills (POLICY.md sections 3-5). Registered into tasks.TEMPLATES."""

from __future__ import annotations

from environments.servicedesk.tasks import Ctx, Goal, call, date_re, money, money_re, stmt, template
from environments.servicedesk.world import PLANS, bill_total, days_ago, days_ahead

# --- plans -----------------------------------------------------------------------------------------------


def _on(ctx: Ctx, plan: str, contract: bool) -> None:
    ctx.line["plan_id"] = plan
    ctx.line["contract_end"] = days_ahead(ctx.rng.randint(3, 10) * 30) if contract else None


@template("upgrade-plus", "train", "Upgrade from Basic to Plus")
def _upgrade_plus(ctx: Ctx) -> Goal:
    _on(ctx, "basic-5", ctx.rng.random() < 0.5)
    return ctx.goal(
        "upgrade-plus",
        ["I keep running out of data. Can you move me to the Plus 25GB plan?"],
        gold=[call("change_plan", line_id=ctx.line["id"], plan_id="plus-25")],
    )


@template("upgrade-max", "train", "Upgrade from Plus to Max Unlimited")
def _upgrade_max(ctx: Ctx) -> Goal:
    _on(ctx, "plus-25", ctx.rng.random() < 0.5)
    return ctx.goal(
        "upgrade-max",
        ["I'd like to upgrade my line to the unlimited plan, please."],
        gold=[call("change_plan", line_id=ctx.line["id"], plan_id="max-unlimited")],
    )


@template("downgrade-in-contract", "train", "Downgrade in contract: the £25 fee is told and accepted")
def _downgrade_in_contract(ctx: Ctx) -> Goal:
    _on(ctx, "max-unlimited", True)
    return ctx.goal(
        "downgrade-in-contract",
        ["Unlimited is too expensive for me. Please move me down to the Plus 25GB plan."],
        gold=[call("change_plan", line_id=ctx.line["id"], plan_id="plus-25")],
        statements=[
            stmt("downgrade fee", money_re(25.0), "Because the line is in contract, the downgrade costs a £25.00 fee on your next bill.")
        ],
    )


@template("downgrade-out-of-contract", "dev", "Downgrade out of contract: no fee")
def _downgrade_free(ctx: Ctx) -> Goal:
    _on(ctx, "max-unlimited", False)
    return ctx.goal(
        "downgrade-out-of-contract",
        ["I hardly use any data. Can I go down to the Basic 5GB plan?"],
        gold=[call("change_plan", line_id=ctx.line["id"], plan_id="basic-5")],
    )


@template("downgrade-declines-fee", "test", "Downgrade in contract; the caller declines once told the fee")
def _downgrade_declines(ctx: Ctx) -> Goal:
    _on(ctx, "plus-25", True)
    return ctx.goal(
        "downgrade-declines-fee",
        ["I want to switch to the Basic 5GB plan, if it doesn't cost anything to switch."],
        decline=True,
        statements=[stmt("downgrade fee", money_re(25.0), "The line is in contract, so moving down costs a £25.00 fee.")],
    )


def _student(ctx: Ctx, age: int, student: bool) -> None:
    ctx.set_age(age)
    ctx.customer["student"] = student
    _on(ctx, "plus-25", False)


@template("student-eligible", "train", "A student under 26 moves to the Student plan")
def _student_ok(ctx: Ctx) -> Goal:
    _student(ctx, 21, True)
    return ctx.goal(
        "student-eligible",
        ["I'm at university now. Can I get the Student plan on my line?"],
        gold=[call("change_plan", line_id=ctx.line["id"], plan_id="student-15")],
    )


@template("student-not-student", "dev", "Refuse the Student plan to a non-student")
def _student_not(ctx: Ctx) -> Goal:
    _student(ctx, 23, False)
    return ctx.goal(
        "student-not-student",
        ["I'm 23, I heard there's a cheap Student plan. Can you put me on it?"],
        outcome="refuse",
        statements=[
            stmt(
                "eligibility",
                r"\bstudent status\b|\bnot (registered|marked|recorded|listed) as a student",
                "I'm sorry: the Student plan needs student status on the account, and yours has none.",
            )
        ],
    )


@template("student-too-old", "test", "Refuse the Student plan to a student of 26 or more")
def _student_old(ctx: Ctx) -> Goal:
    _student(ctx, 31, True)
    return ctx.goal(
        "student-too-old",
        ["I'm doing a part-time master's. Please switch me to the Student plan."],
        outcome="refuse",
        statements=[stmt("age limit", r"\b26\b", "I'm sorry: the Student plan is only for students under 26.")],
    )


# --- roaming ---------------------------------------------------------------------------------------------


def _paid_up(ctx: Ctx) -> None:
    for bill in ctx.db["bills"].values():
        if bill["customer_id"] == ctx.customer["id"] and bill["issued"] < days_ago(20):
            bill["status"] = "paid"


@template("roaming-on", "train", "Switch roaming on")
def _roaming_on(ctx: Ctx) -> Goal:
    _paid_up(ctx)
    ctx.line["roaming"] = False
    return ctx.goal(
        "roaming-on",
        ["I'm travelling to Spain next week. Can you turn on roaming for me?"],
        gold=[call("set_roaming", line_id=ctx.line["id"], enabled=True)],
    )


@template("roaming-off", "train", "Switch roaming off")
def _roaming_off(ctx: Ctx) -> Goal:
    ctx.line["roaming"] = True
    return ctx.goal(
        "roaming-off",
        ["I'm back home, please switch roaming off so I don't get charged."],
        gold=[call("set_roaming", line_id=ctx.line["id"], enabled=False)],
    )


@template("roaming-blocked-overdue", "dev", "Refuse roaming while a bill is overdue; tell the amount")
def _roaming_blocked(ctx: Ctx) -> Goal:
    ctx.line["roaming"] = False
    bill = ctx.overdue_bill()
    return ctx.goal(
        "roaming-blocked-overdue",
        ["Please turn roaming on, I fly to Lisbon tomorrow."],
        outcome="refuse",
        statements=[
            stmt(
                "amount outstanding",
                money_re(bill_total(bill)),
                f"I can't switch roaming on while a bill of {money(bill_total(bill))} is overdue.",
            )
        ],
    )


@template("pay-then-roaming", "test", "Pay the overdue bill with the named card, then switch roaming on")
def _pay_then_roaming(ctx: Ctx) -> Goal:
    ctx.line["roaming"] = False
    bill = ctx.overdue_bill()
    method = ctx.customer["payment_methods"][-1]
    return ctx.goal(
        "pay-then-roaming",
        ["I need roaming switched on for a trip. And I think I forgot to pay last month's bill, I can pay it now."],
        facts=ctx.facts(card_last4=method["last4"]),
        needs=["card_last4"],
        gold=[
            call("pay_bill", bill_id=bill["id"], payment_method_id=method["id"]),
            call("set_roaming", line_id=ctx.line["id"], enabled=True),
        ],
    )


# --- bills -----------------------------------------------------------------------------------------------


@template("pay-bill", "train", "Pay the overdue bill with the card the caller names")
def _pay_bill(ctx: Ctx) -> Goal:
    bill = ctx.overdue_bill()
    method = ctx.customer["payment_methods"][0]
    return ctx.goal(
        "pay-bill",
        ["I got a reminder that my bill is overdue. I'd like to pay it now by card."],
        facts=ctx.facts(card_last4=method["last4"]),
        needs=["card_last4"],
        gold=[call("pay_bill", bill_id=bill["id"], payment_method_id=method["id"])],
    )


def _roaming_charge(ctx: Ctx, roaming_on: bool, amount: float, back: int = 2) -> tuple[dict, dict]:  # type: ignore[type-arg]
    ctx.line["roaming"] = roaming_on
    bill = ctx.bills()[-back]
    bill["charges"] = [c for c in bill["charges"] if c["kind"] != "roaming"]
    return bill, ctx.charge(bill, "roaming", "Roaming data, EU", amount)


@template("credit-roaming-error", "train", "Credit a roaming charge billed while roaming was off")
def _credit_roaming(ctx: Ctx) -> Goal:
    bill, charge = _roaming_charge(ctx, False, float(ctx.rng.choice([14, 19, 27])))
    return ctx.goal(
        "credit-roaming-error",
        ["There's a roaming charge on my last bill but I haven't been abroad and roaming is off. Please remove it."],
        gold=[call("credit_charge", bill_id=bill["id"], charge_id=charge["id"])],
    )


@template("credit-roaming-valid", "dev", "Refuse to credit a roaming charge on a line with roaming on")
def _credit_valid(ctx: Ctx) -> Goal:
    bill, charge = _roaming_charge(ctx, True, float(ctx.rng.choice([8, 14, 19])))
    return ctx.goal(
        "credit-roaming-valid",
        ["Why is there a roaming charge on my bill? I want it taken off."],
        outcome="refuse",
        statements=[
            stmt(
                "charge amount",
                money_re(charge["amount"]),
                f"The roaming charge of {money(charge['amount'])} is valid: roaming was on for your line.",
            )
        ],
    )


def _late_fee(ctx: Ctx, waived_days_ago: int | None) -> tuple[dict, dict]:  # type: ignore[type-arg]
    ctx.customer["late_fee_waived_on"] = days_ago(waived_days_ago) if waived_days_ago is not None else None
    bill = ctx.bills()[-1]
    return bill, ctx.charge(bill, "late_fee", "Late payment fee", 5.0)


@template("waive-late-fee", "train", "Waive a first late fee")
def _waive(ctx: Ctx) -> Goal:
    bill, charge = _late_fee(ctx, None)
    return ctx.goal(
        "waive-late-fee",
        ["I was charged a late fee, I paid just a day late. Could you waive it this once?"],
        gold=[call("credit_charge", bill_id=bill["id"], charge_id=charge["id"])],
    )


@template("waive-late-fee-again", "test", "Refuse a second late-fee waiver within a year; tell its date")
def _waive_again(ctx: Ctx) -> Goal:
    waived = ctx.rng.randint(60, 300)
    _late_fee(ctx, waived)
    return ctx.goal(
        "waive-late-fee-again",
        ["Can you take the late fee off my bill please?"],
        outcome="refuse",
        statements=[
            stmt(
                "last waiver",
                date_re(days_ago(waived)),
                f"A late fee can be waived once a year, and yours was waived on {days_ago(waived)}.",
            )
        ],
    )


@template("credit-over-limit", "dev", "A credit above £50 goes to a human")
def _credit_over(ctx: Ctx) -> Goal:
    _roaming_charge(ctx, False, float(ctx.rng.choice([56, 64, 72])))
    return ctx.goal(
        "credit-over-limit",
        ["I've been billed a huge roaming charge with roaming switched off. I want it refunded."],
        outcome="transfer",
        gold=[call("transfer_to_human", summary="roaming charge credit above the £50 limit")],
    )


@template("bill-total", "train", "Tell the caller their latest bill's total")
def _bill_total(ctx: Ctx) -> Goal:
    bill = ctx.bills()[-1]
    return ctx.goal(
        "bill-total",
        ["How much is my latest bill?"],
        statements=[
            stmt("bill total", money_re(bill_total(bill)), f"Your latest bill, issued {bill['issued']}, is {money(bill_total(bill))}.")
        ],
    )


@template("two-roaming-credits", "test", "Credit two wrong roaming charges (within the £50 limit)")
def _two_credits(ctx: Ctx) -> Goal:
    bill1, charge1 = _roaming_charge(ctx, False, 14.0, back=3)
    bill2, charge2 = _roaming_charge(ctx, False, float(ctx.rng.choice([8, 19])), back=2)
    return ctx.goal(
        "two-roaming-credits",
        ["I've had roaming charges on my last two bills and I never turned roaming on. Please remove both."],
        gold=[
            call("credit_charge", bill_id=bill1["id"], charge_id=charge1["id"]),
            call("credit_charge", bill_id=bill2["id"], charge_id=charge2["id"]),
        ],
    )


@template("plan-info", "train", "Tell the caller their plan and contract end date")
def _plan_info(ctx: Ctx) -> Goal:
    _on(ctx, ctx.rng.choice(["basic-5", "plus-25", "max-unlimited"]), True)
    name, end = PLANS[ctx.line["plan_id"]]["name"], ctx.line["contract_end"]
    return ctx.goal(
        "plan-info",
        ["Which plan am I on, and when does my contract end?"],
        statements=[
            stmt("plan", name.split()[0] + r"\b", f"You are on {name}."),
            stmt("contract end", date_re(end), f"Your contract ends on {end}."),
        ],
    )
