"""User-facing errors: each carries where it happened and what was expected.

Only the CLI turns a GlcError into an exit status; anything else that escapes is a bug.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path

# Unicode categories that would break a line, or hide in one: control and format characters,
# surrogates, private and unassigned code points, line and paragraph separators.
_HIDDEN = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def printable(text: str) -> str:
    """``text`` with every character that would break or hide in a line escaped (a newline as
    ``\\x0a``, ``\\x00``, ``\\u2028``): an ONNX name or a path copied into a comment or an error
    stays on its line."""
    return "".join(c if unicodedata.category(c) not in _HIDDEN else _escape(ord(c)) for c in text)


def _escape(code: int) -> str:
    return (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000
            else f"\\U{code:08x}")


@dataclass(frozen=True)
class Span:
    """A location in a source file (1-based line and column)."""

    file: str
    line: int
    col: int
    end_line: int | None = None
    end_col: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class GlcError(Exception):
    """An error the user caused: bad input, an ill-typed program, a failed check.

    ``where`` is a Span, a path, or None; str() gives the one-line CLI form
    ``file:line:col: error: message``.
    """

    def __init__(self, message: str, where: Span | str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where

    def __str__(self) -> str:
        if self.where is None:
            return f"error: {self.message}"
        # A path is the user's: a newline in it (a folder named "a\nb") must not break the line.
        return f"{printable(str(self.where))}: error: {self.message}"


class DoesNotFit(GlcError):
    """A well-formed program that needs more of the hardware than the configuration has (DRAM,
    instruction memory): not a bug in the program, a limit of the config it was compiled for."""


class ShapeError(Exception):
    """Raised by a shape rule, or by an operator's evaluation for a value it refuses (a NaN
    multiplier); the checker, or the interpreter, adds the location of the offending form.

    ``arg`` optionally names which argument (0-based) is at fault, so the error can point at it.
    """

    def __init__(self, message: str, arg: int | None = None):
        super().__init__(message)
        self.message = message
        self.arg = arg


def read_text(path: str | Path, what: str) -> str:
    """A user's text file (``what`` names it in errors: "program", "shapes"), decoded as UTF-8
    with an optional byte-order mark; a GlcError at the first byte that is not UTF-8, or naming
    the file if it cannot be read."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise GlcError(f"cannot read {what}: {error.strerror}", str(path)) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        col = error.start - data.rfind(b"\n", 0, error.start)
        raise GlcError(f"cannot read {what}: byte 0x{data[error.start]:02x} is not UTF-8 text",
                       Span(str(path), line, col)) from None
