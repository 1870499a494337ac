"""Which of onnxruntime's kernels computes a node, where the choice changes a float result: read
from the graph its optimizer makes of the model (``SessionOptions.optimized_model_filepath``),
with the reference run's options (glc/onnx/importer.py), so it is the choice the reference made.

On x86 its NCHWc transformer moves a float pool to the ``com.microsoft.nchwc`` domain when the
pool's input is float32 with a known 4-d shape whose channels are a multiple of MLAS's NCHWc
block (8 with AVX2, 16 with AVX-512); whether the shape is known after its other rewrites (a
QOperator model's layout transposes lose it) is its graph's business, so the import asks.

Every onnxruntime session glc opens takes its options from ``session_options``: the reference
(glc/onnx/importer.py), the graphs read here and in glc/onnx/fusions.py, the islands' tables
(glc/onnx/islands.py), so each reads the graph the reference ran."""

from __future__ import annotations

import tempfile
from pathlib import Path

NCHWC = "com.microsoft.nchwc"

# On x86 without VNNI (AVX2, AVX-512 core) MLAS multiplies uint8 activations by int8 weights with
# VPMADDUBSW, which adds each pair of products in int16 and saturates: 255·127·2 > 32 767, so a
# QLinearConv, QGemm or MatMulInteger there is not the int32 sum the ONNX operators define (a
# network of issue 37's generator: 55 quanta off on 1 125 of 8 064 outputs of one conv). This
# option of onnxruntime's makes its optimizer give such products uint8 weights (zero point +128)
# on those CPUs, which MLAS sums exactly; with VNNI it changes nothing. glc's reference is the
# operators' arithmetic on every host, not one CPU's overflow.
EXACT_PRODUCTS = ("session.x64quantprecision", "1")


def session_options(optimized_model: str | Path | None = None, fuse: bool = True):
    """onnxruntime's SessionOptions as glc runs it: exact integer products, silent (its
    reasons are the caller's error), optionally writing its optimized graph or (``fuse``
    False) running the graph as written."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.add_session_config_entry(*EXACT_PRODUCTS)
    options.log_severity_level = 4
    if optimized_model is not None:
        options.optimized_model_filepath = str(optimized_model)
    if not fuse:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return options


def nchwc_nodes(model: str | Path) -> frozenset[str]:
    """The output names of the model's nodes that onnxruntime runs as NCHWc kernels: the
    transformer names each replacement ``<output>_nchwc`` (graph_.GenerateNodeName)."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        options = session_options(Path(tmp) / "optimized.onnx")
        ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        graph = onnx.load(options.optimized_model_filepath).graph
    return frozenset(node.name.removesuffix("_nchwc") for node in graph.node
                     if node.domain == NCHWC and node.name.endswith("_nchwc"))
