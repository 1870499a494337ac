"""Reads .gls source into terms: Lark parses s-expressions, the operator table gives them meaning.

A program is optional ``(input name (shape d...) dtype)`` declarations and ``(define name expr)``
bindings (glc extensions), then one expression: the kernel's result. Plain Glenside — one
expression and nothing else — is a program too. Every term keeps its source span, and every
malformed form is a GlcError at its file, line and column saying what was expected.
"""

from __future__ import annotations

import difflib
import math
import re
import unicodedata
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedInput

from glc.errors import GlcError, Span, read_text
from glc.ir.compute import KINDS
from glc.ir.ops import KIND_NAMES, OPS, PAD_TYPES, TOKEN_KINDS
from glc.ir.term import Term, leaf, share
from glc.ir.types import DTYPES, INT_LIMIT

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")


@dataclass(frozen=True)
class InputDecl:
    """An ``(input name (shape d...) dtype)`` declaration."""

    name: str
    dims: tuple[int, ...]
    dtype: str
    span: Span


@dataclass
class Program:
    """A parsed program: declarations, named sub-expressions and the result expression."""

    path: str
    body: Term
    inputs: dict[str, InputDecl] = field(default_factory=dict)
    defines: dict[str, Term] = field(default_factory=dict)


@cache
def _parser() -> Lark:
    grammar = (Path(__file__).with_name("grammar.lark")).read_text()
    return Lark(grammar, parser="lalr", propagate_positions=True)


def _span(node: Tree | Token, filename: str) -> Span:
    if isinstance(node, Token):
        return Span(filename, node.line, node.column, node.end_line, node.end_column)
    meta = node.meta
    return Span(filename, meta.line, meta.column, meta.end_line, meta.end_column)


def _check_parens(text: str, filename: str) -> None:
    """Report unbalanced parentheses at the offending parenthesis (clearer than a parse error),
    and a control character (a NUL, a stray byte-order mark) where it is: it would otherwise end
    up inside a name and make a misleading "unknown operator"."""
    opened: list[tuple[int, int]] = []
    line, col = 1, 1
    in_comment = False
    for char in text:
        if char not in "\t\n\r" and unicodedata.category(char) in ("Cc", "Cf"):
            raise GlcError(f"control character {char!r} (U+{ord(char):04X}) is not allowed in a "
                           "program", Span(filename, line, col))
        if in_comment:
            in_comment = char != "\n"
        elif char == ";":
            in_comment = True
        elif char == "(":
            opened.append((line, col))
        elif char == ")":
            if not opened:
                raise GlcError("unexpected ')': no form is open here", Span(filename, line, col))
            opened.pop()
        if char == "\n":
            line, col = line + 1, 1
        else:
            col += 1
    if opened:
        line, col = opened[-1]
        raise GlcError("unexpected end of file: this '(' is never closed; expected ')'",
                       Span(filename, line, col))


def _forms(text: str, filename: str) -> list[Tree | Token]:
    _check_parens(text, filename)
    try:
        tree = _parser().parse(text)
    except UnexpectedInput as error:
        raise GlcError(f"cannot parse: {error.__class__.__name__}",
                       Span(filename, error.line, error.column)) from None
    return list(tree.children)


class _Reader:
    """Turns s-expression trees into terms, checking each form against the operator table."""

    def __init__(self, filename: str, allow_vars: bool):
        self.filename = filename
        self.allow_vars = allow_vars
        self.defines: dict[str, Term] = {}

    def error(self, message: str, node: Tree | Token) -> GlcError:
        return GlcError(message, _span(node, self.filename))

    def expr(self, node: Tree | Token, kind: str = "access") -> Term:
        """An argument of the given kind (glc/ir/ops.py): a literal token or an expression.

        Iterative (a stack of open forms, each with the arguments read so far), so nesting is
        bounded by memory, not by Python's recursion limit; forms are checked in source order."""
        if not self._is_application(node, kind):
            return self.simple(node, kind)
        stack = [self.open(node)]
        while True:
            op, rest, args, span = stack[-1]
            if len(args) < len(rest):
                arg, arg_kind = rest[len(args)], op.kind_of(len(args))
                if self._is_application(arg, arg_kind):
                    stack.append(self.open(arg))
                else:
                    args.append(self.simple(arg, arg_kind))
                continue
            stack.pop()
            term = Term(op.name, tuple(args), None, span)
            if not stack:
                return term
            stack[-1][2].append(term)

    @staticmethod
    def _is_application(node: Tree | Token, kind: str) -> bool:
        return isinstance(node, Tree) and kind not in TOKEN_KINDS

    def simple(self, node: Tree | Token, kind: str) -> Term:
        """An argument that is no operator application: a token, or a (requantize k) form."""
        span = _span(node, self.filename)
        if isinstance(node, Token):
            if self.allow_vars and node.startswith("?"):
                return leaf("var", str(node[1:]), span)
            if kind in TOKEN_KINDS:
                return self.token(node, kind, span)
            if _INT.fullmatch(node) or _FLOAT.fullmatch(node):
                raise self.error(f"expected {KIND_NAMES[kind]}, got the number {node}", node)
            if node in self.defines:
                return self.defines[node]
            if node in OPS:
                raise self.error(f"operator '{node}' must be applied: write ({node} ...)", node)
            if not _NAME.fullmatch(node):
                raise self.error(f"expected {KIND_NAMES[kind]}, got '{node}'", node)
            return leaf("symbol", str(node), span)
        if kind == "compute-type":
            return self.parametrised_compute(node, span)
        raise self.error(f"expected {KIND_NAMES[kind]}, got a form", node)

    def token(self, node: Token, kind: str, span: Span) -> Term:
        text = str(node)
        if kind == "int":
            if not _INT.fullmatch(text) or int(text) < 0:
                raise self.error(f"expected a non-negative integer, got '{text}'", node)
            return leaf("int", self.int32(text, node), span)
        if kind == "number":
            if _INT.fullmatch(text):
                return leaf("int", self.int32(text, node), span)
            if _FLOAT.fullmatch(text):
                if math.isinf(float(text)):  # it would print back as 'inf', which is no number
                    raise self.error(f"{text} is beyond float64's range (at most about "
                                     "1.8e308)", node)
                return leaf("float", float(text), span)
            raise self.error(f"expected a number, got '{text}'", node)
        if kind == "pad-type":
            if text not in PAD_TYPES:
                raise self.error(f"expected {KIND_NAMES[kind]}, got '{text}'", node)
            return leaf("pad-type", text, span)
        kind_def = KINDS.get(text)
        if kind_def is None:
            raise self.error(f"unknown compute type '{text}'{_suggest(text, KINDS)}", node)
        if kind_def.has_param:
            raise self.error(f"compute type {text} takes a parameter: write ({text} k)", node)
        return leaf("compute-type", (text,), span)

    def int32(self, text: str, node: Token) -> int:
        """An integer literal, which must fit int32 (INT_LIMIT)."""
        value = int(text)
        if not -INT_LIMIT <= value < INT_LIMIT:
            raise self.error(f"integer literal {text} does not fit int32 "
                             f"({-INT_LIMIT} to {INT_LIMIT - 1})", node)
        return value

    def parametrised_compute(self, node: Tree, span: Span) -> Term:
        parts = node.children
        if len(parts) != 2 or not isinstance(parts[0], Token):
            raise self.error("expected a compute type such as relu or (requantize k)", node)
        name = str(parts[0])
        if name not in KINDS or not KINDS[name].has_param:
            raise self.error(f"'{name}' is not a compute type that takes a parameter", parts[0])
        if not isinstance(parts[1], Token) or not _INT.fullmatch(parts[1]) or int(parts[1]) < 0:
            raise self.error(f"({name} k) needs a non-negative integer k", parts[1])
        return leaf("compute-type", (name, self.int32(parts[1], parts[1])), span)

    def open(self, node: Tree) -> tuple:
        """An operator application's frame for ``expr``: (operator, argument nodes, arguments
        read so far, span), its head and arity checked."""
        if not node.children:
            raise self.error("empty form (): expected (operator arguments...)", node)
        head, *rest = node.children
        if not isinstance(head, Token):
            raise self.error("expected an operator name at the head of the form", head)
        op = OPS.get(str(head))
        if op is None:
            raise self.error(f"unknown operator '{head}'{_suggest(str(head), OPS)}", head)
        if not op.arity_ok(len(rest)):
            raise self.error(f"{op.name} takes {_arity(op)}, got {len(rest)}", node)
        return op, rest, [], _span(node, self.filename)

    def declaration(self, node: Tree) -> InputDecl:
        parts = node.children
        usage = "expected (input NAME (shape d...) DTYPE)"
        if len(parts) != 4 or not isinstance(parts[1], Token) or not isinstance(parts[3], Token):
            raise self.error(usage, node)
        name, shape_node, dtype = str(parts[1]), parts[2], str(parts[3])
        if not _NAME.fullmatch(name):
            raise self.error(f"{usage}: '{name}' is not a name", parts[1])
        shape = self.expr(shape_node, "shape")
        if shape.op != "shape":
            raise self.error(f"{usage}: the shape must be a (shape d...) literal", shape_node)
        if dtype not in DTYPES:
            raise self.error(f"{usage}: unknown dtype '{dtype}', expected one of "
                             f"{', '.join(DTYPES)}", parts[3])
        dims = tuple(a.value for a in shape.args)
        return InputDecl(name, dims, dtype, _span(node, self.filename))

    def definition(self, node: Tree) -> None:
        parts = node.children
        if len(parts) != 3 or not isinstance(parts[1], Token):
            raise self.error("expected (define NAME EXPRESSION)", node)
        name = str(parts[1])
        if not _NAME.fullmatch(name) or name in OPS:
            raise self.error(f"cannot define '{name}': expected a fresh name", parts[1])
        if name in self.defines:
            raise self.error(f"'{name}' is already defined", parts[1])
        self.defines[name] = self.expr(parts[2])


def _suggest(word: str, names) -> str:
    close = difflib.get_close_matches(word, list(names), n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


def _arity(op) -> str:
    kinds = ", ".join(op.params)
    if op.variadic:
        return f"{len(op.params) - 1} or more arguments ({kinds})"
    count = len(op.params)
    return f"{count} argument{'s' if count != 1 else ''} ({kinds})"


def _is_form(node: Tree | Token, head: str) -> bool:
    return (isinstance(node, Tree) and bool(node.children) and isinstance(node.children[0], Token)
            and node.children[0] == head)


def parse_program(text: str, filename: str = "<input>") -> Program:
    """Parse a whole .gls program (declarations, defines, one result expression)."""
    forms = _forms(text, filename)
    reader = _Reader(filename, allow_vars=False)
    inputs: dict[str, InputDecl] = {}
    if not forms:
        raise GlcError("empty program: expected an expression", Span(filename, 1, 1))
    *heads, last = forms
    for node in heads:
        if _is_form(node, "input"):
            decl = reader.declaration(node)
            if decl.name in inputs:
                raise reader.error(f"input '{decl.name}' is declared twice", node)
            inputs[decl.name] = decl
        elif _is_form(node, "define"):
            reader.definition(node)
        else:
            raise reader.error("expected (input ...) or (define ...) here: the result expression"
                               " must be the last form of the file", node)
    if _is_form(last, "input") or _is_form(last, "define"):
        raise reader.error("expected the result expression after the declarations", last)
    # Hash-consed: a sub-term written twice (or a define used twice) is one node, so every
    # stage's walk is linear in the program's distinct nodes, not its text once expanded.
    body = share(reader.expr(last))
    return Program(filename, body, inputs, reader.defines)


def parse_term(text: str, filename: str = "<term>", allow_vars: bool = False) -> Term:
    """Parse one expression (``allow_vars``: ``?name`` pattern variables anywhere)."""
    forms = _forms(text, filename)
    if len(forms) != 1:
        raise GlcError(f"expected exactly one expression, got {len(forms)}", Span(filename, 1, 1))
    return _Reader(filename, allow_vars).expr(forms[0])


def read_program(path: str | Path) -> Program:
    """Read and parse a program file."""
    return parse_program(read_text(path, "program"), str(path))
