"""The functions of the calculation language: aggregates over lists and tables, table filters and lookups.

    table(path)                           a workspace CSV or spreadsheet (.sheet.json) as a table
    col(t, 'name')                        a column as a list (numbers where the cell is a number)
    where(t, 'column', '==', value)       the rows whose cell compares true (== != < <= > >=)
    unique(t, 'column')                   the first row for each value of the column (drops duplicates)
    lookup(t, 'key column', key, 'column')  the cell of the first row whose key matches
    rows(t)  sum(xs)  avg(xs)  min(xs)  max(xs)  median(xs)  count(xs)  round(x, digits)  abs(x)
    pct_change(new, old)                  100 * (new - old) / old

Each function charges the run one operation per element it touches, so an aggregate over a big table costs
what it does. Aggregates take a list or several numbers: sum(col(t, 'x')) or sum(1, 2, 3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from environments.workdesk.calc import _COMPARE, MAX_TEXT, CalcError, Table, _Run, binary, checked, describe, median, number


def _table(run: _Run, value: Any, where: str) -> Table:
    if not isinstance(value, Table):
        raise CalcError(f"{where}: expected a table (from table('path')), got {describe(value)}")
    run.spend(len(value.rows))
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise CalcError(f"{where}: expected text in quotes, got {describe(value)}")
    return value


def _column(table: Table, name: Any, where: str) -> int:
    name = _text(name, where)
    if name not in table.columns:
        raise CalcError(f"{where}: no column {name!r}; columns: {', '.join(table.columns)}")
    return table.columns.index(name)


def _numbers(run: _Run, args: tuple[Any, ...], where: str) -> list[float]:
    values = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
    run.spend(len(values))
    if not values:
        raise CalcError(f"{where}: no values")
    return [number(v, where) for v in values]


def f_table(run: _Run, *args: Any) -> Table:
    if len(args) != 1:
        raise CalcError(f"table: takes one path, got {len(args)} arguments")
    loaded = run.loader(_text(args[0], "table"))
    run.spend(len(loaded.rows) * max(1, len(loaded.columns)))
    return loaded


def f_col(run: _Run, *args: Any) -> list[Any]:
    if len(args) != 2:
        raise CalcError("col: takes a table and a column name")
    table = _table(run, args[0], "col")
    index = _column(table, args[1], "col")
    return [row[index] for row in table.rows]


def f_where(run: _Run, *args: Any) -> Table:
    if len(args) != 4:
        raise CalcError("where: takes a table, a column, a comparison ('==', '<', ...) and a value")
    table = _table(run, args[0], "where")
    index, op = _column(table, args[1], "where"), _text(args[2], "where")
    if op not in _COMPARE:
        raise CalcError(f"where: comparison {op!r} is not one of {', '.join(_COMPARE)}")
    if op in _COMPARE[2:]:
        number(args[3], "where")
    kept = tuple(r for r in table.rows if (op in ("==", "!=") or isinstance(r[index], float)) and binary(op, r[index], args[3]))
    return Table(table.columns, kept)


def f_unique(run: _Run, *args: Any) -> Table:
    if len(args) != 2:
        raise CalcError("unique: takes a table and a column name")
    table = _table(run, args[0], "unique")
    index, seen, kept = _column(table, args[1], "unique"), set(), []
    for row in table.rows:
        if row[index] not in seen:
            seen.add(row[index])
            kept.append(row)
    return Table(table.columns, tuple(kept))


def f_lookup(run: _Run, *args: Any) -> Any:
    if len(args) != 4:
        raise CalcError("lookup: takes a table, a key column, a key and a value column")
    table = _table(run, args[0], "lookup")
    key, value = _column(table, args[1], "lookup"), _column(table, args[3], "lookup")
    for row in table.rows:
        if row[key] == args[2]:
            return row[value]
    raise CalcError(f"lookup: no row with {args[1]} == {describe(args[2])}")


def f_rows(run: _Run, *args: Any) -> float:
    if len(args) != 1:
        raise CalcError("rows: takes one table")
    return float(len(_table(run, args[0], "rows").rows))


def f_round(run: _Run, *args: Any) -> float:
    if len(args) not in (1, 2):
        raise CalcError("round: takes a number and optionally the digits (0-6)")
    digits = number(args[1], "round") if len(args) == 2 else 0.0
    if not digits.is_integer() or not 0 <= digits <= 6:
        raise CalcError(f"round: digits must be a whole number 0-6, got {digits:g}")
    return round(number(args[0], "round"), int(digits))


def f_pct_change(run: _Run, *args: Any) -> float:
    if len(args) != 2:
        raise CalcError("pct_change: takes the new and the old value")
    new, old = number(args[0], "pct_change"), number(args[1], "pct_change")
    if old == 0:
        raise CalcError("pct_change: the old value is 0")
    return checked(100.0 * (new - old) / old)


def _aggregate(name: str, fold: Callable[[list[float]], float]) -> Callable[..., float]:
    def call(run: _Run, *args: Any) -> float:
        return checked(fold(_numbers(run, args, name)))

    return call


def f_count(run: _Run, *args: Any) -> float:
    values = args[0] if len(args) == 1 and isinstance(args[0], list) else list(args)
    run.spend(len(values))
    return float(len(values))


def f_abs(run: _Run, *args: Any) -> float:
    if len(args) != 1:
        raise CalcError("abs: takes one number")
    return abs(number(args[0], "abs"))


def f_text(run: _Run, *args: Any) -> str:
    """Joins numbers and text into text (for labelled answers); the length is known before anything is built."""
    for arg in args:
        if isinstance(arg, list | Table):
            raise CalcError(f"text: takes numbers and text, got {describe(arg)}")
    length = sum(len(a) if isinstance(a, str) else len(str(a)) for a in args) + max(0, len(args) - 1)
    if length > MAX_TEXT:
        raise CalcError(f"text: at most {MAX_TEXT} characters, got {length}")
    return " ".join(str(a) for a in args)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "table": f_table,
    "col": f_col,
    "where": f_where,
    "unique": f_unique,
    "lookup": f_lookup,
    "rows": f_rows,
    "sum": _aggregate("sum", lambda xs: float(sum(xs))),
    "avg": _aggregate("avg", lambda xs: sum(xs) / len(xs)),
    "min": _aggregate("min", min),
    "max": _aggregate("max", max),
    "median": _aggregate("median", median),
    "count": f_count,
    "round": f_round,
    "abs": f_abs,
    "pct_change": f_pct_change,
    "text": f_text,
}
