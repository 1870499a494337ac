// The N×N weight-stationary systolic array with input skew and output deskew.
// Row vector x enters whole (unskewed); row k of the array sees x[k] k cycles later, so PE(r, c)
// meets x[r] at the same cycle as the partial sum of x[0..r-1]·W[0..r-1][c] from above. Column c's
// sum leaves the bottom N+c cycles after x entered and is delayed N-1-c more cycles, so the whole
// result row y = x·W appears together LATENCY = 2N-1 cycles after x, with the tag it entered with.
// A shadow-weight write is skewed the same way by column: row r's write given in cycle t reaches
// PE(r, c) in t+c, as a row entering in t reaches it in t+r+c with row r's write given in t+r. So
// a swap and a write travel in step (ISA revision 2.6): a write given after a swap's row entered
// lands after that swap at every PE, and a swap entering after a write meets it everywhere.
// With SPLIT, a row entering with `in_split` uses the array as two halves (docs/isa.md, MATMUL
// `split`, ISA revision 2.9): array row H+k (H = N/2) meets x[k] as row k does, and the partial
// sums restart at 0 at row H, so `out_data` is x[0..H-1]·W[H..N-1] and `out_upper`, column c's
// sum at row H-1 delayed to leave with it, x[0..H-1]·W[0..H-1].
module systolic_array #(
    // rows and columns of processing elements
    parameter int N = 16,
    // width of input and weight operands (signed)
    parameter int IN_W = 8,
    // width of the accumulated sums (signed)
    parameter int ACC_W = 32,
    // width of the tag that travels with each row (the execute unit's destination row and flags)
    parameter int TAG_W = 1,
    // 1: rows may enter split (`in_split`, `out_upper`); 0: those ports are unused, no logic
    parameter int SPLIT = 0
) (
    input  logic                       clk,
    input  logic                       rst,
    // one row vector of inputs per cycle; `in_swap` marks the first row of a matmul whose
    // weights are in the shadow registers
    input  logic                       in_valid,
    input  logic                       in_swap,
    // `in_split` marks a row that uses the array as two halves (read only with SPLIT)
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic                       in_split,
    /* verilator lint_on UNUSEDSIGNAL */
    input  logic [N-1:0][IN_W-1:0]     in_data,
    input  logic [TAG_W-1:0]           in_tag,
    // shadow weight write: row `w_row` of the next weight tile (column c c cycles later)
    input  logic                       w_we,
    input  logic [$clog2(N+1)-1:0]     w_row,
    input  logic [N-1:0][IN_W-1:0]     w_data,
    // the valid bit and tag of the row that leaves two cycles later (the accumulator's
    // registered read of its old row is addressed then)
    output logic                       next_valid,
    output logic [TAG_W-1:0]           next_tag,
    // y = x·W, LATENCY cycles after x
    output logic                       out_valid,
    output logic [N-1:0][ACC_W-1:0]    out_data,
    // with SPLIT, a split row's upper half x[0..H-1]·W[0..H-1], beside `out_data` (else 0)
    output logic [N-1:0][ACC_W-1:0]    out_upper,
    output logic [TAG_W-1:0]           out_tag
);
    localparam int LATENCY = 2 * N - 1;
    localparam int H = N / 2;
    if (N < 1) begin : g_bad_n
        $fatal(1, "systolic_array: N=%0d must be at least 1", N);
    end
    if (SPLIT != 0 && (SPLIT != 1 || N % 2 != 0)) begin : g_bad_split
        $fatal(1, "systolic_array: SPLIT=%0d must be 0, or 1 with an even N (N=%0d)", SPLIT, N);
    end

    // Write skew: column c's write enable, row and byte are delayed c cycles.
    for (genvar c = 0; c < N; c++) begin : g_wcol
        logic                     we_d  [c+1];
        logic [$clog2(N+1)-1:0]   row_d [c+1];
        logic [IN_W-1:0]          data_d[c+1];
        // what reaches the column's PEs
        logic                     we;
        logic [$clog2(N+1)-1:0]   row;
        logic [IN_W-1:0]          data;
        assign we_d[0]   = w_we;
        assign row_d[0]  = w_row;
        assign data_d[0] = w_data[c];
        for (genvar d = 1; d <= c; d++) begin : g_skew
            always_ff @(posedge clk) begin
                we_d[d]   <= rst ? 1'b0 : we_d[d-1];
                row_d[d]  <= row_d[d-1];
                data_d[d] <= data_d[d-1];
            end
        end
        assign we   = we_d[c];
        assign row  = row_d[c];
        assign data = data_d[c];
    end

    // The split bit meets array row H with its element (H cycles of skew) and moves one column
    // a cycle, as the swap bit does, so column c of row H sees it in t+H+c: `at[c]`.
    if (SPLIT != 0) begin : g_split_bit
        logic skew [H+1];
        logic at [N];
        assign skew[0] = in_split;
        for (genvar d = 1; d <= H; d++) begin : g_skew
            always_ff @(posedge clk) skew[d] <= skew[d-1];
        end
        assign at[0] = skew[H];
        for (genvar c = 1; c < N; c++) begin : g_col
            always_ff @(posedge clk) at[c] <= at[c-1];
        end
    end

    // Each PE's outputs are nets of its own generate scope, read by its right and lower
    // neighbours by name: Verilator then aliases them to the PE's registers instead of copying
    // them into an array every cycle.
    for (genvar r = 0; r < N; r++) begin : g_row
        // Input skew: row r is delayed r cycles (row 0 not at all).
        logic [IN_W-1:0] a_skew [r+1];
        logic            s_skew [r+1];
        // A split row's element k enters array row H+k too, before the skew.
        if (SPLIT != 0 && r >= H) begin : g_split_in
            assign a_skew[0] = in_split ? in_data[r-H] : in_data[r];
        end else begin : g_in
            assign a_skew[0] = in_data[r];
        end
        assign s_skew[0] = in_swap & in_valid;
        for (genvar d = 1; d <= r; d++) begin : g_skew
            always_ff @(posedge clk) begin
                a_skew[d] <= a_skew[d-1];
                s_skew[d] <= rst ? 1'b0 : s_skew[d-1];
            end
        end

        for (genvar c = 0; c < N; c++) begin : g_col
            logic [IN_W-1:0]  a_in;
            logic             s_in;
            logic [ACC_W-1:0] p_in, p_out;
            // The last column's input byte and swap bit leave the array unread.
            /* verilator lint_off UNUSEDSIGNAL */
            logic [IN_W-1:0]  a_out;
            logic             s_out;
            /* verilator lint_on UNUSEDSIGNAL */
            if (c == 0) begin : g_first_col
                assign a_in = a_skew[r];
                assign s_in = s_skew[r];
            end else begin : g_next_col
                assign a_in = g_row[r].g_col[c-1].a_out;
                assign s_in = g_row[r].g_col[c-1].s_out;
            end
            if (r == 0) begin : g_first_row
                assign p_in = '0;
            end else if (SPLIT != 0 && r == H) begin : g_split_row
                // A split row's partial sum restarts here: the lower half's own.
                assign p_in = g_split_bit.at[c] ? '0 : g_row[r-1].g_col[c].p_out;
            end else begin : g_next_row
                assign p_in = g_row[r-1].g_col[c].p_out;
            end
            pe #(.IN_W(IN_W), .ACC_W(ACC_W)) u_pe (
                .clk      (clk),
                .a_in     (a_in),
                .swap_in  (s_in),
                .psum_in  (p_in),
                .shadow_we(g_wcol[c].we && 32'(g_wcol[c].row) == r),
                .shadow_w (g_wcol[c].data),
                .a_out    (a_out),
                .swap_out (s_out),
                .psum_out (p_out)
            );
        end
    end

    for (genvar c = 0; c < N; c++) begin : g_out
        // Output deskew: column c waits N-1-c cycles so the row leaves together.
        logic [ACC_W-1:0] d [N-c];
        assign d[0] = g_row[N-1].g_col[c].p_out;
        for (genvar k = 1; k < N - c; k++) begin : g_deskew
            always_ff @(posedge clk) d[k] <= d[k-1];
        end
        assign out_data[c] = d[N-1-c];
    end

    if (SPLIT != 0) begin : g_upper
        // Column c's upper-half sum leaves row H-1 in t+H+c; H+N-1-c cycles more bring it to
        // t+2N-1, with the lower half's result (docs/isa.md, "Notes for the RTL").
        for (genvar c = 0; c < N; c++) begin : g_col
            localparam int DELAY = H + N - 1 - c;
            logic [ACC_W-1:0] d [DELAY+1];
            assign d[0] = g_row[H-1].g_col[c].p_out;
            for (genvar k = 1; k <= DELAY; k++) begin : g_delay
                always_ff @(posedge clk) d[k] <= d[k-1];
            end
            assign out_upper[c] = d[DELAY];
        end
    end else begin : g_whole
        assign out_upper = '0;
    end

    // The valid bit and the tag follow the data through the same number of registers.
    logic             valid_q [LATENCY+1];
    logic [TAG_W-1:0] tag_q   [LATENCY+1];
    assign valid_q[0] = in_valid;
    assign tag_q[0]   = in_tag;
    for (genvar k = 1; k <= LATENCY; k++) begin : g_valid
        always_ff @(posedge clk) begin
            valid_q[k] <= rst ? 1'b0 : valid_q[k-1];
            tag_q[k]   <= tag_q[k-1];
        end
    end
    assign next_valid = valid_q[LATENCY-2];
    assign next_tag   = tag_q[LATENCY-2];
    assign out_valid  = valid_q[LATENCY];
    assign out_tag    = tag_q[LATENCY];
endmodule
