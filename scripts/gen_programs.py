"""Write programs/: Glenside kernels with seeded inputs and independently computed outputs.

Each program becomes a folder ``<out>/<name>/`` holding ``<name>.gls``, one ``<symbol>.npy`` per
input and ``output.npy`` (the convention of the reference's ``glenside-programs/``); the folder's
``README.md`` table is written from the same list, so it cannot disagree with the files.

The expected outputs are computed here with plain numpy (padding, explicit loops over output
positions, einsum), never with glc's interpreter, so that the corpus can test it. The numeric
contract is the "Numbers" section of the language spec (language.md): int8/int16 widen, dot
products and elementwise add/mul accumulate in int32 with two's-complement wrap, requantize rounds
half up by an arithmetic shift and clamps to int8, min-padding pads with the dtype's minimum.

Usage: ``python scripts/gen_programs.py [--out DIR]`` (default: the repository's ``programs/``).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import MAKERS  # noqa: E402

# ---------------------------------------------------------------- the programs


@dataclass(frozen=True)
class Program:
    """One corpus entry: the Glenside body, named inputs, the expected output, what it does."""

    name: str
    summary: str
    body: str
    inputs: dict[str, np.ndarray]
    output: np.ndarray
    declare: bool = True

    def source(self) -> str:
        """The .gls text: summary comment, input declarations (if any), then the body."""
        lines = [f"; {self.name}: {self.summary}"]
        if self.declare:
            lines += [f"(input {sym} (shape {' '.join(map(str, a.shape))}) {a.dtype})"
                      for sym, a in self.inputs.items()]
        return "\n".join(lines) + "\n" + self.body.strip("\n") + "\n"


RESULT_LINE = re.compile(r"^; result: \(\(([\d,]*)\),\(([\d,]*)\)\) (\w+)$", re.MULTILINE)


def programs() -> list[Program]:
    """Every corpus program, generated afresh from its seed."""
    return [Program(make.__name__.replace("_", "-"), make.__doc__,
                    **make(np.random.default_rng(seed))) for make, seed in MAKERS]


def check_result_comment(program: Program) -> None:
    """The hand-derived ``; result:`` access shape must match the reference output exactly."""
    found = RESULT_LINE.search(program.body)
    assert found, f"{program.name}: no '; result:' derivation line"
    dims = [int(d) for part in found.group(1, 2) for d in part.split(",") if d]
    assert tuple(dims) == program.output.shape, (program.name, dims, program.output.shape)
    assert found.group(3) == str(program.output.dtype), (program.name, found.group(3))


def readme(corpus: list[Program]) -> str:
    """programs/README.md: the folder convention and a table of the programs."""
    def shapes(arrays):
        return ", ".join(f"`{s}` {a.dtype} {'x'.join(map(str, a.shape))}" for s, a in arrays)

    rows = [f"| `{p.name}` | {p.summary} | {shapes(p.inputs.items())} | "
            f"{'x'.join(map(str, p.output.shape))} {p.output.dtype} |" for p in corpus]
    return "\n".join([
        "# programs/: Glenside kernels with inputs and expected outputs",
        "",
        "Written by `python scripts/gen_programs.py` (fixed seeds); do not edit by hand:",
        "`tests/test_gen_programs.py` regenerates the folder and requires every file to match.",
        "",
        "Each program is a folder `<name>/` holding",
        "",
        "- `<name>.gls`: the kernel, starting with a comment saying what it computes and a",
        "  derivation of its access-pattern shapes; inputs are declared with",
        "  `(input name (shape ...) dtype)`, except in `conv2d-nchw-oihw`, which is plain",
        "  Glenside (one expression; shapes come from the `.npy` files);",
        "- `<symbol>.npy`: one per input symbol (int8 and int32 inputs uniform over their",
        "  whole range, except the int32 bias, in [-2^15, 2^15); float64 standard normal);",
        "- `output.npy`: the expected result, in the dtype the language contract gives it",
        "  (int32 for integer dot products and elementwise sums, int8 after requantize or for",
        "  reduce-max and access operators on int8).",
        "",
        "The expected outputs are computed independently of glc: plain numpy (padding, explicit",
        "loops over output positions, einsum) with int64 accumulation wrapped to int32. Integer",
        "outputs must match bit for bit. Float outputs differ from another evaluation order only",
        "in the last bits: compare them with a relative tolerance (1e-12 is ample).",
        "",
        "| program | computes | inputs | output |",
        "|---|---|---|---|",
        *rows,
        "",
    ])


def write(out: Path) -> list[Program]:
    """Generate every program into ``out`` (created if needed); returns the programs."""
    corpus = programs()
    for program in corpus:
        check_result_comment(program)
        folder = out / program.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{program.name}.gls").write_text(program.source())
        for symbol, array in {**program.inputs, "output": program.output}.items():
            # C order always: a transposed view would otherwise be saved as fortran_order.
            np.save(folder / f"{symbol}.npy", np.ascontiguousarray(array))
    (out / "README.md").write_text(readme(corpus))
    return corpus


def main() -> None:
    """Command line: ``--out DIR`` (default programs/)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "programs")
    args = parser.parse_args()
    for program in write(args.out):
        print(f"{program.name}: {program.output.dtype} {program.output.shape}")


if __name__ == "__main__":
    main()
