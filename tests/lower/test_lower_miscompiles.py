"""The miscompiles of issue 37, each a test on the ISA simulator (n16 and n4) and the RTL:

- a value moved while another node held a view of it: a ResNet basic block whose input is a
  residual sum, read by the block's conv (which asked for it channels-last, so the sum's fold
  was built again writing that layout, ``fold-into``) and by the block's own residual add,
  whose view of the old buffer was taken first (glc/lower/reorient.py ``_sole_kernel_step``);
- a k-outer split GEMM of two output tiles with three weight buffers, which loaded a block's
  next A slice over the one its second output tile still read (glc/isa/gemm_plan.py ``plan``);
- a conv written into its band of a concatenation (``concat-in-place``) whose schedule walked
  its pixels in another order (4×4 patches of an NHWC image): the band took the place of C
  after the search, in plain order (found by scripts/randcompose.py, seeds 937, 100297 and
  100441);
- a conv reading a channel shuffle of a concatenation (ShuffleNet's unit), whose operand is a
  host copy: the relayout search computed the concatenation anyway, moving the DRAM top after
  the conv's schedule had taken it as its result's address — the conv stored over its input.

The lowering's safety nets is tested too: with the readers check off, the stale view is found
(``_Lowerer.verify``) and the program lowered again with that value kept, still exact."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from glc.compiler import compile_program
from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.inputs import load
from glc.lower import lowering
from glc.lower.lowering import lower
from glc.rewrites import DEFAULT, select
from tests.lower.exactness import exact

# Issue 37's program, as it was filed: two 3×3 convs (requantize-linear in their STOREs) over
# the residual sum s, then s added back.
BLOCK = """\
(input b (shape 1 {c} {h} {h}) int8)
(input a (shape 1 {c} {h} {h}) int8)
(input w (shape 3 3 {c} {c}) int8)
(input bias (shape 1 {c} 1 1) int32)
(input m (shape 1 {c} 1 1) float32)
(input w2 (shape 3 3 {c} {c}) int8)
(input bias2 (shape 1 {c} 1 1) int32)
(input m2 (shape 1 {c} 1 1) float32)
(define s (add-linear (access-tensor a) (access-tensor b) 0.04004395008087158 17 \
0.05424748361110687 -14 0.035337209701538086 -128 128))
(define p (access-pad-value (access-pad-value (access-tensor s) -128 2 1 1) -128 3 1 1))
(define acc (access-transpose (compute dot-product (access-cartesian-product (access \
(access-transpose (access-tensor w) (list 3 2 0 1)) 1) (access (access-squeeze (access-windows \
(access p 1) (shape {c} 3 3) (shape 1 1 1)) 1) 3))) (list 1 0 2 3)))
(define c (requantize-linear (compute elementwise-add (access-pair acc (access-broadcast \
(access-tensor bias) (access-shape (shape 1 {c} {h} {h}) (shape))))) (access-broadcast \
(access-tensor m) (access-shape (shape 1 {c} {h} {h}) (shape))) -128))
(define p2 (access-pad-value (access-pad-value (access-tensor c) -128 2 1 1) -128 3 1 1))
(define acc2 (access-transpose (compute dot-product (access-cartesian-product (access \
(access-transpose (access-tensor w2) (list 3 2 0 1)) 1) (access (access-squeeze (access-windows \
(access p2 1) (shape {c} 3 3) (shape 1 1 1)) 1) 3))) (list 1 0 2 3)))
(define c2 (requantize-linear (compute elementwise-add (access-pair acc2 (access-broadcast \
(access-tensor bias2) (access-shape (shape 1 {c} {h} {h}) (shape))))) (access-broadcast \
(access-tensor m2) (access-shape (shape 1 {c} {h} {h}) (shape))) 13))
(define y (add-linear (access-tensor c2) (access-tensor s) 0.055886510759592056 13 \
0.035337209701538086 -128 0.04573991894721985 -128 128))
y
"""

# A GEMM whose search picks k-outer with the last K tile (8 of 40 rows) split over its two
# output tiles (the 5×5 conv of shared/repro's nested-concat-fanout.onnx, cut down).
SPLIT_GEMM = """\
(input a (shape {m} 40) int8)
(input b (shape 40 32) int8)
(compute (requantize 8) (compute dot-product (access-cartesian-product (access (access-tensor a) \
1) (access (access-transpose (access-tensor b) (list 1 0)) 1))))
"""

# Two convs over one NHWC image seen as NCHW, concatenated along the channels: each written
# into its band; the 3×3 one's schedule walks the image's 12-pixel rows in 4×4 patches.
PLACED = """\
(input f (shape 1 8 12 9) int8)
(input w1 (shape 19 9 1 1) int8)
(input w3 (shape 12 9 3 3) int8)
(define x (access-transpose (access-tensor f) (list 0 3 1 2)))
(define a (compute (requantize 8) (access-transpose (compute dot-product \
(access-cartesian-product (access (access-tensor w1) 1) (access (access-squeeze (access-windows \
(access x 1) (shape 9 1 1) (shape 1 1 1)) 1) 3))) (list 1 0 2 3))))
(define b (compute (requantize 9) (access-transpose (compute dot-product \
(access-cartesian-product (access (access-tensor w3) 1) (access (access-squeeze (access-windows \
(access (access-pad (access-pad x zero-padding 2 1 1) zero-padding 3 1 1) 1) (shape 9 3 3) \
(shape 1 1 1)) 1) 3))) (list 1 0 2 3))))
(access-concatenate a b 1)
"""


def _block(tmp_path, c: int, h: int):
    """Issue 37's block as a program folder, with its inputs as the issue drew them: int8
    data and weights, int32 biases within ±2000, multipliers near 1e-4."""
    (tmp_path / "block.gls").write_text(BLOCK.format(c=c, h=h))
    rng = np.random.default_rng(37)
    for name in ("a", "b"):
        np.save(tmp_path / f"{name}.npy", rng.integers(-128, 128, (1, c, h, h)).astype(np.int8))
    for suffix in ("", "2"):
        np.save(tmp_path / f"w{suffix}.npy",
                rng.integers(-128, 128, (3, 3, c, c)).astype(np.int8))
        np.save(tmp_path / f"bias{suffix}.npy",
                rng.integers(-2000, 2001, (1, c, 1, 1)).astype(np.int32))
        np.save(tmp_path / f"m{suffix}.npy",
                rng.uniform(0.5e-4, 1.5e-4, (1, c, 1, 1)).astype(np.float32))
    return load(tmp_path)


def _compiled(bundle, config_name: str):
    config = load_config(config_name)
    return compile_program(bundle, rules=select(DEFAULT, config.array_size), config=config)


@pytest.mark.parametrize(("config", "c", "h"), [("n16", 128, 8), ("n16", 64, 12),
                                                ("n4", 8, 5)])
def test_a_block_over_a_residual_sum_is_exact(tmp_path, config, c, h):
    bundle = _block(tmp_path, c, h)
    result = _compiled(bundle, config)
    exact(bundle.program.body, bundle.arrays, result.lowered)


def test_the_sum_a_conv_reads_channels_last_is_not_moved_under_the_add_holding_it(tmp_path):
    """The add took s's view first: s's fold is not built again (no fold-into), and every
    step reads a buffer some step before it wrote."""
    result = _compiled(_block(tmp_path, 128, 8), "n16")
    program = result.lowered
    assert "fold-into" not in program.fired
    written = set(program.inputs)
    for step in program.steps:
        assert set(step.inputs) <= written | {step.output}
        written.add(step.output)


def test_a_stale_view_the_readers_check_misses_is_lowered_again(tmp_path, monkeypatch):
    """The safety net: with the readers check off the fold is moved under the add, the
    verifier finds the add's step reading the dropped buffer, and the program is lowered
    again with s kept where it was — exact, and fold-into did not fire."""
    bundle = _block(tmp_path, 128, 8)
    result = _compiled(bundle, "n16")
    verified = []
    original = lowering._Lowerer.verify

    def counted(self):
        verified.append(original(self))
        return verified[-1]

    monkeypatch.setattr(lowering._Lowerer, "readers",
                        property(lambda self: {}, lambda self, value: None), raising=False)
    monkeypatch.setattr(lowering._Lowerer, "verify", counted)
    program = lower(result.term, result.env, load_config("n16"))
    assert verified[0] is not None and verified[-1] is None and len(verified) == 2
    assert "fold-into" not in program.fired
    exact(bundle.program.body, bundle.arrays, program)


@pytest.mark.parametrize("m", [256, 400, 504, 512, 520])
def test_a_k_outer_split_gemm_of_two_output_tiles_is_exact(tmp_path, m):
    (tmp_path / "g.gls").write_text(SPLIT_GEMM.format(m=m))
    rng = np.random.default_rng(m)
    np.save(tmp_path / "a.npy", rng.integers(-128, 128, (m, 40)).astype(np.int8))
    np.save(tmp_path / "b.npy", rng.integers(-128, 128, (40, 32)).astype(np.int8))
    bundle = load(tmp_path)
    exact(bundle.program.body, bundle.arrays, _compiled(bundle, "n16").lowered)


def test_a_conv_written_into_its_band_walks_its_pixels_as_the_band_lies(tmp_path):
    (tmp_path / "p.gls").write_text(PLACED)
    rng = np.random.default_rng(937)
    for name, dims in (("f", (1, 8, 12, 9)), ("w1", (19, 9, 1, 1)), ("w3", (12, 9, 3, 3))):
        np.save(tmp_path / f"{name}.npy", rng.integers(-128, 128, dims).astype(np.int8))
    bundle = load(tmp_path)
    program = _compiled(bundle, "n16").lowered
    assert program.fired.get("concat-in-place") == 2
    exact(bundle.program.body, bundle.arrays, program)


@pytest.mark.rtl
@pytest.mark.parametrize(("config", "c", "h"), [("n16", 64, 8), ("n4", 8, 5)])
def test_the_block_over_a_residual_sum_on_the_rtl(tmp_path, config, c, h):
    bundle = _block(tmp_path, c, h)
    exact(bundle.program.body, bundle.arrays, _compiled(bundle, config).lowered, "rtl")


SHUFFLED = """
(input a (shape 1 16 5 7) int8)
(input w (shape 16 16 1 1) int8)
(define joined (access-concatenate (access-slice (access-tensor a) 1 0 8)
                                   (access-slice (access-tensor a) 1 8 16) 1))
(define shuffled (access-reshape (access-transpose (access-reshape (access-tensor joined)
                   (access-shape (shape 1 2 8 5 7) (shape))) (list 0 2 1 3 4))
                 (access-shape (shape 1 16 5 7) (shape))))
(compute dot-product (access-cartesian-product (access (access-tensor w) 1)
  (access (access-squeeze (access-windows (access shuffled 1) (shape 16 1 1) (shape 1 1 1)) 1)
          3)))
"""


def _shuffled(tmp_path):
    (tmp_path / "p.gls").write_text(SHUFFLED)
    rng = np.random.default_rng(0)
    for name, dims in (("a", (1, 16, 5, 7)), ("w", (16, 16, 1, 1))):
        np.save(tmp_path / f"{name}.npy", rng.integers(-128, 128, dims).astype(np.int8))
    return load(tmp_path)


@pytest.mark.parametrize("config", ["n16", "n4"])
def test_a_kernel_over_a_shuffled_concatenation_stores_where_its_result_lies(tmp_path, config):
    """The shuffle is no view: the conv reads a host copy computed from a's slices, and no
    step computes the concatenation itself (it stored over a and the concatenation: 560 of 560
    elements wrong)."""
    bundle = _shuffled(tmp_path)
    program = _compiled(bundle, config).lowered
    assert not any(step.name.startswith("concat") for step in program.steps)
    exact(bundle.program.body, bundle.arrays, program)


def test_a_store_outside_its_steps_buffer_is_an_internal_error(tmp_path):
    """The safety net: a kernel whose STOREs miss its buffer is never run."""
    bundle = _shuffled(tmp_path)
    result = _compiled(bundle, "n16")
    program = result.lowered
    (step,) = [s for s in program.steps if s.name.startswith("kernel")]
    buffer = program.buffers[step.output]
    program.buffers[step.output] = dataclasses.replace(buffer, address=buffer.address + 64)
    with pytest.raises(GlcError, match=f"step {step.name} stores DRAM .* outside its buffer"):
        program.check_stores(result.term.span)


@pytest.mark.rtl
def test_a_kernel_over_a_shuffled_concatenation_on_the_rtl(tmp_path):
    bundle = _shuffled(tmp_path)
    exact(bundle.program.body, bundle.arrays, _compiled(bundle, "n16").lowered, "rtl")


# A host step whose body reads a kernel's result k and, through a kernel it needs, a nested
# host step h that reads k too (a BERT layer's second residual, y = n1 + MLP(n1), with n1 a
# float LayerNormalization of the first residual: found by tests/onnx/test_attention.py). The
# nested step gave k's DRAM back while the enclosing step, run last, still had to read it.
NESTED = """\
(input x (shape 8 16) int8)
(input w (shape 16 16) int8)
(input v (shape 16 16) int8)
(define k (compute (requantize 7) (compute dot-product (access-cartesian-product
  (access (access-tensor x) 1) (access (access-tensor w) 1)))))
(define h (quantize-linear (compute elementwise-add (access-pair
  (dequantize-linear (access-tensor k) 0.5 0) (dequantize-linear (access-tensor x) 0.25 3)))
  0.75 -2))
(define m (compute (requantize 7) (compute dot-product (access-cartesian-product
  (access (access-tensor h) 1) (access (access-tensor v) 1)))))
(compute elementwise-add (access-pair (dequantize-linear (access-tensor h) 0.75 -2)
  (dequantize-linear (access-tensor m) 0.125 1)))
"""


@pytest.mark.parametrize("config", ["n16", "n4"])
def test_a_nested_host_step_keeps_what_the_enclosing_one_reads(config):
    from glc.ir.types import Access
    from glc.syntax.reader import parse_program

    program = parse_program(NESTED, "<nested>")
    env = {"x": Access((8, 16), (), "int8"), "w": Access((16, 16), (), "int8"),
           "v": Access((16, 16), (), "int8")}
    hw = load_config(config)
    lowered = compile_program(program, env, rules=select(DEFAULT, hw.array_size),
                              config=hw).lowered
    assert lowered.figures()["host_steps"] == 2
    rng = np.random.default_rng(11)
    arrays = {name: rng.integers(-128, 128, a.dims).astype(np.int8) for name, a in env.items()}
    exact(program.body, arrays, lowered)
