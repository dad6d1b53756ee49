"""The calculation language: values by hand, and hostile programs refused with the rule they broke."""

from __future__ import annotations

import json
import re
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from environments.workdesk.calc import MAX_DEPTH, MAX_OPS, MAX_RESULT, MAX_SOURCE, MAX_VALUE, CalcError, evaluate, plain
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


def _shared(levels: int, width: int = 10) -> str:
    """mallory's amplifier: each list holds `width` references to the one before, a few characters per level."""
    names = "abcdefgh"
    lines = ["a=[" + ",".join(["1"] * width) + "]"]
    lines += [f"{names[i]}=[" + ",".join([names[i - 1]] * width) + "]" for i in range(1, levels)]
    return ";".join(lines) + f";{names[levels - 1]}"


def test_nested_shared_lists_are_budgeted_by_every_element_they_expand_to() -> None:
    assert len(_shared(5)) < 200  # 100k elements from a program of a couple hundred characters
    with pytest.raises(CalcError, match=re.escape(f"list: a value larger than {MAX_VALUE} elements")):
        run(_shared(5))
    assert run(_shared(3)) == [[[1.0] * 10] * 10] * 10  # a thousand elements stay an answer


def test_text_is_measured_before_it_is_built() -> None:
    with pytest.raises(CalcError, match="text: takes numbers and text, got a list of 10 items"):
        run(_shared(2) + "; text(b)")
    assert run("text('total', 12.5)") == "total 12.5"


def test_comparisons_are_counted_by_what_they_compare() -> None:
    # Nine thousand elements compared six times: each == costs its size, not one step.
    program = "a=[" + ",".join(["1"] * 100) + "]; b=[" + ",".join(["a"] * 90) + "]; [" + ",".join(["b==b"] * 6) + "]"
    with pytest.raises(CalcError, match=f"more than {MAX_OPS} operations"):
        run(program)


_LITERALS = ["1", "'ab'", "table('ledger.csv')", "col(table('ledger.csv'), 'amount')"]


def _expression(atoms: list[str], depth: int) -> st.SearchStrategy[str]:
    leaf = st.sampled_from(atoms)
    if depth == 0:
        return leaf
    inner = _expression(atoms, depth - 1)
    return st.one_of(
        leaf,
        st.lists(inner, min_size=1, max_size=16).map(lambda xs: "[" + ",".join(xs) + "]"),
        st.tuples(inner, st.integers(2, 16)).map(lambda t: "[" + ",".join([t[0]] * t[1]) + "]"),  # one value repeated
        st.tuples(inner, st.sampled_from(["+", "*", "==", "!=", "<", "^"]), inner).map(" ".join),
        st.tuples(st.sampled_from(["text", "sum", "count", "max", "unique"]), st.lists(inner, min_size=1, max_size=4)).map(
            lambda t: f"{t[0]}({', '.join(t[1])})"
        ),
    )


@st.composite
def _program(draw: st.DrawFn) -> str:
    """Statements that may use every variable assigned before them, which is how amplifiers are written."""
    lines: list[str] = []
    for index in range(draw(st.integers(1, 8))):
        atoms = _LITERALS + [f"v{i}" for i in range(index)] * 3
        repeated = st.tuples(st.sampled_from(atoms), st.integers(2, 16)).map(lambda t: "[" + ",".join([t[0]] * t[1]) + "]")
        lines.append(f"v{index}={draw(st.one_of(repeated, _expression(atoms, 2)))}")
    return (";".join(lines) + f";v{len(lines) - 1}")[:MAX_SOURCE]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_program())
def test_any_program_finishes_in_bounded_time_and_memory_with_a_bounded_answer(program: str) -> None:
    tracemalloc.start()
    started = time.perf_counter()
    try:
        answer = json.dumps(plain(run(program)))
    except CalcError:
        answer = ""
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert time.perf_counter() - started < 2.0
    assert peak < 20_000_000, f"{peak} bytes for {program!r}"
    assert len(answer) <= MAX_RESULT
