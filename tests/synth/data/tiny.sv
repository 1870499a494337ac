module tiny (input logic clk, input logic rst, input logic en, input logic [3:0] a, b,
             output logic [7:0] p, output logic [3:0] q, output logic [3:0] r);
  always_ff @(posedge clk) begin
    p <= a * b;
    if (rst) q <= 4'd0; else if (en) q <= q + a;
  end
  always_ff @(posedge clk or posedge rst) if (rst) r <= 0; else r <= r ^ b;
endmodule
