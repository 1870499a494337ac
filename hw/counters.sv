// The performance counters (docs/isa.md, "Counters"), 32 bits each, counting while `count` is
// high: total cycles, busy cycles per unit (ISA v2 B adds the vector unit's), token and DRAM-port stall cycles by unit, and MACs
// (N² per row that enters the array).
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module counters #(
    // N: the array is N×N
    parameter int N = 16
) (
    input  logic                      clk,
    input  logic                      rst,
    input  logic                      count,
    // each unit's activity; EXEC and VECTOR have no DRAM port
    input  isa_pkg::activity_t        load,
    input  isa_pkg::activity_t        store,
    /* verilator lint_off UNUSEDSIGNAL */
    input  isa_pkg::activity_t        exec,
    input  isa_pkg::activity_t        vector,
    /* verilator lint_on UNUSEDSIGNAL */
    output isa_pkg::counters_t        ctr
);
    isa_pkg::counts_t count_q;
    always_ff @(posedge clk) begin
        if (rst) count_q <= '0;
        else if (count) begin
            count_q.cycles <= count_q.cycles + 1'b1;
            count_q.busy_load <= count_q.busy_load + 32'(load.busy);
            count_q.busy_exec <= count_q.busy_exec + 32'(exec.busy);
            count_q.busy_store <= count_q.busy_store + 32'(store.busy);
            count_q.busy_vector <= count_q.busy_vector + 32'(vector.busy);
            count_q.stall_token_load <= count_q.stall_token_load
                                            + 32'(load.stall_token);
            count_q.stall_token_exec <= count_q.stall_token_exec
                                            + 32'(exec.stall_token);
            count_q.stall_token_store <= count_q.stall_token_store
                                             + 32'(store.stall_token);
            count_q.stall_token_vector <= count_q.stall_token_vector
                                              + 32'(vector.stall_token);
            count_q.stall_dram_load <= count_q.stall_dram_load
                                           + 32'(load.stall_dram);
            count_q.stall_dram_store <= count_q.stall_dram_store
                                            + 32'(store.stall_dram);
        end
    end
    assign ctr = {count_q, count_q.busy_exec * 32'(N * N)};
endmodule
