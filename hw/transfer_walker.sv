// Address generation of the LOAD/STORE transfer pattern (docs/isa.md, "the transfer pattern"):
// four nested loops of runs (level 3 outermost), each run `run` elements split into
// ceil(run·element_bytes / P) DRAM beats, one beat per cycle. For the current beat it gives the
// DRAM address, which of the run's elements are inside the virtual-coordinate bounds (padding /
// cropping), the local row and column the run belongs to, and where the beat falls in its row.
// Bounds (ISA v2 A1, `xrun`): without xrun a run is in or out as a whole; with it the y test
// applies to the run and the x test to each element j at x + j, so the in-bounds elements are
// always one contiguous range [elem_lo, elem_hi) of the run.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module transfer_walker #(
    // P: bytes the DRAM port moves per beat
    parameter int PORT_BYTES = 16,
    // bytes of DRAM, for DRAM_RANGE
    parameter longint DRAM_BYTES = 64'd1048576
) (
    input  logic              clk,
    input  logic              rst,
    // `start` latches the instruction; beats run from the next cycle on, one per cycle
    input  logic              start,
    input  logic [WORD_W-1:0] word,
    input  logic              wide,          // 4-byte elements (LOAD to ACC, STORE raw)
    // for the range check at issue: the local rows of the instruction at `word`
    output logic [63:0]       local_rows,
    output logic              active,        // a beat happens this cycle
    output logic [31:0]       beat_addr,     // DRAM address of this beat's first byte
    output logic [9:0]        run_bytes,     // bytes in the run
    output logic [9:0]        beat_offset,   // byte offset of this beat within its run
    output logic [7:0]        elem_lo,       // the run's in-bounds elements: [elem_lo, elem_hi)
    output logic [7:0]        elem_hi,
    // an in-bounds element of this run lies (partly) outside DRAM (checked at its first beat)
    output logic              dram_error,
    output logic [15:0]       row_index,     // local row, relative to `row` (fits: checked)
    output logic [15:0]       column,        // first column (element) of the run in its row
    output logic              row_first,     // first beat of a local row
    output logic              row_last,      // last beat of a local row
    output logic              last           // last beat of the transfer
);
    localparam int LEVELS = 4;
    localparam int CW = XFER_COUNT0_W;

    logic [CW-1:0]        count_q  [LEVELS];
    logic signed [31:0]   stride_q [LEVELS];
    logic [XFER_YCOEF0_W-1:0] ycoef_q [LEVELS];
    logic [XFER_XCOEF0_W-1:0] xcoef_q [LEVELS];
    logic [CW-1:0]        idx_q    [LEVELS];
    logic [31:0]          dram_q;
    logic signed [31:0]   y0_q, x0_q;
    logic [XFER_YLIM_W-1:0] ylim_q;
    logic [XFER_XLIM_W-1:0] xlim_q;
    logic [7:0]           run_q;
    logic [2:0]           inner_q;
    logic                 xrun_q, wide_q;
    logic [9:0]           bytes_q;
    logic [9:0]           beats_q;   // beats per run
    logic [9:0]           beat_q;

    always_ff @(posedge clk) begin
        if (rst) begin
            active <= 1'b0;
        end else if (start) begin
            logic [9:0] nbytes;
            nbytes = 10'(word[XFER_RUN_LSB +: XFER_RUN_W]) << (wide ? 2 : 0);
            for (int k = 0; k < LEVELS; k++) begin
                count_q[k]  <= word[XFER_COUNT0_LSB + k * XFER_LEVEL_BITS +: CW];
                stride_q[k] <= 32'(signed'(
                    word[XFER_STRIDE0_LSB + k * XFER_LEVEL_BITS +: XFER_STRIDE0_W]));
                ycoef_q[k]  <= word[XFER_YCOEF0_LSB + k * XFER_LEVEL_BITS +: XFER_YCOEF0_W];
                xcoef_q[k]  <= word[XFER_XCOEF0_LSB + k * XFER_LEVEL_BITS +: XFER_XCOEF0_W];
                idx_q[k]    <= '0;
            end
            dram_q  <= word[XFER_DRAM_LSB +: XFER_DRAM_W];
            y0_q    <= 32'(signed'(word[XFER_Y0_LSB +: XFER_Y0_W]));
            x0_q    <= 32'(signed'(word[XFER_X0_LSB +: XFER_X0_W]));
            ylim_q  <= word[XFER_YLIM_LSB +: XFER_YLIM_W];
            xlim_q  <= word[XFER_XLIM_LSB +: XFER_XLIM_W];
            run_q   <= word[XFER_RUN_LSB +: XFER_RUN_W];
            inner_q <= word[XFER_INNER_LSB +: XFER_INNER_W];
            xrun_q  <= word[XFER_XRUN_LSB];
            wide_q  <= wide;
            bytes_q <= nbytes;
            beats_q <= 10'((32'(nbytes) + PORT_BYTES - 1) / PORT_BYTES);
            beat_q  <= '0;
            active  <= 1'b1;
        end else if (active) begin
            if (beat_q != beats_q - 1'b1) begin
                beat_q <= beat_q + 1'b1;
            end else begin
                // Next run: level 0 counts fastest, carrying into the outer levels.
                logic carry;
                beat_q <= '0;
                carry = 1'b1;
                for (int k = 0; k < LEVELS; k++) begin
                    if (carry) begin
                        if (idx_q[k] == count_q[k] - 1'b1) idx_q[k] <= '0;
                        else begin
                            idx_q[k] <= idx_q[k] + 1'b1;
                            carry = 1'b0;
                        end
                    end
                end
                if (last) active <= 1'b0;
            end
        end
    end

    // The local rows of the instruction at `word`: one per iteration of the outer levels.
    always_comb begin
        logic [XFER_INNER_W-1:0] inner;
        inner = word[XFER_INNER_LSB +: XFER_INNER_W];
        local_rows = 64'd1;
        for (int k = 0; k < LEVELS; k++) begin
            if (k >= 32'(inner)) begin
                local_rows = local_rows * 64'(word[XFER_COUNT0_LSB + k * XFER_LEVEL_BITS +: CW]);
            end
        end
    end

    // Everything about the current run follows from the loop indices.
    always_comb begin
        logic [31:0] addr;
        logic signed [31:0] y, x, lo, hi;
        logic y_in, x_in;
        logic [63:0] in_idx, in_scale, out_idx, out_scale;
        logic inner_first, inner_last, all_last;
        addr = 32'(dram_q);
        y = y0_q;
        x = x0_q;
        in_idx = '0;
        in_scale = 64'd1;
        out_idx = '0;
        out_scale = 64'd1;
        inner_first = 1'b1;
        inner_last = 1'b1;
        all_last = 1'b1;
        // Skipped while idle: the simulator then spends no time on an idle unit's addresses.
        if (active) for (int k = 0; k < LEVELS; k++) begin
            addr = addr + 32'(idx_q[k]) * stride_q[k];
            y = y + signed'(32'(idx_q[k]) * 32'(ycoef_q[k]));
            x = x + signed'(32'(idx_q[k]) * 32'(xcoef_q[k]));
            if (idx_q[k] != count_q[k] - 1'b1) all_last = 1'b0;
            // Levels below `inner` lay runs side by side in one row; the rest step the row.
            if (k < 32'(inner_q)) begin
                in_idx = in_idx + 64'(idx_q[k]) * in_scale;
                in_scale = in_scale * 64'(count_q[k]);
                if (idx_q[k] != '0) inner_first = 1'b0;
                if (idx_q[k] != count_q[k] - 1'b1) inner_last = 1'b0;
            end else begin
                out_idx = out_idx + 64'(idx_q[k]) * out_scale;
                out_scale = out_scale * 64'(count_q[k]);
            end
        end
        beat_offset = 10'(32'(beat_q) * PORT_BYTES);
        beat_addr   = addr + 32'(beat_offset);
        run_bytes   = bytes_q;
        y_in = ylim_q == '0 || (y >= 0 && y < signed'(32'(ylim_q)));
        x_in = xlim_q == '0 || (x >= 0 && x < signed'(32'(xlim_q)));
        // Element j is inside when 0 <= x + j < xlim: j in [-x, xlim - x), clipped to the run.
        lo = xrun_q && xlim_q != '0 && x < 0 ? -x : 0;
        hi = xrun_q && xlim_q != '0 ? signed'(32'(xlim_q)) - x : signed'(32'(run_q));
        if (hi > signed'(32'(run_q))) hi = signed'(32'(run_q));
        if (!y_in || (!xrun_q && !x_in) || lo >= hi) begin
            lo = 0;
            hi = 0;
        end
        elem_lo     = 8'(lo);
        elem_hi     = 8'(hi);
        // Only in-bounds elements touch DRAM: the end of the last one must lie inside it
        // (no wrap-around past 2^32).
        dram_error  = active && beat_q == '0 && hi != 0
                   && 64'(addr) + (64'(hi) << (wide_q ? 2 : 0)) > 64'(DRAM_BYTES);
        row_index   = 16'(out_idx);
        column      = 16'(in_idx * 64'(run_q));
        row_first   = inner_first && beat_q == '0;
        row_last    = inner_last && beat_q == beats_q - 1'b1;
        last        = all_last && beat_q == beats_q - 1'b1;
    end
endmodule
