"""The `glc synth` command: synthesize the accelerator with Yosys and, for the ECP5, place and
route it with nextpnr (wired into glc/cli.py through COMMANDS)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from glc.hwconfig import load_config
from glc.synth.flow import (
    PLACERS,
    PNR_MINUTES,
    ROUTERS,
    TARGET_MHZ,
    TARGETS,
    format_report,
    synthesize,
)


@click.command()
@click.option("--config", "config_name", default="ecp5n8", show_default=True,
              help="Hardware configuration: a name in hw/configs/ or a .toml path.")
@click.option("--target", type=click.Choice(TARGETS), default="ecp5-85f", show_default=True,
              help="ecp5-85f: Yosys's synth_ecp5 and nextpnr on an LFE5U-85F; generic: "
                   "Yosys's technology-independent synth (its gates, flip-flops and latches; no "
                   "device, no place-and-route).")
@click.option("--out", "outdir", type=click.Path(file_okay=False, path_type=Path),
              help="Where the logs, netlist and reports go (default build/synth/CONFIG-TARGET).")
@click.option("--seed", "seeds", type=int, multiple=True, default=(1,), show_default=True,
              help="nextpnr's placement seed; repeated, one run per seed (as many at a time as "
                   "there are cores) and the best Fmax reported, with each seed's.")
@click.option("--placer", type=click.Choice(PLACERS),
              help="nextpnr's placer: heap or static (default: the configuration's, as "
                   "measured: static for the FPGA-sized arrays, heap otherwise).")
@click.option("--router", type=click.Choice(ROUTERS),
              help="nextpnr's router: router1 or router2 (default: the configuration's, "
                   "router1 as measured).")
@click.option("--pnr-minutes", default=PNR_MINUTES, show_default=True, type=click.FloatRange(0,
              min_open=True), help="Stop nextpnr after this many minutes and say how far it got "
                                   "(router2 never gives up on a design it cannot route).")
@click.option("--freq", "freq_mhz", default=TARGET_MHZ, show_default=True,
              type=click.FloatRange(0, min_open=True),
              help="The clock (MHz) nextpnr places and routes for; Fmax is reported either way.")
@click.option("--fast", is_flag=True,
              help="Stop after Yosys: no place-and-route, the deepest paths in logic levels "
                   "instead (minutes where place-and-route takes an hour).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object with the figures.")
def synth(config_name: str, target: str, outdir: Path | None, seeds: tuple[int, ...],
          placer: str | None,
          router: str | None, pnr_minutes: float, freq_mhz: float, fast: bool,
          as_json: bool) -> None:
    """Synthesize the accelerator core for CONFIG; print LUTs, flip-flops, DSPs and block RAMs
    against the LFE5U-85F's totals, the Fmax nextpnr reports and the five worst paths (start →
    end, logic and routing ns). On a terminal each stage is shown on stderr as it starts."""
    config = load_config(config_name)
    workdir = outdir or Path("build") / "synth" / f"{config.name}-{target}"
    report = synthesize(config, target, workdir, pnr=not fast, seeds=seeds, placer=placer,
                        router=router, pnr_minutes=pnr_minutes, freq_mhz=freq_mhz,
                        progress=_progress() if sys.stderr.isatty() else None)
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        click.echo(format_report(report))


def _progress():
    """A progress line on stderr, stamped with the minutes and seconds since the start."""
    started = time.monotonic()

    def tell(line: str) -> None:
        minutes, seconds = divmod(int(time.monotonic() - started), 60)
        click.echo(f"[{minutes:3d}:{seconds:02d}] {line}", err=True)
    return tell


COMMANDS = [synth]
