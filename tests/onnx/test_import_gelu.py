"""A float GELU that onnxruntime fuses into its Gelu or BiasGelu kernel imports as one
``(gelu x)`` (glc/onnx/fused_gelu.py), bit for bit against onnxruntime where the GELU's float32
values are the model's output (no DynamicQuantizeLinear after it to hide an ulp); an Erf
onnxruntime does not fuse stays op by op, and an ONNX Gelu (opset 20) is the same kernel."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import exact_on_the_isa, float_model, weights
from test_import_dynamic import quantized_dynamically

from glc.inputs import load
from glc.onnx.importer import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

CONSTANTS = {"root2": np.array(np.sqrt(2), np.float32), "one": np.array(1, np.float32),
             "half": np.array(0.5, np.float32)}


def gelu_nodes(x: str, y: str) -> list:
    """GELU as PyTorch exports it: x·(erf(x/√2) + 1)·0.5."""
    return [helper.make_node("Div", [x, "root2"], [f"{y}_d"]),
            helper.make_node("Erf", [f"{y}_d"], [f"{y}_e"]),
            helper.make_node("Add", [f"{y}_e", "one"], [f"{y}_a"]),
            helper.make_node("Mul", [x, f"{y}_a"], [f"{y}_m"]),
            helper.make_node("Mul", [f"{y}_m", "half"], [y])]


def _imported(model, tmp_path, seed: int = 0):
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    return import_model(path, tmp_path / "p", seed=seed)


@pytest.mark.parametrize(("tokens", "seed"), [(8, 0), (64, 1)])
def test_a_dynamically_quantized_dense_gelu_is_onnxruntimes_gelu_bit_for_bit(tmp_path, tokens,
                                                                             seed):
    """MatMul, bias, GELU as the output: onnxruntime fuses the bias into its product and the
    GELU into Gelu, whose float32 the import's ``(gelu x)`` is, every element."""
    rng = np.random.default_rng(seed)
    width, hidden = 16, 32
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h0"]),
             helper.make_node("Add", ["h0", "b"], ["h"]), *gelu_nodes("h", "y")]
    model = float_model(nodes, [("x", [1, tokens, width])], ("y", None),
                        {"w": weights(rng, width, hidden), "b": rng.normal(0, 0.1, hidden),
                         **CONSTANTS})
    path = quantized_dynamically(model, tmp_path / "m.onnx")
    result = import_model(path, tmp_path / "p", seed=seed)
    assert [op for op in result.host_ops if "(Gelu)" in op] == ["y (Gelu)"]
    exact_on_the_isa(load(result.folder))


def test_a_float_bias_gelu_is_onnxruntimes_bias_gelu_bit_for_bit(tmp_path):
    """x + b, then GELU, fused into BiasGelu: the float Add, then ``(gelu x)``."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Add", ["x", "b"], ["h"]), *gelu_nodes("h", "y")]
    model = float_model(nodes, [("x", [4, 64])], ("y", None),
                        {"b": rng.normal(0, 1, 64), **CONSTANTS})
    result = _imported(model, tmp_path)
    text = (result.folder / "m.gls").read_text()
    assert "(gelu " in text and "erf" not in text
    exact_on_the_isa(load(result.folder))


def test_an_erf_whose_value_is_read_elsewhere_stays_op_by_op(tmp_path):
    """The Erf's value is a second output's too: onnxruntime cannot fuse the GELU, and the
    import writes its ops one by one (``(compute erf)``, MLAS's erf), still bit for bit."""
    nodes = [*gelu_nodes("x", "y"), helper.make_node("Mul", ["y_e", "y"], ["z"])]
    model = float_model(nodes, [("x", [4, 64])], ("z", None), CONSTANTS)
    result = _imported(model, tmp_path)
    text = (result.folder / "m.gls").read_text()
    assert "(gelu " not in text and "(compute erf " in text
    exact_on_the_isa(load(result.folder))


def test_an_onnx_gelu_is_onnxruntimes_kernel(tmp_path):
    model = float_model([helper.make_node("Gelu", ["x"], ["y"])], [("x", [4, 64])], ("y", None),
                        {}, opset=20)
    result = _imported(model, tmp_path)
    assert "(gelu " in (result.folder / "m.gls").read_text()
    exact_on_the_isa(load(result.folder))


def test_an_onnx_gelu_of_the_tanh_approximation_is_refused(tmp_path):
    from glc.errors import GlcError

    model = float_model([helper.make_node("Gelu", ["x"], ["y"], approximate="tanh")],
                        [("x", [4, 64])], ("y", None), {}, opset=20)
    with pytest.raises(GlcError, match="approximate: only 'none' is supported, got 'tanh'"):
        _imported(model, tmp_path)
