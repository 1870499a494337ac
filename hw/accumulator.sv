// The accumulator memory: ROWS rows of N int32 (docs/isa.md, "Machine model"). MATMUL results
// are written or added (wrapping modulo 2^32) by a read-modify-write at the array's output;
// LOAD writes bias rows; STORE reads rows combinationally; the vector unit reads a source row
// and its output row and writes the output row (ISA v2 B). Zero at start. Writes of different
// units to one row in one cycle would be an unordered race, which the tokens exclude.
module accumulator #(
    // N: int32 elements per row
    parameter int N = 16,
    // rows (the configuration's accumulator_rows)
    parameter int ROWS = 4096
) (
    input  logic               clk,
    // MATMUL port: write, or accumulate into, one row
    input  logic               mm_we,
    input  logic               mm_accumulate,
    input  logic [15:0]        mm_row,
    input  logic [N-1:0][31:0] mm_data,
    // LOAD port (bias)
    input  logic               ld_we,
    input  logic [15:0]        ld_row,
    input  logic [N-1:0][31:0] ld_data,
    // STORE port
    input  logic [15:0]        st_row,
    output logic [N-1:0][31:0] st_data,
    // vector unit ports: a source row, the output row's old value, the output row's write
    input  logic [15:0]        vu_src_row,
    output logic [N-1:0][31:0] vu_src_data,
    input  logic               vu_we,
    input  logic [15:0]        vu_row,
    output logic [N-1:0][31:0] vu_old,
    input  logic [N-1:0][31:0] vu_data
);
    localparam int IDX_W = ROWS > 1 ? $clog2(ROWS) : 1;
    logic [N-1:0][31:0] mem [ROWS];

    initial for (int i = 0; i < ROWS; i++) mem[i] = '0;

    assign st_data     = 32'(st_row) < ROWS ? mem[IDX_W'(st_row)] : '0;
    assign vu_src_data = 32'(vu_src_row) < ROWS ? mem[IDX_W'(vu_src_row)] : '0;
    assign vu_old      = 32'(vu_row) < ROWS ? mem[IDX_W'(vu_row)] : '0;

    always_ff @(posedge clk) begin
        if (mm_we && 32'(mm_row) < ROWS) begin
            for (int n = 0; n < N; n++) begin
                mem[IDX_W'(mm_row)][n] <= mm_data[n]
                                        + (mm_accumulate ? mem[IDX_W'(mm_row)][n] : 32'd0);
            end
        end
        if (ld_we && 32'(ld_row) < ROWS) mem[IDX_W'(ld_row)] <= ld_data;
        if (vu_we && 32'(vu_row) < ROWS) mem[IDX_W'(vu_row)] <= vu_data;
    end
endmodule
