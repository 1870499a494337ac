// The performance counters (docs/isa.md, "Counters"), 32 bits each, counting while `count` is
// high: total cycles, busy cycles per unit (ISA v2 B adds the vector unit's), token and DRAM-port stall cycles by unit, and MACs
// (N² per row that enters the array).
module counters #(
    // N: the array is N×N
    parameter int N = 16
) (
    input  logic        clk,
    input  logic        rst,
    input  logic        count,
    input  logic        busy_load,
    input  logic        busy_exec,
    input  logic        busy_store,
    input  logic        busy_vector,
    input  logic        stall_token_load,
    input  logic        stall_token_exec,
    input  logic        stall_token_store,
    input  logic        stall_token_vector,
    input  logic        stall_dram_load,
    input  logic        stall_dram_store,
    output logic [31:0] ctr_cycles,
    output logic [31:0] ctr_busy_load,
    output logic [31:0] ctr_busy_exec,
    output logic [31:0] ctr_busy_store,
    output logic [31:0] ctr_busy_vector,
    output logic [31:0] ctr_stall_token_load,
    output logic [31:0] ctr_stall_token_exec,
    output logic [31:0] ctr_stall_token_store,
    output logic [31:0] ctr_stall_token_vector,
    output logic [31:0] ctr_stall_dram_load,
    output logic [31:0] ctr_stall_dram_store,
    output logic [31:0] ctr_macs
);
    always_ff @(posedge clk) begin
        if (rst) begin
            ctr_cycles <= '0;
            ctr_busy_load <= '0;
            ctr_busy_exec <= '0;
            ctr_busy_store <= '0;
            ctr_busy_vector <= '0;
            ctr_stall_token_load <= '0;
            ctr_stall_token_exec <= '0;
            ctr_stall_token_store <= '0;
            ctr_stall_token_vector <= '0;
            ctr_stall_dram_load <= '0;
            ctr_stall_dram_store <= '0;
        end else if (count) begin
            ctr_cycles            <= ctr_cycles + 1'b1;
            ctr_busy_load         <= ctr_busy_load + 32'(busy_load);
            ctr_busy_exec         <= ctr_busy_exec + 32'(busy_exec);
            ctr_busy_store        <= ctr_busy_store + 32'(busy_store);
            ctr_busy_vector       <= ctr_busy_vector + 32'(busy_vector);
            ctr_stall_token_load  <= ctr_stall_token_load + 32'(stall_token_load);
            ctr_stall_token_exec  <= ctr_stall_token_exec + 32'(stall_token_exec);
            ctr_stall_token_store <= ctr_stall_token_store + 32'(stall_token_store);
            ctr_stall_token_vector <= ctr_stall_token_vector + 32'(stall_token_vector);
            ctr_stall_dram_load   <= ctr_stall_dram_load + 32'(stall_dram_load);
            ctr_stall_dram_store  <= ctr_stall_dram_store + 32'(stall_dram_store);
        end
    end
    assign ctr_macs = ctr_busy_exec * 32'(N * N);
endmodule
