"""Whether a program fits its hardware config: only what the accelerator touches takes DRAM,
and a program that does not fit is refused quickly, before its instructions are generated, as a
DoesNotFit with a located one-line message (regress: unfit, not error)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from glc.cli import main
from glc.compiler import compile_program
from glc.diagnose import check_each
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.lower.execute import execute
from glc.rewrites import DEFAULT, select

ROOT = Path(__file__).resolve().parents[2]
N4 = load_config("n4")

# A 75 KiB input only a host step reads (a negation; the reduce-max over its result is a fold on
# the vector unit), named first, beside a 16x64·64x16 kernel whose tensors take 2.3 KiB: n4's
# plan used to put the large input first and refuse the kernel. (100 KiB until the folds' LOADs
# were ordered after their STOREs, a SYNC a tile: the negation's copy in DRAM and the image of
# the fold's 62 tiles then left no room on n4's 128 KiB.)
HOST_FIRST = """(input big (shape 16 16 300) int8)
(input a (shape 16 64) int8)
(input b (shape 64 16) int8)
(access-concatenate
  (access (compute reduce-max (access (compute negative (access-tensor big)) 2)) 2)
  (compute (requantize 4) (compute dot-product (access-cartesian-product
    (access (access-tensor a) 1) (access (access-transpose (access-tensor b) (list 1 0)) 1))))
  0)
"""


# Issue 41 item 13: a kernel's 80 KiB int32 result that only a host step reads (the sum with an
# int16 input and the requantize after it, numpy's), whose 20 KiB int8 result feeds a second
# kernel. n4's plan counted the dead 80 KiB against the second kernel and refused it (the data
# 128 128 bytes and its image could not share 128 KiB), though its own tensors take 40 KiB.
HOST_BETWEEN = """(input x (shape 1280 4) int8)
(input w1 (shape 4 16) int8)
(input y (shape 1280 16) int16)
(input w2 (shape 16 4) int8)
(define p (compute dot-product (access-cartesian-product
  (access (access-tensor x) 1) (access (access-transpose (access-tensor w1) (list 1 0)) 1))))
(define s (compute (requantize 9) (compute elementwise-add (access-pair p (access-tensor y)))))
(compute dot-product (access-cartesian-product
  (access s 1) (access (access-transpose (access-tensor w2) (list 1 0)) 1)))
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
    (kernel,) = [s for s in program.kernels if s.kernel.kind == "matmul"]
    touched = {*kernel.inputs, kernel.output}
    assert touched == {"a", "b", kernel.output}
    assert all(buffers[name].address + buffers[name].nbytes <= N4.dram_bytes for name in touched)
    assert buffers["big"].address >= N4.dram_bytes  # the host's memory
    arrays = bundle.arrays_or_random(0)
    expected, _ = interpret(bundle.program.body, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_a_program_of_more_instructions_than_the_fetch_buffer_streams_and_matches(tmp_path):
    # 12 801 instructions: refused by revision 1's 1024-word instruction memory on n4; fetched
    # from DRAM through its 32-word buffer now (docs/isa.md, "Instruction fetch").
    folder = write(tmp_path / "long", gemm(256, 64, 64))
    roomy = tmp_path / "n4-4mib.toml"  # n4 with room for the 820 KB image
    roomy.write_text((ROOT / "hw" / "configs" / "n4.toml").read_text().replace(
        f"dram_bytes = {N4.dram_bytes}", "dram_bytes = 4194304"))
    result = glc("run", folder, "--config", roomy, "--engine", "isa", "--json")
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["match"] is True and figures["host_steps"] == 0
    assert figures["instructions"] > 12_000
    assert figures["cycles"] == figures["predicted_cycles"]


def test_a_result_only_a_host_step_reads_gives_its_dram_back(tmp_path):
    bundle = load(write(tmp_path / "host-between", HOST_BETWEEN))
    result = compile_program(bundle, rules=select(DEFAULT, N4.array_size), config=N4)
    program = result.lowered
    first, second = program.kernels
    (host,) = program.host_steps
    assert first.output in host.inputs and host.output in second.inputs
    buffers = program.buffers
    dead = buffers[first.output]
    assert dead.nbytes == 1280 * 16 * 4
    # The second kernel's tensors take the space the first kernel's result left.
    assert buffers[host.output].address < dead.address + dead.nbytes
    arrays = bundle.arrays_or_random(0)
    expected, _ = interpret(bundle.program.body, arrays)
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, expected)
    # --check-each still compares the freed result: from the bytes kept when the host read it.
    assert program.freed == {first.output} and first.output in outcome.freed
    wrong, compared = check_each(program, outcome, result.term, arrays)
    assert wrong is None and compared == 3
