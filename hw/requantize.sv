// The store path's conversion of one int32 accumulator element (docs/isa.md, "Conversion in
// STORE"): optional ReLU, then either the raw int32 or an int8 requantized with a rounding
// arithmetic shift by k, `clamp((x + 2^(k-1)) >> k, -128, 127)` (k = 0: `clamp(x, -128, 127)`),
// where the rounding add is exact (34 bits here, so it never wraps).
module requantize (
    input  logic signed [31:0] x,
    input  logic               relu,
    input  logic [4:0]         shift,
    output logic signed [31:0] raw,      // after ReLU
    output logic signed [7:0]  narrow    // requantized int8
);
    logic signed [33:0] wide, rounded, shifted;
    assign raw     = relu && x < 0 ? 32'sd0 : x;
    assign wide    = 34'(raw);
    assign rounded = shift == '0 ? wide : wide + (34'sd1 <<< (shift - 5'd1));
    assign shifted = rounded >>> shift;
    assign narrow  = shifted > 34'sd127 ? 8'sd127
                   : shifted < -34'sd128 ? -8'sd128
                   : 8'(shifted);
endmodule
