// The accumulator memory: ROWS rows of N int32 (docs/isa.md, "Machine model"). MATMUL results
// are written or added (wrapping modulo 2^32) by a read-modify-write at the array's output;
// LOAD writes bias rows; STORE reads rows; the vector unit reads source rows and its output
// rows' old values (through VECTOR_READS ports: two, or one they take turns on when its rows
// take several cycles, hw/vector_unit.sv) and writes its output rows (ISA v2 B). Every read
// port is registered (multiport_ram, ISA revision 3.1): the row given in cycle c arrives in
// c+2, so MATMUL names the row it writes two cycles ahead. The LOAD's writes are registered on
// their way in (a cycle later than the LOAD gives them: its walker's address no longer meets
// the live-value table's write decode in one cycle), which the read's forwarding hides from
// every reader that issues at the LOAD's completion. Zero at start. Writes of different units to
// one row in one cycle would be an unordered race, which the tokens exclude. With SHARED the
// vector unit's writes go through the LOAD's write port and its first read port is the STORE's
// (docs/isa.md, "Accumulator ports": their users take turns), so the memory has a write port
// and a read port fewer: ecp5n8's 2 x 2 banks where the vector unit's own ports made 3 x 3.
// With COLUMN_SPLIT the memory is two of them, the even rows and the odd rows (row >> 1 within
// its bank): every port goes to the bank of its row's low bit, a read's data chosen by that bit
// two cycles later, and a split MATMUL's two rows, of opposite parity (docs/isa.md, MATMUL
// `split`), take the MATMUL write port and old-row read port of one bank each: the same
// storage as one memory, no port added.
module accumulator #(
    // N: int32 elements per row
    parameter int N = 16,
    // rows (the configuration's accumulator_rows)
    parameter int ROWS = 4096,
    // the vector unit's read ports
    parameter int VECTOR_READS = 2,
    // 1: the vector unit shares the LOAD's write port and the STORE's read port
    parameter int SHARED = 0,
    // 1: two banks of the even and the odd rows, and the MATMUL's second (split) port
    parameter int COLUMN_SPLIT = 1
) (
    input  logic               clk,
    // MATMUL port: write, or accumulate into, one row; `mm_next_row` is the row written two
    // cycles later (its old value is read then)
    input  logic               mm_we,
    input  logic               mm_accumulate,
    input  logic [15:0]        mm_row,
    input  logic [15:0]        mm_next_row,
    input  logic [N-1:0][31:0] mm_data,
    // a split MATMUL's second row, of the other parity than `mm_row` (unused without
    // COLUMN_SPLIT); `mm_next_row2` is read in the other bank than `mm_next_row` whether or not
    // the row is split (a read changes nothing)
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic               mm_we2,
    input  logic [15:0]        mm_row2,
    input  logic [15:0]        mm_next_row2,
    input  logic [N-1:0][31:0] mm_data2,
    /* verilator lint_on UNUSEDSIGNAL */
    // LOAD port (bias), registered here
    input  logic               ld_we,
    input  logic [15:0]        ld_row,
    input  logic [N-1:0][31:0] ld_data,
    // STORE port: the row given now arrives two cycles later
    input  logic [15:0]        st_row,
    output logic [N-1:0][31:0] st_data,
    // vector unit ports: the rows given now arrive two cycles later; the output row's write;
    // with SHARED, whether the read port is its (a VECTOR that reads ACC, issuing or in progress)
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic               vu_turn,
    /* verilator lint_on UNUSEDSIGNAL */
    input  logic [VECTOR_READS-1:0][15:0]        vu_rd_row,
    output logic [VECTOR_READS-1:0][N-1:0][31:0] vu_rd_data,
    input  logic               vu_we,
    input  logic [15:0]        vu_row,
    input  logic [N-1:0][31:0] vu_data
);
    logic [N-1:0][31:0] mm_old, mm_sum;
    // The LOAD's write, a cycle after the LOAD gives it (above).
    logic               ld_we_q;
    logic [15:0]        ld_row_q;
    logic [N-1:0][31:0] ld_data_q;
    always_ff @(posedge clk) begin
        ld_we_q   <= ld_we;
        ld_row_q  <= ld_row;
        ld_data_q <= ld_data;
    end
    for (genvar n = 0; n < N; n++) begin : g_add
        assign mm_sum[n] = mm_data[n] + (mm_accumulate ? mm_old[n] : 32'd0);
    end

    // Write ports: 0 MATMUL, 1 LOAD, 2 VECTOR; with SHARED 1 LOAD or VECTOR (one at a time).
    // Read ports: 0 MATMUL's old row, 1 STORE (with SHARED, or the vector unit's first read),
    // then the vector unit's own.
    localparam int WRITES = SHARED != 0 ? 2 : 3;
    localparam int READS = 2 + VECTOR_READS - (SHARED != 0 ? 1 : 0);
    logic [WRITES-1:0] we;
    logic [WRITES-1:0][15:0] w_row;
    logic [WRITES-1:0][32*N-1:0] w_data;
    logic [READS-1:0][15:0] r_row;
    logic [READS-1:0][32*N-1:0] r_data;
    if (SHARED != 0) begin : g_shared_write
        assign we     = {ld_we_q || vu_we, mm_we};
        assign w_row  = {ld_we_q ? ld_row_q : vu_row, mm_row};
        assign w_data = {ld_we_q ? ld_data_q : vu_data, mm_sum};
    end else begin : g_own_write
        assign we     = {vu_we, ld_we_q, mm_we};
        assign w_row  = {vu_row, ld_row_q, mm_row};
        assign w_data = {vu_data, ld_data_q, mm_sum};
    end
    assign r_row[0] = mm_next_row;
    assign r_row[1] = SHARED != 0 && vu_turn ? vu_rd_row[0] : st_row;
    assign mm_old   = r_data[0];
    assign st_data  = r_data[1];
    for (genvar v = 0; v < VECTOR_READS; v++) begin : g_vu_read
        localparam int PORT = v == 0 && SHARED != 0 ? 1 : 2 + v - (SHARED != 0 ? 1 : 0);
        if (PORT != 1) begin : g_own
            assign r_row[PORT] = vu_rd_row[v];
        end
        assign vu_rd_data[v] = r_data[PORT];
    end
    // A split MATMUL's lower-half row and the two banks' ports (COLUMN_SPLIT), declared here:
    // Yosys cannot size a signal of a generate block read from a block nested in it.
    /* verilator lint_off UNUSEDSIGNAL */
    logic [N-1:0][31:0] mm_old2, mm_sum2;
    logic [1:0][WRITES-1:0] b_we;
    logic [1:0][WRITES-1:0][15:0] b_w_row;
    logic [1:0][WRITES-1:0][32*N-1:0] b_w_data;
    logic [1:0][READS-1:0][15:0] b_r_row;
    logic [1:0][READS-1:0][32*N-1:0] bank_data;
    logic [READS-1:0] odd_q, odd2_q;  // the low bit of the row each read port gave, for its data
    /* verilator lint_on UNUSEDSIGNAL */
    for (genvar n = 0; n < N; n++) begin : g_add2
        assign mm_sum2[n] = mm_data2[n] + (mm_accumulate ? mm_old2[n] : 32'd0);
    end
    if (COLUMN_SPLIT != 0) begin : g_banks
        if (ROWS % 2 != 0) begin : g_bad_rows
            $fatal(1, "accumulator: COLUMN_SPLIT needs an even ROWS, not %0d", ROWS);
        end
        always_ff @(posedge clk) begin
            for (int r = 0; r < READS; r++) odd_q[r] <= r_row[r][0];
            odd2_q <= odd_q;
        end
        // Bank b holds the rows whose low bit is b, at index row >> 1.
        always_comb begin
            for (int b = 0; b < 2; b++) begin
                for (int w = 0; w < WRITES; w++) begin
                    b_we[b][w]     = we[w] && w_row[w][0] == 1'(b);
                    b_w_row[b][w]  = w_row[w] >> 1;
                    b_w_data[b][w] = w_data[w];
                end
                for (int r = 0; r < READS; r++) b_r_row[b][r] = r_row[r] >> 1;
                // The MATMUL ports serve whichever of the two rows is this bank's.
                if (mm_we2 && mm_row2[0] == 1'(b)) begin
                    b_we[b][0]     = 1'b1;
                    b_w_row[b][0]  = mm_row2 >> 1;
                    b_w_data[b][0] = mm_sum2;
                end
                if (mm_next_row[0] != 1'(b)) b_r_row[b][0] = mm_next_row2 >> 1;
            end
        end
        for (genvar b = 0; b < 2; b++) begin : g_bank
            multiport_ram #(.ROWS(ROWS / 2), .WIDTH(32 * N), .WRITES(WRITES), .READS(READS)) u_mem (
                .clk, .we(b_we[b]), .w_row(b_w_row[b]), .w_data(b_w_data[b]),
                .r_row(b_r_row[b]), .r_data(bank_data[b])
            );
        end
        for (genvar r = 0; r < READS; r++) begin : g_read
            assign r_data[r] = bank_data[odd2_q[r]][r];
        end
        assign mm_old2 = bank_data[!odd2_q[0]][0];
    end else begin : g_one_bank
        assign {mm_old2, b_we, b_w_row, b_w_data, b_r_row, bank_data, odd_q, odd2_q} = '0;
        multiport_ram #(.ROWS(ROWS), .WIDTH(32 * N), .WRITES(WRITES), .READS(READS)) u_mem (
            .clk, .we, .w_row, .w_data, .r_row, .r_data
        );
    end
endmodule
