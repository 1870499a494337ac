"""Depthwise products on the array (glc/lower/depthwise.py): N channels a kernel, B the
diagonal view of the weights (signed coefficients), against the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from glc.cost.limit import kernel_limit
from glc.hwconfig import load_config
from glc.interp import env_types, interpret
from glc.lower.execute import execute
from glc.lower.lowering import lower
from glc.syntax.reader import parse_term


def _depthwise(seed: int, nhwc: bool, channels: int | None = None,
               convert: bool = False, stride: int | None = None, size: int | None = None,
               k: int | None = None, pad: int | None = None,
               linear: str | None = None) -> tuple:
    """A random depthwise conv as glc import and the layer suite write it: each channel's
    windows paired with its own taps broadcast over the pixels, summed; NCHW/OIHW or
    NHWC/HWIO (transposed in the term), random size, window, stride and padding (those not
    given). ``linear``: as glc import writes a QLinearConv's, plus a per-channel int32 bias,
    under a relu where "relu", requantized by ``requantize-linear`` with per-channel float32
    multipliers and a zero point."""
    rng = np.random.default_rng(seed)
    c = channels or int(rng.choice([4, 8, 12]))
    drawn = int(rng.integers(3, 8)), int(rng.integers(1, 4))
    size, k = size or drawn[0], k or drawn[1]
    drawn = int(rng.integers(1, 3)), int(rng.integers(0, 2))
    stride, pad = stride or drawn[0], drawn[1] if pad is None else pad
    out = (size + 2 * pad - k) // stride + 1
    if nhwc:
        x = rng.integers(-128, 128, (1, size, size, c)).astype(np.int8)
        w = rng.integers(-128, 128, (k, k, c, 1)).astype(np.int8)
        image = (f"(access-transpose (access-pad (access-pad (access-tensor x) zero-padding 1 "
                 f"{pad} {pad}) zero-padding 2 {pad} {pad}) (list 0 3 1 2))")
        filters = "(access-transpose (access-tensor w) (list 2 3 0 1))"
    else:
        x = rng.integers(-128, 128, (1, c, size, size)).astype(np.int8)
        w = rng.integers(-128, 128, (c, 1, k, k)).astype(np.int8)
        image = (f"(access-pad (access-pad (access-tensor x) zero-padding 2 {pad} {pad}) "
                 f"zero-padding 3 {pad} {pad})")
        filters = "(access-tensor w)"
    weights = (f"(access (access-broadcast (access-reshape {filters} (access-shape "
               f"(shape 1 {c} 1 1 {k} {k}) (shape))) (access-shape (shape 1 {c} {out} {out} "
               f"{k} {k}) (shape))) 4)")
    body = (f"(compute dot-product (access-pair (access-windows (access {image} 2) "
            f"(shape {k} {k}) (shape {stride} {stride})) {weights}))")
    if nhwc:
        body = f"(access-transpose {body} (list 0 2 3 1))"
    if convert:
        body = f"(compute (requantize 7) (compute relu {body}))"
    arrays = {"x": x, "w": w}
    if linear is not None:
        vector = (1, 1, 1, c) if nhwc else (1, c, 1, 1)
        dims = (1, out, out, c) if nhwc else (1, c, out, out)

        def spread(name: str) -> str:
            return (f"(access-broadcast (access-tensor {name}) (access-shape "
                    f"(shape {' '.join(map(str, dims))}) (shape)))")

        # Products reach ±k²·2¹⁴: multipliers that bring them to about int8's range.
        arrays["bias"] = rng.integers(-3000, 3000, vector).astype(np.int32)
        arrays["m"] = rng.uniform(0.05, 1.0, vector).astype(np.float32) / (k * k * 128)
        body = f"(compute elementwise-add (access-pair {body} {spread('bias')}))"
        if linear == "relu":
            body = f"(compute relu {body})"
        body = f"(requantize-linear {body} {spread('m')} {int(rng.integers(-20, 20))})"
    return parse_term(body), arrays, c * out * out * k * k


def _depthwise_reference(arrays, nhwc: bool, pad: int) -> np.ndarray:
    """A stride-1 depthwise conv in numpy (independent of the IR), in the term's layout."""
    x, w = arrays["x"].astype(np.int64), arrays["w"].astype(np.int64)
    if not nhwc:  # NCHW/OIHW as NHWC/HWIO
        x, w = x.transpose(0, 2, 3, 1), w.transpose(2, 3, 0, 1)
    k, size = w.shape[0], x.shape[1]
    padded = np.pad(x[0], ((pad, pad), (pad, pad), (0, 0)))
    out = size + 2 * pad - k + 1
    result = sum(padded[ky:ky + out, kx:kx + out] * w[ky, kx, :, 0]
                 for ky in range(k) for kx in range(k))[None]
    return result if nhwc else result.transpose(0, 3, 1, 2)


# The array's kernels alone (the vector unit's kernel switched off), or whichever the lowering
# finds faster (glc/lower/depthwise_lowering.py, ``_on_vector``).
ARRAY = frozenset({"depthwise-vector"})
UNITS = pytest.mark.parametrize("disabled", [ARRAY, frozenset()], ids=["array", "fastest"])


def _kinds_allowed(program, disabled) -> bool:
    """Every kernel a depthwise one or a copy, on the array where the vector unit's is off."""
    kinds = {s.kernel.kind for s in program.kernels}
    depthwise = {"diagonal"} | ({"vector-depthwise"} if not disabled else set())
    return not program.host_steps and bool(kinds & depthwise) and kinds <= depthwise | {"repack"}


@UNITS
@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("seed", range(8))
def test_a_depthwise_conv_runs_on_the_array_and_equals_the_interpreter(seed, nhwc, disabled):
    term, arrays, macs = _depthwise(seed, nhwc, convert=seed % 2 == 1)
    config = load_config("n4")
    program = lower(term, env_types(arrays), config, disabled=disabled)
    assert _kinds_allowed(program, disabled)
    # Each kernel counts only its useful MACs: together the layer's.
    assert sum(kernel_limit(s.kernel, config).macs for s in program.kernels) == macs
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert outcome.result.dtype == expected.dtype
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("channels", [6, 10])
def test_channels_that_fill_no_whole_kernel_leave_the_last_group_narrower(channels, nhwc):
    """6 and 10 channels on N = 4: the last kernel takes the 2 left over, each kernel storing its
    columns of the (pixels, C) result (docs/lowering.md, "Depthwise products")."""
    term, arrays, macs = _depthwise(channels, nhwc, channels=channels, convert=True)
    config = load_config("n4")
    program = lower(term, env_types(arrays), config)
    diagonal = [s for s in program.kernels if s.kernel.kind == "diagonal"]
    # A kernel per group, or one band kernel over every group (glc/lower/band.py).
    banded = len(diagonal) == 1 and diagonal[0].kernel.n_out == channels
    assert not program.host_steps and (banded or len(diagonal) == -(-channels // 4))
    assert sum(kernel_limit(s.kernel, config).macs for s in program.kernels) == macs
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


def test_a_pair_product_that_is_no_depthwise_conv_is_not_one():
    """Both operands walk two output dims: no channel to pack, a host step as before."""
    rng = np.random.default_rng(0)
    arrays = {"a": rng.integers(-128, 128, (4, 8, 3)).astype(np.int8),
              "b": rng.integers(-128, 128, (4, 8, 3)).astype(np.int8)}
    term = parse_term("(compute dot-product (access-pair (access (access-tensor a) 2) "
                      "(access (access-tensor b) 2)))")
    program = lower(term, env_types(arrays), load_config("n4"))
    assert not program.kernels and program.host_steps


@pytest.mark.rtl
@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
def test_a_depthwise_conv_on_the_rtl_equals_the_interpreter_and_the_model(nhwc):
    """The diagonal B's LOADs walk a coordinate down (a negative xcoef/ycoef)."""
    term, arrays, _ = _depthwise(5, nhwc, channels=6, convert=True)  # a narrower last group
    program = lower(term, env_types(arrays), load_config("n4"), disabled=ARRAY)
    assert any(s.kernel.kind == "diagonal" for s in program.kernels)
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "rtl")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


@pytest.mark.parametrize("config,groups", [("n4", 2), ("n4", 4), ("n16", 2)])
def test_a_depthwise_conv_after_a_channel_shuffle_reads_a_packed_copy(config, groups):
    """ShuffleNet's channel shuffle (reshape to groups × channels, swap, reshape back) leaves
    the image's channel dim two digits, no depthwise reading; a repack of the shuffled image
    makes it one, and the conv runs on the array."""
    rng = np.random.default_rng(groups)
    c = 32
    x = rng.integers(-128, 128, (1, c, 6, 6)).astype(np.int8)
    w = rng.integers(-128, 128, (c, 1, 3, 3)).astype(np.int8)
    shuffled = (f"(access-reshape (access-transpose (access-reshape (access-tensor x) "
                f"(access-shape (shape 1 {groups} {c // groups} 6 6) (shape))) (list 0 2 1 3 4)) "
                f"(access-shape (shape 1 {c} 6 6) (shape)))")
    image = f"(access-pad (access-pad {shuffled} zero-padding 2 1 1) zero-padding 3 1 1)"
    weights = (f"(access (access-broadcast (access-reshape (access-tensor w) (access-shape "
               f"(shape 1 {c} 1 1 3 3) (shape))) (access-shape (shape 1 {c} 6 6 3 3) "
               f"(shape))) 4)")
    term = parse_term(f"(compute dot-product (access-pair (access-windows (access {image} 2) "
                      f"(shape 3 3) (shape 1 1)) {weights}))")
    arrays = {"x": x, "w": w}
    program = lower(term, env_types(arrays), load_config(config))
    kinds = [s.kernel.kind for s in program.kernels]
    assert not program.host_steps and kinds[0] == "repack" and "diagonal" in kinds
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
def test_stride_1_depthwise_convs_read_the_image_once(nhwc):
    """Band kernels (glc/lower/band.py): random stride-1 depthwise convs of more channels than
    N = 4 (the last group narrower or not), kernels of 2 or 3, padded or not, equal to numpy
    and to the interpreter on the ISA simulator, cycles as predicted; the search takes the band
    (one kernel over every group) on most of them."""
    config = load_config("n4")
    banded = 0
    for seed in range(8):
        rng = np.random.default_rng(seed)
        channels, k, size, pad = (int(rng.choice([5, 6, 9, 12])), int(rng.integers(2, 4)),
                                  int(rng.integers(4, 10)), int(rng.integers(0, 2)))
        term, arrays, _ = _depthwise(seed, nhwc, channels=channels, stride=1, size=size, k=k,
                                     pad=pad)
        program = lower(term, env_types(arrays), config)
        diagonal = [s for s in program.kernels if s.kernel.kind == "diagonal"]
        banded += len(diagonal) == 1
        expected, _ = interpret(term, arrays)
        assert np.array_equal(expected, _depthwise_reference(arrays, nhwc, pad))
        outcome = execute(program, arrays, "isa")
        assert np.array_equal(outcome.result, expected)
        assert outcome.cycles == program.figures()["predicted_cycles"]
    assert banded >= 6


def test_a_band_kernel_reads_an_nchw_image_as_it_lies():
    """Random stride-1 NCHW depthwise convs on n4 (5–20 channels, 6–14 pixels a side): the
    band kernel reads the image by transposing LOADs, N pixels of a channel a run, where that
    beats copying it to NHWC (glc/lower/depthwise_lowering.py, _direct_band) — on most of
    them, only the OIHW weights copied — equal to numpy on the ISA simulator, cycles as
    predicted."""
    config = load_config("n4")
    direct = 0
    for seed in range(8):
        rng = np.random.default_rng(100 + seed)
        channels, k, size, pad = (int(rng.choice([5, 8, 12, 20])), int(rng.integers(2, 4)),
                                  int(rng.integers(6, 15)), int(rng.integers(0, 2)))
        term, arrays, _ = _depthwise(seed, False, channels=channels, stride=1, size=size, k=k,
                                     pad=pad)
        program = lower(term, env_types(arrays), config)
        copies = [s.kernel.m for s in program.kernels if s.kernel.kind == "repack"]
        (diagonal,) = [s.kernel for s in program.kernels if s.kernel.kind == "diagonal"]
        if copies == [channels * k * k]:  # the weights' copy only
            direct += 1
            assert any(i.op.name == "load" and i["transpose"] for i in diagonal.instructions)
        outcome = execute(program, arrays, "isa")
        assert np.array_equal(outcome.result, _depthwise_reference(arrays, False, pad))
        assert outcome.cycles == program.figures()["predicted_cycles"]
    assert direct >= 5


def test_a_mobilenet_depthwise_layer_streams_each_tap_from_one_band():
    """MobileNet's 3×3 over 144 channels (NHWC, pad 1) at 20×20 on n16: one band kernel, its
    cycles within 5 % of the 1/N packing's bound — one streamed row per output pixel, tap and
    group of 16 channels (the halo of the extended grid never streamed) — and its result
    numpy's."""
    term, arrays, _ = _depthwise(0, True, channels=144, stride=1, size=20, k=3, pad=1)
    config = load_config("n16")
    program = lower(term, env_types(arrays), config)
    (step,) = program.kernels
    bound = 9 * 9 * 20 * 20
    outcome = execute(program, arrays, "isa")
    assert np.array_equal(outcome.result, _depthwise_reference(arrays, True, 1))
    assert bound <= outcome.cycles == program.figures()["predicted_cycles"] <= 1.05 * bound
    assert step.kernel.kind == "diagonal"


@pytest.mark.rtl
@pytest.mark.parametrize(("nhwc", "channels", "size"), [(False, 6, 6), (True, 6, 6),
                                                        (False, 20, 7)],
                         ids=["nchw", "nhwc", "nchw-as-it-lies"])
def test_a_band_kernel_on_the_rtl_equals_numpy_and_the_model(nhwc, channels, size):
    term, arrays, _ = _depthwise(2, nhwc, channels=channels, stride=1, size=size, k=3, pad=1)
    program = lower(term, env_types(arrays), load_config("n4"), disabled=ARRAY)
    assert len([s for s in program.kernels if s.kernel.kind == "diagonal"]) == 1
    outcome = execute(program, arrays, "rtl")
    assert np.array_equal(outcome.result, _depthwise_reference(arrays, nhwc, 1))
    assert outcome.cycles == program.figures()["predicted_cycles"]


@UNITS
@pytest.mark.parametrize("config", ["n4", "n16"])
@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
@pytest.mark.parametrize("seed", range(6))
def test_a_quantized_depthwise_conv_requantizes_in_its_kernels_stores(seed, nhwc, config,
                                                                       disabled):
    """ONNX's QLinearConv over channels (random counts, some N does not divide; 3×3 or 5×5,
    stride 1 or 2, with or without a relu): the per-channel bias and requantize-linear in the
    depthwise kernels' STOREs, read by column (the channels are C's columns) — no fold, no
    host step; equal to the interpreter on the ISA simulator, cycles as predicted."""
    rng = np.random.default_rng(1000 + seed)
    n = load_config(config).array_size
    channels = int(rng.integers(2, 3 * n)) if seed % 3 else int(rng.integers(1, 3)) * n
    k, stride = (3, 5)[seed % 2], (1, 2)[seed // 2 % 2]
    term, arrays, macs = _depthwise(seed, nhwc, channels=channels, stride=stride, k=k,
                                    size=int(rng.integers(k, k + 6)), pad=k // 2,
                                    linear=("relu", "plain")[seed // 3 % 2])
    program = lower(term, env_types(arrays), load_config(config), disabled=disabled)
    assert _kinds_allowed(program, disabled)
    assert sum(kernel_limit(s.kernel, load_config(config)).macs
               for s in program.kernels) == macs
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "isa")
    assert outcome.result.dtype == expected.dtype == np.int8
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


@pytest.mark.parametrize("nhwc,engine", [
    (False, "isa"), (True, "isa"),
    pytest.param(True, "rtl", marks=pytest.mark.rtl)], ids=["nchw", "nhwc", "nhwc-rtl"])
def test_a_band_kernel_requantizes_every_group_from_one_table(nhwc, engine):
    """A stride-1 quantized depthwise conv the band kernel takes (glc/lower/band.py): one
    table over the layer's channels in the accumulator's top rows, group g's STOREs reading
    its column tile g (40 channels on n16: the last group 8 wide); equal to the interpreter,
    cycles as predicted (on the ISA simulator, and the RTL)."""
    config = load_config("n16")
    term, arrays, _ = _depthwise(7, nhwc, channels=40, stride=1, k=3, size=16, pad=1,
                                 linear="relu")
    program = lower(term, env_types(arrays), config)
    (diagonal,) = [s.kernel for s in program.kernels if s.kernel.kind == "diagonal"]
    assert not program.host_steps and diagonal.n_out == 40 and diagonal.bias
    linear = [i for i in diagonal.instructions if i.op.name == "store" and i["linear"]]
    assert len({i["qrow"] for i in linear}) == 3
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, engine)
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


@pytest.mark.rtl
@pytest.mark.parametrize("nhwc", [False, True], ids=["nchw", "nhwc"])
def test_a_quantized_depthwise_conv_on_the_rtl_equals_the_interpreter_and_the_model(nhwc):
    """The STOREs' table (bias and multipliers by column) of depthwise kernels on n4: a band
    kernel (NCHW, stride 1) and kernels per group (NHWC, stride 2), 6 channels."""
    term, arrays, _ = _depthwise(3, nhwc, channels=6, stride=2 if nhwc else 1, k=3, size=6,
                                 pad=1, linear="relu")
    program = lower(term, env_types(arrays), load_config("n4"), disabled=ARRAY)
    assert not program.host_steps
    assert any(s.kernel.kind == "diagonal" for s in program.kernels)
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "rtl")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]


@pytest.mark.parametrize("config", ["n4", "n16"])
def test_a_depthwise_conv_on_a_small_map_runs_on_the_vector_unit(config):
    """MobileNet's last depthwise layers: 1×1 to 3×3 maps (random channels, some N does not
    divide, 3×3 or 5×5, stride 1 or 2, NCHW or NHWC, plain, relu/requantize or ONNX's
    requantization). On the array each tap's diagonal B takes N cycles to preload whatever the
    pixels; on the vector unit a ``mul`` and an ``add`` over the taps (glc/lower/fold.py). The
    lowering keeps whichever the cycle model counts fewer — never more cycles than the array's
    kernels alone, the vector unit's on most of these — each equal to the interpreter on the
    ISA simulator with the model's cycles and the layer's useful MACs."""
    hw = load_config(config)
    n = hw.array_size
    chosen = 0
    for seed in range(8):
        rng = np.random.default_rng(2000 + seed)
        channels = int(rng.integers(2, 6 * n))
        k, stride, size = (3, 5)[seed % 2], int(rng.integers(1, 3)), int(rng.integers(1, 4))
        form = ("linear", "convert", "plain")[seed % 3]
        term, arrays, macs = _depthwise(seed, bool(seed // 2 % 2), channels=channels,
                                        stride=stride, k=k, size=size, pad=k // 2,
                                        convert=form == "convert",
                                        linear="relu" if form == "linear" else None)
        expected, _ = interpret(term, arrays)
        cycles = {}
        for disabled in (ARRAY, frozenset()):
            program = lower(term, env_types(arrays), hw, disabled=disabled)
            assert _kinds_allowed(program, disabled)
            assert sum(kernel_limit(s.kernel, hw).macs for s in program.kernels) == macs
            outcome = execute(program, arrays, "isa")
            assert np.array_equal(outcome.result, expected)
            assert outcome.cycles == program.figures()["predicted_cycles"]
            cycles[disabled] = outcome.cycles
        assert cycles[frozenset()] <= cycles[ARRAY]
        chosen += any(s.kernel.kind == "vector-depthwise" for s in program.kernels)
    assert chosen >= 6


def test_mobilenet_s_last_depthwise_layers_run_on_the_vector_unit_at_a_fraction_of_the_cycles():
    """960 channels on a 1×1 map and 384 on 2×2 (MobileNetV2's features 15–17 and 7–10 at
    32×32, NHWC, ONNX's requantization) on n16: the vector unit's kernel, exact, in under half
    the cycles of the array's kernels per group (measured side by side)."""
    config = load_config("n16")
    for channels, size in ((960, 1), (384, 2)):
        term, arrays, _ = _depthwise(1, True, channels=channels, stride=1, k=3, size=size,
                                     pad=1, linear="relu")
        expected, _ = interpret(term, arrays)
        cycles = {}
        for disabled in (ARRAY, frozenset()):
            program = lower(term, env_types(arrays), config, disabled=disabled)
            outcome = execute(program, arrays, "isa")
            assert np.array_equal(outcome.result, expected)
            cycles[disabled] = outcome.cycles
        (step,) = program.kernels
        assert step.kernel.kind == "vector-depthwise" and not program.host_steps
        assert cycles[frozenset()] < 0.5 * cycles[ARRAY]


@pytest.mark.rtl
@pytest.mark.parametrize(("nhwc", "k", "linear"), [(True, 3, "relu"), (False, 5, None)],
                         ids=["nhwc-linear", "nchw-oihw-transposed"])
def test_a_depthwise_conv_on_the_vector_unit_on_the_rtl_equals_the_interpreter(nhwc, k,
                                                                               linear):
    """1×1 maps on n4, 10 channels: HWIO weights loaded as they lie, and OIHW weights by
    transposing LOADs (a channel's taps a run)."""
    term, arrays, _ = _depthwise(4, nhwc, channels=10, stride=1, k=k, size=1, pad=k // 2,
                                 linear=linear, convert=linear is None)
    program = lower(term, env_types(arrays), load_config("n4"))
    assert any(s.kernel.kind == "vector-depthwise" for s in program.kernels)
    expected, _ = interpret(term, arrays)
    outcome = execute(program, arrays, "rtl")
    assert np.array_equal(outcome.result, expected)
    assert outcome.cycles == program.figures()["predicted_cycles"]
