// The simulated system behind sim_top: the accelerator, the DRAM model (data and fetch ports),
// the cycle watchdog and the unit trace recorder (see sim_top for the testbench interface).
module sim_system #(
    // N: the array is N×N
    parameter int ARRAY_SIZE = 16,
    // rows of the scratchpad
    parameter int SCRATCHPAD_ROWS = 16384,
    // rows of the accumulator memory
    parameter int ACCUMULATOR_ROWS = 4096,
    // bytes of DRAM
    parameter longint DRAM_BYTES = 64'd67108864,
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
    input  logic        clk,
    input  logic        rst,
    input  logic [31:0] max_cycles,
    input  logic [31:0] program_base,
    output logic        done,
    output logic        timed_out,
    output logic [3:0]  error,
    output logic [31:0] error_pc,
    output isa_pkg::counters_t ctr
);
    localparam int P = DRAM_PORT_BYTES;

    logic [31:0]        fetch_addr, dram_addr;
    logic [FETCH_PORT_BYTES-1:0][7:0] fetch_rdata;
    logic [P-1:0][7:0]  dram_rdata, dram_wdata;
    logic [P-1:0]       dram_wstrb;
    logic               core_done, timed_out_q, done_q;
    logic [31:0]        elapsed_q;

    accelerator #(
        .ARRAY_SIZE(ARRAY_SIZE), .SCRATCHPAD_ROWS(SCRATCHPAD_ROWS),
        .ACCUMULATOR_ROWS(ACCUMULATOR_ROWS), .DRAM_BYTES(DRAM_BYTES),
        .DRAM_PORT_BYTES(DRAM_PORT_BYTES), .FETCH_BUFFER_WORDS(FETCH_BUFFER_WORDS),
        .FETCH_PORT_BYTES(FETCH_PORT_BYTES), .QUEUE_DEPTH(QUEUE_DEPTH),
        .VECTOR_LANES(VECTOR_LANES), .VECTOR_SHARES_PORTS(VECTOR_SHARES_PORTS),
        .COLUMN_SPLIT(COLUMN_SPLIT)
    ) u_core (
        .clk, .rst, .watchdog(timed_out_q), .program_base, .fetch_addr, .fetch_rdata,
        .dram_addr, .dram_rdata, .dram_wstrb, .dram_wdata,
        .done(core_done), .error, .error_pc, .ctr
    );

    dram_model #(.BYTES(DRAM_BYTES), .PORT_BYTES(P), .FETCH_BYTES(FETCH_PORT_BYTES)) u_dram (
        .clk, .addr(dram_addr), .rdata(dram_rdata), .wstrb(dram_wstrb), .wdata(dram_wdata),
        .fetch_addr, .fetch_rdata,
        .dump(core_done && !done_q)
    );

    // Per-unit activity for `glc run --trace` (+trace=PATH), read from inside the core: these
    // are the signals its counters count, so the recorder needs no port of the chip.
    unit_trace u_trace (
        .clk, .rst,
        .count(u_core.u_counters.count), .cycle(ctr.counts.cycles),
        .issue(u_core.queue_pop),
        .head_pc({u_core.vu_head.pc, u_core.st_head.pc, u_core.ex_head.pc, u_core.ld_head.pc}),
        .activity({u_core.vu_activity, u_core.st_activity, u_core.ex_activity,
                   u_core.ld_activity}),
        .dispatch(u_core.dispatch), .dispatch_pc(u_core.pc),
        .fetch_start(u_core.u_fetch.start), .fetch_pc(u_core.u_fetch.next_q),
        .fetch_reading(u_core.u_fetch.reading)
    );

    always_ff @(posedge clk) begin
        if (rst) begin
            elapsed_q   <= '0;
            timed_out_q <= 1'b0;
            done_q      <= 1'b0;
        end else begin
            elapsed_q   <= elapsed_q + 1'b1;
            if (max_cycles != '0 && elapsed_q + 1'b1 >= max_cycles && !core_done) begin
                timed_out_q <= 1'b1;
            end
            done_q      <= core_done;
        end
    end
    // `done` follows the dump by a cycle, so DRAM is on disk when the testbench sees it.
    assign done      = done_q;
    assign timed_out = timed_out_q;
endmodule
