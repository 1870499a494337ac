// One processing element of the weight-stationary systolic array.
// The input byte moves right, the partial sum moves down, and the weight stays. A shadow weight
// register is written while the active weight computes; the `swap` bit, which travels with the
// first input row of the next matmul, makes the shadow weight active exactly when that row
// reaches this PE, so consecutive matmuls stream through without draining the array.
module pe #(
    // width of the input and weight operands (signed)
    parameter int IN_W = 8,
    // width of the partial sum (signed, wraps on overflow)
    parameter int ACC_W = 32
) (
    input  logic                    clk,
    input  logic [IN_W-1:0]  a_in,
    input  logic                    swap_in,
    input  logic [ACC_W-1:0] psum_in,
    input  logic                    shadow_we,
    input  logic [IN_W-1:0]  shadow_w,
    output logic [IN_W-1:0]  a_out,
    output logic                    swap_out,
    output logic [ACC_W-1:0] psum_out
);
    if (ACC_W < 2 * IN_W) begin : g_bad_width
        $fatal(1, "pe: ACC_W=%0d cannot hold an IN_W=%0d product", ACC_W, IN_W);
    end

    logic [IN_W-1:0] active_q;
    logic [IN_W-1:0] shadow_q;
    // The row carrying `swap` already multiplies by the new weight. Both operands are
    // sign-extended to ACC_W and multiplied unsigned: the low ACC_W bits are the signed product,
    // and Verilator emits a plain multiply instead of its signed-multiply helper.
    logic [IN_W-1:0]  weight;
    logic [ACC_W-1:0] a_wide, w_wide;
    assign weight = swap_in ? shadow_q : active_q;
    assign a_wide = {{(ACC_W - IN_W){a_in[IN_W-1]}}, a_in};
    assign w_wide = {{(ACC_W - IN_W){weight[IN_W-1]}}, weight};

    always_ff @(posedge clk) begin
        a_out    <= a_in;
        swap_out <= swap_in;
        psum_out <= psum_in + a_wide * w_wide;
        if (swap_in) active_q <= shadow_q;
        if (shadow_we) shadow_q <= shadow_w;
    end
endmodule
