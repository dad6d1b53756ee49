"""The tools: errors name the field, changes are checked for verification and confirmation, fees follow the policy."""

from __future__ import annotations

import datetime as dt

from environments.servicedesk.tools import termination_fee
from environments.servicedesk.world import TODAY

from .conftest import do, new_desk, verify


def test_it_answers_bad_input_with_an_error_naming_the_field_and_value() -> None:
    env = new_desk()
    assert do(env, "get_bill", bill_id="B-9").content == {"error": "bill_id: no bill 'B-9'"}
    assert do(env, "find_customer", phone="01234 000000").content == {"error": "phone: no line with number '01234 000000'"}
    result = do(env, "change_plan", line_id=env.goal.gold[0]["arguments"]["line_id"], plan_id="gold-plan")
    assert result.is_error and 'arguments.plan_id: "gold-plan" is not one of' in result.content["error"]
    assert do(env, "update_email", customer_id="C-1001", email="not an email").content["error"].startswith("arguments.email:")


def test_a_change_before_verification_and_without_confirmation_is_two_violations() -> None:
    env = new_desk("roaming-on")
    line = env.goal.gold[0]["arguments"]["line_id"]
    assert do(env, "set_roaming", line_id=line, enabled=True).content == {"ok": True, "roaming": True}
    assert env.desk.violations == [
        f"set_roaming for {env.goal.customer_id} before verifying their identity",
        "set_roaming without the caller's explicit confirmation",
    ]


def test_a_change_after_verification_and_a_yes_to_a_confirmation_question_is_clean() -> None:
    env = new_desk("roaming-on")
    verify(env)
    env.hear("actor", "I will switch roaming on. Shall I go ahead?")
    env.hear("user", "Yes, please go ahead.")
    do(env, "set_roaming", line_id=env.goal.gold[0]["arguments"]["line_id"], enabled=True)
    score = env.score()  # judged on the state whether or not the caller has hung up yet
    assert env.desk.violations == [] and score.passed
    assert score.components == {"state": 1.0, "statements": 1.0, "policy": 1.0, "outcome": 1.0}


def test_a_no_or_a_statement_without_a_question_is_not_a_confirmation() -> None:
    env = new_desk("roaming-on")
    verify(env)
    env.hear("actor", "Shall I switch roaming on?")
    env.hear("user", "No, please don't do that.")
    do(env, "set_roaming", line_id=env.goal.gold[0]["arguments"]["line_id"], enabled=True)
    assert env.desk.violations == ["set_roaming without the caller's explicit confirmation"]


def test_a_downgrade_in_contract_adds_the_25_pound_fee_and_cancelling_charges_10_per_month_left() -> None:
    env = new_desk("downgrade-in-contract")
    line_id = env.goal.gold[0]["arguments"]["line_id"]
    assert do(env, "change_plan", line_id=line_id, plan_id="plus-25").content["fees"] == [{"kind": "downgrade_fee", "amount": 25.0}]
    line = env.desk.db["lines"][line_id]
    months = -(-(dt.date.fromisoformat(line["contract_end"]) - TODAY).days // 30)  # started months left
    assert termination_fee(line) == 10.0 * months > 0
    assert do(env, "cancel_line", line_id=line_id).content == {"ok": True, "termination_fee": 10.0 * months}


def test_a_shipped_order_cannot_be_cancelled_and_a_paid_bill_cannot_be_paid_again() -> None:
    env = new_desk("cancel-shipped-order")
    order = env.goal.facts["order_id"]
    assert do(env, "cancel_order", order_id=order).content == {
        "error": f"order_id: order {order} is shipped; only processing orders can be cancelled"
    }
    env = new_desk("pay-bill")
    args = env.goal.gold[0]["arguments"]
    assert do(env, "pay_bill", **args).content["ok"] and do(env, "pay_bill", **args).content == {
        "error": f"bill_id: bill {args['bill_id']} is already paid"
    }


def test_the_verified_account_panel_needs_a_verified_caller() -> None:
    env = new_desk()
    assert do(env, "get_verified_account").content == {"error": "no caller is verified yet: verify_identity first"}
    verify(env)
    account = do(env, "get_verified_account").content
    assert account["customer"]["id"] == env.goal.customer_id and account["lines"] and "date_of_birth" not in account["customer"]
