"""The ``glc import`` command (the CLI adds it; errors become exit statuses there)."""

from __future__ import annotations

from pathlib import Path

import click

from glc.errors import GlcError


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
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        raise GlcError("glc import needs onnx and onnxruntime: pip install -e '.[onnx]'") from None
    from glc.onnx.importer import import_model, parse_input_shapes

    if not model.exists():
        raise GlcError("no such model file", str(model))
    result = import_model(model, out, parse_input_shapes(input_shapes), seed, inputs_dir)
    host = f", host ops: {', '.join(result.host_ops)}" if result.host_ops else ""
    click.echo(f"wrote {result.program} ({result.nodes} ONNX nodes, {result.tensors} tensors, "
               f"output.npy by onnxruntime{host})")
