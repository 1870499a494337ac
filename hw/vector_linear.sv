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
// aligned in the frame; their signed sum and where its leading one is; the rounding. The result
// of a sum entering in cycle x is on r_* in cycle x+2. hw/vector_round.sv converts the fold's
// last r to int8. The exponents' differences come formed (a_over, a_under), not found in the
// align stage: an addend is `fixed` (the instruction's constant) or the sum of the group's row
// before, whose rounding stage forms its exponent's differences from the next row's product
// exponent (next_exp, its scale's) beside the exponent itself (r_over, r_under). The exponent
// difference and the align shifter in one cycle were the deepest path of ecp5n8's
// place-and-route (25.2 ns, 27 levels), the sum stage the second (24.9 ns, 28 levels).
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
    input  logic signed [12:0] a_over,   // a_exp - p_exp, unless a_zero
    input  logic signed [12:0] a_under,  // p_exp - a_exp, unless a_zero
    input  logic signed [11:0] next_exp, // the product exponent the sum is the next row's addend of
    output logic               r_neg,    // the rounded sum, normalised (r_mant ≥ 2^23 unless 0)
    output logic        [23:0] r_mant,
    output logic signed [11:0] r_exp,
    output logic               r_zero,   // r_mant == 0
    output logic signed [12:0] r_over,   // r_exp - next_exp, unless r_zero
    output logic signed [12:0] r_under   // next_exp - r_exp, unless r_zero
);
    localparam int GUARD = 26;
    localparam int FRAME = 61;  // the 33-bit product shifted up by GUARD, and a carry
    localparam int MANT  = 23;  // float32 fraction bits

    // value >> down in frame units, the lost bits ORed into the last bit (sticky): each bit
    // compared with the shift, not masked by a mask formed with a subtraction (a carry chain).
    function automatic logic [FRAME-1:0] shifted_down(input logic [FRAME-1:0] value,
                                                      input logic [12:0] down);
        logic lost;
        lost = 1'b0;
        for (int i = 0; i < FRAME; i++) lost |= value[i] && 6'(i) < 6'(down);
        if (down >= 13'(FRAME)) shifted_down = FRAME'(value != '0);
        else shifted_down = (value >> 6'(down)) | FRAME'(lost);
    endfunction

    // The index of the highest set bit of a byte (0 for 0).
    function automatic logic [2:0] highest(input logic [7:0] value);
        highest = '0;
        for (int i = 1; i < 8; i++) if (value[i]) highest = 3'(i);
    endfunction

    // Stage 1: the terms in the frame: the one with the larger exponent shifted up by GUARD, the
    // other as far less as its exponent is lower (exact within GUARD bits, sticky below), as an
    // adder's swap and align: both differences given, one shifter each. A zero term takes the
    // other's exponent (here: is not the one shifted), so it cannot push the other out of the
    // frame.
    logic signed [11:0] low;
    logic               a_larger;
    logic [FRAME-1:0]   p_up, a_up, p_framed, a_framed;
    always_comb begin
        a_larger = p_zero || !a_zero && !a_over[12] && a_over != '0;
        low      = (a_larger ? a_exp : p_exp) - 12'(GUARD);
        p_up     = FRAME'(product) << GUARD;
        a_up     = FRAME'(a_mant) << GUARD;
        p_framed = a_larger ? shifted_down(p_up, a_over) : p_up;
        a_framed = a_larger ? a_up : shifted_down(a_up, a_under);
    end
    logic               p_neg1_q, a_neg1_q, sub1_q;
    logic [FRAME-1:0]   p_framed_q, a_framed_q;
    logic signed [11:0] low1_q, next1_q;
    always_ff @(posedge clk) begin
        next1_q    <= next_exp;
        p_neg1_q   <= p_neg;
        a_neg1_q   <= a_neg;
        sub1_q     <= p_neg != a_neg;
        p_framed_q <= p_framed;
        a_framed_q <= a_framed;
        low1_q     <= low;
    end

    // Stage 2: the signed sum as a magnitude and a sign, its three candidates side by side (one
    // carry chain deep, not a negation, an addition and a negation in series), and where its
    // leading one is, in two parts: the highest nonzero byte, and the highest bit of every byte
    // (stage 3 picks the one of the byte found, beside its shift by whole bytes). A 61-bit
    // leading-one detection after the carry chains was this stage's path, 28 levels routed.
    logic [FRAME-1:0]  sum, a_minus_p, magnitude;  // both terms are below 2^60: no carry out
    logic [FRAME:0]    p_minus_a;                  // its top bit: A > P
    logic [7:0][7:0]   bytes;
    logic [7:0][2:0]   bits;
    logic [2:0]        top;
    logic              neg;
    always_comb begin
        sum       = p_framed_q + a_framed_q;
        p_minus_a = {1'b0, p_framed_q} - {1'b0, a_framed_q};
        a_minus_p = a_framed_q - p_framed_q;
        if (!sub1_q) begin
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
        bytes = 64'(magnitude);
        top   = '0;
        for (int k = 0; k < 8; k++) begin
            bits[k] = highest(bytes[k]);
            if (bytes[k] != '0) top = 3'(k);
        end
    end
    logic               neg2_q, zero2_q;
    logic [FRAME-1:0]   magnitude2_q;
    logic [2:0]         top2_q;
    logic [7:0][2:0]    bits2_q;
    logic signed [11:0] low2_q;
    logic signed [12:0] over2_q, under2_q;
    always_ff @(posedge clk) begin
        neg2_q       <= neg;
        zero2_q      <= magnitude == '0;
        magnitude2_q <= magnitude;
        top2_q       <= top;
        bits2_q      <= bits;
        low2_q       <= low1_q - 12'(MANT);  // the exponent of bit MANT: stage 3's base
        over2_q      <= 13'(low1_q) - 13'(MANT) - 13'(next1_q);  // the same, less next_exp
        under2_q     <= 13'(next1_q) - 13'(low1_q) + 13'(MANT);
    end

    // Stage 3: rounded to 24 bits, or normalised up, as one left shift putting the leading one
    // at bit 63 (by 63 - msb = ~msb: no subtraction before the shifter; by whole bytes, from a
    // register, while the leading byte's highest bit is chosen, then by bits): the 24 bits
    // kept, the round bit and the sticky OR below it are then fixed bits, for a shift down
    // (msb > 23) and up alike (up, the bits below the 24 are zeros). The exponent
    // low + msb - 23, and one more where the rounding carries out, is chosen between the two,
    // computed beside the rounding (no adder after its carry chain: this stage was the deepest
    // path of the design, 22 levels); so are the exponent's differences from next_exp.
    logic [5:0]         msb;
    logic [63:0]        aligned;
    logic [MANT+1:0]    m_wide;
    logic signed [11:0] e_kept, e_carried;
    logic signed [12:0] over_kept, over_carried, under_kept, under_carried;
    always_comb begin
        msb       = {top2_q, bits2_q[top2_q]};
        aligned   = (64'(magnitude2_q) << {~top2_q, 3'd0}) << ~msb[2:0];
        m_wide    = (MANT+2)'(aligned[63:40])
                  + (MANT+2)'(aligned[39] && (aligned[38:0] != '0 || aligned[40]));
        e_kept    = low2_q + 12'(msb);
        e_carried = low2_q + 12'(msb) + 12'sd1;
        over_kept     = over2_q + 13'(msb);
        over_carried  = over2_q + 13'(msb) + 13'sd1;
        under_kept    = under2_q - 13'(msb);
        under_carried = under2_q - 13'(msb) - 13'sd1;
        r_neg  = neg2_q;
        r_mant = m_wide[MANT+1] ? 24'h800000 : m_wide[MANT:0];
        r_exp  = zero2_q ? 12'sd0 : m_wide[MANT+1] ? e_carried : e_kept;
        r_zero = zero2_q;
        r_over  = m_wide[MANT+1] ? over_carried : over_kept;
        r_under = m_wide[MANT+1] ? under_carried : under_kept;
    end
endmodule
