// The scratchpad: ROWS rows of N int8 (docs/isa.md, "Machine model"). One write port (LOAD) and
// three read ports (MATMUL's input stream, PRELOAD's weight rows, the vector unit's source rows),
// all combinational, so a row written in cycle c is read by an instruction issuing in c+1. Zero
// at start.
module scratchpad #(
    // N: int8 elements per row
    parameter int N = 16,
    // rows (the configuration's scratchpad_rows)
    parameter int ROWS = 16384
) (
    input  logic             clk,
    input  logic             we,
    input  logic [15:0]      w_row,
    input  logic [N-1:0][7:0] w_data,
    input  logic [15:0]      a_row,
    output logic [N-1:0][7:0] a_data,
    input  logic [15:0]      b_row,
    output logic [N-1:0][7:0] b_data,
    input  logic [15:0]      c_row,
    output logic [N-1:0][7:0] c_data
);
    localparam int IDX_W = ROWS > 1 ? $clog2(ROWS) : 1;
    logic [N-1:0][7:0] mem [ROWS];

    initial for (int i = 0; i < ROWS; i++) mem[i] = '0;

    // Rows are range-checked when instructions issue; out-of-range reads (only in the cycle an
    // error is raised) return zeros.
    assign a_data = 32'(a_row) < ROWS ? mem[IDX_W'(a_row)] : '0;
    assign b_data = 32'(b_row) < ROWS ? mem[IDX_W'(b_row)] : '0;
    assign c_data = 32'(c_row) < ROWS ? mem[IDX_W'(c_row)] : '0;

    always_ff @(posedge clk) begin
        if (we && 32'(w_row) < ROWS) mem[IDX_W'(w_row)] <= w_data;
    end
endmodule
