// An in-order instruction queue between the dispatcher and one unit (docs/isa.md, "Machine
// model"). An entry freed by a pop in cycle t can be refilled from cycle t+1 (the `full` flag is
// registered), and an entry pushed in cycle d is at the head from cycle d+1 at the earliest.
module instr_queue #(
    // entries (the configuration's queue_depth)
    parameter int DEPTH = 8,
    // width of one entry (instruction word and its index)
    parameter int W = 256
) (
    input  logic         clk,
    input  logic         rst,
    input  logic         push,
    input  logic [W-1:0] push_data,
    input  logic         pop,
    output logic         full,
    output logic         head_valid,
    output logic [W-1:0] head_data
);
    if (DEPTH < 1) begin : g_bad_depth
        $fatal(1, "instr_queue: DEPTH=%0d must be at least 1", DEPTH);
    end
    localparam int PTR_W = DEPTH > 1 ? $clog2(DEPTH) : 1;
    localparam int CNT_W = $clog2(DEPTH + 1);

    logic [W-1:0]     entries [DEPTH];
    logic [PTR_W-1:0] head_q, tail_q;
    logic [CNT_W-1:0] count_q;

    assign full       = count_q == CNT_W'(DEPTH);
    assign head_valid = count_q != '0;
    assign head_data  = entries[head_q];

    function automatic logic [PTR_W-1:0] next(input logic [PTR_W-1:0] ptr);
        next = ptr == PTR_W'(DEPTH - 1) ? '0 : ptr + 1'b1;
    endfunction

    always_ff @(posedge clk) begin
        if (rst) begin
            head_q  <= '0;
            tail_q  <= '0;
            count_q <= '0;
        end else begin
            if (push) begin
                entries[tail_q] <= push_data;
                tail_q <= next(tail_q);
            end
            if (pop) head_q <= next(head_q);
            count_q <= count_q + CNT_W'(push) - CNT_W'(pop);
        end
    end
endmodule
