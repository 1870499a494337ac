"""``glc import``: an ONNX model → a program folder (one ``.gls``, a ``.npy`` per tensor, a
seeded sample input and ``output.npy`` computed by onnxruntime), written whole or not at all."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from glc.errors import GlcError, Span, printable
from glc.inputs import EXPECTED, symbols_of
from glc.ir.check import check
from glc.ir.types import Access, is_int
from glc.onnx import kernels
from glc.onnx.embeddings import id_bound
from glc.onnx.graph import read_graph
from glc.onnx.program import Builder, Dequantized, Float, Quantized
from glc.onnx.quant import carried
from glc.onnx.translate import Translator
from glc.outdir import check_folder_target, replacing
from glc.syntax.reader import parse_program

# The model's copy in a folder ``glc zoo`` makes.
KEPT_MODEL = "model.onnx"


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
    for name, (dims, dtype) in graph.inputs.items():
        symbol = translator.values[name].name
        if inputs_dir is not None:
            path = inputs_dir / f"{symbol}.npy"
            try:
                array = np.load(path, allow_pickle=False)
            except (OSError, ValueError) as error:
                raise GlcError(f"cannot load input: {error}", str(path)) from None
            if array.shape != dims or array.dtype != np.dtype(dtype):
                raise GlcError(f"needs {dtype} of shape {dims}, got {array.dtype} "
                               f"{array.shape}", str(path))
        elif dtype == "float32":
            array = rng.normal(0.0, 1.0, dims).astype(np.float32)
        elif dtype == "int64":  # token ids: rows of every table they index
            array = rng.integers(0, id_bound(graph, name), dims).astype(np.int64)
        else:  # an integer image: codes over the whole range
            info = np.iinfo(dtype)
            array = rng.integers(info.min, info.max + 1, dims).astype(dtype)
        feeds[name] = array
        builder.arrays[symbol] = carried(array)  # the program's int8 carrying form
    return feeds


def _result(graph, translator: Translator) -> str:
    value = translator.values[graph.outputs[0]]
    if isinstance(value, Dequantized):
        return translator.as_float_value(value)
    if isinstance(value, Quantized | Float):
        return value.name
    raise GlcError(f"output '{printable(graph.outputs[0])}' is a constant", graph.path)


def onnxruntime_output(model: Path, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The model's output on ``feeds`` by onnxruntime's CPU provider, default optimizations,
    exact integer products (kernels.session_options); a GlcError naming the model with
    onnxruntime's reason if it cannot load or run it."""
    import onnxruntime as ort

    try:
        session = ort.InferenceSession(str(model), kernels.session_options(),
                                       providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime's exception types derive from Exception only
        raise GlcError(f"onnxruntime cannot load the model: {_reason(error)}", str(model)) from None
    run = ort.RunOptions()
    run.log_severity_level = 4
    try:
        return session.run(None, feeds, run)[0]
    except Exception as error:
        raise GlcError(f"onnxruntime cannot run the model: {_reason(error)}", str(model)) from None


def _reason(error: Exception) -> str:
    """onnxruntime's message on one line, without its status code, the model's path and the
    C++ source location and signature it may quote."""
    text = " ".join(str(error).split())
    text = re.sub(r"^\[ONNXRuntimeError\] : \d+ : \w+ : ", "", text)
    text = re.sub(r"^Load model from .*? failed:", "", text)
    located = re.search(r"\S+\.(?:cc|h|cpp):\d+ ", text)
    if located:  # "file.cc:93 static T ns::f(args) [with T = …] the message"
        start = text.find("(", located.end())
        depth, end = 0, len(text)
        for k in range(max(start, 0), len(text)):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            if start >= 0 and depth == 0:
                end = k + 1
                break
        # then the signature's qualifiers and template arguments: " const [with T = …]"
        rest = re.sub(r"^(?:\s*(?:const|noexcept|override)\b)*\s*(?:\[with [^\]]*\])?", "",
                      text[end:])
        text = text[:located.start()] + rest.strip()
    return printable(text.strip())


def import_model(model: Path, out: Path, input_shapes: dict[str, tuple[int, ...]] | None = None,
                 seed: int = 0, inputs_dir: Path | None = None,
                 keep_model: bool = False) -> Imported:
    """Import ``model`` into the program folder ``out`` (replaced only when complete); with
    ``keep_model``, a copy of the model goes into the folder too, as ``model.onnx`` (written
    with the rest, so glc's record of the folder lists it)."""
    check_folder_target(out)
    graph = read_graph(model, input_shapes or {})
    if len(graph.outputs) != 1:
        raise GlcError(f"the model has {len(graph.outputs)} outputs; glc imports one",
                       graph.path)
    builder = Builder()
    translator = Translator(graph, builder)
    translator.declare_inputs()
    feeds = _sample_inputs(graph, builder, translator, seed, inputs_dir)
    # onnxruntime first: a model it cannot load or run (types, opsets, shapes its inference
    # refuses) is refused in its words before the translation trusts the graph.
    expected = onnxruntime_output(model, feeds)
    translator.run()
    result = _result(graph, translator)
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
    types = _types(parse_program(text), text, graph.path)
    stem = builder.fresh(model.stem)
    out = Path(out)
    with replacing(out) as staging:
        try:
            (staging / f"{stem}.gls").write_text(text)
            for name, array in builder.arrays.items():
                np.save(staging / f"{name}.npy", array)
            np.save(staging / EXPECTED, expected)
            if keep_model:
                shutil.copyfile(model, staging / KEPT_MODEL)
        except OSError as error:
            raise GlcError(f"cannot write: {error.strerror}", str(out)) from None
    return Imported(out, out / f"{stem}.gls", len(graph.nodes), len(builder.arrays),
                    builder.host_ops, _float_only(types))


def _types(program, text: str, path: str) -> dict:
    """The generated program's types; an error in it (a shape the model's own nodes and
    inputs imply, such as a pool's window past an --input-shape's dims) is located at the
    ONNX node whose lines it lies in — the user never sees the generated program's text."""
    env = {d.name: Access(d.dims, (), d.dtype) for d in program.inputs.values()}
    try:
        return check(program.body, env)
    except GlcError as error:
        node = "the model"
        if isinstance(error.where, Span):
            lines = text.splitlines()[:error.where.line]
            node = next((line[len("; "):] for line in reversed(lines)
                         if line.startswith("; node ")), node)
        raise GlcError(f"{node}: {error.message}", path) from None


def _float_only(types: dict) -> bool:
    """Whether no value of a program (its ``types``) is an integer the accelerator computes on
    (a model with no quantized layer; int64 token ids are only read, glc/onnx/embeddings.py)."""
    return not any(isinstance(t, Access) and is_int(t.dtype) and t.dtype != "int64"
                   for t in types.values())
