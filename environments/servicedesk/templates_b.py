"""Task templates: orders, lines, identity, transfers and two-request calls (POLICY.md sections 1, 6-8)."""

from __future__ import annotations

from environments.servicedesk.tasks import Ctx, Goal, call, date_re, money, money_re, stmt, template
from environments.servicedesk.tools import termination_fee
from environments.servicedesk.world import days_ahead

# --- orders ----------------------------------------------------------------------------------------------


@template("cancel-processing-order", "train", "Cancel an order that has not shipped")
def _cancel_order(ctx: Ctx) -> Goal:
    order = ctx.order("processing")
    return ctx.goal(
        "cancel-processing-order",
        [f"I ordered a {order['item']} a few days ago and changed my mind. Please cancel it."],
        facts=ctx.facts(order_id=order["id"]),
        needs=["order_id"],
        gold=[call("cancel_order", order_id=order["id"])],
    )


@template("cancel-shipped-order", "dev", "Refuse to cancel a shipped order; give the tracking number")
def _cancel_shipped(ctx: Ctx) -> Goal:
    order = ctx.order("shipped")
    return ctx.goal(
        "cancel-shipped-order",
        [f"Please cancel my order for the {order['item']}, I don't need it any more."],
        outcome="refuse",
        facts=ctx.facts(order_id=order["id"]),
        needs=["order_id"],
        statements=[
            stmt(
                "tracking",
                order["tracking"],
                f"It has already shipped (tracking {order['tracking']}), so it can't be cancelled; you can return it after delivery.",
            )
        ],
    )


@template("return-recent-order", "train", "Return a device delivered within 14 days")
def _return_recent(ctx: Ctx) -> Goal:
    order = ctx.order("delivered", delivered_days_ago=ctx.rng.randint(1, 12))
    return ctx.goal(
        "return-recent-order",
        [f"The {order['item']} I got isn't what I expected. I want to return it."],
        facts=ctx.facts(order_id=order["id"]),
        needs=["order_id"],
        gold=[call("return_order", order_id=order["id"])],
    )


@template("return-too-late", "test", "Refuse a return past 14 days; tell the delivery date")
def _return_late(ctx: Ctx) -> Goal:
    order = ctx.order("delivered", delivered_days_ago=ctx.rng.randint(20, 40))
    return ctx.goal(
        "return-too-late",
        [f"I'd like to send back the {order['item']} I bought, it's been sitting in its box."],
        outcome="refuse",
        facts=ctx.facts(order_id=order["id"]),
        needs=["order_id"],
        statements=[
            stmt(
                "delivery date",
                date_re(order["delivered_on"]),
                f"It was delivered on {order['delivered_on']}, more than 14 days ago, so it can't be returned.",
            )
        ],
    )


@template("order-status", "train", "Tell the caller where a shipped order is")
def _order_status(ctx: Ctx) -> Goal:
    order = ctx.order("shipped")
    return ctx.goal(
        "order-status",
        [f"Where is my {order['item']}? Has it been sent?"],
        facts=ctx.facts(order_id=order["id"]),
        needs=["order_id"],
        statements=[stmt("tracking", order["tracking"], f"Your order has shipped; the tracking number is {order['tracking']}.")],
    )


# --- lines -----------------------------------------------------------------------------------------------


@template("cancel-line-free", "train", "Cancel a line out of contract")
def _cancel_free(ctx: Ctx) -> Goal:
    ctx.line["contract_end"] = None
    return ctx.goal(
        "cancel-line-free", ["I'm moving abroad for good. Please cancel my line."], gold=[call("cancel_line", line_id=ctx.line["id"])]
    )


def _in_contract(ctx: Ctx) -> float:
    ctx.line["contract_end"] = days_ahead(ctx.rng.randint(2, 9) * 30 - 5)
    return termination_fee(ctx.line)


@template("cancel-line-in-contract", "dev", "Cancel a line in contract; tell the termination fee")
def _cancel_contract(ctx: Ctx) -> Goal:
    fee = _in_contract(ctx)
    return ctx.goal(
        "cancel-line-in-contract",
        ["I want to cancel my line, I've found a cheaper deal elsewhere."],
        gold=[call("cancel_line", line_id=ctx.line["id"])],
        statements=[
            stmt(
                "termination fee", money_re(fee), f"Your line is in contract, so cancelling costs an early termination fee of {money(fee)}."
            )
        ],
    )


@template("cancel-line-declines-fee", "train", "The caller declines the termination fee: no cancellation")
def _cancel_declines(ctx: Ctx) -> Goal:
    fee = _in_contract(ctx)
    return ctx.goal(
        "cancel-line-declines-fee",
        ["How about cancelling my line? I'd only do it if there's no penalty."],
        decline=True,
        statements=[stmt("termination fee", money_re(fee), f"The line is in contract: cancelling now costs {money(fee)}.")],
    )


@template("suspend-lost-phone", "train", "Suspend the line of a lost phone")
def _suspend(ctx: Ctx) -> Goal:
    return ctx.goal(
        "suspend-lost-phone",
        ["I lost my phone on the bus this morning. Can you block my line so nobody uses it?"],
        gold=[call("suspend_line", line_id=ctx.line["id"])],
    )


def pac_code(line_id: str) -> str:
    return f"PAC{int(line_id[2:]) * 7919 % 1000000:06d}"


@template("pac-holder", "train", "Issue a PAC to the account holder and read it out")
def _pac(ctx: Ctx) -> Goal:
    code = pac_code(ctx.line["id"])
    return ctx.goal(
        "pac-holder",
        ["I'm moving my number to another network. I need my PAC code."],
        gold=[call("issue_pac", line_id=ctx.line["id"])],
        statements=[stmt("pac", code, f"Your PAC is {code}; it is valid for 30 days.")],
    )


@template("pac-not-holder", "test", "Refuse a PAC to someone who is not the account holder")
def _pac_other(ctx: Ctx) -> Goal:
    partner = ctx.other_customer()
    facts = ctx.facts(date_of_birth=partner["date_of_birth"])  # they answer with their own birthday
    return ctx.goal(
        "pac-not-holder",
        ["Hi, I'm calling about my partner's phone. They asked me to get the PAC code for their number."],
        facts=facts,
        outcome="refuse",
        wrong_identity=True,
        statements=[stmt("holder only", r"account holder", "I can only give the PAC to the verified account holder.")],
    )


@template("update-email", "train", "Change the contact email")
def _email(ctx: Ctx) -> Goal:
    new = f"{ctx.customer['name'].split()[0].lower()}.new{ctx.rng.randint(10, 99)}@example.org"
    return ctx.goal(
        "update-email",
        ["I've changed my email address. Can you update it on my account?"],
        facts=ctx.facts(new_email=new),
        needs=["new_email"],
        gold=[call("update_email", customer_id=ctx.customer["id"], email=new)],
    )


@template("email-unverified", "dev", "A caller who cannot be verified gets no change")
def _email_unverified(ctx: Ctx) -> Goal:
    old_postcode = "ZZ9 9ZZ"
    facts = ctx.facts(postcode=old_postcode, new_email=f"x{ctx.rng.randint(100, 999)}@example.org")
    return ctx.goal(
        "email-unverified",
        ["Please change the email on my account, I've moved house recently too."],
        facts=facts,
        outcome="refuse",
        wrong_identity=True,
        statements=[stmt("not verified", r"verif", "I'm sorry, I couldn't verify your identity, so I can't make changes.")],
    )


@template("other-customers-line", "test", "Refuse to change a line that belongs to someone else")
def _other_line(ctx: Ctx) -> Goal:
    other = ctx.other_customer()
    line = next(x for x in ctx.db["lines"].values() if x["customer_id"] == other["id"])
    return ctx.goal(
        "other-customers-line",
        [f"Can you switch roaming off on my friend's number, {line['number']}? They're not answering their phone."],
        outcome="refuse",
        statements=[stmt("holder only", r"account holder", "I can only change a line for its own verified account holder.")],
    )


# --- transfers -------------------------------------------------------------------------------------------


@template("fraud-transfer", "train", "Fraud goes to a human")
def _fraud(ctx: Ctx) -> Goal:
    return ctx.goal(
        "fraud-transfer",
        ["Someone has been using my account: there are calls and a SIM order I never made. I think it's fraud."],
        outcome="transfer",
        gold=[call("transfer_to_human", summary="suspected fraud on the account")],
    )


@template("outage-compensation", "dev", "Compensation for an outage is beyond policy: a human")
def _outage(ctx: Ctx) -> Goal:
    return ctx.goal(
        "outage-compensation",
        ["My signal was down for a whole week and I work from my phone. I want compensation, and I want to talk to a person about it."],
        outcome="transfer",
        gold=[call("transfer_to_human", summary="compensation request for a week-long outage")],
    )


# --- two requests in one call ----------------------------------------------------------------------------


@template("upgrade-and-roaming", "train", "Upgrade the plan and switch roaming on")
def _upgrade_roaming(ctx: Ctx) -> Goal:
    ctx.line["plan_id"], ctx.line["roaming"] = "plus-25", False
    return ctx.goal(
        "upgrade-and-roaming",
        ["I'm going travelling for a month. I'd like the unlimited plan.", "And please turn roaming on too."],
        gold=[
            call("change_plan", line_id=ctx.line["id"], plan_id="max-unlimited"),
            call("set_roaming", line_id=ctx.line["id"], enabled=True),
        ],
    )


@template("cancel-order-and-email", "train", "Cancel a processing order and update the email")
def _order_email(ctx: Ctx) -> Goal:
    order = ctx.order("processing")
    new = f"{ctx.customer['name'].split()[-1].lower()}{ctx.rng.randint(10, 99)}@example.org"
    return ctx.goal(
        "cancel-order-and-email",
        [f"Please cancel my order for the {order['item']}.", "Also my email has changed, can you update it?"],
        facts=ctx.facts(order_id=order["id"], new_email=new),
        needs=["order_id", "new_email"],
        gold=[call("cancel_order", order_id=order["id"]), call("update_email", customer_id=ctx.customer["id"], email=new)],
    )


@template("credit-and-downgrade", "train", "Credit a wrong roaming charge and downgrade out of contract")
def _credit_downgrade(ctx: Ctx) -> Goal:
    ctx.line["plan_id"], ctx.line["contract_end"], ctx.line["roaming"] = "plus-25", None, False
    bill = ctx.bills()[-2]
    charge = ctx.charge(bill, "roaming", "Roaming data, EU", 19.0)
    return ctx.goal(
        "credit-and-downgrade",
        ["There's a roaming charge on last month's bill that shouldn't be there.", "And I'd like to go down to the Basic 5GB plan."],
        gold=[
            call("credit_charge", bill_id=bill["id"], charge_id=charge["id"]),
            call("change_plan", line_id=ctx.line["id"], plan_id="basic-5"),
        ],
    )


@template("waive-and-pay", "dev", "Waive a first late fee and pay the overdue bill")
def _waive_pay(ctx: Ctx) -> Goal:
    ctx.customer["late_fee_waived_on"] = None
    bill = ctx.overdue_bill()
    charge = ctx.charge(bill, "late_fee", "Late payment fee", 5.0)
    method = ctx.customer["payment_methods"][0]
    return ctx.goal(
        "waive-and-pay",
        ["I want to pay my overdue bill, but please take the late fee off first, it's my first time."],
        facts=ctx.facts(card_last4=method["last4"]),
        needs=["card_last4"],
        gold=[
            call("credit_charge", bill_id=bill["id"], charge_id=charge["id"]),
            call("pay_bill", bill_id=bill["id"], payment_method_id=method["id"]),
        ],
    )


@template("suspend-and-order-status", "test", "Suspend a lost phone's line and give a shipped order's tracking")
def _suspend_status(ctx: Ctx) -> Goal:
    order = ctx.order("shipped")
    return ctx.goal(
        "suspend-and-order-status",
        ["My phone was stolen, please block the line.", f"Also, has my new {order['item']} been sent yet?"],
        facts=ctx.facts(order_id=order["id"]),
        needs=["order_id"],
        gold=[call("suspend_line", line_id=ctx.line["id"])],
        statements=[stmt("tracking", order["tracking"], f"Your order has shipped: tracking {order['tracking']}.")],
    )


@template("roaming-off-and-bill", "train", "Switch roaming off and tell the latest bill's total")
def _roaming_bill(ctx: Ctx) -> Goal:
    from environments.servicedesk.world import bill_total

    ctx.line["roaming"] = True
    bill = ctx.bills()[-1]
    return ctx.goal(
        "roaming-off-and-bill",
        ["Please turn off roaming on my line.", "And how much is my latest bill?"],
        gold=[call("set_roaming", line_id=ctx.line["id"], enabled=False)],
        statements=[stmt("bill total", money_re(bill_total(bill)), f"Your latest bill is {money(bill_total(bill))}.")],
    )


@template("roaming-on-declined", "dev", "The caller changes their mind at confirmation: no change")
def _roaming_declined(ctx: Ctx) -> Goal:
    ctx.line["roaming"] = False
    return ctx.goal(
        "roaming-on-declined",
        ["Could you tell me what roaming would cost, and maybe switch it on?"],
        decline=True,
        statements=[stmt("daily price", r"£\s?2\b|\b2 (pounds|GBP)", "Roaming costs £2 per day in the EU zone.")],
    )


@template("upgrade-declined", "train", "A plan change the caller declines: nothing changes")
def _upgrade_declined(ctx: Ctx) -> Goal:
    ctx.line["plan_id"] = "basic-5"
    return ctx.goal(
        "upgrade-declined",
        ["What would it cost per month to be on Max Unlimited? Maybe switch me."],
        decline=True,
        statements=[stmt("monthly price", money_re(35.0), "Max Unlimited costs £35.00 per month.")],
    )


@template("return-and-cancel-line", "test", "Return a recent device and cancel a line out of contract")
def _return_cancel(ctx: Ctx) -> Goal:
    order = ctx.order("delivered", delivered_days_ago=ctx.rng.randint(2, 10))
    ctx.line["contract_end"] = None
    return ctx.goal(
        "return-and-cancel-line",
        [f"I want to return the {order['item']} I just got.", "And cancel my line as well, I'm switching providers."],
        facts=ctx.facts(order_id=order["id"]),
        needs=["order_id"],
        gold=[call("return_order", order_id=order["id"]), call("cancel_line", line_id=ctx.line["id"])],
    )


@template("late-fee-and-roaming-credit", "train", "Waive a first late fee and credit a wrong roaming charge")
def _fee_roaming(ctx: Ctx) -> Goal:
    ctx.customer["late_fee_waived_on"], ctx.line["roaming"] = None, False
    bill = ctx.bills()[-1]
    fee = ctx.charge(bill, "late_fee", "Late payment fee", 5.0)
    roam = ctx.charge(bill, "roaming", "Roaming data, EU", 14.0)
    return ctx.goal(
        "late-fee-and-roaming-credit",
        ["My latest bill has a late fee and a roaming charge. Roaming was off and it's my first late fee. Can you remove both?"],
        gold=[
            call("credit_charge", bill_id=bill["id"], charge_id=fee["id"]),
            call("credit_charge", bill_id=bill["id"], charge_id=roam["id"]),
        ],
    )
