"""Concatenations (glc/lower/concat.py): an int8 concatenation whose parts fill contiguous slices,
or bands of its columns with its axis stored last, is copies on the vector unit, each part into
its slice or band, or the kernel computing a part writing it there; any other stays a host
step."""

from __future__ import annotations

import numpy as np
import pytest
from exactness import exact

from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.isa.fields import VECTOR_OPS
from glc.lower import concat
from glc.lower.concat import parts
from glc.lower.execute import execute
from glc.lower.lowering import lower
from glc.syntax.reader import parse_term

# A kernel's int8 result, a transposed input (no contiguous run) and an input as it lies.
KERNEL = ("(compute (requantize 6) (systolic-array 24 16 (access (access-tensor a) 1) "
          "(access (access-tensor b) 0)))")
PARTS = [KERNEL, "(access-transpose (access-tensor c) (list 1 0))", "(access-tensor d)"]


def _arrays(rng, m2: int = 5):
    def i8(*shape):
        return rng.integers(-128, 128, shape).astype(np.int8)
    return {"a": i8(12, 24), "b": i8(24, 16), "c": i8(16, m2), "d": i8(8, 16)}


def _concatenated(texts: list[str], axis: int) -> str:
    term = texts[0]
    for text in texts[1:]:
        term = f"(access-concatenate {term} {text} {axis})"
    return term


@pytest.mark.parametrize("config,engine", [("n4", "isa"), ("n16", "isa"), ("n4", "rtl")])
def test_a_concatenation_is_copies_into_its_slices(config, engine):
    arrays = _arrays(np.random.default_rng(3))
    term = parse_term(_concatenated(PARTS, 0))
    program = lower(term, env_types(arrays), load_config(config))
    assert not program.host_steps
    # the product stores into its slice itself (since 2026-12-05), the two inputs are copied
    steps = [s for s in program.kernels if s.name.startswith("concat")]
    assert [s.kernel.kind for s in steps] == ["matmul", "fold", "fold"]
    # labelled as the concatenation, so glc run --report names them after its node
    assert all(parse_term(s.kernel.label).op == "access-concatenate" for s in steps[1:])
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, engine)
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


def test_an_nchw_channel_concatenation_of_maps_is_on_the_accelerator():
    rng = np.random.default_rng(4)
    arrays = {"x": rng.integers(-128, 128, (1, 3, 4, 8)).astype(np.int8),
              "y": rng.integers(-128, 128, (1, 8, 4, 2)).astype(np.int8)}
    # y seen as (1, 2, 4, 8): a part whose last dim is not contiguous
    term = parse_term(_concatenated(["(access-tensor x)",
                                     "(access-transpose (access-tensor y) (list 0 3 2 1))"], 1))
    program = lower(term, env_types(arrays), load_config("n4"))
    assert not program.host_steps
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


# Two channels-last maps seen as NCHW and concatenated along their channels, the second
# requantized to the first's parameters first (an ONNX Concat of differently quantized parts,
# glc/onnx/layers.py): SqueezeNet's fire modules.
FIRE = _concatenated([
    "(access-transpose (access-tensor p) (list 0 3 1 2))",
    "(quantize-linear (dequantize-linear (access-transpose (access-tensor q) (list 0 3 1 2)) "
    "0.0470414 -128) 0.0486447 -120)"], 1)


@pytest.mark.parametrize("config,engine", [("n4", "isa"), ("n16", "isa"), ("n4", "rtl")])
def test_channels_last_parts_concatenate_channels_last_a_requantized_one_by_lin(
        monkeypatch, config, engine):
    """Every part walks the channels in runs, so the result is stored channels-last, each
    part a band of its columns, copied a run of channels at a time; the requantized part is a
    VECTOR ``lin`` (glc/lower/fusion.py). No host step, exact, the model's cycles, fewer than
    with the result stored as NCHW (each copy then reads an element a run)."""
    rng = np.random.default_rng(6)
    arrays = {"p": rng.integers(-128, 128, (1, 9, 9, 16)).astype(np.int8),
              "q": rng.integers(-128, 128, (1, 9, 9, 8)).astype(np.int8)}
    term = parse_term(FIRE)
    config = load_config(config)
    program = lower(term, env_types(arrays), config)
    assert not program.host_steps
    # p, an input, is copied; the requantized part is written into its band by its fold
    assert len(program.kernels) == 2
    assert sum(any(i.op.name == "vector" and i["op"] == VECTOR_OPS.index("lin")
                   for i in s.kernel.instructions) for s in program.kernels) == 1
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, engine)
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]
    monkeypatch.setattr(concat, "_runs_along", lambda view, axis: False)
    as_nchw = lower(term, env_types(arrays), config)
    assert outcome.cycles < as_nchw.figures()["predicted_cycles"]


def _product(w: str, n: int, shift: int, transpose: bool) -> str:
    """x·w (81 pixels × 32 channels by 32 × n filters) seen as (1, n, 81): channels-last,
    or with ``transpose`` the product of the filters' transpose and xᵀ, channels-major."""
    if transpose:
        return (f"(access-insert-axis (compute (requantize {shift}) (systolic-array 32 81 "
                f"(access (access-transpose (access-tensor {w}) (list 1 0)) 1) "
                f"(access (access-transpose (access-tensor x) (list 1 0)) 0))) 0)")
    return (f"(access-transpose (access-insert-axis (compute (requantize {shift}) "
            f"(systolic-array 32 {n} (access (access-tensor x) 1) (access (access-tensor {w}) "
            f"0))) 0) (list 0 2 1))")


@pytest.mark.parametrize("config,engine,transpose", [
    ("n16", "isa", False), ("n4", "isa", False), ("n16", "isa", True), ("n4", "rtl", False),
    ("n4", "rtl", True)])
def test_products_write_their_parts_of_a_concatenation_in_place(monkeypatch, config, engine,
                                                                transpose):
    """Two products concatenated along their channels (a fire module's expand convs), stored
    channels-last (the concatenation with its axis last, each kernel's C a band of its rows) or
    channels-major (each kernel's C a contiguous slice): the kernels store straight into the
    concatenation, no copy is made; exact, the model's cycles, fewer than product and copy."""
    rng = np.random.default_rng(8)
    arrays = {"x": rng.integers(-128, 128, (81, 32)).astype(np.int8),
              "w1": rng.integers(-128, 128, (32, 16)).astype(np.int8),
              "w2": rng.integers(-128, 128, (32, 24)).astype(np.int8)}
    term = parse_term(_concatenated([_product("w1", 16, 6, transpose),
                                     _product("w2", 24, 7, transpose)], 1))
    config = load_config(config)
    program = lower(term, env_types(arrays), config)
    assert [(s.name, s.kernel.kind) for s in program.kernels] == \
        [("concat1.0", "matmul"), ("concat1.1", "matmul")]
    outcome = exact(term, arrays, program, engine)
    monkeypatch.setattr(concat.Concats, "_placed_into", lambda *args: False)
    copied = lower(term, env_types(arrays), config)
    assert [s.kernel.kind for s in copied.kernels] == ["matmul", "matmul", "fold", "fold"]
    assert outcome.cycles < copied.figures()["predicted_cycles"]


def test_a_concatenation_whose_slices_interleave_stays_a_host_step():
    """Along dim 1 of a matrix each part's rows alternate with the other's: no one slice."""
    arrays = _arrays(np.random.default_rng(5), m2=12)
    term = parse_term(_concatenated([KERNEL, PARTS[1]], 1))
    program = lower(term, env_types(arrays), load_config("n4"))
    assert [s.name for s in program.host_steps] and \
        not [s for s in program.kernels if s.name.startswith("concat")]
    expected, _ = interpret(term, arrays)
    assert np.array_equal(execute(program, arrays, "isa").result, expected)


def test_parts_are_the_chains_operands_in_order():
    term = parse_term(_concatenated(["(access-tensor c)", "(access-tensor d)",
                                     "(access-tensor a)"], 0))
    assert [p.args[0].value for p in parts(term)] == ["c", "d", "a"]
