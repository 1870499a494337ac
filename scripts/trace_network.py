"""Trace an imported network node by node against onnxruntime: where does glc first differ?

A network the fuzz counts ``reference`` or ``float-reference`` (scripts/fuzz.py --networks)
differs from onnxruntime at its outputs; this finds the first tensor that differs. onnxruntime's
optimized graph of the model (the graph its reference run executes, glc/onnx/kernels.py) is run
with every tensor a graph output and optimizations then off, so each is the value its chosen
kernel computed; each int8, uint8 or float32 one (a dynamically quantized model's float steps)
is held against glc's interpreter's value of the define of that kind named after the same ONNX
tensor (the import names its defines after the ONNX outputs, made symbols; a fused
kernel's output is its QuantizeLinear's, so a define of the name without that suffix is tried
too; a tensor onnxruntime renamed, turning its pair into uint8, by the name of the
DequantizeLinear that reads it, ``<tensor>_DequantizeLinear``). uint8 codes are compared as glc
carries them, less 128; float32 values bit for bit.

Where the tensor is a QuantizeLinear of a float Conv onnxruntime kept (its ``float-reference``),
``--tie`` gives, at each differing code, the conv's exact value in quanta (float64, from
onnxruntime's own float32 inputs) and its distance from a rounding tie: near a tie, the two
roundings are onnxruntime's float order against the integer reading, not a wrong number.

Usage: ``python scripts/trace_network.py model.onnx FOLDER [--tie CONV]``, FOLDER what
``glc import model.onnx -o FOLDER`` wrote.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

# What onnxruntime's QDQ fusion appends to a fused kernel's output: its QuantizeLinear's name.
SUFFIX = "_QuantizeLinear_Output"


@dataclass
class Row:
    """One quantized tensor of onnxruntime's graph: who wrote it, glc's define, how many differ."""

    tensor: str
    op: str
    define: str | None
    differ: int | None  # None where glc has no tensor of that name and shape
    size: int


def _ort_values(model: Path, arrays: dict[str, np.ndarray]):
    """onnxruntime's optimized graph of ``model`` and every tensor of it, run as optimized on
    the model's inputs as the import saved them (``arrays``)."""
    import onnx
    import onnxruntime as ort

    from glc.onnx import kernels

    with tempfile.TemporaryDirectory() as folder:
        options = kernels.session_options(Path(folder) / "optimized.onnx")
        ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])
        graph = onnx.load(options.optimized_model_filepath)
        have = {o.name for o in graph.graph.output}
        for node in graph.graph.node:
            for out in node.output:
                if out and out not in have:
                    graph.graph.output.append(onnx.helper.ValueInfoProto(name=out))
                    have.add(out)
        every = Path(folder) / "every.onnx"
        onnx.save(graph, every)
        session = ort.InferenceSession(str(every), kernels.session_options(fuse=False),
                                       providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        feeds = {i.name: _input(i.name, arrays) for i in session.get_inputs()}
        values = dict(zip(names, session.run(names, feeds), strict=True))
    return graph.graph, values


def _input(name: str, arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The model input ``name`` as the import saved it: under its name made a symbol, or that
    name with ``_2`` where it is taken (``input``, a word of the language)."""
    base = _symbol(name)
    return next(arrays[n] for n in (name, base, f"{base}_2") if n in arrays)


def _symbol(name: str) -> str:
    """An ONNX tensor name as the import names its define."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name).strip("_")


def _codes(value: np.ndarray) -> np.ndarray:
    """int8 or uint8 codes as glc carries them (uint8 less 128)."""
    return value.astype(np.int64) - (128 if value.dtype == np.uint8 else 0)


def trace(model: Path, folder: Path) -> list[Row]:
    """Every int8, uint8 and float32 tensor of onnxruntime's optimized graph, in its order,
    against glc."""
    from glc.inputs import load
    from glc.interp import interpret

    bundle = load(folder)
    graph, values = _ort_values(model, bundle.arrays)
    defines = bundle.program.defines
    readers: dict[str, list[str]] = {}
    for node in graph.node:
        if node.op_type == "DequantizeLinear" and "_DequantizeLinear" in node.name:
            readers.setdefault(node.input[0], []).append(node.name.split("_DequantizeLinear")[0])
    rows = []
    for node in graph.node:
        for out in node.output:
            value = values.get(out)
            if value is None or value.dtype not in (np.int8, np.uint8, np.float32):
                continue
            names = [_symbol(n) for n in (out, out.removesuffix(SUFFIX), *readers.get(out, ()))]
            define = next((n for n in names if n in defines), None)
            ours = interpret(defines[define], bundle.arrays)[0] if define else None
            float_ = value.dtype == np.float32
            if ours is None or ours.shape != value.shape or \
                    ours.dtype.kind not in ("f" if float_ else "iu"):
                rows.append(Row(out, node.op_type, define, None, value.size))
                continue
            differ = int(np.count_nonzero(ours != value if float_ else
                                          _codes(ours) != _codes(value)))
            rows.append(Row(out, node.op_type, define, differ, value.size))
    return rows


def tie(model: Path, folder: Path, conv: str) -> list[tuple[tuple[int, ...], int, int, float]]:
    """At each code where glc's define ``conv`` differs from onnxruntime's QuantizeLinear of
    the float Conv writing ``conv`` in ``model``: (index, onnxruntime's code, glc's, the conv's
    exact value in quanta)."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    from reference_numerics import conv2d_nchw

    from glc.inputs import load
    from glc.interp import interpret
    from glc.onnx import kernels

    loaded = onnx.load(model)
    graph = loaded.graph
    constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    node = next(n for n in graph.node if n.op_type == "Conv" and n.output[0] == conv)
    quantize = next(n for n in graph.node if n.op_type == "QuantizeLinear" and
                    n.input[0] == conv)
    wanted = [*node.input, quantize.output[0]]
    for name in wanted:
        graph.output.append(onnx.helper.ValueInfoProto(name=name))
    bundle = load(folder)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        onnx.save(loaded, path)
        session = ort.InferenceSession(str(path), kernels.session_options(fuse=False),
                                       providers=["CPUExecutionProvider"])
        feeds = {i.name: _input(i.name, bundle.arrays) for i in session.get_inputs()}
        got = dict(zip(wanted, session.run(wanted, feeds), strict=True))
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
    pads = attrs.get("pads", [0, 0, 0, 0])
    exact = conv2d_nchw(got[node.input[0]].astype(np.float64),
                        got[node.input[1]].astype(np.float64),
                        tuple(attrs.get("strides", [1, 1])),
                        ((pads[0], pads[2]), (pads[1], pads[3])))
    if len(node.input) > 2 and node.input[2]:
        exact = exact + got[node.input[2]].astype(np.float64).reshape(1, -1, 1, 1)
    quanta = exact / float(np.float32(constants[quantize.input[1]]))
    theirs = _codes(got[quantize.output[0]])
    ours = _codes(interpret(bundle.program.defines[_symbol(conv)], bundle.arrays)[0])
    return [(tuple(int(i) for i in index), int(theirs[tuple(index)]), int(ours[tuple(index)]),
             float(quanta[tuple(index)])) for index in np.argwhere(theirs != ours)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("folder", type=Path, help="What glc import wrote for the model.")
    parser.add_argument("--tie", metavar="CONV",
                        help="The exact values of the float Conv writing CONV where they differ.")
    args = parser.parse_args()
    if args.tie:
        for index, theirs, ours, quanta in tie(args.model, args.folder, args.tie):
            print(f"{index}: onnxruntime {theirs}, glc {ours}, exact {quanta!r} quanta, "
                  f"{abs(abs(quanta - np.floor(quanta)) - 0.5):.3g} from a tie")
        return 0
    first = None
    for row in trace(args.model, args.folder):
        said = ("no glc tensor" if row.differ is None else
                f"{row.differ} of {row.size} codes differ")
        print(f"{row.op:24} {row.tensor:40} {row.define or '-':24} {said}")
        first = first or (row if row.differ else None)
    print(f"first to differ: {first.tensor} ({first.op})" if first else "none differs")
    return int(first is not None)


if __name__ == "__main__":
    sys.exit(main())
