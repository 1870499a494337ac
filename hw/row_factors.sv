// The first half of transfer_rows, computed as a word arrives in the fetch unit's prefetch
// buffer (a word is dispatched one cycle after it arrives at the earliest), so that no cycle holds
// two multiplier levels: the two saturated products transfer_rows multiplies or adds.
//   LOAD/STORE: the counts of levels 0·1 and 2·3 (a level below `inner` counts as 1);
//   VECTOR:     (count-1)·ostride and (group-1)·gstride.
// Each saturates at 2^ROWS_W - 1, which exceeds any row range that fits a memory.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module row_factors (
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic [WORD_W-1:0]   word,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic [ROWS_W-1:0]   low,
    output logic [ROWS_W-1:0]   high
);
    localparam int LEVELS = 4;
    localparam logic [ROWS_W-1:0] ROWS_MAX = '1;

    // min(a·b, ROWS_MAX), a 16x16-bit product (one DSP multiplier).
    function automatic logic [ROWS_W-1:0] times(input logic [15:0] a, input logic [15:0] b);
        logic [31:0] product;
        product = a * b;
        times = product > 32'(ROWS_MAX) ? ROWS_MAX : ROWS_W'(product);
    endfunction

    always_comb begin
        logic [XFER_INNER_W-1:0] inner;
        logic [XFER_COUNT0_W-1:0] count [LEVELS];
        inner = word[XFER_INNER_LSB +: XFER_INNER_W];
        for (int k = 0; k < LEVELS; k++) begin
            count[k] = k >= 32'(inner)
                ? word[XFER_COUNT0_LSB + k * XFER_LEVEL_BITS +: XFER_COUNT0_W]
                : XFER_COUNT0_W'(1);
        end
        if (word[OPCODE_W-1:0] == OP_VECTOR) begin
            low  = times(word[VECTOR_COUNT_LSB +: VECTOR_COUNT_W] - 1'b1,
                         word[VECTOR_OSTRIDE_LSB +: VECTOR_OSTRIDE_W]);
            high = times(word[VECTOR_GROUP_LSB +: VECTOR_GROUP_W] - 1'b1,
                         word[VECTOR_GSTRIDE_LSB +: VECTOR_GSTRIDE_W]);
        end else begin
            low  = times(count[0], count[1]);
            high = times(count[2], count[3]);
        end
    end
endmodule
