// The local rows of a LOAD/STORE transfer pattern (docs/isa.md, "the transfer pattern"): one per
// iteration of the levels at and above `inner`, the product of their counts. Computed when the
// word enters its unit's queue, so the range check at issue is a comparison, not a chain of
// multipliers. The product saturates at ROWS_MAX: a transfer of that many rows fits no memory
// (rows are 16-bit, a memory holds at most 65536 of them), so the check's answer is unchanged.
// Two multiplier levels: the pairs of levels, then the pairs' product, each saturated to 17 bits
// so one 18x18 DSP multiplier takes it.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module transfer_rows #(
    // width of `rows`; at 17 bits ROWS_MAX = 131071 exceeds every row + rows that could fit
    parameter int ROWS_W = 17
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic [WORD_W-1:0]      word,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic [ROWS_W-1:0]  rows      // min(local rows, ROWS_MAX)
);
    localparam int LEVELS = 4;
    if (ROWS_W < 17) begin : g_bad_width
        // ROWS_MAX must exceed the largest row + rows that fits a memory (65536).
        $fatal(1, "transfer_rows: ROWS_W=%0d must be at least 17", ROWS_W);
    end
    localparam logic [ROWS_W-1:0] ROWS_MAX = '1;

    function automatic logic [ROWS_W-1:0] saturate(input logic [63:0] x);
        saturate = x > 64'(ROWS_MAX) ? ROWS_MAX : ROWS_W'(x);
    endfunction

    always_comb begin
        logic [XFER_INNER_W-1:0] inner;
        logic [XFER_COUNT0_W-1:0] count [LEVELS];
        logic [ROWS_W-1:0] low, high;
        inner = word[XFER_INNER_LSB +: XFER_INNER_W];
        // The levels below `inner` lay runs side by side in one row: they count as 1.
        for (int k = 0; k < LEVELS; k++) begin
            count[k] = k >= 32'(inner) ? word[XFER_COUNT0_LSB + k * XFER_LEVEL_BITS +: XFER_COUNT0_W]
                                       : XFER_COUNT0_W'(1);
        end
        low  = saturate(64'(count[0]) * 64'(count[1]));
        high = saturate(64'(count[2]) * 64'(count[3]));
        rows = saturate(64'(low) * 64'(high));
    end
endmodule
