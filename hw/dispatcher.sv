// The dispatcher (docs/isa.md, "Execution" and "Timing"): fetches one instruction per cycle in
// order, decodes it, and appends it to its unit's queue when that queue has room; HALT stops it.
// An illegal instruction, or a fetch past the end of instruction memory, is an error at dispatch.
module dispatcher import isa_pkg::*; #(
    // N: the array size (bounds a transfer's runs per row)
    parameter int ARRAY_SIZE = 16,
    // instruction memory words (the configuration's imem_words)
    parameter int IMEM_WORDS = 4096
) (
    input  logic              clk,
    input  logic              rst,
    input  logic              stop,
    output logic [31:0]       fetch_pc,
    input  logic [WORD_W-1:0] fetch_word,
    input  logic [2:0]        queue_full,     // by unit: UNIT_LOAD, UNIT_EXEC, UNIT_STORE
    output logic [2:0]        queue_push,
    output logic              halted,         // HALT has been dispatched
    output logic              blocked,        // cannot dispatch this cycle (deadlock rule (d))
    output logic              error,
    output logic [ERR_W-1:0]  error_code,
    output logic [31:0]       error_pc
);
    logic [31:0] pc_q;
    logic        halted_q;
    logic        is_halt, in_range, room, dispatch;
    logic [1:0]  unit;
    logic [ERR_W-1:0] decode_error;

    decoder #(.ARRAY_SIZE(ARRAY_SIZE)) u_decoder (
        .word   (fetch_word),
        .is_halt(is_halt),
        .unit   (unit),
        .error  (decode_error)
    );

    assign fetch_pc = pc_q;
    assign in_range = pc_q < IMEM_WORDS;
    assign room     = is_halt || !queue_full[unit];
    assign dispatch = !stop && !halted_q && in_range && decode_error == ERR_OK && room;
    for (genvar u = 0; u < 3; u++) begin : g_push
        assign queue_push[u] = dispatch && !is_halt && unit == 2'(u);
    end
    assign halted  = halted_q;
    assign blocked = halted_q || (in_range && decode_error == ERR_OK && !room);

    assign error      = !stop && !halted_q && (!in_range || decode_error != ERR_OK);
    assign error_code = !in_range ? ERR_IMEM_RANGE : decode_error;
    assign error_pc   = !in_range ? 32'(IMEM_WORDS) : pc_q;

    always_ff @(posedge clk) begin
        if (rst) begin
            pc_q     <= '0;
            halted_q <= 1'b0;
        end else if (dispatch) begin
            pc_q <= pc_q + 1'b1;
            if (is_halt) halted_q <= 1'b1;
        end
    end
endmodule
