"""Float islands as tables (glc/onnx/islands.py): the elementwise float ops between a
DequantizeLinear and a QuantizeLinear, or a QOperator op of one varying activation, imported as
``table-lookup`` and exact against onnxruntime, on the interpreter and the ISA simulator."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import float_model, quantize, weights

from glc.compiler import compile_program
from glc.hwconfig import load_config
from glc.inputs import load
from glc.interp import interpret
from glc.lower.execute import execute
from glc.onnx.importer import import_model
from glc.rewrites import DEFAULT, select

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

C = 8


def _gelu(x: str, y: str) -> list:
    """GELU as torch exports it before opset 20: x · (erf(x / √2) + 1) · 0.5."""
    return [helper.make_node("Div", [x, "sqrt2"], ["g_d"]),
            helper.make_node("Erf", ["g_d"], ["g_e"]),
            helper.make_node("Add", ["g_e", "one"], ["g_a"]),
            helper.make_node("Mul", [x, "g_a"], ["g_m"]),
            helper.make_node("Mul", ["g_m", "half"], [y])]


ISLANDS = {
    "sigmoid": lambda x, y: [helper.make_node("Sigmoid", [x], [y])],
    "tanh": lambda x, y: [helper.make_node("Tanh", [x], [y])],
    "hardswish": lambda x, y: [helper.make_node("HardSwish", [x], [y])],
    "leakyrelu": lambda x, y: [helper.make_node("LeakyRelu", [x], [y], alpha=0.1)],
    # (a Clip right after a conv the quantizer folds into the conv's output range)
    "tanh-clip": lambda x, y: [helper.make_node("Tanh", [x], ["t"]),
                               helper.make_node("Clip", ["t", "lo", "hi"], [y])],
    "gelu": _gelu,
    "silu-as-one-code": lambda x, y: [helper.make_node("Sigmoid", [x], ["s"]),
                                      helper.make_node("Mul", [x, "s"], [y])],
    # the Tanh read by its QuantizeLinear and by a Relu before another: two islands sharing
    # it (as a HardSwish in scripts/netgen.py's seed 4262, QOperator int8)
    "tanh-shared": lambda x, y: [helper.make_node("Tanh", [x], ["h"]),
                                 helper.make_node("Relu", ["h"], ["r"]),
                                 helper.make_node("Add", ["r", "h"], [y])],
}


def _model(island: str, seed: int = 0):
    """conv → the island → conv: the island's codes are a kernel's result, and a kernel reads
    its codes."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             *ISLANDS[island]("a", "b"),
             helper.make_node("Conv", ["b", "w2"], ["y"])]
    constants = {"w1": weights(rng, C, C, 3, 3), "w2": weights(rng, C, C, 1, 1),
                 "sqrt2": np.array(1.4142135, np.float32), "one": np.array(1, np.float32),
                 "half": np.array(0.5, np.float32), "lo": np.array(-0.25, np.float32),
                 "hi": np.array(0.5, np.float32)}
    used = {i for n in nodes for i in n.input}
    return float_model(nodes, [("x", (1, C, 6, 6))], ("y", (1, C, 6, 6)),
                       {k: v for k, v in constants.items() if k in used}, opset=14)


FORMS = [("uint8", "QDQ"), ("int8", "QDQ"), ("uint8", "QOperator"), ("int8", "QOperator")]


@pytest.mark.parametrize("island", sorted(ISLANDS))
@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_a_float_island_imports_as_a_table_exact_against_onnxruntime(tmp_path, island,
                                                                     activations, form):
    path = quantize(_model(island), tmp_path / "m.onnx", activations=activations, form=form)
    result = import_model(path, tmp_path / "p")
    text = result.program.read_text()
    assert "table-lookup" in text
    assert result.host_ops == []  # nothing of the island left to the host
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)


@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_tables_run_on_the_accelerator_exact_against_onnxruntime(tmp_path, activations, form):
    path = quantize(_model("gelu"), tmp_path / "m.onnx", activations=activations, form=form)
    bundle = load(import_model(path, tmp_path / "p").folder)
    compiled = compile_program(bundle, config=load_config("n16"))
    lowered = compiled.lowered
    assert "table-lookup" not in " ".join(lowered.figures().get("host", []))
    outcome = execute(lowered, bundle.arrays, "isa", check_races=True)
    np.testing.assert_array_equal(outcome.result, bundle.expected)


def test_a_per_channel_constant_leaves_the_ops_as_they_were(tmp_path):
    """A Mul by a per-channel constant is a function of a code and a channel, not one table:
    it is imported as before (a float host step)."""
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["a"], ["s"]),
             helper.make_node("Mul", ["s", "k"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["y"])]
    model = float_model(nodes, [("x", (1, C, 6, 6))], ("y", (1, C, 6, 6)),
                        {"w1": weights(rng, C, C, 3, 3), "w2": weights(rng, C, C, 1, 1),
                         "k": rng.uniform(0.5, 2, (1, C, 1, 1)).astype(np.float32)})
    path = quantize(model, tmp_path / "m.onnx", activations="uint8", form="QDQ")
    result = import_model(path, tmp_path / "p")
    assert result.program.read_text().count("table-lookup") == 1  # the Sigmoid alone
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)


@pytest.mark.rtl
@pytest.mark.parametrize("island", ["gelu", "hardswish"])
def test_tables_on_the_rtl_equal_onnxruntime(tmp_path, island):
    """The convs on the array, the table on the vector unit: the RTL bit for bit, in the
    cycle model's cycles."""
    path = quantize(_model(island, seed=2), tmp_path / "m.onnx", activations="int8", form="QDQ")
    bundle = load(import_model(path, tmp_path / "p").folder)
    config = load_config("n16")
    lowered = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    assert not any("dot-product" in step or "table-lookup" in step
                   for step in lowered.figures()["host"])
    outcome = execute(lowered, bundle.arrays, "rtl")
    np.testing.assert_array_equal(outcome.result, bundle.expected)
    assert outcome.cycles == lowered.figures()["predicted_cycles"]


def _read_as_float(seed: int = 0, op: str = "Tanh"):
    """conv → ``op`` → MaxPool as the model's output: with its output last, the quantizer leaves
    the MaxPool float and no QuantizeLinear reads the ``op`` (scripts/netgen.py's seed 92, a
    Tanh)."""
    rng = np.random.default_rng(seed)
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], pads=[1, 1, 1, 1]),
             helper.make_node(op, ["a"], ["t"]),
             helper.make_node("MaxPool", ["t"], ["y"], kernel_shape=[2, 2], strides=[2, 2])]
    return float_model(nodes, [("x", (1, C, 6, 6))], ("y", (1, C, 3, 3)),
                       {"w1": weights(rng, C, C, 3, 3)}, opset=14)


@pytest.mark.parametrize(("op", "table"), [("Exp", True), ("Tanh", False)])
@pytest.mark.parametrize(("activations", "form"), FORMS)
def test_an_island_read_as_float_is_a_float_table(tmp_path, activations, form, op, table):
    """An Exp of an activation's codes read as float: its 256 float32 values, computed by
    onnxruntime, gathered by code on the host — exact, where it was refused. A Tanh, which has
    a float host step of its own (MLAS's tanh), is that step instead (a chain the import writes
    as float host steps stays as it was): exact too."""
    path = quantize(_read_as_float(op=op), tmp_path / "m.onnx", activations=activations,
                    form=form)
    result = import_model(path, tmp_path / "p")
    assert f"t ({op})" in result.host_ops
    assert ("(gather " in result.program.read_text()) == table
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    np.testing.assert_array_equal(out, bundle.expected)
