"""``glc import``: an ONNX model → a program folder (one ``.gls``, a ``.npy`` per tensor, a
seeded sample input and ``output.npy`` computed by onnxruntime), written whole or not at all."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from glc.errors import GlcError
from glc.inputs import EXPECTED, symbols_of
from glc.ir.check import check
from glc.ir.types import Access, is_int
from glc.onnx.graph import read_graph
from glc.onnx.program import Builder, Dequantized, Float, Quantized
from glc.onnx.translate import Translator
from glc.syntax.reader import parse_program


@dataclass
class Imported:
    """What ``glc import`` wrote: the folder, its program, and counts for the summary line."""

    folder: Path
    program: Path
    nodes: int
    tensors: int
    host_ops: list[str]
    # No integer value anywhere: the array and the vector unit compute on int8 and int32 only,
    # so every step of the program runs on the host (issue 41, item 15).
    float_only: bool = False


def parse_input_shapes(items: tuple[str, ...]) -> dict[str, tuple[int, ...]]:
    """``NAME=1,3,224,224`` options as a dict."""
    shapes = {}
    for item in items:
        name, sep, dims = item.rpartition("=")
        try:
            parsed = tuple(int(d) for d in dims.split(","))
        except ValueError:
            parsed = ()
        if not sep or not name or not parsed or min(parsed) < 1:
            raise GlcError(f"--input-shape needs NAME=d0,d1,... with positive dims, got '{item}'")
        shapes[name] = parsed
    return shapes


def _sample_inputs(graph, builder: Builder, translator: Translator, seed: int,
                   inputs_dir: Path | None) -> dict[str, np.ndarray]:
    """Per ONNX input name, the array fed to onnxruntime and written as the program's input."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for name, (dims, _) in graph.inputs.items():
        symbol = translator.values[name].name
        if inputs_dir is not None:
            path = inputs_dir / f"{symbol}.npy"
            try:
                array = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as error:
                raise GlcError(f"cannot load input: {error}", str(path)) from None
            if array.shape != dims or array.dtype != np.float32:
                raise GlcError(f"needs float32 of shape {dims}, got {array.dtype} "
                               f"{array.shape}", str(path))
        else:
            array = rng.normal(0.0, 1.0, dims).astype(np.float32)
        feeds[name] = array
        builder.arrays[symbol] = array
    return feeds


def _result(graph, translator: Translator) -> str:
    if len(graph.outputs) != 1:
        raise GlcError(f"the model has {len(graph.outputs)} outputs; glc imports one",
                       graph.path)
    value = translator.values[graph.outputs[0]]
    if isinstance(value, Dequantized):
        return translator.as_float_value(value)
    if isinstance(value, Quantized | Float):
        return value.name
    raise GlcError(f"output '{graph.outputs[0]}' is a constant", graph.path)


def onnxruntime_output(model: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The model's output on ``feeds`` by onnxruntime's CPU provider, default optimizations."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def import_model(model: Path, out: Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
                 seed: int = 0, inputs_dir: Path | None = None) -> Imported:
    """Import ``model`` into the program folder ``out`` (replaced only when complete)."""
    graph = read_graph(model, input_shapes or {})
    builder = Builder()
    translator = Translator(graph, builder)
    translator.run()
    result = _result(graph, translator)
    feeds = _sample_inputs(graph, builder, translator, seed, inputs_dir)
    if any(v.shape != builder.declared[translator.values[k].name][0] for k, v in feeds.items()):
        raise GlcError("input shapes disagree with the model's", graph.path)
    expected = onnxruntime_output(model, feeds)
    if expected.dtype == np.uint8:
        raise GlcError("the model's output is uint8; end it with a DequantizeLinear", graph.path)
    text = builder.text(result, f"imported from {model.name} by glc import: "
                                f"{len(graph.nodes)} ONNX nodes")
    # Only the tensors the result reads (a node off the output's path leaves none behind).
    program = parse_program(text)
    used = set(symbols_of(program))
    for name in [n for n in builder.declared if n not in used]:
        del builder.declared[name]
        builder.arrays.pop(name, None)
    text = builder.text(result, f"imported from {model.name} by glc import: "
                                f"{len(graph.nodes)} ONNX nodes")
    stem = builder.fresh(model.stem)
    out = Path(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
        (staging / f"{stem}.gls").write_text(text)
        for name, array in builder.arrays.items():
            np.save(staging / f"{name}.npy", array)
        np.save(staging / EXPECTED, expected)
        if out.exists():
            shutil.rmtree(out)
        staging.rename(out)
    except OSError as error:
        raise GlcError(f"cannot write: {error.strerror}", str(error.filename or out)) from None
    return Imported(out, out / f"{stem}.gls", len(graph.nodes), len(builder.arrays),
                    builder.host_ops, _float_only(program))


def _float_only(program) -> bool:
    """Whether no value of ``program`` is an integer (a model with no quantized layer)."""
    env = {d.name: Access(d.dims, (), d.dtype) for d in program.inputs.values()}
    return not any(isinstance(t, Access) and is_int(t.dtype)
                   for t in check(program.body, env).values())
