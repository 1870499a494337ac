"""The cocotb test that runs one program on ``sim_top`` (loaded by the simulator, not imported
by glc).

No per-cycle Python: DRAM, with the program image in it, is already filled from a file (a
plusarg read by the RTL), the clock is generated in the RTL, and the test only sets the program's
base address, holds reset, then awaits ``done`` (raised by the program, by an error, or by the
RTL watchdog at ``max_cycles``) with a simulated time limit as a second guard. It then writes
the status and counters as JSON; the RTL has already dumped the pages it wrote. It also times
the run from reset to done, the model's own speed, and keeps the counters a window before the
watchdog, so that a run it stops says what each unit was doing.
Settings come from the environment: GLC_MAX_CYCLES, GLC_RESULT, GLC_PROGRAM_BASE.
"""

from __future__ import annotations

import json
import os
import time

import cocotb
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer

from glc.isa.status import Counters

PERIOD_NS = 2
RESET_CYCLES = 2
WINDOW = 256  # cycles before the watchdog whose activity a stopped run reports


def _counters(dut) -> dict[str, int]:
    return {name: int(getattr(dut, f"ctr_{name}").value) for name in Counters().as_dict()}


@cocotb.test()
async def run_to_done(dut):
    """Reset, run until done or the watchdog, record status and counters."""
    max_cycles = int(os.environ["GLC_MAX_CYCLES"])
    dut.max_cycles.value = max_cycles
    dut.program_base.value = int(os.environ["GLC_PROGRAM_BASE"])
    dut.rst.value = 1
    # sim_top generates its clock (hw/sim_top.sv, GLC_RTL_CLOCK; period PERIOD_NS)
    await ClockCycles(dut.clk, RESET_CYCLES)
    dut.rst.value = 0
    # The RTL watchdog stops the machine at max_cycles; this limit only guards the testbench
    # itself against an RTL that never raises `done`.
    # The counters WINDOW cycles before the watchdog, so that a run it stops can say what each
    # unit did last (busy, waiting for a token or for DRAM): timers, no per-cycle Python.
    window = min(WINDOW, max_cycles // 2)
    limit = Timer(PERIOD_NS * (window + 16 * RESET_CYCLES + 64), unit="ns")
    start, cpu_start = time.perf_counter(), time.process_time()
    before = None
    await First(RisingEdge(dut.done), Timer(PERIOD_NS * (max_cycles - window), unit="ns"))
    fired = None
    if not int(dut.done.value):
        before = _counters(dut)
        fired = await First(RisingEdge(dut.done), limit)
    seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
    hung = fired is limit
    result = {
        "done": int(dut.done.value),
        "timed_out": bool(int(dut.timed_out.value)) or hung,
        "rtl_hung": hung,
        "run_seconds": seconds,
        "run_cpu_seconds": cpu_seconds,
        "error": int(dut.error.value),
        "error_pc": int(dut.error_pc.value),
        "counters": _counters(dut),
        "before_watchdog": before,
    }
    with open(os.environ["GLC_RESULT"], "w") as handle:
        json.dump(result, handle)
