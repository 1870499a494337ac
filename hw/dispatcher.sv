// The dispatcher (docs/isa.md, "Execution" and "Timing"; ISA v2 A2): takes the words the fetch
// unit delivers, one per cycle in order, and appends each to its unit's queue when that queue has
// room; HALT stops it. Each word comes decoded (the decoder ran as it arrived in the prefetch
// buffer: accelerator.sv). Word p dispatches at
//   d_p = max(d_{p-1} + 1, a_p, first cycle its queue has room)
// (a_p: the word has arrived in the prefetch buffer). An illegal word is an error in the cycle it
// could dispatch; reaching a word outside DRAM is FETCH_RANGE in the cycle after the previous
// dispatch.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module dispatcher (
    input  logic              clk,
    input  logic              rst,
    input  logic              stop,
    // from the fetch unit: the next word's decode (glc/isa/encoding.py's illegal_reason)
    input  logic              word_valid,
    input  logic              is_halt,
    input  logic [1:0]        unit,           // UNIT_LOAD / UNIT_EXEC / UNIT_STORE / UNIT_VECTOR
    input  logic [ERR_W-1:0]  decode_error,   // ERR_OK when legal
    input  logic [31:0]       pc,
    input  logic              pc_outside,
    output logic              dispatch,
    input  logic [UNITS-1:0]  queue_full,     // by unit: UNIT_LOAD, UNIT_EXEC, ...
    output logic [UNITS-1:0]  queue_push,
    output logic              halted,         // HALT has been dispatched
    output logic              blocked,        // cannot dispatch this cycle (deadlock rule (d))
    output isa_pkg::unit_error_t error
);
    logic        halted_q;
    logic        room, legal;

    assign legal    = word_valid && decode_error == ERR_OK;
    assign room     = is_halt || !queue_full[unit];
    assign dispatch = !stop && !halted_q && legal && room;
    for (genvar u = 0; u < UNITS; u++) begin : g_push
        assign queue_push[u] = dispatch && !is_halt && unit == 2'(u);
    end
    assign halted  = halted_q;
    // Deadlock rule (d): HALT was dispatched, or the next word has arrived and its queue is
    // full. A word still on its way is progress, not a block.
    assign blocked = halted_q || (legal && !room);

    assign error.valid = !stop && !halted_q && (pc_outside || (word_valid && !legal));
    assign error.code  = pc_outside ? ERR_FETCH_RANGE : decode_error;
    assign error.pc    = pc;

    always_ff @(posedge clk) begin
        if (rst) halted_q <= 1'b0;
        else if (dispatch && is_halt) halted_q <= 1'b1;
    end
endmodule
