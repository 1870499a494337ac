// The scratchpad: ROWS rows of N int8 (docs/isa.md, "Machine model"). One write port (LOAD) and
// three read ports (MATMUL's input stream, PRELOAD's weight rows, the vector unit's source rows).
// The read ports are synchronous, as block RAM is: the row addressed in cycle c arrives in c+1
// with the writes of c applied (multiport_ram), and the units consume it one cycle later than
// they address it. Zero at start.
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
    // One bank per read port: block RAM has one read port to spare beside the write.
    multiport_ram #(.ROWS(ROWS), .WIDTH(8 * N), .WRITES(1), .READS(3)) u_mem (
        .clk, .we, .w_row, .w_data,
        .r_row ({c_row, b_row, a_row}),
        .r_data({c_data, b_data, a_data})
    );
endmodule
