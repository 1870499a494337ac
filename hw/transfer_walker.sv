// Address generation of the LOAD/STORE transfer pattern (docs/isa.md, "the transfer pattern"):
// four nested loops of runs (level 3 outermost), each run `run` elements split into
// ceil(run·element_bytes / P) DRAM beats, one beat per cycle. For the current beat it gives the
// DRAM address, which of the run's elements are inside the virtual-coordinate bounds (padding /
// cropping), the local row and column the run belongs to, and where the beat falls in its row.
// Bounds (ISA v2 A1, `xrun`): without xrun a run is in or out as a whole; with it the y test
// applies to the run and the x test to each element j at x + j, so the in-bounds elements are
// always one contiguous range [elem_lo, elem_hi) of the run. A LOAD's `step` (ISA 2.4) spaces a
// run's bytes 2^step apart: its span is run·2^step bytes and element j sits at x + j·2^step.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module transfer_walker #(
    // P: bytes the DRAM port moves per beat
    parameter int PORT_BYTES = 16,
    // bytes of DRAM, for DRAM_RANGE
    parameter longint DRAM_BYTES = 64'd1048576,
    // 1: the LOAD unit's walker, which reads `step` (strided runs); 0: the STORE unit's, whose
    // runs are contiguous (its word has no `step`), so none of that logic is built
    parameter bit STRIDED = 1'b1
) (
    input  logic              clk,
    input  logic              rst,
    // `start` latches the instruction; beats run from the next cycle on, one per cycle
    input  logic              start,
    input  logic [WORD_W-1:0] word,
    input  logic              wide,          // 4-byte elements (LOAD to ACC, STORE raw)
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

    // Strength reduction: no multiplier per beat. Level k keeps the DRAM address, y and x of the
    // first run of its current iteration (base_*[k]: the indices below k at 0); level 0's is the
    // current run's. A step of level k (the levels below it wrapping) adds its stride and
    // coefficients to base_*[k] and restarts the levels below from the sum; the last step
    // restores the start values, so an idle walker shows the transfer's first run, as before.
    // The outputs are registers (computed for the next run as the current one ends), so paths
    // into the LOAD and STORE datapaths start at a flip-flop.
    logic [CW-1:0]        last_idx_q [LEVELS];  // count - 1
    logic signed [31:0]   stride_q [LEVELS];
    logic [XFER_YCOEF0_W-1:0] ycoef_q [LEVELS];
    logic [XFER_XCOEF0_W-1:0] xcoef_q [LEVELS];
    logic [CW-1:0]        idx_q    [LEVELS];
    logic [31:0]          base_addr_q [LEVELS];
    logic signed [31:0]   base_y_q [LEVELS], base_x_q [LEVELS];
    logic [31:0]          dram_q, addr_q;
    logic signed [31:0]   y0_q, x0_q;
    logic [XFER_YLIM_W-1:0] ylim_q;
    logic [XFER_XLIM_W-1:0] xlim_q;
    logic [7:0]           run_q, lo_q, hi_q;
    logic [2:0]           inner_q;
    logic [1:0]           step_q;
    logic                 xrun_q, wide_q;
    logic [9:0]           bytes_q;
    logic [9:0]           beats_q;   // beats per run
    logic [9:0]           beat_q;
    logic [15:0]          row_q, column_q;

    // The in-bounds elements [lo, hi) of a run at (x, y), computed for the next run while the
    // current one moves: element j (at x + j·s, s = 2^step) is inside when 0 <= x + j·s < xlim,
    // so lo = ceil(-x / s) when x < 0 and hi = ceil((xlim - x) / s) when that is below run; the
    // range is (0, 0) when the last element x + (run-1)·s < 0, x >= xlim or run = 0. Elements
    // s apart can also all miss a short row (x = -1, s = 4, xlim = 3): then lo >= hi, which the
    // units read as empty too, so no comparison of the two is built here. Each step's division
    // is a shift of its own sum, the three chosen by `step` (no shifter after an adder); without
    // STRIDED, step is 0. Without xrun a run is in or out as a whole.
    function automatic logic [15:0] bounds(
        input logic signed [31:0] y, input logic signed [31:0] x,
        input logic [XFER_YLIM_W-1:0] ylim, input logic [XFER_XLIM_W-1:0] xlim,
        input logic [7:0] run, input logic xrun, input logic [1:0] step_in);
        logic signed [31:0] xl, rn;
        logic y_in, x_in, clip, empty;
        logic [1:0] step;
        logic [7:0] lo, hi;
        step = STRIDED ? step_in : 2'd0;
        xl = signed'(32'(xlim));
        rn = signed'(32'(run));
        y_in = ylim == '0 || (y >= 0 && y < signed'(32'(ylim)));
        x_in = xlim == '0 || (x >= 0 && x < xl);
        clip = xrun && xlim != '0;
        case (step)
            2'd1: begin
                lo = clip && x < 0 ? 8'((-x + 32'sd1) >>> 1) : '0;
                hi = clip && x + (rn <<< 1) > xl ? 8'((xl - x + 32'sd1) >>> 1) : run;
                empty = x + ((rn - 32'sd1) <<< 1) < 0;
            end
            2'd2: begin
                lo = clip && x < 0 ? 8'((-x + 32'sd3) >>> 2) : '0;
                hi = clip && x + (rn <<< 2) > xl ? 8'((xl - x + 32'sd3) >>> 2) : run;
                empty = x + ((rn - 32'sd1) <<< 2) < 0;
            end
            default: begin
                lo = clip && x < 0 ? 8'(-x) : '0;
                hi = clip && x + rn > xl ? 8'(xl - x) : run;
                empty = x + rn <= 0;
            end
        endcase
        empty = run == '0 || (clip && (empty || x >= xl));
        bounds = !y_in || (!xrun && !x_in) || empty ? '0 : {hi, lo};
    endfunction

    // wraps[k]: level k is at its last index, so a step carries past it.
    logic [LEVELS-1:0] wraps;
    always_comb for (int k = 0; k < LEVELS; k++) wraps[k] = idx_q[k] == last_idx_q[k];
    // below_wrap[k]: every level below k wraps, so a step reaches level k.
    logic [LEVELS-1:0] below_wrap;
    always_comb for (int k = 0; k < LEVELS; k++) below_wrap[k] = &(wraps | ~LEVELS'((1 << k) - 1));

    logic run_last;
    assign run_last = beat_q == beats_q - 1'b1;

    always_ff @(posedge clk) begin
        if (rst) begin
            active <= 1'b0;
        end else if (start) begin
            logic [9:0] nbytes;
            logic [31:0] dram;
            logic signed [31:0] y0, x0;
            logic [7:0] run;
            logic [1:0] step;
            // A STORE has no `step`: its bits are 0 (or the word is ILLEGAL_FIELD).
            step = STRIDED ? word[LOAD_STEP_LSB +: LOAD_STEP_W] : 2'd0;
            nbytes = 10'(word[XFER_RUN_LSB +: XFER_RUN_W]) << (wide ? 2'd2 : step);
            dram = word[XFER_DRAM_LSB +: XFER_DRAM_W];
            y0 = 32'(signed'(word[XFER_Y0_LSB +: XFER_Y0_W]));
            x0 = 32'(signed'(word[XFER_X0_LSB +: XFER_X0_W]));
            run = word[XFER_RUN_LSB +: XFER_RUN_W];
            for (int k = 0; k < LEVELS; k++) begin
                last_idx_q[k] <= word[XFER_COUNT0_LSB + k * XFER_LEVEL_BITS +: CW] - 1'b1;
                stride_q[k] <= 32'(signed'(
                    word[XFER_STRIDE0_LSB + k * XFER_LEVEL_BITS +: XFER_STRIDE0_W]));
                ycoef_q[k]  <= word[XFER_YCOEF0_LSB + k * XFER_LEVEL_BITS +: XFER_YCOEF0_W];
                xcoef_q[k]  <= word[XFER_XCOEF0_LSB + k * XFER_LEVEL_BITS +: XFER_XCOEF0_W];
                idx_q[k]    <= '0;
                base_addr_q[k] <= dram;
                base_y_q[k] <= y0;
                base_x_q[k] <= x0;
            end
            dram_q  <= dram;
            addr_q  <= dram;
            y0_q    <= y0;
            x0_q    <= x0;
            ylim_q  <= word[XFER_YLIM_LSB +: XFER_YLIM_W];
            xlim_q  <= word[XFER_XLIM_LSB +: XFER_XLIM_W];
            {hi_q, lo_q} <= bounds(y0, x0, word[XFER_YLIM_LSB +: XFER_YLIM_W],
                                   word[XFER_XLIM_LSB +: XFER_XLIM_W], run, word[XFER_XRUN_LSB],
                                   step);
            run_q   <= run;
            inner_q <= word[XFER_INNER_LSB +: XFER_INNER_W];
            step_q  <= step;
            xrun_q  <= word[XFER_XRUN_LSB];
            wide_q  <= wide;
            bytes_q <= nbytes;
            beats_q <= 10'((32'(nbytes) + PORT_BYTES - 1) / PORT_BYTES);
            beat_q  <= '0;
            row_q   <= '0;
            column_q <= '0;
            active  <= 1'b1;
        end else if (active) begin
            if (!run_last) begin
                beat_q <= beat_q + 1'b1;
                addr_q <= addr_q + 32'(PORT_BYTES);
            end else begin
                // Next run: level 0 counts fastest, carrying into the outer levels. The lowest
                // level that does not wrap steps; the levels below it restart.
                logic stepped;
                logic [31:0] next_addr;
                logic signed [31:0] next_y, next_x;
                beat_q <= '0;
                stepped = 1'b0;
                next_addr = dram_q;
                next_y = y0_q;
                next_x = x0_q;
                for (int k = LEVELS - 1; k >= 0; k--) begin
                    if (!wraps[k] && below_wrap[k]) begin
                        stepped = 1'b1;
                        next_addr = base_addr_q[k] + stride_q[k];
                        // The coefficients are signed (docs/isa.md, revision 2.1).
                        next_y = base_y_q[k] + 32'(signed'(ycoef_q[k]));
                        next_x = base_x_q[k] + 32'(signed'(xcoef_q[k]));
                        // Levels below `inner` lay runs side by side in one row; the rest step
                        // the row (and restart the row's runs).
                        if (k < 32'(inner_q)) begin
                            column_q <= column_q + 16'(run_q);
                        end else begin
                            column_q <= '0;
                            row_q <= row_q + 1'b1;
                        end
                    end
                end
                for (int k = 0; k < LEVELS; k++) begin
                    // Levels up to the stepping one take the new values; above it they stay.
                    if (!stepped || below_wrap[k]) begin
                        idx_q[k] <= wraps[k] ? '0 : idx_q[k] + 1'b1;
                        base_addr_q[k] <= next_addr;
                        base_y_q[k] <= next_y;
                        base_x_q[k] <= next_x;
                    end
                end
                addr_q <= next_addr;
                {hi_q, lo_q} <= bounds(next_y, next_x, ylim_q, xlim_q, run_q, xrun_q, step_q);
                if (!stepped) begin
                    row_q <= '0;
                    column_q <= '0;
                    active <= 1'b0;
                end
            end
        end
    end

    always_comb begin
        logic inner_first, inner_last;
        inner_first = 1'b1;
        inner_last = 1'b1;
        for (int k = 0; k < LEVELS; k++) begin
            if (k < 32'(inner_q)) begin
                if (idx_q[k] != '0) inner_first = 1'b0;
                if (!wraps[k]) inner_last = 1'b0;
            end
        end
        elem_lo     = lo_q;
        elem_hi     = hi_q;
        beat_offset = 10'(32'(beat_q) * PORT_BYTES);
        beat_addr   = addr_q;
        run_bytes   = bytes_q;
        // Only in-bounds elements touch DRAM: the end of the last one must lie inside it
        // (no wrap-around past 2^32).
        dram_error  = active && beat_q == '0 && hi_q > lo_q
                   && 64'(addr_q) + (wide_q ? 64'(hi_q) << 2 : (64'(hi_q - 1'b1) << step_q) + 1)
                      > 64'(DRAM_BYTES);
        row_index   = row_q;
        column      = column_q;
        row_first   = (!active || inner_first) && beat_q == '0;
        row_last    = (!active || inner_last) && run_last;
        last        = (!active || &wraps) && run_last;
    end
endmodule
