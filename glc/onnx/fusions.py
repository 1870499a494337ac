"""Which QDQ nodes onnxruntime's optimizer leaves float. Whether it fuses DequantizeLinear →
Mul/Add → QuantizeLinear into QLinearMul/QLinearAdd depends on its transformers' view of the
whole graph — with int8 activations an SE block's gate stays a float Mul while a product of two
convs is fused (tests/onnx/test_import_products.py), and a residual Add that reads the model's
input quantization stays float in a BERT layer quantized symmetric (tests/onnx/test_attention.py),
a Gemm whose bias the quantizer wrote as an activation stays a float Gemm (glc/onnx/attention.py),
an AveragePool or GlobalAveragePool whose input pair was turned into uint8 and its output pair
not stays float (glc/onnx/pools.py, floats.py) — so the import asks its optimized graph (the
reference run's: CPU provider, default optimizations) rather than guess."""

from __future__ import annotations

import functools
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from glc.onnx import kernels


def float_outputs(t, node) -> frozenset[str]:
    """The outputs of the Mul, Add, MatMul and Gemm nodes onnxruntime's optimized graph of
    ``t``'s model still computes in float; a one-line error at ``node`` where onnxruntime
    cannot say."""
    return frozenset(out for out, (op, _) in _ops(t, node).items()
                     if op in ("Mul", "Add", "MatMul", "Gemm"))


def pool_left_float(t, node) -> bool:
    """Whether onnxruntime's optimized graph pools ``node`` (a QDQ AveragePool or
    GlobalAveragePool) in float, not as QLinearAveragePool / QLinearGlobalAveragePool: a float
    pool writes its output, or it runs as an NCHWc kernel (float only; its output then written
    by a ReorderOutput)."""
    out = node.output[0]
    return _ops(t, node).get(out, ("",))[0] in ("AveragePool", "GlobalAveragePool") or \
        out in kernels.nchwc_nodes(t.graph.path)


def fused_node(t, node) -> tuple[str, tuple[str, ...]] | None:
    """The op and inputs of the node that computes ``node``'s output in onnxruntime's
    optimized graph (a fusion's, where one absorbed it: SkipLayerNormalization for a
    LayerNormalization after a residual Add), or None where no node there writes it."""
    return _ops(t, node).get(node.output[0])


def fused_offset(t, node, reader) -> int:
    """The ``offset`` (docs/language.md) of the type onnxruntime's fused kernel computes a QDQ
    ``node`` in — QLinearAveragePool, QLinearAdd, QLinearMul, QLinearSoftmax, whose rounding
    depends on it — ``reader`` the QuantizeLinear that alone reads ``node``: 0 where the kernel
    writing ``reader``'s output in the optimized graph has an int8 output zero point (its last
    input), the pair left int8; else 128: the type was uint8, or its x86 optimizer turned the
    int8 pair into uint8 (QDQS8ToU8Transformer, which renames the output) before fusing.
    Netgen's seed 21163 (of 63fa842) has a QDQ AveragePool fused with its int8 pair kept."""
    graph = _graph(t, node)
    op, inputs = graph.writers.get(reader.output[0], ("", ()))
    return 0 if op in FUSED and inputs and inputs[-1] in graph.int8 else 128


# The kernels onnxruntime fuses a QDQ unit into whose rounding depends on their type; the last
# input of each is its output's zero point.
FUSED = frozenset({"QLinearAveragePool", "QLinearAdd", "QLinearMul", "QLinearSoftmax"})


@dataclass(frozen=True)
class _Optimized:
    """onnxruntime's optimized graph of a model: each output's writer (its op and inputs) and
    the names of its int8 initializers."""

    writers: dict[str, tuple[str, tuple[str, ...]]]
    int8: frozenset[str]


def _ops(t, node) -> dict[str, tuple[str, tuple[str, ...]]]:
    return _graph(t, node).writers


def _graph(t, node) -> _Optimized:
    path = t.graph.path
    try:
        stat = os.stat(path)
        return _optimized(path, stat.st_mtime_ns, stat.st_size)
    except Exception as error:  # onnxruntime's own errors are of many kinds
        raise t.error(node, f"onnxruntime cannot say how it runs this {node.op_type}: "
                            f"{str(error).splitlines()[0] if str(error) else error!r}") from None


@functools.lru_cache(maxsize=4)
def _optimized(path: str, mtime: int, size: int) -> _Optimized:
    """onnxruntime's optimized graph of the model at ``path``, as the reference run makes it."""
    import onnx
    import onnxruntime as ort

    with tempfile.TemporaryDirectory() as folder:
        options = kernels.session_options(Path(folder) / "optimized.onnx")
        ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        graph = onnx.load(options.optimized_model_filepath).graph
    return _Optimized({out: (n.op_type, tuple(n.input)) for n in graph.node
                       for out in n.output if out},
                      frozenset(i.name for i in graph.initializer
                                if i.data_type == onnx.TensorProto.INT8))
