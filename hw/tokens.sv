// The dependency-token counters (docs/isa.md, "Dependency tokens"; ISA v2 B), 0 … 255 each:
// 0 ld2ex, 1 ex2ld, 2 ex2st, 3 st2ex, and for the vector unit 4 ld2vu, 5 vu2ld, 6 vu2st,
// 7 st2vu. Pushes happen when an instruction completes and are visible to a pop in the same
// cycle; pops happen at issue. A push that would take a counter past 255 is TOKEN_OVERFLOW.
module tokens #(
    // how many counters
    parameter int COUNTERS = 8
) (
    input  logic                       clk,
    input  logic                       rst,
    input  logic [COUNTERS-1:0]        pop,
    input  logic [COUNTERS-1:0][1:0]   push,        // tokens pushed into each counter this cycle
    output logic [COUNTERS-1:0]        available,   // the counter, with this cycle's pushes, is ≥ 1
    output logic [COUNTERS-1:0]        overflow
);
    logic [COUNTERS-1:0][7:0] count_q;
    for (genvar i = 0; i < COUNTERS; i++) begin : g_counter
        logic [9:0] with_push;
        assign with_push    = 10'(count_q[i]) + 10'(push[i]);
        assign available[i] = with_push != '0;
        assign overflow[i]  = with_push > 10'd255;
        always_ff @(posedge clk) begin
            if (rst) count_q[i] <= '0;
            else count_q[i] <= 8'(with_push - 10'(pop[i]));
        end
    end
endmodule
