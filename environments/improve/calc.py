"""calc: the small calculation language the algorithmic improvement tasks are solved in, interpreted in pure Python.

    program = parse("s = 0\nwhile x > 0 { s = s + x % 10; x = x // 10 }\nreturn s")
    run(program, {"x": 1234}, max_ops=2000)   # -> 10, or CalcError("ops", ...) past 2000 evaluated nodes

Nothing here reaches host Python: the source is tokenised and parsed into tuples by hand and evaluated by a
tree walker over integers only (no eval/exec, no attribute access, no strings, no imports). Every input is
budgeted: source length, tokens, nesting depth, variables, the size of a number, and operations per run, so a
hostile program ends in a `CalcError` with a precise message, never a hang, a crash or a huge allocation.

Grammar (newlines are spaces; `;` may separate statements):
    program := stmt*            stmt := NAME "=" expr | "while" expr block | "if" expr block ["else" block]
    block   := "{" stmt* "}"                                            | "return" expr
    expr    := and ("or" and)*  and := not ("and" not)*  not := "not" not | cmp
    cmp     := sum [("<" | "<=" | ">" | ">=" | "==" | "!=") sum]       sum := term (("+" | "-") term)*
    term    := unary (("*" | "//" | "%") unary)*                        unary := "-" unary | atom
    atom    := INT | NAME | NAME "(" expr ("," expr)* ")" | "(" expr ")"   functions: min, max, abs
Comparisons and logic give 1 or 0; `//` and `%` floor as in mathematics; dividing by zero is an error.
Not workdesk's `calc` language (environments/workdesk/calc.py: expressions over floats, text and tables whose
last value is the answer): grammar, values, limits and refusal texts all differ, and the texts are recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

MAX_SOURCE = 2000  # characters
MAX_TOKENS = 600
MAX_DEPTH = 24  # nesting of blocks and parentheses together
MAX_VARIABLES = 32
MAX_MAGNITUDE = 10**15  # |value| beyond this is an overflow error: no number grows without bound
KEYWORDS = ("while", "if", "else", "return", "and", "or", "not")
FUNCTIONS: dict[str, tuple[int, Callable[..., int]]] = {"min": (2, min), "max": (2, max), "abs": (1, abs)}
MAX_WORD = 16  # characters of a number or a name
_TOKEN = re.compile(r"\s*(?:([0-9]+)|([A-Za-z_][A-Za-z0-9_]*)|(//|<=|>=|==|!=|[-+*%<>=(){},;]))")
_BINARY = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
}

Node = tuple[Any, ...]  # ("num", v) ("var", name) ("bin", op, a, b) ("neg", a) ("not", a) ("and"|"or", a, b) ("call", f, args)


class CalcError(Exception):
    """A program that cannot be parsed or run; `code` is syntax, name, zero, overflow, ops or return."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def tokenize(source: str) -> list[str]:
    if len(source) > MAX_SOURCE:
        raise CalcError("syntax", f"program: {len(source)} characters, at most {MAX_SOURCE}")
    tokens, pos = [], 0
    while pos < len(source):
        if source[pos:].isspace():
            break
        match = _TOKEN.match(source, pos)
        if match is None:
            bad = source[pos:].lstrip()[:1]
            raise CalcError("syntax", f"program: unexpected character {bad!r} at offset {len(source) - len(source[pos:].lstrip())}")
        token = match.group(match.lastindex or 0)
        if len(token) > MAX_WORD:
            raise CalcError("syntax", f"program: {token[:MAX_WORD]}... is longer than {MAX_WORD} characters")
        tokens.append(token)
        pos = match.end()
        if len(tokens) > MAX_TOKENS:
            raise CalcError("syntax", f"program: more than {MAX_TOKENS} tokens")
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self.tokens, self.i, self.depth, self.names = tokens, 0, 0, set[str]()

    def peek(self) -> str | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            want = f"{expected!r}" if expected else "more input"
            found = repr(token) if token is not None else "the end of the program"
            raise CalcError("syntax", f"program: expected {want} at token {self.i + 1}, found {found}")
        self.i += 1
        return token

    def nest(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CalcError("syntax", f"program: nesting deeper than {MAX_DEPTH}")

    def name(self) -> str:
        token = self.take()
        if not re.fullmatch(r"[A-Za-z_]\w*", token) or token in KEYWORDS or token in FUNCTIONS:
            raise CalcError("syntax", f"program: expected a variable name at token {self.i}, found {token!r}")
        self.names.add(token)
        if len(self.names) > MAX_VARIABLES:
            raise CalcError("syntax", f"program: more than {MAX_VARIABLES} variable names")
        return token

    def statements(self, closing: str | None) -> list[Node]:
        out: list[Node] = []
        while self.peek() != closing:
            if self.peek() is None:
                self.take(closing)  # the end arrived inside a block: says which brace is missing
            if self.peek() == ";":
                self.take()
                continue
            out.append(self.statement())
        return out

    def block(self) -> list[Node]:
        self.nest()
        self.take("{")
        body = self.statements("}")
        self.take("}")
        self.depth -= 1
        return body

    def statement(self) -> Node:
        token = self.peek()
        if token == "while":
            self.take()
            return ("while", self.expr(), self.block())
        if token == "if":
            self.take()
            test, body = self.expr(), self.block()
            orelse = self.block() if self.peek() == "else" and self.take() else []
            return ("if", test, body, orelse)
        if token == "return":
            self.take()
            return ("return", self.expr())
        target = self.name()
        self.take("=")
        return ("set", target, self.expr())

    def expr(self) -> Node:
        node = self.conjunction()
        while self.peek() == "or":
            self.take()
            node = ("or", node, self.conjunction())
        return node

    def conjunction(self) -> Node:
        node = self.negation()
        while self.peek() == "and":
            self.take()
            node = ("and", node, self.negation())
        return node

    def negation(self) -> Node:
        if self.peek() == "not":
            self.take()
            self.nest()
            negated = ("not", self.negation())
            self.depth -= 1
            return negated
        node = self.binary(("+", "-"), self.term)
        if self.peek() in ("<", "<=", ">", ">=", "==", "!="):
            return ("bin", self.take(), node, self.binary(("+", "-"), self.term))
        return node

    def binary(self, ops: tuple[str, ...], operand: Any) -> Node:
        node = operand()
        while self.peek() in ops:
            node = ("bin", self.take(), node, operand())
        return node

    def term(self) -> Node:
        return self.binary(("*", "//", "%"), self.unary)

    def unary(self) -> Node:
        if self.peek() == "-":
            self.take()
            self.nest()
            node = ("neg", self.unary())
            self.depth -= 1
            return node
        return self.atom()

    def atom(self) -> Node:
        token = self.peek()
        if token is not None and token.isdigit():
            return ("num", _Machine.checked(int(self.take())))
        if token == "(":
            self.take()
            self.nest()
            node = self.expr()
            self.take(")")
            self.depth -= 1
            return node
        if token in FUNCTIONS:
            self.take()
            self.take("(")
            args = [self.expr()]
            while self.peek() == ",":
                self.take()
                args.append(self.expr())
            self.take(")")
            if len(args) != FUNCTIONS[token][0]:
                raise CalcError("syntax", f"program: {token} takes {FUNCTIONS[token][0]} arguments, got {len(args)}")
            return ("call", token, args)
        return ("var", self.name())


def parse(source: str) -> list[Node]:
    """The program's statements, or CalcError("syntax") naming what is wrong and where."""
    if not isinstance(source, str):
        raise CalcError("syntax", f"program: must be text, got {type(source).__name__}")
    parser = _Parser(tokenize(source))
    return parser.statements(None)


class _Return(Exception):
    def __init__(self, value: int) -> None:
        self.value = value


class _Machine:
    def __init__(self, variables: dict[str, int], max_ops: int) -> None:
        self.vars, self.ops, self.max_ops = dict(variables), 0, max_ops

    def tick(self) -> None:
        self.ops += 1
        if self.ops > self.max_ops:
            raise CalcError("ops", f"the program ran past its {self.max_ops} operations")

    def block(self, body: list[Node]) -> None:
        for stmt in body:
            self.tick()
            kind = stmt[0]
            if kind == "set":
                self.vars[stmt[1]] = self.value(stmt[2])
            elif kind == "return":
                raise _Return(self.value(stmt[1]))
            elif kind == "if":
                self.block(stmt[2] if self.value(stmt[1]) else stmt[3])
            else:  # while: each test is an operation, so an empty infinite loop still runs out
                while self.value(stmt[1]):
                    self.tick()
                    self.block(stmt[2])

    def value(self, node: Node) -> int:
        self.tick()
        kind = node[0]
        if kind == "num":
            return int(node[1])
        if kind == "var":
            if node[1] not in self.vars:
                raise CalcError("name", f"variable {node[1]!r} is used before it is set")
            return self.vars[node[1]]
        if kind == "neg":
            return self.checked(-self.value(node[1]))
        if kind == "not":
            return int(not self.value(node[1]))
        if kind == "and":
            return int(bool(self.value(node[1])) and bool(self.value(node[2])))
        if kind == "or":
            return int(bool(self.value(node[1])) or bool(self.value(node[2])))
        if kind == "call":
            return self.checked(FUNCTIONS[node[1]][1](*(self.value(a) for a in node[2])))
        op, a, b = node[1], self.value(node[2]), self.value(node[3])
        if op in ("//", "%"):
            if b == 0:
                raise CalcError("zero", f"division by zero ({a} {op} 0)")
            return a // b if op == "//" else a % b
        return self.checked(_BINARY[op](a, b))  # operands are bounded, so a product stays below 10^30 before the check

    @staticmethod
    def checked(value: int) -> int:
        if abs(value) > MAX_MAGNITUDE:  # a literal this large is refused while parsing, with the same code
            raise CalcError("overflow", f"a value exceeded {MAX_MAGNITUDE:.0e} in magnitude")
        return value


def run(program: list[Node], inputs: dict[str, int], *, max_ops: int) -> int:
    """The value the program returns for these inputs; CalcError when it fails, runs out of operations or
    ends without `return`. Inputs are the variables set before the first statement."""
    machine = _Machine(inputs, max_ops)
    try:
        machine.block(program)
    except _Return as done:
        return done.value
    except RecursionError:  # unreachable within MAX_DEPTH; kept so no input can surface a Python error
        raise CalcError("syntax", "program: nested too deeply") from None
    raise CalcError("return", "the program ended without return")
