"""``(compute softmax)`` of float32 against onnxruntime's own Softmax kernel, bit for bit: rows of
every length class of MLAS's sum-of-exponentials kernels (under one vector of 8 or 16, whole
vectors, a partial last vector, past the FMA3 kernel's 24-element and the AVX512F kernel's
48-element loops), values spread over tens (underflowing exponentials) and rows with -inf (a
masked attention). onnxruntime is the reference, so that test needs the onnx extra; it checks
the kernel MLAS dispatches on the machine running it. The other path is pinned by values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from glc.ir.compute import KINDS
from glc.ir.softmax import AVX512F, FMA3, mlas_kernel, softmax

DATA = Path(__file__).parent.parent / "data" / "softmax"


def _onnxruntime(x: np.ndarray) -> np.ndarray:
    ort = pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
    from onnx import TensorProto, helper

    from glc.onnx.kernels import session_options

    graph = helper.make_graph(
        [helper.make_node("Softmax", ["x"], ["y"], axis=-1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(x.shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = ort.InferenceSession(model.SerializeToString(), session_options(),
                                   providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


@pytest.mark.parametrize("n", [1, 3, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 47, 48,
                               49, 64, 100, 128, 384])
def test_softmax_is_onnxruntimes_kernel_bit_for_bit(n):
    rng = np.random.default_rng(n)
    x = (rng.normal(0, 3, (512, n)) * rng.choice([0.1, 1, 10, 30], (512, 1))).astype(np.float32)
    x[::7, ::3] = -np.inf
    x[::7, 0] = 0.0  # every row keeps a finite maximum
    expected = _onnxruntime(x)
    got = KINDS["softmax"].evaluate(x, None, np.empty(0, np.float32), None)
    assert got.dtype == np.float32
    assert np.array_equal(got, expected), int((got != expected).sum())
    assert np.array_equal(softmax(x[:5, None]), expected[:5, None])  # any leading dims


def _rows() -> np.ndarray:
    """8 rows of 53 (48 + 5: both kernels' long loops, then a partial vector), spread up to 30
    times, every third row with -inf: exponentials underflowing past 2^-126."""
    rng = np.random.default_rng(512)
    x = (rng.normal(0, 3, (8, 53)) * rng.choice([0.1, 1, 10, 30], (8, 1))).astype(np.float32)
    x[::3, ::4] = -np.inf
    x[::3, 0] = 0.0
    return x


def test_the_fma3_path_keeps_the_values_verified_on_avx2_machines():
    """fma3_rows8x53.npy is what the FMA3-only softmax (commit 2be1aa0, before the AVX512F path
    existed) gave on ``_rows()``; that code had been checked bit for bit against onnxruntime 1.32
    on AVX2 machines, which this AVX-512 machine cannot repeat. The AVX512F path differs on these
    rows (subnormal terms instead of 0, sixteen lanes), so the choice of kernel matters here."""
    expected = np.load(DATA / "fma3_rows8x53.npy")
    x = _rows()
    assert np.array_equal(softmax(x, FMA3).view(np.uint32), expected.view(np.uint32))
    assert not np.array_equal(softmax(x, AVX512F), expected)


def test_mlas_kernel_is_chosen_by_avx512f_as_mlas_dispatches():
    assert mlas_kernel({"AVX2": True, "FMA3": True, "AVX512F": True}) == AVX512F
    assert mlas_kernel({"AVX2": True, "FMA3": True, "AVX512F": False}) == FMA3
    assert mlas_kernel({"AVX2": True, "FMA3": True}) == FMA3
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo to read this machine's flags independently of numpy")
    flags = {word for line in cpuinfo.read_text().splitlines() if line.startswith("flags")
             for word in line.split(":", 1)[1].split()}
    assert mlas_kernel() == (AVX512F if "avx512f" in flags else FMA3)
    x = _rows()
    assert np.array_equal(softmax(x), softmax(x, mlas_kernel()))
