// The int8 a VECTOR `lin` fold writes (docs/isa.md, VECTOR), its third pipeline stage: from the
// fold's last float32 r = ±mant · 2^exp (normalised: mant ≥ 2^23 unless 0),
// `clamp(rint(r), -128 + offset, 127 + offset) - offset`, rint half to even, an r of 2^31 or more
// in magnitude reading as INT_MIN (onnxruntime's cvtps2dq), so the low bound. |r| ≥ 2^16 lies
// past any bound, so the rounding shift never exceeds 25 bits (glc/isa/vector_linear.py, to_int8).
module vector_round (
    input  logic               r_neg,
    input  logic        [23:0] r_mant,
    input  logic signed [11:0] r_exp,
    input  logic signed [8:0]  offset,
    output logic signed [7:0]  q
);
    logic [16:0]        kept;  // r_mant >> shift, shift ≥ 8 where it is used
    logic [23:0]        below, half;
    logic [16:0]        whole;
    logic [4:0]         shift;
    logic signed [18:0] value, low_bound, high_bound;

    always_comb begin
        shift = 5'(-r_exp);
        kept  = 17'(r_mant >> shift);
        below = r_mant & ((24'd1 << shift) - 24'd1);
        half  = 24'd1 << (shift - 5'd1);
        if (r_mant == '0 || r_exp < -12'sd24) whole = '0;  // r_mant < 2^24: below one half
        else if (r_exp >= -12'sd7) whole = 17'h10000;
        else whole = kept + 17'(below > half || (below == half && kept[0]));
        low_bound  = 19'(offset) - 19'sd128;
        high_bound = 19'(offset) + 19'sd127;
        value = r_neg ? -$signed({2'b00, whole}) : $signed({2'b00, whole});
        if (r_mant != '0 && r_exp >= 12'sd8) value = low_bound;
        if (value < low_bound) value = low_bound;
        if (value > high_bound) value = high_bound;
        q = 8'(value - 19'(offset));
    end
endmodule
