// The int8 a VECTOR `lin` fold writes (docs/isa.md, VECTOR), its last two pipeline stages: from
// the fold's last float32 r = ±mant · 2^exp (normalised: mant ≥ 2^23 unless 0),
// `clamp(rint(r), -128 + offset, 127 + offset) - offset`, rint half to even, an r of 2^31 or more
// in magnitude reading as INT_MIN (onnxruntime's cvtps2dq), so the low bound. |r| ≥ 2^16 lies
// past any bound, so the rounding shift never exceeds 25 bits (glc/isa/vector_linear.py, to_int8).
// Two stages (ISA revision 3.2; one before, 29 logic levels from the pass select to the
// accumulator's write data): the rounding to an integer, registered; then the offset and the
// saturation. The int8 of the r given in cycle x is on q in x+1.
module vector_round (
    input  logic               clk,
    input  logic               r_neg,
    input  logic        [23:0] r_mant,
    input  logic signed [11:0] r_exp,
    input  logic signed [8:0]  offset,
    output logic signed [7:0]  q
);
    // Rounded from the round bit and the sticky OR below it (no comparison of the remainder),
    // one shifter giving both the kept bits and the round bit, by shift - 1 = ~r_exp (no
    // negation and no decrement before it), the sticky bit beside it from the unshifted bits,
    // then `clamp(v, -128 + offset, 127 + offset) - offset` as `saturate(v - offset)` to int8:
    // both signs' differences formed side by side, one carry chain each, the saturation from
    // the top bits.
    logic [16:0]        kept, whole, whole_q;  // r_mant >> shift, shift ≥ 8 where it is used
    logic [17:0]        half;  // r_mant >> (shift - 1): kept and the round bit
    logic [4:0]         less;  // shift - 1 = -r_exp - 1 = ~r_exp: no adder before the shifter
    logic               sticky, int_min, int_min_q, neg_q;
    logic signed [8:0]  offset_q;
    logic signed [18:0] up, down, value;  // whole - offset, -whole - offset
    always_comb begin
        less      = ~r_exp[4:0];
        half      = 18'(r_mant >> less);
        kept      = half[17:1];
        // each bit compared with the shift, not masked by a mask formed with a subtraction
        sticky    = 1'b0;
        for (int i = 0; i < 23; i++) sticky |= r_mant[i] && 5'(i) < less;
        if (r_mant == '0 || r_exp < -12'sd24) whole = '0;  // r_mant < 2^24: below one half
        else if (r_exp >= -12'sd7) whole = 17'h10000;
        else whole = kept + 17'(half[0] && (sticky || kept[0]));
        int_min = r_mant != '0 && r_exp >= 12'sd8;  // INT_MIN: the low bound
    end
    always_ff @(posedge clk) begin
        whole_q   <= whole;
        int_min_q <= int_min;
        neg_q     <= r_neg;
        offset_q  <= offset;
    end
    always_comb begin
        up    = $signed({2'b00, whole_q}) - 19'(offset_q);
        down  = -$signed({2'b00, whole_q}) - 19'(offset_q);
        value = neg_q ? down : up;
        if (int_min_q) q = -8'sd128;
        else if (value[18:7] != '0 && value[18:7] != '1) q = value[18] ? -8'sd128 : 8'sd127;
        else q = value[7:0];
    end
endmodule
