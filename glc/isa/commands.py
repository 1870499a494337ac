"""The `glc asm` and `glc disasm` commands (wired into glc/cli.py through COMMANDS)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import click

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.asm import assemble, disassemble
from glc.isa.cycles import Timeline
from glc.isa.encoding import Instruction, decode, read_image, to_bytes, to_hex
from glc.outdir import check_file_target, writing


@click.command()
@click.argument("source", type=click.Path(dir_okay=False, path_type=Path))
# -o is any path: a folder there is refused in one line (glc/outdir.py), not by click.
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="Binary image to write: .bin (32-byte little-endian words) or .hex ($readmemh).")
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration: a name in hw/configs/ or a .toml path.")
@click.option("--stats", is_flag=True, help="Print the cycle model's prediction, per unit.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object: instructions, predicted_cycles and every counter.")
def asm(source: Path, output: Path | None, config_name: str, stats: bool, as_json: bool) -> None:
    """Assemble SOURCE (docs/isa.md, "Assembly language") into a binary image."""
    if output is None and not (stats or as_json):
        raise GlcError("nothing to do: give -o OUTPUT, --stats or --json", str(source))
    if output is not None and output.suffix not in (".bin", ".hex"):
        raise GlcError("the output must end in .bin or .hex", str(output))
    if not source.is_file():
        raise GlcError("no such file", str(source))
    if output is not None:
        check_file_target(output, [source])
    config = load_config(config_name)
    try:
        text = source.read_text()
    except UnicodeDecodeError as error:
        raise GlcError(f"not a text file: {error.reason}", str(source)) from None
    program = assemble(text, config, str(source))
    if output is not None:
        with writing(output) as file:
            if output.suffix == ".hex":
                file.write_text(to_hex(program.words))
            else:
                file.write_bytes(to_bytes(program.words))
    if stats or as_json:
        # Run it as the machine would (decoding up to HALT, on zeroed DRAM) so a faulty program
        # reports its error; the counters are the cycle model's.
        timeline = simulator.run(program.words, config, spans=program.spans).timeline
        if as_json:
            figures = {"instructions": len(timeline.dispatch),
                       "predicted_cycles": timeline.counters.cycles,
                       **timeline.counters.as_dict()}
            click.echo(json.dumps(figures))
        else:
            dispatched = [decode(w) for w in program.words[:len(timeline.dispatch)]]
            click.echo(format_stats(timeline, dispatched, config.array_size))


def format_stats(timeline: Timeline, instructions: list[Instruction], array_size: int) -> str:
    """The cycle model's breakdown: instruction mix, total cycles, per-unit busy and stall time."""
    c = timeline.counters
    mix = Counter(i.op.name for i in instructions)
    share = (lambda v: f"{v:>10}  {100 * v / c.cycles:5.1f} %") if c.cycles else str
    lines = [
        "instructions   " + ", ".join(f"{name} {count}" for name, count in mix.items()),
        f"cycles         {c.cycles:>10}",
        f"busy load      {share(c.busy_load)}",
        f"busy exec      {share(c.busy_exec)}   (array streaming: rows entered)",
        f"busy store     {share(c.busy_store)}",
        f"busy vector    {share(c.busy_vector)}",
        f"stall token    load {c.stall_token_load}, exec {c.stall_token_exec}, "
        f"store {c.stall_token_store}, vector {c.stall_token_vector}",
        f"stall dram     load {c.stall_dram_load}, store {c.stall_dram_store}",
        f"macs           {c.macs:>10}   ({array_size}x{array_size} array)",
    ]
    return "\n".join(lines)


@click.command()
@click.argument("image", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration: an instruction illegal on its array is a .word.")
def disasm(image: Path, config_name: str) -> None:
    """Print the assembly of a .bin or .hex IMAGE (it assembles back to the same words with
    the same --config)."""
    click.echo(disassemble(read_image(image), load_config(config_name).array_size), nl=False)


COMMANDS = [asm, disasm]
