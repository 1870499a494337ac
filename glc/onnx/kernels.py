"""Which of onnxruntime's kernels computes a node, where the choice changes a float result: read
from the graph its optimizer makes of the model (``SessionOptions.optimized_model_filepath``),
with the reference run's options (glc/onnx/importer.py), so it is the choice the reference made.

On x86 its NCHWc transformer moves a float pool to the ``com.microsoft.nchwc`` domain when the
pool's input is float32 with a known 4-d shape whose channels are a multiple of MLAS's NCHWc
block (8 with AVX2, 16 with AVX-512); whether the shape is known after its other rewrites (a
QOperator model's layout transposes lose it) is its graph's business, so the import asks."""

from __future__ import annotations

import tempfile
from pathlib import Path

NCHWC = "com.microsoft.nchwc"


def nchwc_nodes(model: str | Path) -> frozenset[str]:
    """The output names of the model's nodes that onnxruntime runs as NCHWc kernels: the
    transformer names each replacement ``<output>_nchwc`` (graph_.GenerateNodeName)."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as tmp:
        options = ort.SessionOptions()
        options.optimized_model_filepath = str(Path(tmp) / "optimized.onnx")
        options.log_severity_level = 4
        ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        graph = onnx.load(options.optimized_model_filepath).graph
    return frozenset(node.name.removesuffix("_nchwc") for node in graph.node
                     if node.domain == NCHWC and node.name.endswith("_nchwc"))
