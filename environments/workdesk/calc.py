"""The calculation language of the `calc` tool: a tokenizer, a recursive-descent parser and a tree-walking
evaluator, all plain Python over our own node types. Nothing reaches the host's Python: there is no eval,
exec or ast, no attribute access and no names beyond the variables a program assigns and FUNCTIONS.

    x = sum(col(where(table('finance/ledger_q4.csv'), 'status', '==', 'approved'), 'amount_eur'))
    round(x / 1000, 1)

Programs are statements separated by `;` or new lines; the last one's value is the answer. Values are
numbers (floats), text, lists and tables (rows from a workspace CSV or spreadsheet). Every limit below is
checked as the program runs and answered with a CalcError naming it, so hostile input (deep nesting, huge
numbers, giant strings, long aggregates, lists of lists of shared lists) costs a bounded amount of work: a list
is charged its whole size (size_of) before it is kept, so `a=[1,1]; b=[a,a]; c=[b,b]...` pays for every element
it would expand to, and text is measured before it is built.
This is not improve's language (environments/improve/calc.py: integer statements with while/if/return, coded
errors). The two share no grammar, value type or message, and both messages reach recorded tool results, so
they stay two interpreters rather than one with switches.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_SOURCE = 2000  # characters of program text
MAX_DEPTH = 32  # nesting of parentheses, brackets, calls and operators
MAX_OPS = 50_000  # evaluation steps: every operator, and every element an aggregate, list or comparison touches
MAX_VALUE = 10_000  # size of one built value: elements across every level of nesting, plus characters of text
MAX_RESULT = 20_000  # characters of the answer as JSON
MAX_NUMBER = 1e15  # magnitude of any intermediate number
MAX_TEXT = 200  # characters of a text value
MAX_DIGITS = 18  # characters of a number literal
MAX_VARIABLES = 50


class CalcError(Exception):
    """A program the language refuses or cannot finish; the message says which rule and where."""


@dataclass(frozen=True)
class Table:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


Loader = Callable[[str], Table]  # the workspace's table reader: path -> Table, CalcError when there is none

_TOKEN = re.compile(
    r"(?P<space>[ \t]+)|(?P<newline>\n)|(?P<number>\d+(?:\.\d+)?)|(?P<text>'[^'\n]*'|\"[^\"\n]*\")"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>==|!=|<=|>=|[-+*/%^<>=(),;\[\]])"
)
_COMPARE = ("==", "!=", "<", "<=", ">", ">=")


def tokenize(source: str) -> list[tuple[str, str]]:
    if len(source) > MAX_SOURCE:
        raise CalcError(f"program: at most {MAX_SOURCE} characters, got {len(source)}")
    tokens, at = [], 0
    while at < len(source):
        match = _TOKEN.match(source, at)
        if match is None:
            char = source[at]
            hint = "; attribute access is not part of the language" if char == "." else ""
            raise CalcError(f"unexpected character {char!r} at position {at}{hint}")
        kind, text = match.lastgroup or "", match.group()
        at = match.end()
        if kind == "number" and len(text) > MAX_DIGITS:
            raise CalcError(f"number literal at position {match.start()}: at most {MAX_DIGITS} characters, got {len(text)}")
        if kind == "text" and len(text) - 2 > MAX_TEXT:
            raise CalcError(f"text literal at position {match.start()}: at most {MAX_TEXT} characters")
        if kind == "name" and text.startswith("_"):
            raise CalcError(f"name {text!r}: names may not start with '_'")
        if kind != "space":
            tokens.append((kind, text))
    return tokens


class _Parser:
    """Builds nested tuples: ("num", v) ("text", s) ("var", n) ("list", items) ("call", n, args)
    ("neg", x) ("bin", "^", a, b) ("chain", first, [(op, x), ...]) ("let", n, x). `depth` bounds the recursion, not Python's stack."""

    def __init__(self, tokens: list[tuple[str, str]]) -> None:
        self.tokens, self.at, self.depth = tokens, 0, 0

    def peek(self) -> str:
        return self.tokens[self.at][1] if self.at < len(self.tokens) else ""

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.at >= len(self.tokens):
            raise CalcError(f"program ends early{f'; expected {expected!r}' if expected else ''}")
        token = self.tokens[self.at]
        if expected is not None and token[1] != expected:
            raise CalcError(f"expected {expected!r}, got {token[1]!r}")
        self.at += 1
        return token

    def program(self) -> list[Any]:
        statements = []
        while self.at < len(self.tokens):
            if self.peek() in (";", "\n"):
                self.at += 1
                continue
            statements.append(self.statement())
            if self.at < len(self.tokens) and self.peek() not in (";", "\n"):
                raise CalcError(f"unexpected {self.peek()!r} after a complete statement")
        if not statements:
            raise CalcError("program: empty")
        return statements

    def statement(self) -> Any:
        if self.tokens[self.at][0] == "name" and self.at + 1 < len(self.tokens) and self.tokens[self.at + 1][1] == "=":
            name = self.take()[1]
            self.take("=")
            return ("let", name, self.expr())
        return self.expr()

    def expr(self) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalcError(f"program: nested deeper than {MAX_DEPTH} levels")
        left = self.binary(0)
        self.depth -= 1
        return left

    _LEVELS: tuple[tuple[str, ...], ...] = (_COMPARE, ("+", "-"), ("*", "/", "%"))

    def binary(self, level: int) -> Any:
        if level == len(self._LEVELS):
            return self.unary()
        first, rest = self.binary(level + 1), []
        while self.peek() in self._LEVELS[level]:
            op = self.take()[1]
            rest.append((op, self.binary(level + 1)))
        # A flat chain, folded left to right in a loop: `1+1+...+1` never becomes a deep tree to recurse into.
        return ("chain", first, rest) if rest else first

    def unary(self) -> Any:
        if self.peek() == "-":
            self.take()
            return ("neg", self.nested(self.unary))
        base = self.atom()
        if self.peek() == "^":
            self.take()
            return ("bin", "^", base, self.nested(self.unary))
        return base

    def nested(self, parse: Callable[[], Any]) -> Any:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalcError(f"program: nested deeper than {MAX_DEPTH} levels")
        node = parse()
        self.depth -= 1
        return node

    def atom(self) -> Any:
        kind, text = self.take()
        if kind == "number":
            return ("num", float(text))
        if kind == "text":
            return ("text", text[1:-1])
        if kind == "name":
            if self.peek() != "(":
                return ("var", text)
            self.take("(")
            args = self.items(")")
            return ("call", text, args)
        if text == "(":
            inner = self.expr()
            self.take(")")
            return inner
        if text == "[":
            return ("list", self.items("]"))
        raise CalcError(f"unexpected {text!r}")

    def items(self, closing: str) -> list[Any]:
        out: list[Any] = []
        while self.peek() != closing:
            out.append(self.expr())
            if self.peek() != closing:
                self.take(",")
        self.take(closing)
        return out


def parse(source: str) -> list[Any]:
    return _Parser(tokenize(source)).program()


def evaluate(source: str, loader: Loader) -> Any:
    """The value of the program's last statement; raises CalcError on any refused input or broken limit."""
    from environments.workdesk.calc_functions import FUNCTIONS  # the library of calls, kept in its own module

    state = _Run(loader, FUNCTIONS)
    value: Any = None
    for statement in parse(source):
        value = state.eval(statement)
    state.measure(value, "answer")
    if len(json.dumps(plain(value))) > MAX_RESULT:  # bounded work: the value's size is already within MAX_VALUE
        raise CalcError(f"answer: more than {MAX_RESULT} characters as JSON; aggregate it (sum, count, ...) or pick a part")
    return value


def plain(value: Any) -> Any:
    """A calc value as JSON: tables as their columns and first 50 rows, lists item by item."""
    if isinstance(value, Table):
        return {"columns": list(value.columns), "rows": [list(r) for r in value.rows[:50]], "total_rows": len(value.rows)}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def size_of(value: Any, limit: int) -> int:
    """Elements across all levels of nesting plus characters of text (a table counts its cells); the walk stops
    as soon as the count passes `limit`, so measuring costs at most `limit` steps whatever the value shares."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            total += 1
            stack.extend(item)
        elif isinstance(item, Table):
            total += 1 + len(item.rows) * max(1, len(item.columns))
        elif isinstance(item, str):
            total += 1 + len(item)
        else:
            total += 1
        if total > limit:
            return total
    return total


class _Run:
    def __init__(self, loader: Loader, functions: dict[str, Callable[..., Any]]) -> None:
        self.loader, self.functions, self.ops = loader, functions, 0
        self.variables: dict[str, Any] = {}

    def spend(self, count: int = 1) -> None:
        self.ops += count
        if self.ops > MAX_OPS:
            raise CalcError(f"program: more than {MAX_OPS} operations")

    def measure(self, value: Any, where: str) -> int:
        """Charges the run the size of a value and refuses one above MAX_VALUE, before anything keeps it."""
        size = size_of(value, MAX_VALUE)
        if size > MAX_VALUE and not isinstance(value, Table):  # a table read from the workspace is the workspace's size
            raise CalcError(f"{where}: a value larger than {MAX_VALUE} elements and characters (nested lists count every element)")
        self.spend(min(size, MAX_VALUE + 1))
        return size

    def eval(self, node: Any) -> Any:
        self.spend()
        kind = node[0]
        if kind in ("num", "text"):
            return node[1]
        if kind == "var":
            if node[1] not in self.variables:
                raise CalcError(f"unknown name {node[1]!r}; assign it first (x = ...)")
            return self.variables[node[1]]
        if kind == "let":
            if node[1] in self.functions:
                raise CalcError(f"name {node[1]!r} is a function and cannot be assigned")
            if node[1] not in self.variables and len(self.variables) >= MAX_VARIABLES:
                raise CalcError(f"program: at most {MAX_VARIABLES} variables")
            self.variables[node[1]] = value = self.eval(node[2])
            return value
        if kind == "list":
            built = [self.eval(item) for item in node[1]]
            self.measure(built, "list")
            return built
        if kind == "neg":
            return checked(-number(self.eval(node[1]), "-"))
        if kind == "call":
            function = self.functions.get(node[1])
            if function is None:
                raise CalcError(f"unknown function {node[1]!r}; functions: {', '.join(sorted(self.functions))}")
            return function(self, *[self.eval(arg) for arg in node[2]])
        if kind == "chain":
            value = self.eval(node[1])
            for op, operand in node[2]:
                value = self.operate(op, value, self.eval(operand))
            return value
        return self.operate(node[1], self.eval(node[2]), self.eval(node[3]))

    def operate(self, op: str, left: Any, right: Any) -> Any:
        """Every operator counts; an equality over lists or tables costs what it compares."""
        self.spend()
        if op in ("==", "!=") and not (isinstance(left, float | int | str) and isinstance(right, float | int | str)):
            self.spend(min(size_of(left, MAX_OPS), size_of(right, MAX_OPS)))
        return binary(op, left, right)


def number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, float | int):
        raise CalcError(f"{where}: expected a number, got {describe(value)}")
    return float(value)


def checked(value: float) -> float:
    if not math.isfinite(value) or abs(value) > MAX_NUMBER:
        raise CalcError(f"number out of range: magnitude above {MAX_NUMBER:g}")
    return value


def describe(value: Any) -> str:
    if isinstance(value, Table):
        return f"a table of {len(value.rows)} rows"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return repr(value)[:40]


def binary(op: str, left: Any, right: Any) -> Any:
    if op in _COMPARE:
        if op in ("==", "!="):
            return (left == right) == (op == "==")
        a, b = number(left, op), number(right, op)
        return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    a, b = number(left, op), number(right, op)
    if op in ("/", "%") and b == 0:
        raise CalcError(f"{op}: division by zero")
    if op == "^":
        if abs(b) > 64:
            raise CalcError(f"^: exponent {b:g} outside -64..64")
        if a < 0 and not b.is_integer():
            raise CalcError("^: a negative number to a fractional power")
        if a == 0 and b < 0:
            raise CalcError("^: zero to a negative power")
        try:
            return checked(a**b)
        except OverflowError:
            raise CalcError(f"number out of range: magnitude above {MAX_NUMBER:g}") from None
    result = {"+": a + b, "-": a - b, "*": a * b, "/": a / b if b else 0.0, "%": a % b if b else 0.0}[op]
    return checked(result)


def median(values: list[float]) -> float:
    return float(statistics.median(values))
