"""Fuzzing the front end through the real CLI: programs, .npy inputs, --shapes JSON, config TOML,
ONNX models (``glc import``) and ``-o`` targets.

Each target is a hypothesis strategy of file contents and the command that reads them. Whatever
the contents, the command must exit 0 or 1, raise nothing (no traceback), and on exit 1 print
exactly one error line on stderr, located: ``file:line:col: error: …`` or ``path: error: …``
naming the file the error is in (``note:`` lines, such as the random-inputs one, may precede it),
or ``error: --option …`` naming the option at fault. A command given ``-o`` changes nothing
outside its output: every file and folder of the example's sandbox is compared before and after.

``fuzz(target, examples)`` runs one target; tests/cli/test_fuzz.py calls it with a CI budget, and
a long campaign (scripts/fuzz.py) can call it, or ``campaign``, with a larger count.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import hypothesis
import numpy as np
from click.testing import CliRunner
from fuzz_files import Model, base_models, hostile_models, output_paths, sandbox, tree
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from glc.cli import main
from glc.errors import printable
from glc.inputs import find_program
from glc.outdir import RECORD

ROOT = Path(__file__).parents[2]
PROGRAMS = sorted(p for p in (ROOT / "programs").iterdir() if p.is_dir())
SOURCES = [find_program(p)[0].read_text() for p in PROGRAMS]
CONFIG = (ROOT / "hw" / "configs" / "n4.toml").read_bytes()
# A small program whose inputs the .npy and shapes targets replace: a dense layer.
DENSE = ROOT / "programs" / "dense-int8"
TOKENS = ["(", ")", "access", "0", "7", "-1", "2.5", "x", "(shape 1 2)", "(list 1 0)",
          "zero-padding", "relu", "(requantize 3)", "?a", ";", "\n", "access-windows", "\x00",
          "\ufeff", "4294967296", "(shape 0 3)", "(literal 3)", "(define", "(input", "1e400",
          "(shape 100000 100000)", "compute", "dot-product", "(access-literal (literal 1))"]
UNARY = ["(compute relu {})", "(access-transpose {} (list 1 0))", "(access {} 1)",
         "(compute negative {})", "(access-tensor {})"]


def invoke(args: list[str | Path]):
    """The CLI as a user runs it: click's runner over ``glc.cli.main``."""
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_clean(result, files: list[Path], options: tuple[str, ...] = ()) -> None:
    """Exit 0 or 1 and no exception; on 1, one error line located in one of ``files`` (or
    naming one of the command-line ``options``)."""
    assert result.exit_code in (0, 1), (result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        repr(result.exception), result.output)
    assert "Traceback" not in result.output
    lines = [line for line in result.stderr.splitlines() if not line.startswith("note: ")]
    if result.exit_code == 0:
        assert lines == [], result.stderr  # no warnings either
        return
    assert len(lines) == 1, result.stderr
    if any(lines[0].startswith(f"error: {option} ") for option in options):
        return
    where, sep, _ = lines[0].partition(": error: ")
    assert sep and where, lines[0]
    assert any(where == str(f) or where.startswith(f"{f}:") for f in files), (lines[0], files)


# ---- the strategies ----------------------------------------------------------------------

@st.composite
def mangled_programs(draw) -> str:
    """A shipped program cut, spliced with tokens, with bytes dropped, or glued to another."""
    source = draw(st.sampled_from(SOURCES))
    cut = draw(st.integers(0, len(source)))
    insert = draw(st.lists(st.sampled_from(TOKENS), max_size=4))
    drop = draw(st.integers(0, 12))
    text = source[:cut] + " ".join(insert) + source[cut + drop:]
    if draw(st.booleans()):
        other = draw(st.sampled_from(SOURCES))
        text = text[:draw(st.integers(0, len(text)))] + other[draw(st.integers(0, len(other))):]
    return text


@st.composite
def deep_programs(draw) -> str:
    """Nesting of a few thousand levels, possibly unbalanced or with a wrong form inside."""
    depth = draw(st.integers(300, 3000))
    forms = draw(st.lists(st.sampled_from(UNARY), min_size=1, max_size=3))
    body = "x"
    for level in range(depth):
        body = forms[level % len(forms)].format(body)
    if draw(st.booleans()):
        at = draw(st.integers(0, len(body)))
        body = body[:at] + draw(st.sampled_from(TOKENS)) + body[at:]
    return "(input x (shape 2 3) int8)\n" + body + "\n"


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


@st.composite
def npy_files(draw) -> bytes:
    """A valid .npy of an input (any dtype, shape), then truncated, flipped or extended."""
    dtype = draw(st.sampled_from(["int8", "int16", "int32", "int64", "float32", "float64",
                                  "uint8", ">i4", "bool", "complex64"]))
    shape = tuple(draw(st.lists(st.integers(0, 40), max_size=3)))
    data = bytearray(_npy(np.zeros(shape, dtype)))
    for _ in range(draw(st.integers(0, 4))):
        action = draw(st.sampled_from(["flip", "truncate", "insert", "header"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] = draw(st.integers(0, 255))
        elif action == "truncate":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(st.binary(max_size=8))
        else:  # rewrite the header text: shapes, dtypes and keys numpy must refuse
            header = draw(st.sampled_from([
                "{'descr': '|i1', 'fortran_order': False, 'shape': (100000, 100000), }",
                "{'descr': '|O', 'fortran_order': False, 'shape': (4, 32), }",
                "{'descr': '<i4', 'fortran_order': True, 'shape': (-4, 32), }",
                "{'descr': '|i1', 'shape': (4, 32)", "[1, 2, 3]", "{'descr': 5}",
                "{'descr': '|i1', 'fortran_order': False, 'shape': (4, 32), 'x': 1e999}"]))
            text = header.encode() + b"\n"
            data = bytearray(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text
                             + data[128:])
    return bytes(data)


def _json_values():
    return st.recursive(st.none() | st.booleans() | st.integers(-10, 1 << 40) | st.floats()
                        | st.text(max_size=5),
                        lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=10)


@st.composite
def shapes_files(draw) -> bytes:
    """--shapes JSON: plausible maps, other JSON values, or mangled bytes."""
    kind = draw(st.sampled_from(["map", "json", "bytes"]))
    if kind == "map":
        dims = st.lists(st.integers(-2, 1 << 33) | st.sampled_from([4, 20, 32, 0]), max_size=4)
        data = draw(st.dictionaries(st.sampled_from(["x", "w", "y", ""]), dims, max_size=3))
        text = repr(data).replace("'", '"')
    elif kind == "json":
        text = json.dumps(draw(_json_values()))
    else:
        return draw(st.binary(max_size=40))
    raw = text.encode()
    if draw(st.booleans()) and raw:
        at = draw(st.integers(0, len(raw) - 1))
        raw = raw[:at] + draw(st.binary(max_size=3)) + raw[at + 1:]
    return raw


@st.composite
def config_files(draw) -> bytes:
    """A shipped config with lines dropped, values changed or bytes mangled."""
    lines = CONFIG.split(b"\n")
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        action = draw(st.sampled_from(["drop", "value", "bytes", "line"]))
        if action == "drop":
            del lines[at]
            if not lines:
                lines = [b""]
        elif action == "value" and b"=" in lines[at]:
            key = lines[at].split(b"=")[0]
            value = draw(st.sampled_from([b"0", b"-1", b"1", b"2", b"3", b"4096", b"1e3",
                                          b'"four"', b"true", b"[1]", b"16777216", b"99999999999"]))
            lines[at] = key + b"= " + value
        elif action == "bytes":
            lines[at] = draw(st.binary(max_size=12))
        else:
            lines.insert(at, draw(st.sampled_from([b"[table]", b"extra = 1", b"array_size = 4",
                                                   b"\xef\xbb\xbf", b"= 3"])))
    return b"\n".join(lines)


# ---- the targets -------------------------------------------------------------------------

@dataclass
class Case:
    """One prepared run: the arguments, the files an error may be located in, the options an
    error may name instead, the folder to run in, and a check of the outcome."""

    args: list
    files: list
    options: tuple[str, ...] = ()
    cwd: Path | None = None
    after: list = field(default_factory=list)  # callables taking the CliRunner result


@dataclass(frozen=True)
class Target:
    """What to fuzz: a strategy of file contents, and how to run the CLI on them."""

    name: str
    strategy: st.SearchStrategy
    run: Callable[[Path, object], tuple[list, list[Path]] | Case]  # (folder, drawn) -> …


def _program(folder: Path, text: str):
    source = folder / "fuzz.gls"
    source.write_bytes(text.encode("utf-8", "surrogatepass"))
    return ["check", source], [source]


def _interp_program(folder: Path, text: str):
    args, files = _program(folder, text)
    return ["interp", *args[1:]], files


def _npy_input(folder: Path, data: bytes):
    program = folder / "dense"
    shutil.copytree(DENSE, program)
    (program / "x.npy").write_bytes(data)
    return ["interp", program], [program / "x.npy", program / "dense-int8.gls", program]


def _shapes(folder: Path, data: bytes):
    source, shapes = folder / "p.gls", folder / "shapes.json"
    source.write_text("(compute dot-product (access-cartesian-product (access x 1) "
                      "(access (access-transpose w (list 1 0)) 1)))\n")
    shapes.write_bytes(data)
    return ["check", source, "--shapes", shapes], [source, shapes]


def _config(folder: Path, data: bytes):
    config = folder / "fuzz.toml"
    config.write_bytes(data)
    return ["compile", DENSE, "--config", config, "--iter-limit", "1", "--extractor",
            "greedy"], [config, DENSE, DENSE / "dense-int8.gls"]


def _import(folder: Path, drawn: Model):
    """``glc import`` of a hostile model (and its --input-shape options)."""
    model, out = folder / "model.onnx", folder / "program"
    model.write_bytes(drawn.data)
    shapes = [a for shape in drawn.input_shapes for a in ("--input-shape", shape)]

    def written_whole_or_not_at_all(result):
        if result.exit_code == 0:
            assert (out / "output.npy").is_file() and list(out.glob("*.gls")), drawn.edits
        assert sorted(p.name for p in folder.iterdir()) == \
            ["model.onnx", *(["program"] if result.exit_code == 0 else [])], drawn.edits

    return Case(["import", model, "-o", out, *shapes], [model, out], ("--input-shape",),
                after=[written_whole_or_not_at_all])


# The commands that take -o: a folder (import, compile) or a file (asm, interp), and its input.
OUTPUT_COMMANDS = ("import", "compile", "asm", "interp")


@st.composite
def output_targets(draw) -> tuple[str, str, str]:
    """A command, an -o target (fuzz_files.output_paths, or the command's input), and a suffix
    for a file's name."""
    target = draw(st.sampled_from(["INPUT"]) | output_paths())
    return (draw(st.sampled_from(OUTPUT_COMMANDS)), target,
            draw(st.sampled_from([".npy", ".bin", ".hex", "", "/"])))


def _output(folder: Path, drawn: tuple[str, str, str]) -> Case:
    """A command writing -o into the sandbox: whatever the target, nothing outside it changes,
    nothing at all on an error, and no staging file or folder is left behind."""
    command, target, suffix = drawn
    work = sandbox(folder)
    program = work / "dense"  # a copy: -o naming the input must never reach the repository
    shutil.copytree(DENSE, program)
    inputs = {"import": work / "model.onnx", "compile": program, "asm": work / "h.s",
              "interp": program}
    (work / "model.onnx").write_bytes(base_models()[0] if command == "import" else b"")
    (work / "h.s").write_text("halt\n")
    out = str(inputs[command]) if target == "INPUT" else target
    if command in ("asm", "interp") and target != "INPUT":
        out += suffix
    args = {"import": ["import", inputs["import"], "-o", out],
            "compile": ["compile", program, "-o", out, "--iter-limit", "1", "--extractor",
                        "greedy"],
            "asm": ["asm", inputs["asm"], "-o", out],
            "interp": ["interp", program, "-o", out]}[command]
    before = tree(folder)
    written = os.path.relpath(os.path.abspath(work / out), folder)
    # What -o may replace: a folder glc wrote (its record lists all it holds), or nothing.
    target_path = work / out
    replaceable = (not os.path.lexists(target_path) or (target_path / RECORD).is_file()
                   and {p.name for p in target_path.iterdir()} <= {RECORD, "model.gls"})

    def nothing_else_touched(result):
        after = tree(folder)
        if result.exit_code == 1:
            assert after == before, drawn
        for name, content in before.items():
            inside = name == written or name.startswith(f"{written}{os.sep}")
            if not (inside and replaceable):
                assert after.get(name, "missing") == content, (drawn, name)
        left = [n for n in after if ".new-" in n or ".old-" in n]
        assert not left, (drawn, left)

    # an error names the path as given (a newline in it escaped: glc/errors.py's printable)
    files = [printable(p) for p in (out, str(Path(out)))] + [inputs[command],
                                                               *program.iterdir()]
    return Case(args, files, cwd=work, after=[nothing_else_touched])


TARGETS = {t.name: t for t in (
    Target("programs", mangled_programs(), _program),
    Target("programs-interp", mangled_programs(), _interp_program),
    Target("deep-programs", deep_programs(), _interp_program),
    Target("npy-inputs", npy_files(), _npy_input),
    Target("shapes-json", shapes_files(), _shapes),
    Target("config-toml", config_files(), _config),
    Target("onnx-import", hostile_models(), _import),
    Target("output-paths", output_targets(), _output),
)}


def fuzz(name: str, examples: int, seed: int | None = None) -> int:
    """Run target ``name`` on up to ``examples`` drawn inputs (hypothesis, no deadline, no
    example database; derandomized unless ``seed`` is given); returns how many ran. An assertion
    error (with hypothesis's shrunk example) if one misbehaves."""
    target = TARGETS[name]
    ran = 0

    @settings(max_examples=examples, deadline=None, database=None, derandomize=seed is None,
              suppress_health_check=list(HealthCheck))
    @given(target.strategy)
    def one(drawn):
        nonlocal ran
        ran += 1
        with tempfile.TemporaryDirectory() as folder:
            case = target.run(Path(folder), drawn)
            if not isinstance(case, Case):
                case = Case(*case)
            with contextlib.chdir(case.cwd or os.getcwd()):
                result = invoke(case.args)
            assert_clean(result, case.files, case.options)
            for check in case.after:
                check(result)

    if seed is not None:
        one = hypothesis.seed(seed)(one)
    one()
    return ran


def campaign(examples: dict[str, int] | int, seed: int | None = None) -> dict[str, int]:
    """Every target with its number of inputs (one number: each), a long run (scripts/fuzz.py);
    returns how many ran per target. Raises on the first misbehaving input."""
    counts = examples if isinstance(examples, dict) else dict.fromkeys(TARGETS, examples)
    return {name: fuzz(name, counts[name], seed) for name in TARGETS if counts.get(name)}
