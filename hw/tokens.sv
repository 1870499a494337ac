// The four dependency-token counters (docs/isa.md, "Dependency tokens"), 0 … 255 each:
// index 0 ld2ex, 1 ex2ld, 2 ex2st, 3 st2ex. Pushes happen when an instruction completes and are
// visible to a pop in the same cycle; pops happen at issue. A push that would take a counter past
// 255 is TOKEN_OVERFLOW.
module tokens (
    input  logic           clk,
    input  logic           rst,
    input  logic [3:0]     pop,
    input  logic [3:0][1:0] push,        // tokens pushed into each counter this cycle
    output logic [3:0]     available,    // the counter, with this cycle's pushes, is at least 1
    output logic [3:0]     overflow
);
    logic [3:0][7:0] count_q;
    for (genvar i = 0; i < 4; i++) begin : g_counter
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
