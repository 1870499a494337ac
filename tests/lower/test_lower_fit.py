"""Whether a program fits its hardware config: only what the accelerator touches takes DRAM,
and a program that does not fit is refused quickly, before its instructions are generated, as a
DoesNotFit with a located one-line message (regress: unfit, not error)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import compile_program
from glc.errors import DoesNotFit
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.lower.execute import execute
from glc.rewrites import DEFAULT, select

N4 = load_config("n4")

# A 100 KiB input only a host step reads (a reduce-max), named first, beside a 16x64·64x16 kernel
# whose tensors take 2.3 KiB: n4's plan used to put the large input first and refuse the kernel.
HOST_FIRST = """(input big (shape 16 16 400) int8)
(input a (shape 16 64) int8)
(input b (shape 64 16) int8)
(access-concatenate
  (access (compute reduce-max (access (access-tensor big) 2)) 2)
  (compute (requantize 4) (compute dot-product (access-cartesian-product
    (access (access-tensor a) 1) (access (access-transpose (access-tensor b) (list 1 0)) 1))))
  0)
"""


def gemm(m: int, k: int, n: int) -> str:
    """An int8 product with int8 output, in Glenside's matmul idiom."""
    return (f"(input a (shape {m} {k}) int8)\n(input b (shape {k} {n}) int8)\n"
            "(compute (requantize 8) (compute dot-product (access-cartesian-product "
            "(access (access-tensor a) 1) "
            "(access (access-transpose (access-tensor b) (list 1 0)) 1))))\n")


def glc(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "p.gls").write_text(text)
    return folder


def test_only_what_the_accelerator_touches_goes_into_dram(tmp_path):
    bundle = load(write(tmp_path / "host-first", HOST_FIRST))
    result = compile_program(bundle, rules=select(DEFAULT, N4.array_size), config=N4)
    program = result.lowered
    buffers = program.buffers
    (kernel,) = program.kernels
    touched = {*kernel.inputs, kernel.output}
    assert touched == {"a", "b", kernel.output}
    assert all(buffers[name].address + buffers[name].nbytes <= N4.dram_bytes for name in touched)
    assert buffers["big"].address >= N4.dram_bytes  # the host's memory
    arrays = bundle.arrays_or_random(0)
    expected, _ = interpret(bundle.program.body, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_a_program_over_the_instruction_memory_is_unfit_in_one_located_line(tmp_path):
    folder = write(tmp_path / "long", gemm(256, 64, 64))
    start = time.process_time()
    result = glc("compile", folder, "--config", "n4")
    seconds = time.process_time() - start
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{folder / 'p.gls'}:3:1: error: ") and "<asm>" not in line
    assert "12801 instructions" in line and "n4's instruction memory holds 1024" in line
    # Refused before assembling its 12 801 instructions (three times: twice costing, once
    # lowering), which took 18-23 s of CPU.
    assert seconds < 8, seconds


def test_regress_marks_instruction_memory_overflow_unfit_not_error(tmp_path):
    write(tmp_path / "long", gemm(256, 64, 64))
    result = glc("regress", tmp_path, "--config", "n4", "--engine", "isa", "--json")
    (row,) = json.loads(result.stdout)["rows"]
    assert row["status"] == "unfit" and "instruction memory" in row["reason"]
    assert result.exit_code == 0  # no baseline said it used to fit


def test_an_oversized_gemm_is_refused_as_does_not_fit_before_it_is_generated(monkeypatch):
    import glc.isa.gemm

    monkeypatch.setattr(glc.isa.gemm, "assemble", lambda *a: pytest_fail())
    try:
        glc.isa.gemm.gemm_program(256, 64, 64, N4, shift=8)
    except DoesNotFit as error:
        assert "instruction memory" in str(error) and "n4" in str(error)
    else:
        raise AssertionError("a 256x64x64 GEMM fits n4's 1024 instructions?")


def pytest_fail():
    raise AssertionError("assembled a schedule too long for the instruction memory")
