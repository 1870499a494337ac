"""``gelu`` and ``(compute erf)`` against onnxruntime's own kernels, bit for bit: a GELU written
as ONNX's ops (Div by √2, Erf, Add 1, Mul, Mul by ½), which onnxruntime's optimizer fuses into
its com.microsoft Gelu kernel (checked), a Div and Add before it (BiasGelu), and a lone Erf, each
on a sweep of float32 over [-10, 10] (every 1021st bit pattern, every float32 near the
kernel's branch points) and the edge values. onnxruntime is the reference, so the test needs
the onnx extra."""

from __future__ import annotations

import math

import numpy as np
import pytest

from glc.ir import gelu as kernel

pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")

F = np.float32


def _around(center: float, ulps: int) -> np.ndarray:
    """Every float32 within ``ulps`` of ``center`` (positive)."""
    bits = int(F(center).view(np.int32))
    return np.arange(bits - ulps, bits + ulps + 1, dtype=np.int32).view(F)


# Values every sweep takes, with their negatives: zeros, subnormals, the smallest normal, values
# where exp over- or underflows, the largest float, infinity.
EDGES = (0.0, 1e-45, 1e-40, 1.1754944e-38, 1e-30, 1e-7, 0.5, 1.0, 10.0, 88.0, 1e5, 1e30,
         3.4028235e38, np.inf)


def sweep(top: float, stride: int, near: list[float]) -> np.ndarray:
    """[0, ``top``] every ``stride``-th bit pattern (so as dense near 0 as near the top), every
    float32 within 3000 ulps of each of ``near`` (where a kernel's arithmetic changes branch),
    and ``EDGES``, with both signs."""
    swept = np.arange(0, int(F(top).view(np.int32)), stride, dtype=np.int32).view(F)
    positive = np.concatenate([swept, *(_around(p, 3000) for p in near),
                               np.array(EDGES, F)]).astype(F)
    return np.concatenate([positive, -positive])


def _sweep() -> np.ndarray:
    """[0, 10], every float32 about each point where the kernel's arithmetic changes branch
    (|x|/√2 at the split 0.921875 and the clamp 3.925, and where erf rounds to 1)."""
    points = [kernel.SPLIT, kernel.UPPER, 3.9191902]
    return sweep(10.0, 1021, [p * s for p in points for s in (1.0, math.sqrt(2))])


def _gelu_nodes(x: str):
    from onnx import helper

    return [helper.make_node("Div", [x, "sqrt2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
            helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", [x, "a"], ["m"]),
            helper.make_node("Mul", ["m", "half"], ["y"])]


GELU_CONSTANTS = {"sqrt2": math.sqrt(2), "one": 1.0, "half": 0.5}


def _onnxruntime(nodes, constants: dict, x: np.ndarray) -> tuple[list[str], np.ndarray]:
    """The ops of onnxruntime's optimized graph of ``nodes`` (input x, output y, float32
    ``constants``) and its y of ``x``, with the options of glc's reference run."""
    import tempfile
    from pathlib import Path

    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from glc.onnx.kernels import session_options

    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, x.shape)],
        [numpy_helper.from_array(np.asarray(value, F), name)
         for name, value in constants.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with tempfile.TemporaryDirectory() as folder:
        options = session_options(Path(folder) / "optimized.onnx")
        session = ort.InferenceSession(model.SerializeToString(), options,
                                       providers=["CPUExecutionProvider"])
        ops = [n.op_type for n in onnx.load(options.optimized_model_filepath).graph.node]
    return ops, session.run(None, {"x": x})[0]


def _same_bits(got: np.ndarray, expected: np.ndarray, x: np.ndarray) -> None:
    assert got.dtype == np.float32
    differ = (got.view(np.int32) != expected.view(np.int32)) & \
        ~(np.isnan(got) & np.isnan(expected))
    assert not differ.any(), (int(differ.sum()), x[differ][:5], got[differ][:5],
                              expected[differ][:5])


def test_gelu_is_onnxruntimes_fused_gelu_bit_for_bit():
    x = _sweep()
    ops, expected = _onnxruntime(_gelu_nodes("x"), GELU_CONSTANTS, x)
    assert ops == ["Gelu"]
    _same_bits(kernel.gelu(x), expected, x)


def test_gelu_of_a_sum_is_onnxruntimes_bias_gelu_bit_for_bit():
    """A bias Add before the GELU (a bias of the last dim) is fused too (BiasGelu): the sum
    rounded, then the same arithmetic."""
    from onnx import helper

    nodes = [helper.make_node("Add", ["x", "bias"], ["s"]), *_gelu_nodes("s")]
    bias = np.array([-0.3, 0.0, 0.7, 2.5], F)
    x = _sweep()
    x = np.concatenate([x, np.zeros(-x.size % 4, F)]).reshape(-1, 4)
    ops, expected = _onnxruntime(nodes, {**GELU_CONSTANTS, "bias": bias}, x)
    assert ops == ["BiasGelu"]
    _same_bits(kernel.gelu((x + bias).astype(F)), expected, x)


def test_compute_erf_is_onnxruntimes_erf_bit_for_bit():
    from onnx import helper

    from glc.ir.compute import KINDS

    x = np.concatenate([_sweep(), np.array([np.nan], F)])
    ops, expected = _onnxruntime([helper.make_node("Erf", ["x"], ["y"])], {}, x)
    assert ops == ["Erf"]
    got = KINDS["erf"].evaluate(x, None, np.empty(0, F), None)
    _same_bits(kernel.mlas_erf(x), expected, x)
    _same_bits(got, expected, x)
