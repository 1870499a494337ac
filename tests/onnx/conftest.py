"""Shared helpers of the import tests: small float graphs built with onnx.helper, quantized by
onnxruntime, imported, and the program's result next to onnxruntime's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

MISSING = "the onnx extra is not installed (pip install -e .[onnx])"
onnx = pytest.importorskip("onnx", reason=MISSING)
pytest.importorskip("onnxruntime", reason=MISSING)

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from glc.inputs import load  # noqa: E402
from glc.interp import interpret  # noqa: E402
from glc.onnx.importer import import_model  # noqa: E402
from glc.onnx.zoo import quantize  # noqa: E402


def float_model(nodes, inputs, output, initializers, opset=13):
    """A float32 model of ``nodes``; ``inputs`` and ``output`` are (name, dims) pairs."""
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, d) for n, d in inputs],
        [helper.make_tensor_value_info(output[0], TensorProto.FLOAT, output[1])],
        [numpy_helper.from_array(v.astype(np.float32) if v.dtype.kind == "f" else v, k)
         for k, v in initializers.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def imported(model, tmp_path: Path, **options):
    """``model`` quantized (``options``: activations, form, per_channel), imported; returns the
    interpreter's result and onnxruntime's output."""
    path = quantize(model, tmp_path / "model.onnx", **options)
    result = import_model(path, tmp_path / "program")
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    return out, bundle.expected


def imported_float(model, tmp_path: Path):
    """``model`` saved as it is (a float model, not quantized) and imported; returns the import,
    the interpreter's result and onnxruntime's output."""
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    result = import_model(path, tmp_path / "p")
    bundle = load(result.folder)
    out, _ = interpret(bundle.program.body, bundle.arrays)
    return result, out, bundle.expected


def weights(rng, *dims):
    """He-normal float32 weights."""
    return rng.normal(0, np.sqrt(2 / np.prod(dims[1:])), dims).astype(np.float32)


def exact_on_the_isa(bundle):
    """``bundle`` (an imported folder) compiled for n16 with the default rules: every product
    a kernel (none left to the host), and its run on the ISA simulator — races checked — equal
    to onnxruntime's output. Returns the lowered program."""
    from glc.compiler import compile_program
    from glc.hwconfig import load_config
    from glc.lower.execute import execute
    from glc.rewrites import DEFAULT, select

    config = load_config("n16")
    lowered = compile_program(bundle, rules=select(DEFAULT, config.array_size),
                              config=config).lowered
    assert not any("dot-product" in step for step in lowered.figures()["host"])
    outcome = execute(lowered, bundle.arrays, "isa", check_races=True)
    np.testing.assert_array_equal(outcome.result, bundle.expected)
    return lowered
