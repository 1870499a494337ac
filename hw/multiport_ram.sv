// A memory of ROWS rows of WIDTH bits with WRITES write ports and READS read ports, built from
// the pieces an FPGA's block RAM provides: one bank with one write and one synchronous read port
// per (write port, read port) pair, and a live-value table (which write port wrote each row
// last, in flip-flops) choosing between the banks (LaForest and Steffan, "Efficient
// multi-ported memories for FPGAs", FPGA 2010). Every read is registered twice, as an ECP5
// DP16KD reads with its output register (0.94 ns clock-to-out instead of 5.6 ns, ISA revision
// 3.1): the row addressed in cycle c is delivered in c+2 with every write up to the end of c+1
// applied, exactly what a combinational read of that row in c+2 would return (the writes of
// c and c+1, which the bank's read missed, forwarded past its output register). Two ports
// writing one row in one cycle is an unordered race (the tokens exclude it); the
// highest-numbered port wins. Zero at start.
module multiport_ram #(
    // rows
    parameter int ROWS = 1024,
    // bits per row
    parameter int WIDTH = 128,
    // write ports
    parameter int WRITES = 1,
    // read ports
    parameter int READS = 1
) (
    input  logic                          clk,
    input  logic [WRITES-1:0]             we,
    input  logic [WRITES-1:0][15:0]       w_row,
    input  logic [WRITES-1:0][WIDTH-1:0]  w_data,
    input  logic [READS-1:0][15:0]        r_row,    // delivered two cycles later
    output logic [READS-1:0][WIDTH-1:0]   r_data
);
    localparam int IDX_W = ROWS > 1 ? $clog2(ROWS) : 1;
    localparam int SEL_W = WRITES > 1 ? $clog2(WRITES) : 1;
    if (WRITES < 1 || READS < 1) begin : g_bad_ports
        $fatal(1, "multiport_ram: WRITES=%0d and READS=%0d must be at least 1", WRITES, READS);
    end

    // Writes to rows past the end are dropped: rows are range-checked when instructions issue.
    logic [WRITES-1:0] write;
    for (genvar w = 0; w < WRITES; w++) begin : g_write
        assign write[w] = we[w] && 32'(w_row[w]) < ROWS;
    end

    // Per (write port, read port), for the forwards in c+2: whether the write of c hits the row
    // addressed in c (hit2_q) and whether the write of c+1 hits it (near_q), both compared in
    // c+1 against the row registered (r_row_q; the write of c registered too, write_q and
    // w_row_q), so the read path starts at flops and the row a unit gives in c, which it may
    // decide late in c, meets nothing but the banks' address ports and r_row_q.
    logic [READS-1:0][15:0] r_row_q;
    logic [WRITES-1:0] write_q;
    logic [WRITES-1:0][15:0] w_row_q;
    logic [WRITES-1:0][WIDTH-1:0] w_data_q, w_data2_q;
    logic [WRITES-1:0][READS-1:0] hit, hit2_q, near, near_q;
    always_comb begin
        for (int w = 0; w < WRITES; w++)
            for (int r = 0; r < READS; r++) begin
                near[w][r] = write[w] && w_row[w] == r_row_q[r];
                hit[w][r]  = write_q[w] && w_row_q[w] == r_row_q[r];
            end
    end
    always_ff @(posedge clk) begin
        r_row_q   <= r_row;
        write_q   <= write;
        w_row_q   <= w_row;
        w_data_q  <= w_data;
        w_data2_q <= w_data_q;
        hit2_q    <= hit;
        near_q    <= near;
    end

    // Live-value table (flip-flops), read a cycle after the row is given, from the row
    // registered (r_row_q), so the address a unit decides in its issue cycle meets only the
    // banks' address ports and the hit compares, not the table's ROWS-to-1 multiplexer: in c+1
    // the table holds every write up to the end of c; the writes of c+1 (near) override it,
    // the highest-numbered port winning as in the table. The result, registered beside the
    // banks' output registers, is each read port's bank select in c+2: the port that wrote the
    // row last, every write up to the end of c+1 included.
    logic [READS-1:0][SEL_W-1:0] live;
    if (WRITES > 1) begin : g_lvt
        logic [SEL_W-1:0] lvt [ROWS];
`ifndef SYNTHESIS
        initial for (int i = 0; i < ROWS; i++) lvt[i] = '0;
`endif
        always_ff @(posedge clk) begin
            for (int w = 0; w < WRITES; w++) begin
                if (write[w]) lvt[IDX_W'(w_row[w])] <= SEL_W'(w);
            end
        end
        for (genvar r = 0; r < READS; r++) begin : g_live
            logic [SEL_W-1:0] later;
            always_comb begin
                later = lvt[IDX_W'(r_row_q[r])];
                for (int w = 0; w < WRITES; w++)
                    if (near[w][r]) later = SEL_W'(w);
            end
            always_ff @(posedge clk) live[r] <= later;
        end
    end else begin : g_one_writer
        assign live = '0;
    end

    logic [WRITES-1:0][READS-1:0][WIDTH-1:0] value;
    for (genvar w = 0; w < WRITES; w++) begin : g_wport
        for (genvar r = 0; r < READS; r++) begin : g_bank
            logic [WIDTH-1:0] mem [ROWS];
            logic [WIDTH-1:0] q, q2;
            // Simulation only: an FPGA's block RAM is zero after configuration, and synthesis
            // would unroll this loop row by row.
`ifndef SYNTHESIS
            initial for (int i = 0; i < ROWS; i++) mem[i] = '0;
`endif
            // q2: the block RAM's output register, nothing between it and q.
            always_ff @(posedge clk) begin
                if (write[w]) mem[IDX_W'(w_row[w])] <= w_data[w];
                q  <= mem[IDX_W'(r_row[r])];
                q2 <= q;
            end
            // The bank read the row before the edges of c and c+1: forward those writes, the
            // later first.
            assign value[w][r] = near_q[w][r] ? w_data_q[w] : hit2_q[w][r] ? w_data2_q[w] : q2;
        end
    end

    for (genvar r = 0; r < READS; r++) begin : g_read
        assign r_data[r] = value[live[r]][r];
    end
endmodule
