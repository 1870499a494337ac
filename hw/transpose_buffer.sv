// The transpose of a transposing LOAD (ISA v2 A1, docs/isa.md "LOAD and STORE", `transpose`):
// the LOAD's local rows arrive one at a time and are cut into blocks of N (the last block may be
// partial); element (r, c) of block b goes to scratchpad row bN + c (relative to the LOAD's
// `row`), column r, with zeros for the rows a partial block lacks. Two N×N buffers: block b fills
// buffer b mod 2 while the other drains, one scratchpad row (one buffer column) per cycle.
// Timing: with e_b the cycle block b's last row arrives, its N rows are written in
// w_b … w_b + N - 1, w_0 = e_0 + 1, w_b = max(e_b + 1, w_{b-1} + N); the LOAD completes at
// w_last + N. A full block takes at least N rows (N cycles) to arrive, so a buffer is never
// refilled before it has drained; only a partial last block can find the drain busy and wait.
module transpose_buffer #(
    // N: the array size (elements per row, rows per block)
    parameter int N = 16
) (
    input  logic              clk,
    input  logic              rst,
    input  logic              start,       // a transposing LOAD issues: block 0, row 0 next
    input  logic              row_we,      // a local row arrives
    input  logic [N-1:0][7:0] row_data,
    input  logic              row_final,   // ... and it is the LOAD's last local row
    output logic              out_we,      // a scratchpad row is written
    output logic [15:0]       out_row,     // which: relative to the LOAD's `row` (fits: checked)
    output logic [N-1:0][7:0] out_data,
    output logic              busy,        // a block is draining or waiting to drain
    output logic              finishing    // the LOAD's last scratchpad row is written now
);
    localparam int R_W = $clog2(N + 1);   // 0 … N
    localparam int IDX_W = $clog2(N);      // 0 … N-1

    // One block waiting to drain, or draining: its buffer, rows, first output row, and whether
    // it is the LOAD's last.
    typedef struct packed {
        logic           valid;
        logic           parity;
        logic [R_W-1:0] rows;
        logic [15:0]    base;
        logic           final_block;
    } block_t;

    logic [N-1:0][7:0] buffer [2][N];
    logic [R_W-1:0]    fill_row_q;
    logic              fill_parity_q;
    logic [15:0]       fill_base_q;
    block_t            drain_q, pending_q, arriving;
    logic [R_W-1:0]    column_q;
    logic              drain_free_next;

    assign arriving.valid       = row_we && (32'(fill_row_q) == N - 1 || row_final);
    assign arriving.parity      = fill_parity_q;
    assign arriving.rows        = fill_row_q + 1'b1;
    assign arriving.base        = fill_base_q;
    assign arriving.final_block = row_final;
    // The drain is free next cycle when idle or writing its last row now.
    assign drain_free_next = !drain_q.valid || 32'(column_q) == N - 1;

    always_ff @(posedge clk) begin
        if (rst) begin
            drain_q.valid   <= 1'b0;
            pending_q.valid <= 1'b0;
        end else begin
            if (start) begin
                fill_row_q    <= '0;
                fill_parity_q <= 1'b0;
                fill_base_q   <= '0;
            end else if (row_we) begin
                buffer[fill_parity_q][IDX_W'(fill_row_q)] <= row_data;
                if (arriving.valid) begin
                    fill_row_q    <= '0;
                    fill_parity_q <= !fill_parity_q;
                    fill_base_q   <= fill_base_q + 16'(N);
                end else begin
                    fill_row_q <= fill_row_q + 1'b1;
                end
            end
            if (drain_free_next) begin
                // The waiting block first; a block arriving now drains next cycle if nothing
                // waits, else it waits.
                column_q <= '0;
                if (pending_q.valid) begin
                    drain_q   <= pending_q;
                    pending_q <= arriving;
                end else begin
                    drain_q   <= arriving;
                end
            end else begin
                column_q <= column_q + 1'b1;
                if (arriving.valid) pending_q <= arriving;
            end
        end
    end

    // Scratchpad row bN + c is column c of the block; rows past a partial block's end are zero.
    always_comb begin
        for (int r = 0; r < N; r++) begin
            out_data[r] = 32'(r) < 32'(drain_q.rows)
                        ? buffer[drain_q.parity][r][IDX_W'(column_q)] : '0;
        end
    end
    assign out_we    = drain_q.valid;
    assign out_row   = drain_q.base + 16'(column_q);
    assign busy      = drain_q.valid || pending_q.valid;
    assign finishing = drain_q.valid && drain_q.final_block && 32'(column_q) == N - 1;
endmodule
