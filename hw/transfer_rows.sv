// The end (one past the last) of the local rows whose range an instruction's issue checks
// (docs/isa.md, "Range checks"). LOAD/STORE ("the transfer pattern"): `row` plus the local rows,
// one per iteration of the levels at and above `inner` (the product of their counts), rounded up
// to whole blocks of N rows for a transposing LOAD (it writes whole blocks). VECTOR: its last
// source row src + (count-1)·ostride + (group-1)·gstride, plus one. Computed when the word enters
// its unit's queue from the two factors row_factors computed when it arrived, so the check at
// issue compares a queued value with the memory's size instead of multiplying. Saturates at
// ROWS_MAX: an end that large fits no memory (at most 65536 rows), so the check's answer is
// unchanged; 17-bit factors take one 18x18 DSP multiplier.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module transfer_rows #(
    // N: the array size (a transposing LOAD's block of rows)
    parameter int N = 16
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic [WORD_W-1:0]  word,
    /* verilator lint_on UNUSEDSIGNAL */
    input  logic [ROWS_W-1:0]  low,       // row_factors of `word`
    input  logic [ROWS_W-1:0]  high,
    output logic [ROWS_W-1:0]  row_end    // min(end, ROWS_MAX)
);
    localparam logic [ROWS_W-1:0] ROWS_MAX = '1;

    function automatic logic [ROWS_W-1:0] saturate(input logic [63:0] x);
        saturate = x > 64'(ROWS_MAX) ? ROWS_MAX : ROWS_W'(x);
    endfunction

    always_comb begin
        logic [ROWS_W-1:0] rows;
        rows = saturate(64'(low) * 64'(high));
        if (word[OPCODE_W-1:0] == OP_LOAD && word[LOAD_TRANSPOSE_LSB]) begin
            // A power-of-two N (every shipped configuration) rounds by masking, not dividing.
            if ((N & (N - 1)) == 0) rows = saturate((64'(rows) + 64'(N - 1)) & ~64'(N - 1));
            else rows = saturate((64'(rows) + 64'(N - 1)) / 64'(N) * 64'(N));
        end
        row_end = saturate(64'(word[XFER_ROW_LSB +: XFER_ROW_W]) + 64'(rows));
        if (word[OPCODE_W-1:0] == OP_VECTOR) begin
            row_end = saturate(64'(word[VECTOR_SRC_LSB +: VECTOR_SRC_W])
                               + 64'(low) + 64'(high) + 64'd1);
        end
    end
endmodule
