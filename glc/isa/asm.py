"""The text assembly format: assembler and disassembler (docs/isa.md, "Assembly language").

    ; comment
    .equ NAME, expr          define a symbol (N, P, SP_ROWS, ... come from the configuration)
    .word expr               emit a raw 512-bit word (e.g. a deliberately illegal one)
    load acc, row=0, dram=B, run=N, count0=M, stride0=0, push_next

Operands are `field=expr` or the bare name of a 1-bit field that is set. Errors point at
file:line:col.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass, field

from glc.errors import GlcError, Span
from glc.hwconfig import HwConfig
from glc.isa.encoding import DecodeError, Instruction, decode, encode, illegal_reason
from glc.isa.fields import ALL_FLAGS, BY_NAME, VEC_FLAGS, WORD_BITS, Field

TOKEN_FLAGS = (*ALL_FLAGS, *VEC_FLAGS)

_OPERATORS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a // b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
    ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
    ast.BitOr: lambda a, b: a | b, ast.BitAnd: lambda a, b: a & b,
}


@dataclass
class Assembly:
    """An assembled program: its words, their source locations and the symbol table."""

    words: list[int] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)
    symbols: dict[str, int] = field(default_factory=dict)

    def instructions(self) -> list[Instruction]:
        """The words decoded; a `.word` that is no instruction is a GlcError at its line."""
        decoded, seen = [], {}  # an instruction is immutable: a repeated word decoded once
        for word, span in zip(self.words, self.spans, strict=True):
            if word not in seen:
                try:
                    seen[word] = decode(word)
                except DecodeError as error:
                    raise GlcError(f"{error.code.name}: {error.detail}", span) from None
            decoded.append(seen[word])
        return decoded


def config_symbols(config: HwConfig) -> dict[str, int]:
    """The symbols every program sees (docs/isa.md, "Assembly language")."""
    return {"N": config.array_size, "P": config.dram_port_bytes,
            "SP_ROWS": config.scratchpad_rows, "ACC_ROWS": config.accumulator_rows,
            "DRAM_BYTES": config.dram_bytes}


def assemble(text: str, config: HwConfig, filename: str = "<asm>",
             strict: bool = True) -> Assembly:
    """Assemble `text` for `config`; a GlcError with file:line:col on the first mistake.

    `strict=False` also accepts instructions that encode but are illegal on this configuration
    (count 0, run > N, ...), as a disassembly of a faulty image contains them.
    """
    out = Assembly(symbols=config_symbols(config))
    # The word of each instruction text seen since the last .equ: generated programs repeat
    # the same lines thousands of times (a kernel's MATMULs, its loads' operands).
    words: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split(";", 1)[0]
        stripped = line.strip()
        if not stripped:
            continue
        start = len(line) - len(line.lstrip())
        span = Span(filename, number, start + 1)
        if stripped in words:
            out.words.append(words[stripped])
            out.spans.append(span)
            continue
        match = re.match(r"(\S+)\s*(.*)", stripped)
        head, rest = match.group(1), match.group(2)
        operands = _split(rest, start + match.start(2), filename, number)
        if head == ".equ":
            _define(operands, out.symbols, filename, number, span)
            words.clear()
        elif head == ".word":
            if len(operands) != 1:
                raise GlcError(".word takes one expression", span)
            col, expr = operands[0]
            value = _evaluate(expr, out.symbols, Span(filename, number, col))
            if not 0 <= value < 1 << WORD_BITS:
                raise GlcError(f".word {value} is not a {WORD_BITS}-bit word", span)
            out.words.append(value)
            out.spans.append(span)
        else:
            instruction = _instruction(head, operands, out.symbols, filename, number, span)
            reason = illegal_reason(instruction, config.array_size, config.column_split)
            if reason and strict:
                raise GlcError(f"illegal {head}: {reason}", span)
            words[stripped] = encode(instruction)
            out.words.append(words[stripped])
            out.spans.append(span)
    return out


def _split(rest: str, offset: int, filename: str, number: int) -> list[tuple[int, str]]:
    """Comma-separated operands with their 1-based columns (`offset`: 0-based start of `rest`)."""
    operands, col = [], offset
    for part in rest.split(","):
        lead = len(part) - len(part.lstrip())
        if part.strip():
            operands.append((col + lead + 1, part.strip()))
        elif rest.strip():
            raise GlcError("empty operand", Span(filename, number, col + 1))
        col += len(part) + 1
    return operands


def _define(operands, symbols, filename, number, span) -> None:
    if len(operands) != 2 or not operands[0][1].isidentifier():
        raise GlcError(".equ takes a name and an expression: .equ NAME, expr", span)
    (_, name), (col, expr) = operands
    if name in symbols:
        raise GlcError(f"symbol {name} is already defined", span)
    symbols[name] = _evaluate(expr, symbols, Span(filename, number, col))


def _instruction(mnemonic, operands, symbols, filename, number, span) -> Instruction:
    op = BY_NAME.get(mnemonic)
    if op is None:
        raise GlcError(f"unknown mnemonic {mnemonic!r} (expected one of "
                       f"{', '.join(BY_NAME)}, .equ, .word)", span)
    values: dict[str, int] = {}
    for col, operand in operands:
        where = Span(filename, number, col)
        name, eq, expr = operand.partition("=")
        name = name.strip()
        try:
            f = op.field(name)
        except KeyError:
            names = ", ".join(x.name for x in op.fields)
            raise GlcError(f"{mnemonic} has no field {name!r} (fields: {names})", where) from None
        if name in values:
            raise GlcError(f"field {name} given twice", where)
        if not eq:
            if not f.flag:
                raise GlcError(f"{name} needs a value: {name}=...", where)
            values[name] = 1
            continue
        value_col = col + operand.index("=") + 1 + (len(expr) - len(expr.lstrip()))
        values[name] = _value(f, expr.strip(), symbols, Span(filename, number, value_col))
    return Instruction.make(mnemonic, **values)


def _value(f: Field, expr: str, symbols: dict[str, int], where: Span) -> int:
    if expr in f.names:
        return f.names.index(expr)
    value = _evaluate(expr, symbols, where)
    if f.wrap:
        value %= 1 << f.width
    if not f.low <= value <= f.high:
        raise GlcError(f"{f.name}={value} does not fit its {f.width}-bit field "
                       f"({f.low} … {f.high})", where)
    return value


@functools.lru_cache(maxsize=1 << 16)
def _parse(expr: str) -> ast.AST:
    """The expression's tree (generated programs repeat the same operand texts thousands of
    times; parsing dominated assembling them)."""
    return ast.parse(expr, mode="eval").body


def _evaluate(expr: str, symbols: dict[str, int], where: Span) -> int:
    """An integer expression over symbols: + - * / (floor) % << >> | & and parentheses."""
    try:
        tree = _parse(expr)
    except SyntaxError as error:
        raise GlcError(f"not an expression: {expr!r}", where) from error

    def walk(node: ast.AST) -> int:
        here = Span(where.file, where.line, where.col + getattr(node, "col_offset", 0))
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in symbols:
                raise GlcError(f"undefined symbol {node.id}", here)
            return symbols[node.id]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            value = walk(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            left, right = walk(node.left), walk(node.right)
            if isinstance(node.op, ast.Div | ast.FloorDiv | ast.Mod) and right == 0:
                raise GlcError("division by zero", here)
            if isinstance(node.op, ast.LShift | ast.RShift) and not 0 <= right <= WORD_BITS:
                raise GlcError(f"shift by {right} outside 0 … {WORD_BITS}", here)
            return _OPERATORS[type(node.op)](left, right)
        raise GlcError(f"not allowed in an expression: {ast.unparse(node)!r}", here)

    return walk(tree)


def format_instruction(instruction: Instruction) -> str:
    """The assembly text of one instruction: every non-default field (docs/isa.md), mode flags
    first and token flags last, as programs are written."""
    parts, tokens = [], []
    for f, value in zip(instruction.op.fields, instruction.values, strict=True):
        if f.flag:
            if value:
                (tokens if f.name in TOKEN_FLAGS else parts).append(f.name)
        elif f.names and value < len(f.names):
            parts.append(f"{f.name}={f.names[value]}")
        elif value != f.default:
            parts.append(f"{f.name}={value}")
    parts += tokens
    name = instruction.op.name
    return f"{name} {', '.join(parts)}" if parts else name


def format_word(word: int, array_size: int | None = None) -> str:
    """A word as assembly: its instruction, or `.word` with the reason it is not one (with
    ``array_size``, also an instruction illegal on an N×N array, which `assemble` refuses)."""
    try:
        instruction = decode(word)
    except DecodeError as error:
        return f".word 0x{word:x}  ; {error.code.name}: {error.detail}"
    reason = illegal_reason(instruction, array_size) if array_size is not None else None
    if reason:
        return f".word 0x{word:x}  ; ILLEGAL_FIELD: {instruction.op.name}: {reason}"
    return format_instruction(instruction)


def disassemble(words: list[int], array_size: int | None = None) -> str:
    """The assembly text of a program, one line per word; it assembles back to the same words
    (on an ``array_size`` array, when given: illegal instructions become `.word` lines)."""
    return "".join(format_word(w, array_size) + "\n" for w in words)
