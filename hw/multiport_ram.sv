// A memory of ROWS rows of WIDTH bits with WRITES write ports and READS read ports, built from
// the pieces an FPGA's block RAM provides: one bank with one write and one synchronous read port
// per (write port, read port) pair, and a live-value table (which write port wrote each row
// last, in flip-flops) choosing between the banks (LaForest and Steffan, "Efficient
// multi-ported memories for FPGAs", FPGA 2010). Every read port is write-first: the row
// addressed in cycle c is delivered in c+1 with every write up to the end of c applied, exactly
// what a combinational read of that row in c+1 would return, so a unit that knows its row one
// cycle ahead keeps the timing of a combinational memory (docs/isa.md, "Notes for the RTL").
// Two ports writing one row in one cycle is an unordered race (the tokens exclude it); the
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
    input  logic [READS-1:0][15:0]        r_row,    // read in the next cycle
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

    // Per (write port, read port): whether this cycle's write hits the row read now, for the
    // write-first bypass in the next cycle (compared here, so the read path starts at a flop).
    logic [WRITES-1:0][WIDTH-1:0] w_data_q;
    logic [WRITES-1:0][READS-1:0] hit_q;
    always_ff @(posedge clk) begin
        w_data_q <= w_data;
        for (int w = 0; w < WRITES; w++)
            for (int r = 0; r < READS; r++)
                hit_q[w][r] <= write[w] && w_row[w] == r_row[r];
    end

    // Live-value table, read synchronously like the banks: the port that wrote the row read
    // now last, this cycle's writes included (the highest-numbered port wins, as in the table),
    // so each read port's bank select is a flop.
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
            logic [SEL_W-1:0] next;
            always_comb begin
                next = lvt[IDX_W'(r_row[r])];
                for (int w = 0; w < WRITES; w++)
                    if (write[w] && w_row[w] == r_row[r]) next = SEL_W'(w);
            end
            always_ff @(posedge clk) live[r] <= next;
        end
    end else begin : g_one_writer
        assign live = '0;
    end

    logic [WRITES-1:0][READS-1:0][WIDTH-1:0] value;
    for (genvar w = 0; w < WRITES; w++) begin : g_wport
        for (genvar r = 0; r < READS; r++) begin : g_bank
            logic [WIDTH-1:0] mem [ROWS];
            logic [WIDTH-1:0] q;
            // Simulation only: an FPGA's block RAM is zero after configuration, and synthesis
            // would unroll this loop row by row.
`ifndef SYNTHESIS
            initial for (int i = 0; i < ROWS; i++) mem[i] = '0;
`endif
            always_ff @(posedge clk) begin
                if (write[w]) mem[IDX_W'(w_row[w])] <= w_data[w];
                q <= mem[IDX_W'(r_row[r])];
            end
            // The bank read the row before this edge's write: forward that write.
            assign value[w][r] = hit_q[w][r] ? w_data_q[w] : q;
        end
    end

    for (genvar r = 0; r < READS; r++) begin : g_read
        assign r_data[r] = value[live[r]][r];
    end
endmodule
