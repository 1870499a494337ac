"""The model zoo, made on this machine: the architectures the ``onnx`` wheel ships as its "light"
models (onnx/backend/test/data/light/), given seeded random weights, calibrated on seeded random
inputs and quantized by onnxruntime's static quantizer. No download.

The light models hold every weight as a ``ConstantOfShape`` of 0.02 (so every layer's output would
be degenerate); ``random_weights`` replaces each by a seeded random initializer of that shape. At a
resolution below 224 the layers whose size is fixed by 224 are adapted: an ``AveragePool`` whose
kernel covers the last feature map (at any resolution) becomes a ``GlobalAveragePool`` and a
``Gemm``'s weight gets the flattened size the smaller map gives (recorded in docs/onnx.md). A
``Sum`` of two (ResNet-50's residual) is written as the ``Add`` PyTorch exports.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

LIGHT = ("bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
         "shufflenet", "squeezenet", "vgg19", "zfnet512")


def light_path(name: str) -> Path:
    """The light model file the onnx wheel ships for architecture ``name``."""
    import onnx

    return Path(onnx.__file__).parent / "backend" / "test" / "data" / "light" / f"light_{name}.onnx"


def _init_values(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Seeded weights by role (the light models name them Caffe2-style: _w, _b, _s, _rm, _riv)."""
    lower = name.lower()
    if len(shape) >= 2:  # conv or dense weights: He-normal over the fan-in
        fan_in = int(np.prod(shape[1:]))
        return rng.normal(0.0, np.sqrt(2.0 / fan_in), shape).astype(np.float32)
    if "var" in lower or "riv" in lower:
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    if lower.endswith(("_s_0", "scale_0", "_w_0")):
        return rng.uniform(0.5, 1.5, shape).astype(np.float32)
    return rng.normal(0.0, 0.1, shape).astype(np.float32)


def random_weights(model, resolution: int, seed: int):
    """The light model with seeded random initializers in place of its ``ConstantOfShape``
    weights, its input at ``resolution``×``resolution``, and its 224-bound layers adapted."""
    import onnx
    import onnx.version_converter
    from onnx import numpy_helper, shape_inference

    rng = np.random.default_rng(seed)
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    weights = {}
    kept = []
    for node in graph.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
            weights[node.output[0]] = _init_values(node.output[0], shape, rng)
        else:
            kept.append(node)
    # The classifier's final Softmax would be float host work (MLAS's kernel, glc/ir/softmax.py);
    # the zoo's models end at the logits, the integer codes the accelerator computes.
    if kept[-1].op_type == "Softmax" and kept[-1].output[0] == graph.output[0].name:
        graph.output[0].name = kept.pop().input[0]
    consumed = {name for node in kept for name in node.input}
    data = next(i for i in graph.input if i.name not in inits and i.name not in weights
                and i.name in consumed)
    dims = data.type.tensor_type.shape.dim
    dims[2].dim_value = dims[3].dim_value = resolution
    del graph.input[:]
    graph.input.append(data)
    del graph.node[:]
    graph.node.extend(kept)
    for name, init in inits.items():
        if name not in consumed:
            graph.initializer.remove(init)
    for name, value in weights.items():
        graph.initializer.append(numpy_helper.from_array(value, name))
    del graph.output[0].type.tensor_type.shape.dim[:]
    del graph.value_info[:]
    # IR 3 (the light files') wants every initializer listed as a graph input; IR 7 does not.
    model.ir_version = 7
    _sums_as_adds(graph)
    model = _adapt(model, rng)
    # Opset 13: per-channel DequantizeLinear (its axis attribute) needs it.
    model = onnx.version_converter.convert_version(model, 13)
    onnx.checker.check_model(model)
    return shape_inference.infer_shapes(model)


def _sums_as_adds(graph) -> None:
    """Each Sum of two tensors (Caffe2's residual) becomes an Add, the form PyTorch's exporter
    writes: onnxruntime's quantizer quantizes an Add, which its optimizer fuses into QLinearAdd
    (``add-linear``, on the vector unit), and leaves a Sum in float (a host step here)."""
    from onnx import helper

    for index, node in enumerate(graph.node):
        if node.op_type == "Sum" and len(node.input) == 2:
            graph.node[index].CopyFrom(helper.make_node("Add", list(node.input),
                                                        list(node.output), name=node.name))


def _adapt(model, rng):
    """Layers sized for 224 resized for the model's resolution, one at a time (each change can
    change the shapes after it): a pool whose kernel outgrows its map pools globally, a reshape
    keeps the map it gets, a Gemm's weights take the width of its input."""
    from onnx import shape_inference

    graph = model.graph
    while True:
        inferred = shape_inference.infer_shapes(model)
        shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
                  for v in list(inferred.graph.value_info) + list(inferred.graph.input)}
        inits = {i.name: i for i in graph.initializer}
        if not any(_adapt_node(graph, index, node, shapes, inits, rng)
                   for index, node in enumerate(graph.node)):
            return model


def _adapt_node(graph, index, node, shapes, inits, rng) -> bool:
    from onnx import helper, numpy_helper

    source = shapes.get(node.input[0]) if node.input else None
    if not source or not all(source):
        return False
    if node.op_type == "AveragePool":
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        kernel, pads = attrs["kernel_shape"], attrs.get("pads", [0] * 4)
        # A kernel as large as the map (ResNet-50's 7×7 at 224) pools it whole too; as a
        # GlobalAveragePool onnxruntime's quantizer quantizes it, where an AveragePool after a
        # float Sum would stay float.
        if any(k > s for k, s in zip(kernel, source[2:], strict=True)) or (
                list(kernel) == source[2:] and not any(pads)):
            graph.node[index].CopyFrom(helper.make_node(
                "GlobalAveragePool", [node.input[0]], list(node.output), name=node.name))
            return True
    if node.op_type == "Reshape" and node.input[1] in inits:
        target = numpy_helper.to_array(inits[node.input[1]]).copy()
        if -1 in target or np.prod(target) == np.prod(source):
            return False
        # A batch-major flatten keeps its batch; a channel shuffle keeps the smaller map.
        if target.size == 2:
            target = np.array([target[0], -1])
        else:
            target[-2:] = source[-2:]
        inits[node.input[1]].CopyFrom(numpy_helper.from_array(target.astype(np.int64),
                                                              node.input[1]))
        return True
    if node.op_type == "Gemm" and node.input[1] in inits:
        w = numpy_helper.to_array(inits[node.input[1]])
        if len(source) == 2 and w.shape[1] != source[1]:
            fresh = rng.normal(0.0, np.sqrt(2.0 / source[1]), (w.shape[0], source[1]))
            inits[node.input[1]].CopyFrom(numpy_helper.from_array(fresh.astype(np.float32),
                                                                  node.input[1]))
            return True
    return False


class _Calibration:
    """onnxruntime's CalibrationDataReader over seeded random inputs."""

    def __init__(self, name: str, shape: tuple[int, ...], count: int, seed: int):
        rng = np.random.default_rng(seed)
        self.batches = iter([{name: rng.normal(0, 1, shape).astype(np.float32)}
                             for _ in range(count)])

    def get_next(self):
        return next(self.batches, None)


def quantize(model, out: Path, activations: str = "int8", form: str = "QDQ",
             per_channel: bool = False, seed: int = 0, samples: int = 4,
             symmetric: bool = False) -> Path:
    """``model`` quantized by onnxruntime's static quantizer (int8 weights; ``activations`` int8
    or uint8, with ``symmetric`` int8 ranges of zero point 0; ``form`` QDQ or QOperator),
    calibrated on ``samples`` seeded random inputs.

    Weights take 7 bits (``reduce_range``), as onnxruntime's guide asks for x86 without VNNI:
    there its u8×s8 GEMM adds pairs of products in saturating int16 (``vpmaddubsw``), so a
    full-range weight pair (2·255·127 > 32767) gives a result no exact integer kernel — ours or
    onnxruntime's on VNNI or ARM — computes. With 7 bits (2·255·64 ≤ 32767) onnxruntime is
    exact on every CPU, and the references these models give are the same everywhere."""
    import onnx
    from onnxruntime.quantization import QuantFormat, QuantType, quant_pre_process, quantize_static

    graph_input = model.graph.input[0]
    shape = tuple(d.dim_value for d in graph_input.type.tensor_type.shape.dim)
    with tempfile.TemporaryDirectory() as tmp:
        float_path = Path(tmp) / "float.onnx"
        prepared = Path(tmp) / "prepared.onnx"
        onnx.save(model, float_path)
        # onnxruntime's own pre-processing (what its quantization guide asks for): its graph
        # optimizer folds each BatchNormalization into the conv before it.
        quant_pre_process(str(float_path), str(prepared), skip_symbolic_shape=True)
        quantize_static(
            str(prepared), str(out), _Calibration(graph_input.name, shape, samples, seed),
            quant_format=QuantFormat.QDQ if form == "QDQ" else QuantFormat.QOperator,
            activation_type=QuantType.QInt8 if activations == "int8" else QuantType.QUInt8,
            weight_type=QuantType.QInt8, per_channel=per_channel, reduce_range=True,
            extra_options={"ActivationSymmetric": symmetric})
    return out


def encoder_layer(tokens: int = 8, width: int = 16, hidden: int = 32, seed: int = 0,
                  final_norm: bool = True):
    """A transformer encoder layer built with onnx.helper, float32 with seeded weights: one
    attention head (q, k, v projections; softmax(q·kᵀ) · v, the 1/√width folded into q's
    weights; an output projection), a residual sum and LayerNormalization, an MLP (Gemm, Relu,
    Gemm), a second residual and (with ``final_norm``) LayerNormalization. Tokens are rows: x
    is (tokens, width)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)

    def dense(fan_in, fan_out):
        return rng.normal(0.0, np.sqrt(2.0 / fan_in), (fan_in, fan_out)).astype(np.float32)

    inits = {f"w{p}": dense(width, width) for p in "qkvo"}
    inits["wq"] /= np.float32(np.sqrt(width))
    inits.update({f"b{p}": rng.normal(0.0, 0.1, width) for p in "qkvo"})
    inits.update({"w1": dense(width, hidden), "b1": rng.normal(0.0, 0.1, hidden),
                  "w2": dense(hidden, width), "b2": rng.normal(0.0, 0.1, width)})
    for i in "12":
        inits[f"g{i}"] = rng.uniform(0.5, 1.5, width)
        inits[f"s{i}"] = rng.normal(0.0, 0.1, width)
    node = helper.make_node
    nodes = [node("Gemm", ["x", f"w{p}", f"b{p}"], [p]) for p in "qkv"] + [
        node("Transpose", ["k"], ["kt"], perm=[1, 0]),
        node("MatMul", ["q", "kt"], ["scores"]),
        node("Softmax", ["scores"], ["p"], axis=-1),
        node("MatMul", ["p", "v"], ["a"]),
        node("Gemm", ["a", "wo", "bo"], ["o"]),
        node("Add", ["x", "o"], ["r1"]),
        node("LayerNormalization", ["r1", "g1", "s1"], ["n1"], axis=-1, epsilon=1e-5),
        node("Gemm", ["n1", "w1", "b1"], ["h"]),
        node("Relu", ["h"], ["hr"]),
        node("Gemm", ["hr", "w2", "b2"], ["m"]),
        node("Add", ["n1", "m"], ["r2" if final_norm else "y"])]
    if final_norm:
        nodes.append(node("LayerNormalization", ["r2", "g2", "s2"], ["y"], axis=-1,
                          epsilon=1e-5))
    else:
        del inits["g2"], inits["s2"]
    graph = helper.make_graph(
        nodes, "encoder", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [tokens, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [tokens, width])],
        [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def make(name: str, out: Path, resolution: int = 64, seed: int = 0, **options) -> Path:
    """Light model ``name`` with seeded weights at ``resolution``, quantized into ``out``."""
    import onnx

    model = random_weights(onnx.load(light_path(name)), resolution, seed)
    os.makedirs(out.parent, exist_ok=True)
    return quantize(model, out, seed=seed, **options)
