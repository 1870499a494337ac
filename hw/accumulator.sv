// The accumulator memory: ROWS rows of N int32 (docs/isa.md, "Machine model"). MATMUL results
// are written or added (wrapping modulo 2^32) by a read-modify-write at the array's output;
// LOAD writes bias rows; STORE reads rows; the vector unit reads source rows and its output
// rows' old values (through VECTOR_READS ports: two, or one they take turns on when its rows
// take several cycles, hw/vector_unit.sv) and writes its output rows (ISA v2 B). Every read
// port is synchronous (multiport_ram): a unit gives the row it needs in the next cycle, so
// MATMUL names the row it writes one cycle ahead. Zero at start. Writes of different units to
// one row in one cycle would be an unordered race, which the tokens exclude.
module accumulator #(
    // N: int32 elements per row
    parameter int N = 16,
    // rows (the configuration's accumulator_rows)
    parameter int ROWS = 4096,
    // the vector unit's read ports
    parameter int VECTOR_READS = 2
) (
    input  logic               clk,
    // MATMUL port: write, or accumulate into, one row; `mm_next_row` is the row written next
    input  logic               mm_we,
    input  logic               mm_accumulate,
    input  logic [15:0]        mm_row,
    input  logic [15:0]        mm_next_row,
    input  logic [N-1:0][31:0] mm_data,
    // LOAD port (bias)
    input  logic               ld_we,
    input  logic [15:0]        ld_row,
    input  logic [N-1:0][31:0] ld_data,
    // STORE port: the row given now arrives in the next cycle
    input  logic [15:0]        st_row,
    output logic [N-1:0][31:0] st_data,
    // vector unit ports: the rows given now arrive in the next cycle; the output row's write
    input  logic [VECTOR_READS-1:0][15:0]        vu_rd_row,
    output logic [VECTOR_READS-1:0][N-1:0][31:0] vu_rd_data,
    input  logic               vu_we,
    input  logic [15:0]        vu_row,
    input  logic [N-1:0][31:0] vu_data
);
    logic [N-1:0][31:0] mm_old, mm_sum;
    for (genvar n = 0; n < N; n++) begin : g_add
        assign mm_sum[n] = mm_data[n] + (mm_accumulate ? mm_old[n] : 32'd0);
    end

    // Write ports: 0 MATMUL, 1 LOAD, 2 VECTOR. Read ports: 0 MATMUL's old row, 1 STORE, then the
    // vector unit's.
    multiport_ram #(.ROWS(ROWS), .WIDTH(32 * N), .WRITES(3), .READS(2 + VECTOR_READS)) u_mem (
        .clk,
        .we    ({vu_we, ld_we, mm_we}),
        .w_row ({vu_row, ld_row, mm_row}),
        .w_data({vu_data, ld_data, mm_sum}),
        .r_row ({vu_rd_row, st_row, mm_next_row}),
        .r_data({vu_rd_data, st_data, mm_old})
    );
endmodule
