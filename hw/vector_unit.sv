// The VECTOR unit (ISA v2 B, docs/isa.md "VECTOR"): executes its queue in order, one
// instruction at a time, beside the array. VECTOR folds `group` source rows into each of `count`
// accumulator rows:
//   for i = 0 … count-1: r = op-fold over j of S[src + i·ostride + j·gstride]   (int32 lanes)
//                        ACC[dst+i] = accumulate ? op(ACC[dst+i], r) : r
// with op add (wrapping), max (signed) or mul (wrapping); S is the scratchpad (int8,
// sign-extended) or, with src_acc, the accumulator. `lin` folds int8 rows in float32 instead,
// starting from `fixed`, one fused multiply-add per row by its `scale`, and writes the result's
// int8 conversion, in a pipeline of six stages a row (ISA revision 3.2: the product's operands
// and the int8's rounding registered, so every multiplier has a register before and after it):
// the product's operands and the exact product (here), the rounded sum (hw/vector_linear.sv,
// three stages), the int8 (hw/vector_round.sv, two). A group's next row needs
// this one's sum, so lin reads its outputs in blocks (of LIN_WAYS outputs when a row takes a
// cycle): the block's first rows, then its second rows, each at least LIN_WAYS cycles after its
// first (a short last block waits the difference). It computes LANES of the N lanes a cycle, so
// it takes PASSES = N / LANES cycles over each source row (the row read again each cycle, a
// slice of its lanes folded; a narrow unit for an FPGA: docs/isa.md, `vector_lanes`), and a lin
// block holds LIN_BLOCK = ⌈LIN_WAYS / PASSES⌉ outputs.
// Issuing at t it addresses one source row per PASSES cycles in t+1 … t+count·group·PASSES (lin
// and self-reading folds: and their waits); E = t + 1 + count·group·PASSES plus the waits and
// the op's latency: its pipeline's cycles after the last read (FOLD_LATENCY, LIN_LATENCY,
// LUT_LATENCY; none for table). The memories' reads are registered (ISA revision 3.1: the row
// addressed in c arrives in c+2), so the data path runs two cycles behind the addresses (a
// stage `pre_*` carries each row's control to `fold_*`, where the row arrives), and each op's
// last write lands at the end of E+1, which anything issuing at E reads with its registered
// reads from E+2. A fold (add, max, mul; ISA revision 3.3) registers its operands as the row
// arrives (m_*), combines them the cycle after into fold_q, and writes an output from fold_q
// the cycle after its last slice (w_*): every multiplier between registers, none between a
// read's forward and the accumulator's write data. Its outputs are made in order, so a fold
// whose accumulator sources may meet its outputs (self_q) reads each output after the first
// FOLD_LATENCY cycles late, when the one before has landed. The data path reads the
// instruction's fields from copies a cycle behind the issue's (dp_*), so the next instruction
// issuing at E leaves them to the last row arriving by E-1. SYNC completes in t + 1. `table`
// writes source rows into the unit's tables (one per column) and `lut` maps each int8 element
// of a source row through its column's table (the tables' registered read, below).
// It pops ld2vu (prev) and st2vu (next), pushes vu2ld (prev) and vu2st
// (next); it never touches DRAM.
// It reads the accumulator through ACC_READS ports. With a row in one pass (2): port 0 the
// source row and port 1 the output row's old value, every cycle. With several (1): the two take
// turns on port 0, so the accumulator has a bank fewer per write port (hw/multiport_ram.sv; the
// congestion of docs/benchmarks.md, "Synthesis") and the timing is unchanged: the source row is
// read at its row's first pass and held for the others (only this unit's own writes land during
// an instruction, and each lands at the end of a row's first pass, which that read sees); an
// output's old row is read in the cycle before its first row's first pass (the issue cycle, or
// the previous row's last pass) and held for its passes. That read misses only the next
// cycle's writes: the previous output's, to another row, or an unordered race's.
// Where it shares the accumulator's ports with LOAD and STORE (docs/isa.md, "Accumulator
// ports"), a VECTOR issues only while no LOAD with `acc` issues or is in progress and, if it
// reads ACC (`src_acc` or `accumulate`), no STORE either; it holds the write port while in
// progress (in_progress) and the read port, if it reads ACC, from its issue (read_turn).
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module vector_unit #(
    // N: lanes per row
    parameter int N = 16,
    // lanes computed a cycle (dividing N)
    parameter int LANES = 16,
    // scratchpad rows, for SP_RANGE
    parameter int SP_ROWS = 16384,
    // accumulator rows, for ACC_RANGE
    parameter int ACC_ROWS = 4096,
    // accumulator read ports: 2, or 1 when a row takes several passes (above)
    parameter int ACC_READS = 2
) (
    input  logic               clk,
    input  logic               rst,
    input  logic               stop,          // the machine has stopped: issue nothing
    // queue head
    input  logic               head_valid,
    // The queue carries whole instruction words; this unit reads VECTOR and SYNC.
    /* verilator lint_off UNUSEDSIGNAL */
    input  isa_pkg::queue_entry_t head,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic               issue,
    // tokens: pop ld2vu (prev) and st2vu (next) at issue, push vu2ld / vu2st at completion
    input  logic               prev_token_ok,
    input  logic               next_token_ok,
    output logic               pop_prev,
    output logic               pop_next,
    output logic               push_prev,
    output logic               push_next,
    output logic [31:0]        push_pc,
    // source rows: a scratchpad read port
    output logic [15:0]        sp_row,
    input  logic [N-1:0][7:0]  sp_data,
    // the accumulator's read ports (above): the rows given now arrive in the next cycle
    output logic [ACC_READS-1:0][15:0]        rd_row,
    input  logic [ACC_READS-1:0][N-1:0][31:0] rd_data,
    // the ports shared with LOAD and STORE (0 where they are not): a LOAD to ACC, or a STORE,
    // issues or is in progress; the read port is ours (issuing, or in progress: read_held)
    input  logic               load_turn,
    input  logic               store_turn,
    output logic               read_turn,
    output logic               read_held,
    // the output row's write
    output logic               acc_we,
    output logic [15:0]        acc_row,
    output logic [N-1:0][31:0] acc_data,
    // status for the counters and the deadlock rule
    output logic               in_progress,
    output isa_pkg::activity_t activity,
    output isa_pkg::unit_error_t error
);
    localparam int L = LANES;
    localparam int PASSES = N / LANES;
    localparam int PASS_W = PASSES > 1 ? $clog2(PASSES) : 1;
    localparam int LIN_BLOCK = (LIN_WAYS + PASSES - 1) / PASSES;  // outputs in a lin block
    if (ACC_READS != 2 && !(ACC_READS == 1 && PASSES > 1)) begin : g_bad_reads
        $fatal(1, "vector_unit: ACC_READS=%0d: 2, or 1 with LANES < N", ACC_READS);
    end
    logic is_vector, is_sync, free, tokens_ok, ready, bad_src, bad_dst, reads_acc, turn_ok;
    logic [15:0] f_src, f_dst, f_count, f_group, f_ostride, f_gstride;
    logic [31:0] f_fixed;
    assign f_fixed   = head.word[VECTOR_FIXED_LSB +: VECTOR_FIXED_W];
    assign is_vector = head_valid && head.word[OPCODE_W-1:0] == OP_VECTOR;
    assign is_sync   = head_valid && head.word[OPCODE_W-1:0] == OP_SYNC;
    assign f_src     = head.word[VECTOR_SRC_LSB +: VECTOR_SRC_W];
    assign f_dst     = head.word[VECTOR_DST_LSB +: VECTOR_DST_W];
    assign f_count   = head.word[VECTOR_COUNT_LSB +: VECTOR_COUNT_W];
    assign f_group   = head.word[VECTOR_GROUP_LSB +: VECTOR_GROUP_W];
    assign f_ostride = head.word[VECTOR_OSTRIDE_LSB +: VECTOR_OSTRIDE_W];
    assign f_gstride = head.word[VECTOR_GSTRIDE_LSB +: VECTOR_GSTRIDE_W];

    logic                active_q, src_acc_q, accumulate_q, self_q, push_prev_q, push_next_q;
    logic [VECTOR_OP_W-1:0] op_q;
    logic [15:0]         left_q, j_q, group_q, ostride_q, gstride_q;
    // The rows go by blocks of b_q outputs (ways at most: 1, or LIN_BLOCK for lin): row j of
    // each of the block's outputs o in turn, each for PASSES cycles (pass_q: the slice of lanes),
    // then row j+1 after bubble_q waits. row_q is the row addressed, phase_q row j of the block's
    // first output, next_q the next block's first.
    logic [1:0]          b_q, o_q, bubble_q;
    logic [PASS_W-1:0]   pass_q;
    logic [31:0]         row_q, phase_q, next_q, dst_q, pc_q;
    logic [N-1:0][31:0]  fold_q;
    // lin: the offset, the scales, `fixed` as (sign, mantissa, last bit's exponent), and the
    // fold so far in each lane in that form
    logic signed [8:0]   offset_q;
    logic [31:0]         scale0_q, scale1_q;
    logic                fixed_neg_q, fixed_zero_q;
    logic [23:0]         fixed_mant_q;
    logic signed [11:0]  fixed_exp_q;
    logic [N-1:0]        lin_neg_q, lin_zero_q;
    logic [N-1:0][23:0]  lin_mant_q;
    logic [N-1:0][11:0]  lin_exp_q;
    // and its exponent's differences from scale1's, the next row's (hw/vector_linear.sv)
    logic [N-1:0][12:0]  lin_over_q, lin_under_q;
    logic                push_prev_r, push_next_r;
    // The data path's copies of the fields, a cycle behind (above).
    logic [VECTOR_OP_W-1:0] dp_op_q;
    logic                dp_src_acc_q, dp_accumulate_q;
    logic signed [8:0]   dp_offset_q;
    logic [31:0]         dp_scale0_q, dp_scale1_q;
    logic                dp_fixed_neg_q, dp_fixed_zero_q;
    logic [23:0]         dp_fixed_mant_q;
    logic signed [11:0]  dp_fixed_exp_q, dp_scale1_exp_q;
    logic signed [12:0]  dp_fixed_over_q, dp_fixed_under_q;  // fixed's exponent less scale0's
    // A float32's exponent field as the exponent of its mantissa's last bit (a subnormal's: 1).
    function automatic logic signed [11:0] exponent(input logic [7:0] field);
        exponent = (field == 8'd0 ? 12'sd1 : 12'($unsigned(field))) - 12'sd150;
    endfunction
    always_ff @(posedge clk) begin
        dp_op_q         <= op_q;
        dp_src_acc_q    <= src_acc_q;
        dp_accumulate_q <= accumulate_q;
        dp_offset_q     <= offset_q;
        dp_scale0_q     <= scale0_q;
        dp_scale1_q     <= scale1_q;
        dp_fixed_neg_q  <= fixed_neg_q;
        dp_fixed_zero_q <= fixed_zero_q;
        dp_fixed_mant_q <= fixed_mant_q;
        dp_fixed_exp_q  <= fixed_exp_q;
        dp_scale1_exp_q <= exponent(scale1_q[30:23]);
        dp_fixed_over_q  <= 13'(fixed_exp_q) - 13'(exponent(scale0_q[30:23]));
        dp_fixed_under_q <= 13'(exponent(scale0_q[30:23])) - 13'(fixed_exp_q);
    end

    // Range checks at issue (the fields are unsigned, so the last output's last row is the
    // highest source row; transfer_rows computed it when the word was queued).
    assign bad_src   = is_vector && 32'(head.row_end) > (head.word[VECTOR_SRC_ACC_LSB]
                                                     ? ACC_ROWS : SP_ROWS);
    assign bad_dst   = is_vector && 32'(f_dst) + 32'(f_count) > ACC_ROWS
                    && 32'(head.word[VECTOR_OP_LSB +: VECTOR_OP_W]) != VOP_TABLE;
    logic [2:0] drain_q;  // cycles its pipeline still writes after the last row read
    assign free      = !active_q && drain_q == '0 && !stop;
    assign tokens_ok = (!head.word[FLAG_POP_PREV] || prev_token_ok)
                    && (!head.word[FLAG_POP_NEXT] || next_token_ok);
    assign ready     = free && tokens_ok && (is_vector || is_sync);
    assign reads_acc = head.word[VECTOR_SRC_ACC_LSB] || head.word[VECTOR_ACCUMULATE_LSB];
    // A fold reading ACC rows whose span meets the rows it writes (glc/isa/vector_fold.py).
    logic self_reading;
    assign self_reading = head.word[VECTOR_SRC_ACC_LSB] && 32'(f_src) < 32'(f_dst) + 32'(f_count)
                       && 32'(f_dst) < 32'(head.row_end);
    assign turn_ok   = !is_vector || !load_turn && !(reads_acc && store_turn);
    assign issue     = ready && turn_ok && !bad_src && !bad_dst;
    assign pop_prev  = issue && head.word[FLAG_POP_PREV];
    assign pop_next  = issue && head.word[FLAG_POP_NEXT];
    assign error.valid = ready && turn_ok && (bad_src || bad_dst);
    assign error.code  = bad_src && !head.word[VECTOR_SRC_ACC_LSB] ? ERR_SP_RANGE : ERR_ACC_RANGE;
    assign error.pc    = head.pc;

    function automatic logic [31:0] combine(input logic [VECTOR_OP_W-1:0] op, input logic [31:0] a,
                                            input logic [31:0] b);
        case (op)
            VECTOR_OP_W'(VOP_MAX): combine = signed'(a) > signed'(b) ? a : b;
            VECTOR_OP_W'(VOP_MUL): combine = a * b;
            default:     combine = a + b;
        endcase
    endfunction

    // The rows addressed this cycle (unless waiting): the source row and the output row.
    logic reading, pass_end, block_row_end, group_end, last;
    logic [15:0] out_row;
    assign reading       = active_q && bubble_q == '0;
    assign out_row       = 16'(dst_q) + 16'(o_q);
    assign sp_row        = 16'(row_q);
    assign pass_end      = 32'(pass_q) == PASSES - 1;
    assign block_row_end = pass_end && o_q == b_q - 2'd1;
    assign group_end     = j_q == group_q - 16'd1;
    assign last          = reading && block_row_end && group_end && left_q == 16'(b_q);
    // The cycles an op's pipeline writes after its last row is read (docs/isa.md, "Timing").
    function automatic logic [2:0] latency(input logic [VECTOR_OP_W-1:0] op);
        case (op)
            VECTOR_OP_W'(VOP_LIN):   latency = 3'(LIN_LATENCY);
            VECTOR_OP_W'(VOP_LUT):   latency = 3'(LUT_LATENCY);
            VECTOR_OP_W'(VOP_TABLE): latency = 3'd0;
            default:                 latency = 3'(FOLD_LATENCY);
        endcase
    endfunction
    // The instruction completes (and pushes) the cycle after this: its last row's read (table),
    // or its pipeline's last write.
    logic finishing;
    assign finishing = latency(op_q) == 3'd0 ? last : drain_q == 3'd1;

    // min(ways, outputs left): the next block's outputs, ways LIN_BLOCK for lin, else 1
    function automatic logic [1:0] block(input logic lin, input logic [15:0] outputs);
        logic [1:0] ways;
        ways  = lin ? 2'(LIN_BLOCK) : 2'd1;
        block = outputs >= 16'(ways) ? ways : outputs[1:0];
    endfunction

    // lin's waits before row j+1 of a block of b outputs: LIN_WAYS − b·PASSES cycles, if positive
    function automatic logic [1:0] bubble(input logic lin, input logic [1:0] b);
        bubble = lin && 32'(b) * PASSES < LIN_WAYS ? 2'(LIN_WAYS - 32'(b) * PASSES) : 2'd0;
    endfunction

    // Two cycles later, when they arrive (fold_*; pre_*: the cycle between), a fold's operands
    // are registered (m_*); the cycle after, they are combined into the group's fold so far
    // (fold_q); the cycle after a group's last slice, the output row is written (w_*).
    logic               pre_valid_q, pre_first_q, pre_end_q;
    logic [15:0]        pre_dst_q;
    logic [PASS_W-1:0]  pre_pass_q;
    logic               fold_valid_q, fold_first_q, fold_end_q;
    logic [15:0]        fold_dst_q;
    logic [PASS_W-1:0]  fold_pass_q;
    logic               m_valid_q, m_first_q, m_last_q, w_valid_q;
    logic [VECTOR_OP_W-1:0] m_op_q;
    logic [15:0]        m_dst_q, w_dst_q;
    logic [L-1:0][31:0] value, start, m_value_q, m_start_q, other, folded;
    logic [L-1:0][7:0]  sp_lanes;  // this pass's slice of the scratchpad row

    // The accumulator's source row and output row's old value, as the fold uses them (above).
    logic [N-1:0][31:0] src, old;
    if (ACC_READS == 2) begin : g_two_reads
        assign rd_row = {out_row, 16'(row_q)};
        assign src    = rd_data[0];
        assign old    = rd_data[1];
    end else begin : g_one_read
        // Flat vectors: Yosys does not read packed arrays of arrays declared in a generate block.
        logic                    prefetch, old_next_r, old_next_q;
        logic [32*(N-L)-1:0]     src_q;  // lanes L … N-1: the passes after the first
        logic [32*N-1:0]         old_q;
        // The next output's old row, in the cycle before its first row: int ops with
        // accumulate (one output a block), at issue or at the previous output's last row's end.
        // While idle the port is given the head's `dst` whether or not it issues (a read
        // changes nothing), so the address does not wait for the issue decision.
        logic prefetch_next;
        assign prefetch_next = reading && pass_end && group_end && !last && accumulate_q;
        assign prefetch  = issue && is_vector && head.word[VECTOR_ACCUMULATE_LSB] || prefetch_next;
        assign rd_row[0] = !active_q ? f_dst : prefetch_next ? out_row + 16'd1 : 16'(row_q);
        always_ff @(posedge clk) begin
            old_next_r <= prefetch;
            old_next_q <= old_next_r;
            if (old_next_q) old_q <= rd_data[0];
            if (fold_valid_q && fold_pass_q == '0) src_q <= rd_data[0][N-1:L];
        end
        assign src = {src_q, rd_data[0][L-1:0]};
        assign old = old_q;
    end
    // lin stage 0, as each row arrives: |s + offset| and the scale, registered; stage 1 their
    // product (exact, 33 bits, a multiplier between registers), its sign and exponent; stages
    // 2-4 add it to `fixed` (a group's first row) or to the fold so far (at least LIN_WAYS
    // cycles earlier: in lin_*_q as it enters stage 2), the addend's exponent's differences from
    // the product's given with it (`fixed`'s from scale0's in the data-path copies, a sum's from
    // scale1's, the next row's, formed by stage 4 beside its exponent: hw/vector_linear.sv);
    // stages 5-6 convert the group's last sum to int8. s<k>_* go with the row in stage k+1,
    // each for one slice of the lanes (s<k>_pass_q); the slices of an output's last row leave
    // stage 6 one after another, collected in out_q, and the last one writes the row.
    logic               s0_valid_q, s0_first_q, s0_end_q;
    logic [15:0]        s0_dst_q;
    logic [PASS_W-1:0]  s0_pass_q;
    logic [L-1:0]       s0_neg_q, s0_zero_q;
    logic [L-1:0][9:0]  s0_mag_q;
    logic [30:0]        s0_scale_q;  // its magnitude: the sign is in s0_neg_q
    logic               s1_valid_q, s1_first_q, s1_end_q, s2_valid_q, s2_end_q, s3_valid_q,
                        s3_end_q, s4_end_q, s5_end_q;
    logic [15:0]        s1_dst_q, s2_dst_q, s3_dst_q, s4_dst_q, s5_dst_q;
    logic [PASS_W-1:0]  s1_pass_q, s2_pass_q, s3_pass_q, s4_pass_q, s5_pass_q;
    logic [L-1:0]       s1_neg_q, s1_zero_q;
    logic [L-1:0][32:0] s1_product_q;
    logic signed [11:0] s1_exp_q;
    logic [L-1:0]       a_neg, a_zero, r_neg, r_zero, q_neg_q;
    logic [L-1:0][23:0] a_mant, r_mant, q_mant_q;
    logic [L-1:0][11:0] a_exp, r_exp, q_exp_q;
    logic [L-1:0][12:0] a_over, a_under, r_over, r_under;
    logic [L-1:0][7:0]  r_int8;
    logic [N-1:0][7:0]  out_q;
    logic [31:0]        scale;
    assign scale = fold_first_q ? dp_scale0_q : dp_scale1_q;
    always_ff @(posedge clk) begin
        s0_valid_q <= !rst && fold_valid_q && dp_op_q == VECTOR_OP_W'(VOP_LIN);
        s0_first_q <= fold_first_q;
        s0_end_q   <= fold_end_q;
        s0_dst_q   <= fold_dst_q;
        s0_pass_q  <= fold_pass_q;
        s0_scale_q <= scale[30:0];
        for (int l = 0; l < L; l++) begin
            logic signed [9:0] x;
            x = 10'(signed'(sp_lanes[l])) + 10'(dp_offset_q);
            s0_neg_q[l]  <= x[9] ^ scale[31];
            s0_zero_q[l] <= x == '0 || scale[30:0] == '0;  // the product is 0
            s0_mag_q[l]  <= x[9] ? 10'(-x) : x;
        end
        s1_valid_q <= !rst && s0_valid_q;
        s1_first_q <= s0_first_q;
        s1_end_q   <= s0_end_q;
        s1_dst_q   <= s0_dst_q;
        s1_pass_q  <= s0_pass_q;
        s2_valid_q <= !rst && s1_valid_q;
        s2_end_q   <= s1_end_q;
        s2_dst_q   <= s1_dst_q;
        s2_pass_q  <= s1_pass_q;
        s3_valid_q <= !rst && s2_valid_q;
        s3_end_q   <= s2_end_q;
        s3_dst_q   <= s2_dst_q;
        s3_pass_q  <= s2_pass_q;
        s4_end_q   <= !rst && s3_valid_q && s3_end_q;
        s4_dst_q   <= s3_dst_q;
        s4_pass_q  <= s3_pass_q;
        s5_end_q   <= !rst && s4_end_q;
        s5_dst_q   <= s4_dst_q;
        s5_pass_q  <= s4_pass_q;
        s1_exp_q   <= exponent(s0_scale_q[30:23]);
        s1_neg_q   <= s0_neg_q;
        s1_zero_q  <= s0_zero_q;
        for (int l = 0; l < L; l++)
            s1_product_q[l] <= 33'(s0_mag_q[l])
                             * 33'({s0_scale_q[30:23] != 8'd0, s0_scale_q[22:0]});
    end
    // The fold so far of stage 1's slice (the addend). Stage 5's (the sum to convert) is the
    // slice stage 4 made the cycle before, kept per lane (q_*_q) beside lin_*_q: no pass select
    // before the conversion's shifter (with it, once the sum's stages were cut, the deepest
    // path of Yosys's netlist of ecp5n8: 22 levels).
    always_ff @(posedge clk) begin
        q_neg_q  <= r_neg;
        q_mant_q <= r_mant;
        q_exp_q  <= r_exp;
    end
    always_comb begin
        a_neg = '0; a_zero = '0; a_mant = '0; a_exp = '0; a_over = '0; a_under = '0;
        for (int p = 0; p < PASSES; p++) for (int l = 0; l < L; l++) begin
            if (32'(s1_pass_q) == p) begin
                a_neg[l]  = lin_neg_q[p * L + l];
                a_zero[l] = lin_zero_q[p * L + l];
                a_mant[l] = lin_mant_q[p * L + l];
                a_exp[l]  = lin_exp_q[p * L + l];
                a_over[l]  = lin_over_q[p * L + l];
                a_under[l] = lin_under_q[p * L + l];
            end
        end
    end
    for (genvar l = 0; l < L; l++) begin : g_lin
        vector_linear u_linear (
            .clk     (clk),
            .p_neg   (s1_neg_q[l]),
            .product (s1_product_q[l]),
            .p_exp   (s1_exp_q),
            .p_zero  (s1_zero_q[l]),
            .a_neg   (s1_first_q ? dp_fixed_neg_q : a_neg[l]),
            .a_mant  (s1_first_q ? dp_fixed_mant_q : a_mant[l]),
            .a_exp   (s1_first_q ? dp_fixed_exp_q : signed'(a_exp[l])),
            .a_zero  (s1_first_q ? dp_fixed_zero_q : a_zero[l]),
            .a_over  (s1_first_q ? dp_fixed_over_q : signed'(a_over[l])),
            .a_under (s1_first_q ? dp_fixed_under_q : signed'(a_under[l])),
            .next_exp(dp_scale1_exp_q),
            .r_neg   (r_neg[l]),
            .r_mant  (r_mant[l]),
            .r_exp   (r_exp[l]),
            .r_zero  (r_zero[l]),
            .r_over  (r_over[l]),
            .r_under (r_under[l])
        );
        vector_round u_round (
            .clk    (clk),
            .r_neg  (q_neg_q[l]),
            .r_mant (q_mant_q[l]),
            .r_exp  (signed'(q_exp_q[l])),
            .offset (dp_offset_q),
            .q      (r_int8[l])
        );
    end
    // table and lut (glc/isa/vector_table.py): one memory of TABLE_ENTRIES int8 per column.
    // Both act on a source row's last pass, when the whole row has arrived: `table` writes the
    // row into entry fold_dst_q of every column's table; `lut` reads each column's table at
    // its element's code (entry code + 128: the sign bit flipped), the address and the output
    // registered (a block RAM's output register), so its writes come LUT_LATENCY cycles after
    // the folds' would (lut_*_q[k]: the row k+1 cycles on).
    logic               row_done, lut_read;
    logic [1:0]         lut_valid_q;
    logic [1:0][15:0]   lut_dst_q;
    logic [N-1:0][7:0]  lut_read_q, lut_out_q;
    assign row_done = fold_valid_q && 32'(fold_pass_q) == PASSES - 1;
    assign lut_read = row_done && dp_op_q == VECTOR_OP_W'(VOP_LUT);
    for (genvar n = 0; n < N; n++) begin : g_table
        logic [7:0] entries [TABLE_ENTRIES];
        // Power-up contents (the FPGA's configured block RAM); reset leaves the tables alone.
        initial for (int k = 0; k < TABLE_ENTRIES; k++) entries[k] = '0;
        always_ff @(posedge clk) begin
            if (row_done && dp_op_q == VECTOR_OP_W'(VOP_TABLE))
                entries[fold_dst_q[7:0]] <= sp_data[n];
            if (lut_read) lut_read_q[n] <= entries[{~sp_data[n][7], sp_data[n][6:0]}];
            lut_out_q[n] <= lut_read_q[n];
        end
    end
    always_ff @(posedge clk) begin
        lut_valid_q <= rst ? '0 : {lut_valid_q[0], lut_read};
        lut_dst_q   <= {lut_dst_q[0], fold_dst_q};
    end

    always_ff @(posedge clk) begin
        pre_valid_q  <= !rst && reading;
        pre_first_q  <= j_q == '0;
        pre_end_q    <= group_end;
        pre_dst_q    <= out_row;
        pre_pass_q   <= pass_q;
        fold_valid_q <= !rst && pre_valid_q;
        fold_first_q <= pre_first_q;
        fold_end_q   <= pre_end_q;
        fold_dst_q   <= pre_dst_q;
        fold_pass_q  <= pre_pass_q;
    end
    // The value `combine` leaves the other operand as: the fold's start without accumulate.
    function automatic logic [31:0] identity(input logic [VECTOR_OP_W-1:0] op);
        case (op)
            VECTOR_OP_W'(VOP_MAX): identity = 32'h8000_0000;
            VECTOR_OP_W'(VOP_MUL): identity = 32'd1;
            default:     identity = 32'd0;
        endcase
    endfunction

    // The arriving slice: its lanes of the scratchpad row (lin's too), and a fold's operands:
    // the source value and the fold's start. With accumulate the output row's old value
    // starts the fold (the ops are associative and commutative, modulo 2^32 for add and mul),
    // so a slice meets one combine, not two in a row; without, the op's identity does. The
    // output row is read alike in every cycle of its group (only the group's end writes ACC,
    // and to a row no other group of this VECTOR writes).
    always_comb begin
        value = '0;
        start = '0;
        sp_lanes = '0;
        // Skipped while idle: the simulator then spends no time on this unit.
        if (fold_valid_q)
            for (int p = 0; p < PASSES; p++) for (int l = 0; l < L; l++)
                if (32'(fold_pass_q) == p) begin
                    sp_lanes[l] = sp_data[p * L + l];
                    value[l]    = dp_src_acc_q ? src[p * L + l]
                                               : 32'(signed'(sp_data[p * L + l]));
                    start[l]    = dp_accumulate_q ? old[p * L + l] : identity(dp_op_q);
                end
    end
    // The operands registered as they arrive, so a memory read's forward meets no multiplier.
    always_ff @(posedge clk) begin
        m_valid_q <= !rst && fold_valid_q && dp_op_q < VECTOR_OP_W'(VOP_LIN);
        m_first_q <= fold_first_q;
        m_last_q  <= fold_end_q && 32'(fold_pass_q) == PASSES - 1;
        m_dst_q   <= fold_dst_q;
        m_op_q    <= dp_op_q;
        m_value_q <= value;
        m_start_q <= start;
        w_valid_q <= !rst && m_valid_q && m_last_q;
        w_dst_q   <= m_dst_q;
    end
    // The combine, between registers: the slice's value and the fold so far, which for a
    // group's first row is its start and otherwise the previous row's same slice. fold_q
    // shifts a slice down each combine, the new slice entering at the top, so the slice a
    // combine needs is always the bottom one (the slices of a group's rows follow each other
    // without a gap), chosen by a flip-flop: a mul over a group keeps a slice a cycle, its
    // multiplier between m_value_q and fold_q. After a row's last slice fold_q holds the whole
    // row in order, which the next cycle writes.
    always_comb begin
        for (int l = 0; l < L; l++) begin
            other[l]  = m_first_q ? m_start_q[l] : fold_q[l];
            folded[l] = combine(m_op_q, other[l], m_value_q[l]);
        end
    end
    if (PASSES > 1) begin : g_fold_shift
        always_ff @(posedge clk) if (m_valid_q) fold_q <= {folded, fold_q[N-1:L]};
    end else begin : g_fold_row
        always_ff @(posedge clk) if (m_valid_q) fold_q <= folded;
    end
    // The rows written: every source a register, chosen by flip-flops (the `lut` and `lin`
    // pipelines' ends, the fold register).
    always_comb begin
        for (int n = 0; n < N; n++)
            acc_data[n] = lut_valid_q[1] ? 32'(signed'(lut_out_q[n]))
                        : s5_end_q ? 32'(signed'(n / L == PASSES - 1 ? r_int8[n % L] : out_q[n]))
                        : fold_q[n];
    end
    assign acc_we  = w_valid_q || s5_end_q && 32'(s5_pass_q) == PASSES - 1 || lut_valid_q[1];
    assign acc_row = s5_end_q ? s5_dst_q : lut_valid_q[1] ? lut_dst_q[1] : w_dst_q;

    always_ff @(posedge clk) begin
        if (rst) begin
            active_q    <= 1'b0;
            drain_q     <= '0;
            push_prev_r <= 1'b0;
            push_next_r <= 1'b0;
        end else begin
            push_prev_r <= (issue && is_sync && head.word[FLAG_PUSH_PREV])
                        || (finishing && push_prev_q);
            push_next_r <= (issue && is_sync && head.word[FLAG_PUSH_NEXT])
                        || (finishing && push_next_q);
            if (last) drain_q <= latency(op_q);
            else if (drain_q != '0) drain_q <= drain_q - 3'd1;
            // While free the instruction registers take the head's fields every cycle, whether
            // or not it issues (nothing reads them until active_q, and the data path's copies,
            // a cycle behind, have folded the last row by then): only active_q waits for the
            // issue decision, not the enables of some 300 flip-flops.
            if (free) begin
                active_q <= issue && is_vector;
                op_q         <= head.word[VECTOR_OP_LSB +: VECTOR_OP_W];
                b_q          <= block(head.word[VECTOR_OP_LSB +: VECTOR_OP_W]
                                      == VECTOR_OP_W'(VOP_LIN), f_count);
                o_q          <= '0;
                pass_q       <= '0;
                bubble_q     <= '0;
                accumulate_q <= head.word[VECTOR_ACCUMULATE_LSB];
                src_acc_q    <= head.word[VECTOR_SRC_ACC_LSB];
                self_q       <= self_reading;
                left_q       <= f_count;
                group_q      <= f_group;
                ostride_q    <= f_ostride;
                gstride_q    <= f_gstride;
                j_q          <= '0;
                row_q        <= 32'(f_src);
                phase_q      <= 32'(f_src);
                dst_q        <= 32'(f_dst);
                pc_q         <= head.pc;
                push_prev_q  <= head.word[FLAG_PUSH_PREV];
                push_next_q  <= head.word[FLAG_PUSH_NEXT];
                offset_q     <= head.word[VECTOR_OFFSET_LSB +: VECTOR_OFFSET_W];
                scale0_q     <= head.word[VECTOR_SCALE0_LSB +: VECTOR_SCALE0_W];
                scale1_q     <= head.word[VECTOR_SCALE1_LSB +: VECTOR_SCALE1_W];
                fixed_neg_q  <= f_fixed[31];
                fixed_zero_q <= f_fixed[30:0] == '0;
                fixed_mant_q <= {f_fixed[30:23] != 8'd0, f_fixed[22:0]};
                fixed_exp_q  <= exponent(f_fixed[30:23]);
            end else if (active_q) begin
                if (!reading) bubble_q <= bubble_q - 2'd1;
                else if (!pass_end) pass_q <= pass_q + PASS_W'(1);  // the row's next slice
                else begin
                    pass_q <= '0;
                    if (o_q != b_q - 2'd1) begin  // the block's next output, same row j
                        o_q   <= o_q + 2'd1;
                        row_q <= row_q + 32'(ostride_q);
                    end else if (!group_end) begin  // row j+1 of the block's outputs
                        o_q      <= '0;
                        j_q      <= j_q + 16'd1;
                        row_q    <= phase_q + 32'(gstride_q);
                        phase_q  <= phase_q + 32'(gstride_q);
                        bubble_q <= bubble(op_q == VECTOR_OP_W'(VOP_LIN), b_q);
                    end else if (last) active_q <= 1'b0;
                    else begin  // the next block
                        logic [31:0] base;
                        base = j_q == '0 ? row_q + 32'(ostride_q) : next_q;
                        // a self-reading fold's next output waits for this one's write
                        bubble_q <= self_q ? 2'(FOLD_LATENCY) : 2'd0;
                        o_q     <= '0;
                        j_q     <= '0;
                        left_q  <= left_q - 16'(b_q);
                        b_q     <= block(op_q == VECTOR_OP_W'(VOP_LIN), left_q - 16'(b_q));
                        dst_q   <= dst_q + 32'(b_q);
                        row_q   <= base;
                        phase_q <= base;
                    end
                end
                if (reading && block_row_end && j_q == '0) next_q <= row_q + 32'(ostride_q);
            end
        end
        for (int n = 0; n < N; n++) begin
            if (s3_valid_q && 32'(s3_pass_q) == n / L) begin
                lin_neg_q[n]  <= r_neg[n % L];
                lin_mant_q[n] <= r_mant[n % L];
                lin_exp_q[n]  <= r_exp[n % L];
                lin_zero_q[n] <= r_zero[n % L];
                lin_over_q[n]  <= r_over[n % L];
                lin_under_q[n] <= r_under[n % L];
            end
            if (s5_end_q && 32'(s5_pass_q) == n / L) out_q[n] <= r_int8[n % L];
        end
        if (issue && is_sync) push_pc <= head.pc;
        else if (finishing) push_pc <= pc_q;
    end

    assign push_prev   = push_prev_r;
    assign push_next   = push_next_r;
    assign in_progress = active_q || drain_q != '0;
    assign read_held   = in_progress && (src_acc_q || accumulate_q);
    // The shared read port's owner this cycle (hw/accumulator.sv's address select): a VECTOR
    // in progress that reads ACC, or one issuing that reads it now: only the old-row prefetch
    // of one read port (ACC_READS = 1, `accumulate`; its source rows come from t+1). Such a
    // VECTOR issues exactly when the unit is free, its head and a turn allow, and no STORE
    // issues or holds the port (turn_ok), so its tokens, range checks and the LOAD's turn,
    // which decide the issue, need not decide the address: without them the port is the
    // VECTOR's in cycles where it does not issue but no STORE does either, and no one reads.
    assign read_turn   = read_held || ACC_READS == 1 && free && is_vector
                                      && head.word[VECTOR_ACCUMULATE_LSB] && !store_turn;
    assign activity.busy        = issue || in_progress;
    assign activity.stall_dram  = 1'b0;  // no DRAM port
    assign activity.stall_token = head_valid && free && !tokens_ok;
endmodule
