// The STORE's `linear` conversion of one int32 element (docs/isa.md, "Conversion in STORE"):
// ONNX's requantization `clamp(rint(float32(x) · m) + zero, -128, 127)` with the float32
// multiplier `m` given as its bits, computed with integer logic only (glc/isa/linear.py is the
// same algorithm and says why it is exact): float32(x) is |x| rounded half to even to a 24-bit
// mantissa, the float32 product the 48-bit product of the mantissas rounded again to 24 bits,
// and rint a third round-half-to-even shift. A product ≥ 2^8 saturates (so float32 overflow
// cannot matter) and one < 2^-25·2^24 is 0 (so subnormals cannot); a subnormal or zero
// multiplier gives 0, an exponent field of 255 (±inf, NaN) saturates any x ≠ 0.
module requantize_linear (
    input  logic signed [31:0] x,
    input  logic        [31:0] m,
    input  logic signed [7:0]  zero,
    output logic signed [7:0]  q
);
    localparam int MANT = 23;   // float32 fraction bits
    localparam int BIAS = 127;  // float32 exponent bias

    logic [31:0] magnitude;
    logic [4:0]  msb;            // highest set bit of |x|
    logic [24:0] ma_wide, mp_wide;
    logic [23:0] ma, mp;         // float32(x) = ma · 2^ea; the product mp · 2^e
    logic [47:0] product;
    logic signed [11:0] ea, e;
    logic [7:0]  em;
    logic [8:0]  whole;          // |rint(product)|, 256 standing for "saturated"
    logic signed [10:0] sum;

    // value >> shift rounded half to even (shift ≤ 31; value < 2^48).
    function automatic logic [47:0] round_shift(input logic [47:0] value, input logic [5:0] shift);
        logic [47:0] kept, below, half;
        kept  = value >> shift;
        below = value & ((48'd1 << shift) - 48'd1);
        half  = shift == 6'd0 ? 48'd0 : 48'd1 << (shift - 6'd1);
        round_shift = kept + 48'(shift != 6'd0 && (below > half || (below == half && kept[0])));
    endfunction

    always_comb begin
        logic [5:0] s;
        magnitude = x[31] ? 32'(-x) : 32'(x);
        msb = '0;
        for (int i = 0; i < 32; i++) if (magnitude[i]) msb = 5'(i);
        // float32(x): 24 significant bits (exact below 2^24), the carry of a round-up renormalised
        if (msb >= 5'(MANT)) ma_wide = 25'(round_shift(48'(magnitude), 6'(msb - 5'(MANT))));
        else ma_wide = 25'(magnitude << (5'(MANT) - msb));
        ma = ma_wide[24] ? 24'h800000 : ma_wide[23:0];
        ea = 12'(msb) - 12'(MANT) + 12'(ma_wide[24]);
        // the float32 product: the top bit of ma·mm is bit 46 or 47, keep 24 bits from there
        em = m[30:23];
        product = 48'(ma) * 48'({1'b1, m[22:0]});
        s = product[47] ? 6'(MANT + 1) : 6'(MANT);
        mp_wide = 25'(round_shift(product, s));
        mp = mp_wide[24] ? 24'h800000 : mp_wide[23:0];
        e = 12'(s) + 12'(mp_wide[24]) + ea + 12'(em) - 12'(BIAS + MANT);
        // rint(mp · 2^e): saturated from e ≥ -15 (mp ≥ 2^23), 0 beyond a shift of 25 (mp < 2^24)
        if (e >= -12'sd15) whole = 9'd256;
        else if (e < -12'sd25) whole = 9'd0;
        else whole = 9'(round_shift(48'(mp), 6'(-e)));
        if (em == 8'hff) whole = 9'd256;
        if (x == '0 || em == 8'h00) whole = 9'd0;
        // the sign by negation, not a multiplication by ±1 (which Yosys maps to a DSP in series)
        sum = (x[31] ^ m[31] ? -$signed({2'b00, whole}) : $signed({2'b00, whole})) + 11'(zero);
        q = sum > 11'sd127 ? 8'sd127 : sum < -11'sd128 ? -8'sd128 : 8'(sum);
    end
endmodule
