"""Finding a program and its inputs: a .gls file or a program folder, .npy tensors, shapes.

A program folder holds one ``.gls`` (or ``.glenside``) file, one ``<symbol>.npy`` per input and
optionally ``output.npy``, the expected result (the reference's glenside-programs convention).
A symbol's shape and dtype come from its ``input`` declaration, a ``--shapes`` JSON
``{"name": [d0, ...]}``, or its ``.npy``; two sources that disagree are an error naming both.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from tokenize import TokenError

import numpy as np

from glc.errors import GlcError, Span, read_text
from glc.ir.check import size_problem
from glc.ir.term import walk
from glc.ir.types import DEFAULT_DTYPE, DTYPES, Access, fmt_dims, is_int
from glc.syntax.reader import Program, read_program

PROGRAM_SUFFIXES = (".gls", ".glenside")
EXPECTED = "output.npy"


@dataclass
class Bundle:
    """A program with what is known of its inputs."""

    program: Program
    env: dict[str, Access]
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    expected: np.ndarray | None = None
    expected_path: Path | None = None
    input_dir: Path | None = None  # the folder whose .npy files were read

    @property
    def symbols(self) -> list[str]:
        return symbols_of(self.program)

    def arrays_or_random(self, seed: int) -> dict[str, np.ndarray]:
        """The given input tensors, or (none given) seeded random ones of the declared types."""
        return self.arrays or random_inputs(self.env, self.symbols, seed)

    def inputs_label(self, seed: int) -> str:
        """``given``, or ``random (seed N)``: what the figures and --json say of the inputs."""
        return "given" if self.arrays else f"random (seed {seed})"

    def random_note(self, seed: int) -> str | None:
        """The line the CLI prints whenever ``arrays_or_random`` makes random inputs: which
        inputs, the seed, and why; None when the inputs are given (or there are none)."""
        names = [name for name in self.symbols if name in self.env]
        if self.arrays or not names:
            return None
        why = (f"{self.input_dir} holds no <symbol>.npy" if self.input_dir is not None
               else "no inputs folder (give a program folder or --inputs DIR)")
        return f"note: random inputs (seed {seed}) for {', '.join(names)}: {why}"


def symbols_of(program: Program) -> list[str]:
    """The tensor symbols the result expression uses, in order of first use."""
    return list(dict.fromkeys(t.value for t in walk(program.body) if t.op == "symbol"))


def find_program(path: str | Path) -> tuple[Path, Path | None]:
    """The program file, and its folder when ``path`` is a program folder or the one program
    file of a folder (``prog/prog.gls`` means ``prog/``: its inputs and output.npy count)."""
    path = Path(path)
    if path.is_dir():
        found = _program_files(path)
        if len(found) != 1:
            got = ", ".join(p.name for p in found) or "none"
            raise GlcError(f"a program folder needs exactly one .gls or .glenside file, got {got}",
                           str(path))
        return found[0], path
    if not path.exists():
        raise GlcError("no such program file or folder", str(path))
    folder = path.parent
    if path.suffix in PROGRAM_SUFFIXES and _program_files(folder) == [folder / path.name]:
        return path, folder
    return path, None


def _program_files(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.suffix in PROGRAM_SUFFIXES)
    except OSError as error:
        raise GlcError(f"cannot read the folder: {error.strerror}", str(folder)) from None


def _load_npy(path: Path) -> np.ndarray:
    """A tensor from a .npy file, its header checked before any data is read: a supported dtype
    (so never a pickled object array), dims glc can hold (``size_problem``)."""
    try:
        with path.open("rb") as file, warnings.catch_warnings():
            # numpy warns on stderr about headers written by Python 2; the file is still valid
            warnings.simplefilter("ignore")
            version = np.lib.format.read_magic(file)
            if version not in ((1, 0), (2, 0)):
                raise ValueError(f".npy format version {version[0]}.{version[1]} is not supported")
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, _, dtype = read_header(file)
            if str(dtype) not in DTYPES:
                raise GlcError(f"unsupported dtype {dtype}, expected one of {', '.join(DTYPES)}",
                               str(path))
            problem = size_problem(shape) if all(d >= 0 for d in shape) else "negative dims"
            if problem:
                raise GlcError(f"the tensor has dims {fmt_dims(shape)}: {problem}", str(path))
            file.seek(0)
            return np.load(file, allow_pickle=False)
    except OSError as error:
        raise GlcError(f"cannot read tensor: {error.strerror or error}", str(path)) from None
    except (ValueError, EOFError, SyntaxError, TypeError, ArithmeticError, TokenError) as error:
        # numpy's own words for a file that is no valid .npy: a bad magic string (an .npz, a
        # text file), a garbled or oversized header, data shorter than the header says
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise GlcError(f"cannot load tensor: not a valid .npy file: {reason}", str(path)) from None


def _read_shapes(path: str | Path) -> dict[str, tuple[int, ...]]:
    try:
        data = json.loads(read_text(path, "shapes"))
    except json.JSONDecodeError as error:
        raise GlcError(f"invalid JSON: {error.msg}",
                       Span(str(path), error.lineno, error.colno)) from None
    if not isinstance(data, dict) or not all(
            isinstance(v, list) and all(type(d) is int and d >= 0 for d in v)  # not a bool
            for v in data.values()):
        raise GlcError('expected {"name": [d0, d1, ...], ...} with non-negative integer dims',
                       str(path))
    return {name: tuple(dims) for name, dims in data.items()}


def load(path: str | Path, inputs: str | Path | None = None,
         shapes: str | Path | None = None) -> Bundle:
    """Parse a program and gather its inputs' shapes, tensors and expected result."""
    gls, folder = find_program(path)
    program = read_program(gls)
    symbols = symbols_of(program)
    input_dir = Path(inputs) if inputs is not None else folder
    if input_dir is not None and not input_dir.is_dir():
        raise GlcError("inputs must be a folder of <symbol>.npy files", str(input_dir))

    # Each source: name -> (dims, dtype or None, where it was said).
    sources: list[dict[str, tuple[tuple[int, ...], str | None, str]]] = [
        {d.name: (d.dims, d.dtype, str(d.span)) for d in program.inputs.values()}]
    if shapes is not None:
        sources.append({name: (dims, None, f"{shapes} ({name})")
                        for name, dims in _read_shapes(shapes).items()})
    arrays: dict[str, np.ndarray] = {}
    expected = expected_path = None
    if input_dir is not None:
        for npy in sorted(input_dir.glob("*.npy")):
            if npy.name == EXPECTED:
                expected, expected_path = _load_npy(npy), npy
            elif npy.stem in symbols:
                arrays[npy.stem] = _load_npy(npy)
            else:
                raise GlcError(f"unexpected input: the program has no symbol '{npy.stem}' "
                               f"(its symbols: {', '.join(symbols) or 'none'})", str(npy))
        if arrays or expected is not None:
            # An output.npy was computed from inputs: random ones would only give a mismatch.
            for name in symbols:
                if name not in arrays:
                    raise GlcError(f"missing input for symbol '{name}'"
                                   + ("" if arrays else f" (the folder has {EXPECTED}, computed "
                                      "from inputs it does not hold)"),
                                   str(input_dir / f"{name}.npy"))
        sources.append({name: (tuple(a.shape), str(a.dtype), str(input_dir / f"{name}.npy"))
                        for name, a in arrays.items()})
    return Bundle(program, _merge(sources), arrays, expected, expected_path, input_dir)


def _merge(sources) -> dict[str, Access]:
    known: dict[str, tuple[tuple[int, ...], str | None, str]] = {}
    for source in sources:
        for name, (dims, dtype, where) in source.items():
            if name not in known:
                known[name] = (dims, dtype, where)
                continue
            old_dims, old_dtype, old_where = known[name]
            if old_dims != dims or (dtype and old_dtype and dtype != old_dtype):
                raise GlcError(f"'{name}' is {fmt_dims(old_dims)} {old_dtype or ''} at "
                               f"{old_where} but {fmt_dims(dims)} {dtype or ''} at {where}",
                               where)
            known[name] = (dims, old_dtype or dtype, old_where)
    return {name: Access(dims, (), dtype or DEFAULT_DTYPE)
            for name, (dims, dtype, _) in known.items()}


def random_inputs(env: dict[str, Access], names: list[str], seed: int) -> dict[str, np.ndarray]:
    """Seeded random tensors of the given types: integers over int8's range, floats normal.

    Names with no known type are left out: the shape checker reports them at their use."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name in (n for n in names if n in env):
        ty = env[name]
        if is_int(ty.dtype):
            arrays[name] = rng.integers(-128, 128, ty.dims).astype(ty.dtype)
        else:
            arrays[name] = rng.standard_normal(ty.dims).astype(ty.dtype)
    return arrays
