// The fused multiply-add of VECTOR `lin` (docs/isa.md, VECTOR) in one lane: `r = p + a` rounded
// once to float32, half to even, where p = ±product · 2^p_exp is the exact product of the source
// element (plus the offset) and a scale's mantissa, formed the cycle before (hw/vector_unit.sv),
// and a the addend. Integer logic only; glc/isa/vector_linear.py computes the same frame and
// rounding and says why they are exact. A float is `±mant · 2^exp`, exp the exponent of the
// mantissa's last bit. The adder's frame ends GUARD bits below the larger term's last bit: a term
// within GUARD bits is shifted up exactly, one further down is shifted down with its lost bits
// ORed into the frame's last bit (sticky) — here both as one sticky right shift of the term
// shifted up by GUARD; the sum is then rounded to 24 bits, or normalised up when shorter.
// Three pipeline stages, a sum entering each cycle (docs/isa.md "Timing", lin's E): the terms
// aligned in the frame; their signed sum and its leading one; the rounding. The result of a sum
// entering in cycle x is on r_* in cycle x+2. hw/vector_round.sv converts the fold's last r to int8.
module vector_linear (
    input  logic               clk,
    input  logic               p_neg,    // the product
    input  logic        [32:0] product,
    input  logic signed [11:0] p_exp,
    input  logic               p_zero,   // product == 0, known before the product
    input  logic               a_neg,    // the addend
    input  logic        [23:0] a_mant,
    input  logic signed [11:0] a_exp,
    input  logic               a_zero,   // a_mant == 0
    output logic               r_neg,    // the rounded sum, normalised (r_mant ≥ 2^23 unless 0)
    output logic        [23:0] r_mant,
    output logic signed [11:0] r_exp,
    output logic               r_zero    // r_mant == 0
);
    localparam int GUARD = 26;
    localparam int FRAME = 61;  // the 33-bit product shifted up by GUARD, and a carry
    localparam int MANT  = 23;  // float32 fraction bits

    // value >> down in frame units, the lost bits ORed into the last bit (sticky).
    function automatic logic [FRAME-1:0] shifted_down(input logic [FRAME-1:0] value,
                                                      input logic [12:0] down);
        if (down >= 13'(FRAME)) shifted_down = FRAME'(value != '0);
        else shifted_down = (value >> 6'(down))
                          | FRAME'((value & ((FRAME'(1) << 6'(down)) - FRAME'(1))) != '0);
    endfunction

    // The index of the highest set bit (0 for 0): each bit with none set above it (a prefix OR
    // from the top, which synthesis builds as a tree) ORs its index in, all at once. A tree of
    // six halvings, each testing what the one above it kept, was this stage's path: 19–21 levels.
    function automatic logic [5:0] highest(input logic [FRAME-1:0] value);
        logic [FRAME-1:0] above;  // above[i]: a bit above i is set
        above[FRAME-1] = 1'b0;
        for (int i = FRAME - 2; i >= 0; i--) above[i] = above[i+1] | value[i+1];
        highest = '0;
        for (int i = 0; i < FRAME; i++) if (value[i] && !above[i]) highest |= 6'(i);
    endfunction

    // Stage 1: the terms in the frame: the one with the larger exponent shifted up by GUARD, the
    // other as far less as its exponent is lower (exact within GUARD bits, sticky below), as an
    // adder's swap and align: both differences at once, one shifter. A zero term takes the
    // other's exponent, so it cannot push the other out of the frame.
    logic signed [11:0] ep, ea, low;
    logic signed [12:0] p_less, a_less;  // ea - ep, ep - ea
    logic               a_larger;
    logic [FRAME-1:0]   p_up, a_up, p_framed, a_framed;
    always_comb begin
        ep       = p_zero ? a_exp : p_exp;
        ea       = a_zero ? ep : a_exp;
        p_less   = 13'(ea) - 13'(ep);
        a_less   = 13'(ep) - 13'(ea);
        a_larger = !p_less[12] && p_less != '0;
        low      = (a_larger ? ea : ep) - 12'(GUARD);
        p_up     = FRAME'(product) << GUARD;
        a_up     = FRAME'(a_mant) << GUARD;
        p_framed = a_larger ? shifted_down(p_up, p_less) : p_up;
        a_framed = a_larger ? a_up : shifted_down(a_up, a_less);
    end
    logic               p_neg1_q, a_neg1_q;
    logic [FRAME-1:0]   p_framed_q, a_framed_q;
    logic signed [11:0] low1_q;
    always_ff @(posedge clk) begin
        p_neg1_q   <= p_neg;
        a_neg1_q   <= a_neg;
        p_framed_q <= p_framed;
        a_framed_q <= a_framed;
        low1_q     <= low;
    end

    // Stage 2: the signed sum as a magnitude and a sign, its three candidates side by side (one
    // carry chain deep, not a negation, an addition and a negation in series), and its leading one.
    logic [FRAME-1:0] sum, a_minus_p, magnitude;  // both terms are below 2^60: no carry out
    logic [FRAME:0]   p_minus_a;                  // its top bit: A > P
    logic             neg;
    always_comb begin
        sum       = p_framed_q + a_framed_q;
        p_minus_a = {1'b0, p_framed_q} - {1'b0, a_framed_q};
        a_minus_p = a_framed_q - p_framed_q;
        if (p_neg1_q == a_neg1_q) begin
            magnitude = sum;
            neg       = p_neg1_q;
        end else if (!p_minus_a[FRAME]) begin
            magnitude = FRAME'(p_minus_a);
            neg       = p_neg1_q;
        end else begin
            magnitude = a_minus_p;
            neg       = a_neg1_q;
        end
        if (magnitude == '0) neg = 1'b0;  // an exact zero is +0, as the model's
    end
    logic               neg2_q, zero2_q;
    logic [FRAME-1:0]   magnitude2_q;
    logic [5:0]         msb2_q;
    logic signed [11:0] low2_q;
    always_ff @(posedge clk) begin
        neg2_q       <= neg;
        zero2_q      <= magnitude == '0;
        magnitude2_q <= magnitude;
        msb2_q       <= highest(magnitude);
        low2_q       <= low1_q - 12'(MANT);  // the exponent of bit MANT: stage 3's base
    end

    // Stage 3: rounded to 24 bits, or normalised up, as one left shift putting the leading one
    // at bit 63 (by 63 - msb = ~msb: no subtraction before the shifter): the 24 bits kept, the
    // round bit and the sticky OR below it are then fixed bits, for a shift down (msb > 23) and
    // up alike (up, the bits below the 24 are zeros). The exponent low + msb - 23, and one more
    // where the rounding carries out, is chosen between the two, computed beside the rounding
    // (no adder after its carry chain: this stage was the deepest path of the design, 22 levels).
    logic [63:0]        aligned;
    logic [MANT+1:0]    m_wide;
    logic signed [11:0] e_kept, e_carried;
    always_comb begin
        aligned   = 64'(magnitude2_q) << ~msb2_q;
        m_wide    = (MANT+2)'(aligned[63:40])
                  + (MANT+2)'(aligned[39] && (aligned[38:0] != '0 || aligned[40]));
        e_kept    = low2_q + 12'(msb2_q);
        e_carried = low2_q + 12'(msb2_q) + 12'sd1;
        r_neg  = neg2_q;
        r_mant = m_wide[MANT+1] ? 24'h800000 : m_wide[MANT:0];
        r_exp  = zero2_q ? 12'sd0 : m_wide[MANT+1] ? e_carried : e_kept;
        r_zero = zero2_q;
    end
endmodule
