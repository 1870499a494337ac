"""The `glc rtl` command: run a program image on the RTL in Verilator (wired into glc/cli.py
through COMMANDS)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from glc.errors import GlcError
from glc.hwconfig import load_config
from glc.isa import simulator
from glc.isa.asm import assemble
from glc.isa.encoding import read_image
from glc.outdir import check_file_target, writing
from glc.sim.build import RUNNERS
from glc.sim.run import run_program

# docs/isa.md: the RTL's cycles are held to the cycle model within this fraction.
CYCLE_TOLERANCE = 0.05


@click.command()
@click.argument("program", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--config", "config_name", default="n16", show_default=True,
              help="Hardware configuration: a name in hw/configs/ or a .toml path.")
@click.option("--dram", "dram_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Initial DRAM: raw bytes from address 0 (the rest is zero).")
# -o is any path: a folder there is refused in one line (glc/outdir.py), not by click.
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="Write the final DRAM here (raw bytes).")
@click.option("--max-cycles", default=10_000_000, show_default=True,
              type=click.IntRange(1, (1 << 32) - 1), help="The cycle watchdog.")
@click.option("--waves", type=click.Choice(["vcd", "fst"]),
              help="Record every signal (a separate build) into the --keep directory.")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path),
              help="Leave the run's files (hex images, simulator log, waves) in this directory.")
@click.option("--check", is_flag=True,
              help="Also run the ISA simulator: DRAM must be bit-identical, cycles within 5 %.")
@click.option("--runner", type=click.Choice(RUNNERS), default="cocotb", show_default=True,
              help="What clocks the model: the cocotb testbench, or the bare C++ main (the same "
                   "machine; a faster start-up and cycle, no waves).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the figures.")
def rtl(program: Path, config_name: str, dram_path: Path | None, output: Path | None,
        max_cycles: int, waves: str | None, keep: Path | None, check: bool, runner: str,
        as_json: bool) -> None:
    """Run PROGRAM (.s assembly, .hex or .bin image) on the RTL and print its counters."""
    if waves and keep is None:
        raise GlcError("--waves needs --keep DIR to write the waves into")
    if waves and runner == "bare":
        raise GlcError("--waves needs the cocotb runner (the bare runner records no waves)")
    config = load_config(config_name)
    words = _words(program, config)
    if output is not None:  # before the run: a bad path must not cost a whole RTL run
        check_file_target(output, [program, *([dram_path] if dram_path else [])])
    dram = np.zeros(config.dram_bytes, dtype=np.uint8)
    if dram_path is not None:
        if not dram_path.is_file():
            raise GlcError("no such file", str(dram_path))
        data = np.fromfile(dram_path, dtype=np.uint8)
        if data.size > config.dram_bytes:
            raise GlcError(f"{data.size} bytes do not fit in {config.dram_bytes} bytes of DRAM",
                           str(dram_path))
        dram[:data.size] = data
    result = run_program(config, words, dram, max_cycles=max_cycles, waves=waves or "",
                         keep=keep, runner=runner)
    result.raise_for_status(str(program))
    figures = {**result.counters.as_dict(),
               "simulated_cycles_per_second": round(result.cycles / result.run_seconds)}
    if check:
        figures |= _compare(words, config, dram, result)
    if output is not None:
        with writing(output) as file:
            file.write_bytes(result.dram.tobytes())
    if as_json:
        click.echo(json.dumps(figures))
    else:
        # A verdict reads as the other commands say it (match: yes), not as Python's True.
        click.echo("\n".join(f"{name:<28}{'yes' if value is True else value}"
                              for name, value in figures.items()))


def _words(program: Path, config) -> list[int]:
    """The instruction words of an assembly file or a binary image."""
    if not program.is_file():
        raise GlcError("no such file", str(program))
    if program.suffix in (".hex", ".bin"):
        return read_image(program)
    try:
        text = program.read_text()
    except UnicodeDecodeError as error:
        raise GlcError(f"not a text file: {error.reason}", str(program)) from None
    return assemble(text, config, str(program)).words


def _compare(words, config, dram, result) -> dict:
    """Hold the RTL to the ISA simulator: identical DRAM, cycles within CYCLE_TOLERANCE."""
    model = simulator.run(words, config, dram)
    differ = np.flatnonzero(model.dram != result.dram)
    if differ.size:
        raise GlcError(f"the RTL and the ISA simulator disagree on {differ.size} DRAM bytes, "
                       f"the first at address {int(differ[0])}")
    predicted = model.counters.cycles
    if abs(result.cycles - predicted) > CYCLE_TOLERANCE * predicted:
        raise GlcError(f"the RTL took {result.cycles} cycles, the cycle model predicts "
                       f"{predicted} (more than {CYCLE_TOLERANCE:.0%} apart)")
    return {"predicted_cycles": predicted, "match": True}


COMMANDS = [rtl]
