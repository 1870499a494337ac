// Register-to-register paths of different lengths, for the worst-path report's tests: an 8x8
// multiply (a MULT18X18D), a 16-bit add (a carry chain), a comparison and a reduction.
module paths (input logic clk, input logic [7:0] a, b, input logic [15:0] c,
              output logic [15:0] p, output logic [15:0] s, output logic lt, output logic x);
  logic [7:0] ra, rb;
  logic [15:0] rc;
  always_ff @(posedge clk) begin
    ra <= a;
    rb <= b;
    rc <= c;
    p <= ra * rb;
    s <= rc + {ra, rb};
    lt <= rc < {rb, ra};
    x <= ^(ra & rb);
  end
endmodule
