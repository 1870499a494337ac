"""The ``glc import`` and ``glc zoo`` commands (the CLI adds them; errors become exit statuses
there)."""

from __future__ import annotations

from pathlib import Path

import click

from glc.errors import GlcError
from glc.onnx.zoo import LIGHT


def _need_onnx(command: str) -> None:
    """Refuse ``command`` in one line where the onnx extra is not installed."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise GlcError(f"{command} needs onnx and onnxruntime: pip install -e '.[onnx]'") from None


@click.command("import")
@click.argument("model", type=click.Path(dir_okay=False, path_type=Path))
# -o is any path: glc/outdir.py refuses a file there in one line, as for glc compile -o.
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
              help="The program folder to write (replaced when the import succeeds).")
@click.option("--input-shape", "input_shapes", multiple=True, metavar="NAME=d0,d1,...",
              help="The shape of a model input (for symbolic or other sizes); repeatable.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the sample input.")
@click.option("--inputs", "inputs_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Take the input from DIR/<input>.npy instead of a seeded one.")
def import_(model: Path, out: Path, input_shapes: tuple[str, ...], seed: int,
            inputs_dir: Path | None) -> None:
    """Import a quantized ONNX MODEL as a program folder checked by onnxruntime's output."""
    _need_onnx("glc import")
    from glc.onnx.importer import import_model, parse_input_shapes

    if not model.exists():
        raise GlcError("no such model file", str(model))
    result = import_model(model, out, parse_input_shapes(input_shapes), seed, inputs_dir)
    host = f", host ops: {', '.join(result.host_ops)}" if result.host_ops else ""
    click.echo(f"wrote {result.program} ({result.nodes} ONNX nodes, {result.tensors} tensors, "
               f"output.npy by onnxruntime{host})")
    if result.float_only:
        click.echo("note: the model computes in float only: every step will run on the host "
                   "(numpy), none on the accelerator, which computes on int8; quantize it "
                   "(onnxruntime.quantization, docs/onnx.md) to use the array", err=True)


@click.command("zoo")
@click.argument("name", type=click.Choice(LIGHT))
@click.option("-o", "--out", required=True, type=click.Path(path_type=Path),
              help="The program folder to write, as glc import writes it, with the quantized "
                   "model beside the program as model.onnx.")
@click.option("--resolution", type=click.IntRange(min=1), default=64, show_default=True,
              help="The input image's height and width (the light models' 224 is slow to "
                   "compile; some architectures need 64 or 128, docs/onnx.md).")
@click.option("--activations", type=click.Choice(["uint8", "int8"]), default="uint8",
              show_default=True, help="uint8: onnxruntime fuses every conv into an integer "
                                      "kernel, so its reference is exact on every CPU.")
@click.option("--form", type=click.Choice(["qdq", "qop"]), default="qdq", show_default=True,
              help="QDQ (QuantizeLinear/DequantizeLinear pairs) or QOperator (QLinearConv, ...).")
@click.option("--per-channel", is_flag=True, help="One weight scale per output channel.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the weights, the calibration inputs and the sample input.")
def zoo(name: str, out: Path, resolution: int, activations: str, form: str, per_channel: bool,
        seed: int) -> None:
    """Make zoo model NAME (an onnx wheel architecture with seeded weights, quantized by
    onnxruntime; glc/onnx/zoo.py) and import it as a program folder."""
    _need_onnx("glc zoo")
    import tempfile

    from glc.onnx.importer import KEPT_MODEL, import_model
    from glc.onnx.zoo import make

    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / "model.onnx"
        try:
            make(name, model, resolution=resolution, seed=seed, activations=activations,
                 form="QDQ" if form == "qdq" else "QOperator", per_channel=per_channel)
        except Exception as error:  # onnxruntime's shape inference or quantizer refusing it
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            raise GlcError(f"{name} at resolution {resolution} cannot be made (onnxruntime: "
                           f"{first}); try a larger --resolution") from None
        # the model goes in with the rest: copied in afterwards, glc's record of the folder
        # would not list it and the next `glc zoo -o` of the folder would be refused
        result = import_model(model, out, {}, seed, None, keep_model=True)
    host = f", host ops: {', '.join(result.host_ops)}" if result.host_ops else ""
    click.echo(f"wrote {result.program} and {out / KEPT_MODEL} ({result.nodes} ONNX nodes, "
               f"{result.tensors} tensors, output.npy by onnxruntime{host})")
