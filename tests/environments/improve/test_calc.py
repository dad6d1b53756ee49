"""calc: the language's semantics, and every budget a hostile program runs into."""

from __future__ import annotations

import time

import pytest

from environments.improve.calc import MAX_DEPTH, MAX_SOURCE, MAX_TOKENS, MAX_VARIABLES, CalcError, parse, run


def value(source: str, **inputs: int) -> int:
    return run(parse(source), inputs, max_ops=5000)


def error(source: str, max_ops: int = 5000, **inputs: int) -> CalcError:
    with pytest.raises(CalcError) as caught:
        run(parse(source), inputs, max_ops=max_ops)
    return caught.value


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("return 2 + 3 * 4", 14),
        ("return (2 + 3) * 4", 20),
        ("return -7 // 2", -4),  # floor division, as in mathematics
        ("return -7 % 3", 2),
        ("return 10 - 4 - 3", 3),  # left associative
        ("return not 0 and 2 < 3", 1),
        ("return 0 or 5 == 5", 1),
        ("return min(4, 9) + max(4, 9) + abs(-2)", 15),
        ("if x > 3 { return 1 } else { return 0 }", 1),
        ("s = 0\nwhile x > 0 { s = s + x % 10; x = x // 10 }\nreturn s", 14),
    ],
)
def test_it_evaluates_integer_programs(source: str, expected: int) -> None:
    assert value(source, x=5) == expected if "s = 0" not in source else value(source, x=5621) == expected


def test_it_counts_operations_and_stops_an_endless_loop() -> None:
    assert value("return 1 + 2") == 3  # statement, bin, two numbers: 4 operations
    assert run(parse("return 1 + 2"), {}, max_ops=4) == 3
    assert error("return 1 + 2", max_ops=3).code == "ops"
    started = time.perf_counter()
    endless = error("while 1 { }", max_ops=100_000)
    assert endless.code == "ops" and endless.message == "the program ran past its 100000 operations"
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    ("source", "code", "message"),
    [
        ("return y", "name", "variable 'y' is used before it is set"),
        ("x = 1", "return", "the program ended without return"),
        ("return 7 // (x - x)", "zero", "division by zero (7 // 0)"),
        ("v = 2\nwhile 1 { v = v * v }", "overflow", "a value exceeded 1e+15 in magnitude"),
        ("return 1000000000000000 + 1", "overflow", "a value exceeded 1e+15 in magnitude"),
    ],
)
def test_it_reports_runtime_errors_precisely(source: str, code: str, message: str) -> None:
    caught = error(source, x=3)
    assert (caught.code, caught.message) == (code, message)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("__import__('os').system('true')", 'program: unexpected character "\'" at offset 11'),
        ("return x.__class__", "program: unexpected character '.' at offset 8"),
        ("return 2 ** 3", "program: expected a variable name at token 4, found '*'"),
        ("return 1 / 2", "program: unexpected character '/' at offset 9"),
        ("while = 3", "program: expected a variable name at token 2, found '='"),
        ("x = ", "program: expected more input at token 3, found the end of the program"),
        ("return min(1)", "program: min takes 2 arguments, got 1"),
        ("return 12345678901234567", "program: 1234567890123456... is longer than 16 characters"),
        ("if 1 { return 2", "program: expected '}' at token 6, found the end of the program"),
    ],
)
def test_it_refuses_what_is_not_calc(source: str, message: str) -> None:
    with pytest.raises(CalcError) as caught:
        parse(source)
    assert (caught.value.code, caught.value.message) == ("syntax", message)


def test_host_names_mean_nothing_in_calc() -> None:
    assert value("exec = 1\nopen = exec + 1\nreturn open") == 2  # plain variables: nothing reaches Python
    with pytest.raises(CalcError, match="expected a variable name at token 3, found '\\('"):
        parse("return eval(1)")  # only min, max and abs are functions
    with pytest.raises(CalcError, match="expected '=' at token 2, found '\\('"):
        parse("eval(1)")


def test_it_budgets_the_size_of_a_program() -> None:
    with pytest.raises(CalcError, match=f"at most {MAX_SOURCE}"):
        parse("x = 1\n" * 400)
    with pytest.raises(CalcError, match=f"more than {MAX_TOKENS} tokens"):
        parse("x=1;" * 160)
    with pytest.raises(CalcError, match=f"nesting deeper than {MAX_DEPTH}"):
        parse("return " + "(" * 30 + "1" + ")" * 30)
    with pytest.raises(CalcError, match=f"nesting deeper than {MAX_DEPTH}"):
        parse("return " + "-" * 30 + "1")
    with pytest.raises(CalcError, match=f"nesting deeper than {MAX_DEPTH}"):
        parse("while 1 { " * 30 + "}" * 30)
    with pytest.raises(CalcError, match=f"more than {MAX_VARIABLES} variable names"):
        parse(";".join(f"v{i} = 1" for i in range(40)))
    with pytest.raises(CalcError, match="must be text"):
        parse(["return 1"])  # type: ignore[arg-type]


def test_a_long_flat_expression_stays_within_the_interpreter() -> None:
    source = "return " + " + ".join(["1"] * 290)  # a left-deep tree ~290 levels: evaluated without a RecursionError
    assert value(source) == 290
