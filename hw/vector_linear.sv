// One step of VECTOR `lin` in one lane (docs/isa.md, VECTOR): the float32 fused multiply-add
// `r = x · scale + a` rounded once, half to even, and the int8 the fold writes when r is its
// last: `clamp(rint(r), -128 + offset, 127 + offset) - offset`, an r of 2^31 or more in
// magnitude reading as INT_MIN (onnxruntime's cvtps2dq). Integer logic only; glc/isa/
// vector_linear.py is the same algorithm and says why it is exact. A float is `±mant · 2^exp`,
// exp the exponent of the mantissa's last bit. The adder's frame ends GUARD bits below the
// larger term's last bit: a term within GUARD bits is shifted up exactly, one further down is
// shifted down with its lost bits ORed into the frame's last bit (sticky); the sum is then
// rounded to 24 bits, or normalised up when shorter.
module vector_linear (
    input  logic signed [9:0]  x,        // the source element plus the offset
    input  logic        [31:0] scale,    // float32 bits, exponent field at most 190
    input  logic               a_neg,    // the addend
    input  logic        [23:0] a_mant,
    input  logic signed [11:0] a_exp,
    input  logic signed [8:0]  offset,
    output logic               r_neg,    // the rounded sum, normalised (r_mant ≥ 2^23 unless 0)
    output logic        [23:0] r_mant,
    output logic signed [11:0] r_exp,
    output logic signed [7:0]  q
);
    localparam int GUARD = 26;
    localparam int FRAME = 61;  // the 33-bit product shifted up by GUARD, and a carry
    localparam int MANT  = 23;  // float32 fraction bits

    // value >> shift rounded half to even (shift < 64).
    function automatic logic [FRAME-1:0] round_shift(input logic [FRAME-1:0] value,
                                                     input logic [5:0] shift);
        logic [FRAME-1:0] kept, below, half;
        kept  = value >> shift;
        below = value & ((FRAME'(1) << shift) - FRAME'(1));
        half  = shift == 6'd0 ? '0 : FRAME'(1) << (shift - 6'd1);
        round_shift = kept + FRAME'(shift != 6'd0 && (below > half || (below == half && kept[0])));
    endfunction

    // value · 2^up in frame units: exact for 0 ≤ up ≤ GUARD; below, truncated and sticky.
    function automatic logic [FRAME-1:0] framed(input logic [FRAME-1:0] value,
                                                input logic signed [11:0] up);
        logic [11:0] down;
        if (up >= 0) framed = value << 5'(up);
        else begin
            down = 12'(-up);
            if (down >= 12'(FRAME)) framed = FRAME'(value != '0);
            else framed = (value >> 6'(down))
                        | FRAME'((value & ((FRAME'(1) << 6'(down)) - FRAME'(1))) != '0);
        end
    endfunction

    logic [8:0]              magnitude_x;
    logic [32:0]             product;
    logic                    p_neg;
    logic signed [11:0]      s_exp, ep, ea, low;
    logic [FRAME-1:0]        p_framed, a_framed, magnitude;
    logic signed [FRAME:0]   total;
    logic [5:0]              msb;
    logic signed [11:0]      shift;
    logic [FRAME-1:0]        m_wide;
    logic [16:0]             whole;
    logic signed [18:0]      value, low_bound, high_bound;

    always_comb begin
        magnitude_x = x[9] ? 9'(-x) : 9'(x);
        product = 33'(magnitude_x) * 33'({scale[30:23] != 8'd0, scale[22:0]});
        p_neg   = x[9] ^ scale[31];
        s_exp   = (scale[30:23] == 8'd0 ? 12'sd1 : 12'($unsigned(scale[30:23]))) - 12'sd150;
        // A zero term takes the other's exponent, so it cannot push the other out of the frame.
        ep  = product == '0 ? a_exp : s_exp;
        ea  = a_mant == '0 ? ep : a_exp;
        low = (ep > ea ? ep : ea) - 12'(GUARD);
        p_framed = framed(FRAME'(product), ep - low);
        a_framed = framed(FRAME'(a_mant), ea - low);
        total = (p_neg ? -$signed({1'b0, p_framed}) : $signed({1'b0, p_framed}))
              + (a_neg ? -$signed({1'b0, a_framed}) : $signed({1'b0, a_framed}));
        magnitude = total[FRAME] ? FRAME'(-total) : FRAME'(total);
        msb = '0;
        for (int i = 0; i < FRAME; i++) if (magnitude[i]) msb = 6'(i);
        shift = 12'(msb) - 12'(MANT);
        if (shift > 0) m_wide = round_shift(magnitude, 6'(shift));
        else m_wide = magnitude << 6'(-shift);
        r_neg  = total[FRAME];
        r_mant = m_wide[MANT+1] ? 24'h800000 : m_wide[MANT:0];
        r_exp  = magnitude == '0 ? 12'sd0 : low + shift + 12'(m_wide[MANT+1]);
        // rint: |r| ≥ 2^16 lies past any clamp bound, 2^31 or more is INT_MIN (the low bound)
        if (r_mant == '0) whole = '0;
        else if (r_exp >= -12'sd7) whole = 17'h10000;
        else if (r_exp < -12'sd25) whole = '0;  // r_mant < 2^24: below one half
        else whole = 17'(round_shift(FRAME'(r_mant), 6'(-r_exp)));
        low_bound  = 19'(offset) - 19'sd128;
        high_bound = 19'(offset) + 19'sd127;
        value = r_neg ? -$signed({2'b00, whole}) : $signed({2'b00, whole});
        if (r_mant != '0 && r_exp >= 12'sd8) value = low_bound;
        if (value < low_bound) value = low_bound;
        if (value > high_bound) value = high_bound;
        q = 8'(value - 19'(offset));
    end
endmodule
