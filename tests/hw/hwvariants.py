"""Hardware configurations the RTL tests build beside hw/configs/, each defined once so the tests
that use it share one Verilator build (builds are cached by configuration name)."""

import dataclasses

from glc.hwconfig import load_config

# n4 with a two-lane vector unit: each source row in two passes, lin in blocks of two outputs,
# its two accumulator reads on one port (hw/vector_unit.sv).
N4_LANES2 = dataclasses.replace(load_config("n4"), vector_lanes=2, name="n4-lanes2")
# The FPGA configurations' vector unit at n4's size: two lanes, taking turns with STORE and
# with LOADs to ACC on their accumulator ports (docs/isa.md, "Accumulator ports"), and like
# them an array that does not split (one accumulator bank).
N4_SHARED = dataclasses.replace(load_config("n4"), vector_lanes=2, vector_shares_ports=1,
                                column_split=0, name="n4-shared")

