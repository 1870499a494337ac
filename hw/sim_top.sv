// The simulation top: the accelerator with its DRAM model, built for one hardware configuration
// (hw/configs/*.toml; each key is the parameter of the same name in UPPER_SNAKE case). Only these
// ports are visible to the testbench (Verilator --public-depth 1): DRAM, the program image
// included, is filled before the first cycle from the sparse hex file named by +dram_in=PATH
// (`@address` lines, one byte per line), the machine starts at `program_base` (ISA v2 A2; stable
// from reset), the pages it wrote are dumped to +dram_out=PATH just before `done` rises, and a
// cycle watchdog (`max_cycles`, 0 = none) stops a program that never finishes and raises
// `timed_out`.
// Under cocotb the clock is generated here and `clk` is an output (GLC_RTL_CLOCK); the bare runner
// (glc/sim/bare_main.cpp) drives it as an input. This shell holds nothing but the ports: every signal declared here is public, and Verilator
// re-evaluates all logic fed by a public signal on every eval (the VPI may have written it), so
// the system lives one level down where its nets stay private.
module sim_top #(
    // N: the array is N×N
    parameter int ARRAY_SIZE = 16,
    // rows of the scratchpad
    parameter int SCRATCHPAD_ROWS = 16384,
    // rows of the accumulator memory
    parameter int ACCUMULATOR_ROWS = 4096,
    // bytes of DRAM (64-bit: up to 2^32; a -G override arrives as a 32-bit constant)
    /* verilator lint_off WIDTHEXPAND */
    parameter longint DRAM_BYTES = 64'd67108864,
    /* verilator lint_on WIDTHEXPAND */
    // P: bytes the DRAM port moves per cycle
    parameter int DRAM_PORT_BYTES = 16,
    // words the instruction prefetch buffer holds
    parameter int FETCH_BUFFER_WORDS = 32,
    // bytes the instruction-fetch port reads per cycle
    parameter int FETCH_PORT_BYTES = 64,
    // entries in each unit's instruction queue
    parameter int QUEUE_DEPTH = 8,
    // L: lanes the vector unit computes a cycle (a source row takes N / L cycles)
    parameter int VECTOR_LANES = 16,
    // 1: the vector unit takes turns with STORE and LOAD on their accumulator ports
    parameter int VECTOR_SHARES_PORTS = 0,
    // 1: MATMUL's `split` (two array halves, accumulator banks of even and odd rows)
    parameter int COLUMN_SPLIT = 1
) (
`ifdef GLC_RTL_CLOCK
    output logic        clk,
`else
    input  logic        clk,
`endif
    input  logic        rst,
    input  logic [31:0] max_cycles,
    input  logic [31:0] program_base,
    output logic        done,
    output logic        timed_out,
    output logic [3:0]  error,
    output logic [31:0] error_pc,
    output logic [31:0] ctr_cycles,
    output logic [31:0] ctr_busy_load,
    output logic [31:0] ctr_busy_exec,
    output logic [31:0] ctr_busy_store,
    output logic [31:0] ctr_busy_vector,
    output logic [31:0] ctr_stall_token_load,
    output logic [31:0] ctr_stall_token_exec,
    output logic [31:0] ctr_stall_token_store,
    output logic [31:0] ctr_stall_token_vector,
    output logic [31:0] ctr_stall_dram_load,
    output logic [31:0] ctr_stall_dram_store,
    output logic [31:0] ctr_macs
);
    // The counters, a port each (glc/sim/harness.py and bare_main.cpp read them by name).
    isa_pkg::counters_t ctr;
    assign ctr_cycles = ctr.counts.cycles;
    assign ctr_busy_load = ctr.counts.busy_load;
    assign ctr_busy_exec = ctr.counts.busy_exec;
    assign ctr_busy_store = ctr.counts.busy_store;
    assign ctr_busy_vector = ctr.counts.busy_vector;
    assign ctr_stall_token_load = ctr.counts.stall_token_load;
    assign ctr_stall_token_exec = ctr.counts.stall_token_exec;
    assign ctr_stall_token_store = ctr.counts.stall_token_store;
    assign ctr_stall_token_vector = ctr.counts.stall_token_vector;
    assign ctr_stall_dram_load = ctr.counts.stall_dram_load;
    assign ctr_stall_dram_store = ctr.counts.stall_dram_store;
    assign ctr_macs = ctr.macs;
`ifdef GLC_RTL_CLOCK
    // The cocotb build's clock (glc/sim/build.py defines GLC_RTL_CLOCK and adds --timing): a
    // clock driven by cocotb costs a VPI timer callback and a vpi_put_value every half period,
    // about half of its per-cycle overhead (docs/benchmarks.md, "simspeed"); generated here it
    // costs Verilator's own timing wheel. Period 2 ns, as glc/sim/harness.py's PERIOD_NS.
    initial clk = 1'b1;
    always #1ns clk = ~clk;
`endif
    sim_system #(
        .ARRAY_SIZE(ARRAY_SIZE),
        .SCRATCHPAD_ROWS(SCRATCHPAD_ROWS),
        .ACCUMULATOR_ROWS(ACCUMULATOR_ROWS),
        .DRAM_BYTES(DRAM_BYTES),
        .DRAM_PORT_BYTES(DRAM_PORT_BYTES),
        .FETCH_BUFFER_WORDS(FETCH_BUFFER_WORDS),
        .FETCH_PORT_BYTES(FETCH_PORT_BYTES),
        .QUEUE_DEPTH(QUEUE_DEPTH),
        .VECTOR_LANES(VECTOR_LANES), .VECTOR_SHARES_PORTS(VECTOR_SHARES_PORTS),
        .COLUMN_SPLIT(COLUMN_SPLIT)
    ) u_system (
        .clk,
        .rst,
        .max_cycles,
        .program_base,
        .done,
        .timed_out,
        .error,
        .error_pc,
        .ctr
    );
endmodule
