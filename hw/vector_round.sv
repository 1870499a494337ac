// The int8 a VECTOR `lin` fold writes (docs/isa.md, VECTOR), its last pipeline stage: from the
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
    // Rounded from the round bit and the sticky OR below it (no comparison of the remainder),
    // then `clamp(v, -128 + offset, 127 + offset) - offset` as `saturate(v - offset)` to int8:
    // both signs' differences formed side by side, one carry chain each, the saturation from
    // the top bits. Two carry chains in series, not six.
    logic [16:0]        kept, whole;  // r_mant >> shift, shift ≥ 8 where it is used
    logic [4:0]         shift;
    logic               round_bit, sticky;
    logic signed [18:0] up, down, value;  // whole - offset, -whole - offset
    always_comb begin
        shift     = 5'(-r_exp);
        kept      = 17'(r_mant >> shift);
        round_bit = r_mant[shift - 5'd1];
        sticky    = (r_mant & ((24'd1 << (shift - 5'd1)) - 24'd1)) != '0;
        if (r_mant == '0 || r_exp < -12'sd24) whole = '0;  // r_mant < 2^24: below one half
        else if (r_exp >= -12'sd7) whole = 17'h10000;
        else whole = kept + 17'(round_bit && (sticky || kept[0]));
        up    = $signed({2'b00, whole}) - 19'(offset);
        down  = -$signed({2'b00, whole}) - 19'(offset);
        value = r_neg ? down : up;
        if (r_mant != '0 && r_exp >= 12'sd8) q = -8'sd128;  // INT_MIN: the low bound
        else if (value[18:7] != '0 && value[18:7] != '1) q = value[18] ? -8'sd128 : 8'sd127;
        else q = value[7:0];
    end
endmodule
