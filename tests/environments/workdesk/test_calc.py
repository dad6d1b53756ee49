"""The calculation language: values by hand, and hostile programs refused with the rule they broke."""

from __future__ import annotations

import re

import pytest

from environments.workdesk.calc import MAX_DEPTH, CalcError, evaluate
from tests.environments.workdesk.conftest import loader


def run(program: str) -> object:
    return evaluate(program, loader)


@pytest.mark.parametrize(
    ("program", "expected"),
    [
        ("2 + 3 * 4 ^ 2", 50.0),  # ^ binds tighter than *, * tighter than +
        ("(2 + 3) * 4", 20.0),
        ("-2 ^ 2", -4.0),  # unary minus applies to the power
        ("10 - 4 - 3", 3.0),  # left to right
        ("7 % 4 + 9 / 2", 7.5),
        ("x = 2; y = x * 3\ny + 1", 7.0),
        ("round(pct_change(110, 88), 2)", 25.0),
        ("median([5, 1, 3, 2])", 2.5),
        ("avg(1, 2, 3, 4)", 2.5),
        ("max([3, 9, 4]) - min(3, 9, 4)", 6.0),
        ("3 > 2", True),
        ("'Sales' == 'Sales'", True),
    ],
)
def test_it_evaluates_arithmetic_and_aggregates(program: str, expected: object) -> None:
    assert run(program) == expected


def test_it_aggregates_over_tables_with_filters_dedup_and_lookups() -> None:
    approved = "t = where(table('ledger.csv'), 'status', '==', 'approved')"
    assert run(f"{approved}; sum(col(t, 'amount'))") == 450.5  # the duplicate counted twice
    assert run(f"{approved}; sum(col(unique(t, 'invoice_id'), 'amount'))") == 350.5
    assert run("rows(where(table('ledger.csv'), 'amount', '>', 99))") == 3.0
    assert run("lookup(table('ledger.csv'), 'invoice_id', 'INV-2', 'department')") == "Ops"
    assert run("count(col(table('ledger.csv'), 'status'))") == 4.0


@pytest.mark.parametrize(
    ("program", "message"),
    [
        ("(" * 200 + "1" + ")" * 200, f"nested deeper than {MAX_DEPTH}"),
        ("-" * 500 + "1", f"nested deeper than {MAX_DEPTH}"),
        ("[" * 100 + "]" * 100, f"nested deeper than {MAX_DEPTH}"),
        ("9" * 19, "number literal"),
        ("10 ^ 64", "out of range"),
        ("2 ^ 2 ^ 2 ^ 2 ^ 2", "exponent 65536"),
        ("999999999 * 999999999", "out of range"),
        ("(-8) ^ 0.5", "fractional power"),
        ("1 / (3 - 3)", "division by zero"),
        ("'" + "a" * 300 + "'", "text literal"),
        ("1 + " * 700 + "1", "at most 2000 characters"),
        ("sum(col(table('big.csv'), 'x'))", "more than 50000 operations"),
        ("x.__class__", "attribute access is not part of the language"),
        ("__import__('os')", "names may not start with '_'"),
        ("().__class__.__bases__", "attribute access"),
        ("open('/etc/passwd')", "unknown function 'open'"),
        ("eval('1')", "unknown function 'eval'"),
        ("table('/etc/passwd')", "no file '/etc/passwd'"),
        ("sum = 3", "is a function"),
        ("'a' + 1", "expected a number"),
        ("y + 1", "unknown name 'y'"),
        ("1 2", "unexpected '2'"),
        ("", "empty"),
        ("text('" + "b" * 150 + "', '" + "c" * 150 + "')", "at most 200 characters"),
        ("sum(col(table('ledger.csv'), 'nope'))", "no column 'nope'"),
    ],
)
def test_it_refuses_hostile_programs_naming_the_rule(program: str, message: str) -> None:
    with pytest.raises(CalcError, match=re.escape(message)):
        run(program)


def test_a_long_flat_chain_is_folded_without_deep_recursion() -> None:
    assert run("+".join(["1"] * 900)) == 900.0
    assert run("x = 1; " + "; ".join("x = x * 2" for _ in range(40)) + "; x") == 2.0**40


def test_the_program_never_reaches_host_python() -> None:
    # Names resolve only to assigned variables and the function table: builtins are unknown names.
    for name in ("print", "globals", "getattr", "exec", "compile", "__builtins__"):
        with pytest.raises(CalcError):
            run(f"{name}(1)")
