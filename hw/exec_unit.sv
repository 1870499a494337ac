// The EXEC unit (docs/isa.md, "PRELOAD", "MATMUL" and "Timing"): issues at most one instruction
// per cycle, in order, and keeps several in flight. PRELOAD issuing at t writes shadow row k of
// column j in t+k+j (E = t+N: its scratchpad reads; the array skews the writes by column, ISA
// revision 2.6). MATMUL issuing at t feeds scratchpad row sp+i into the array in t+i; the first
// row carries the swap bit when a PRELOAD issued since the last MATMUL; row i's result is due in the
// accumulator at the end of t+i+2N-1 (E = t+rows+2N-1). A MATMUL may issue as soon as the
// previous one's rows have all entered, so matmuls stream back to back.
// The scratchpad's reads are registered (ISA revision 3.1): the row addressed in t+i arrives in
// t+i+2, so the array and the shadow-weight writes run two cycles behind the addresses, and a
// result row reaches the accumulator at the end of t+i+2N+1. Tokens are pushed and
// `in_progress` ends on the ISA's timing, from the array's tag two stages earlier (where the
// accumulate's old row is addressed): an instruction issuing at E reads the accumulator's rows
// as of the end of E+1 at the earliest, after that write (docs/isa.md, "Timing").
// A split MATMUL (COLUMN_SPLIT, ISA revision 2.9) writes two rows per streamed row in that same
// cycle: the array's upper half's sums to acc+i (port A), its lower half's to acc2+i (port B),
// rows of opposite parity, so of the accumulator's two banks (hw/accumulator.sv).
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module exec_unit #(
    // N: the array is N×N
    parameter int N = 16,
    // scratchpad rows, for SP_RANGE
    parameter int SP_ROWS = 16384,
    // accumulator rows, for ACC_RANGE
    parameter int ACC_ROWS = 4096,
    // 1: MATMUL's `split` (docs/isa.md); 0: the decoder refuses it, `split` reads as 0 here
    // and the accumulator ignores port B (synthesis removes what feeds it)
    parameter int COLUMN_SPLIT = 1
) (
    input  logic               clk,
    input  logic               rst,
    input  logic               stop,          // the machine has stopped: issue nothing
    // queue head
    input  logic               head_valid,
    // The queue carries whole instruction words; this unit reads PRELOAD, MATMUL and SYNC.
    /* verilator lint_off UNUSEDSIGNAL */
    input  isa_pkg::queue_entry_t head,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic               issue,
    // tokens: pop ld2ex (prev) and st2ex (next); push ex2ld (prev) and ex2st (next), several
    // instructions may complete in one cycle
    input  logic               prev_token_ok,
    input  logic               next_token_ok,
    output logic               pop_prev,
    output logic               pop_next,
    output logic [1:0]         push_prev,
    output logic [1:0]         push_next,
    output logic [31:0]        push_pc,       // an instruction whose push this is
    // scratchpad read ports: A streams MATMUL rows, B reads PRELOAD weight rows
    output logic [15:0]        sp_a_row,
    input  logic [N-1:0][7:0]  sp_a_data,
    output logic [15:0]        sp_b_row,
    input  logic [N-1:0][7:0]  sp_b_data,
    // accumulator write/accumulate ports: A every result row (a split one's upper half), B a
    // split row's lower half; both add to the old row with `acc_accumulate`
    output logic               acc_we,
    output logic               acc_accumulate,
    output logic [15:0]        acc_row,
    output logic [15:0]        acc_next_row,  // the row written two cycles later
    output logic [N-1:0][31:0] acc_data,
    output logic               acc_we2,
    output logic [15:0]        acc_row2,
    output logic [15:0]        acc_next_row2, // port B's row two cycles later, if split
    output logic [N-1:0][31:0] acc_data2,
    // status for the counters and the deadlock rule
    output logic               in_progress,
    output isa_pkg::activity_t activity,
    output isa_pkg::unit_error_t error
);
    localparam int K_W = $clog2(N);
    localparam int W_ROW_W = $clog2(N + 1);   // the array's shadow-row index

    // The tag travelling with each row through the array: where its result goes, and for the
    // last row of a MATMUL the tokens it pushes on completion.
    typedef struct packed {
        logic [15:0] pc;
        logic [15:0] row;
        logic [15:0] row2;        // split: the lower half's row
        logic        split;
        logic        accumulate;
        logic        last;
        logic        push_prev;
        logic        push_next;
    } tag_t;

    logic is_preload, is_matmul, is_sync, swaps, unit_ok, tokens_ok, ready, bad_sp, bad_acc;
    logic mm_split;
    logic [15:0] mm_sp, mm_acc, mm_acc2, mm_rows, pl_row;
    assign is_preload = head_valid && head.word[OPCODE_W-1:0] == OP_PRELOAD;
    assign is_matmul  = head_valid && head.word[OPCODE_W-1:0] == OP_MATMUL;
    assign is_sync    = head_valid && head.word[OPCODE_W-1:0] == OP_SYNC;
    assign mm_sp      = head.word[MATMUL_SP_LSB +: MATMUL_SP_W];
    assign mm_acc     = head.word[MATMUL_ACC_LSB +: MATMUL_ACC_W];
    assign mm_rows    = head.word[MATMUL_ROWS_LSB +: MATMUL_ROWS_W];
    assign mm_split   = COLUMN_SPLIT != 0 && head.word[MATMUL_SPLIT_LSB];
    assign mm_acc2    = head.word[MATMUL_ACC2_LSB +: MATMUL_ACC2_W];
    assign pl_row     = head.word[PRELOAD_ROW_LSB +: PRELOAD_ROW_W];

    logic               preload_pending_q, preload_active_q;
    logic [K_W-1:0]     preload_k_q;
    logic [15:0]        preload_base_q;
    logic [31:0]        preload_pc_q, sync_pc_q, mm_pc_q;
    logic [1:0]         preload_push_q;    // {prev, next} to push when the PRELOAD completes
    logic [15:0]        stream_left_q, stream_sp_q;
    tag_t               stream_tag_q;
    logic [31:0]        in_flight_q;
    logic [1:0]         mm_push_q, pl_push_q, sync_push_q;  // {prev, next}, pushed this cycle

    assign swaps = preload_pending_q;
    always_comb begin
        unit_ok = 1'b0;
        // PRELOAD: the previous one is complete. Its writes travel the array as the streamed
        // rows do, so one issuing after a swapping MATMUL reaches each PE after that swap, and
        // a MATMUL issuing after it swaps each PE after the write (docs/isa.md, "Timing").
        if (is_preload) unit_ok = !preload_active_q;
        // MATMUL: the previous one's rows have all entered.
        if (is_matmul)  unit_ok = stream_left_q == '0;
        if (is_sync)    unit_ok = 1'b1;
    end
    assign tokens_ok = (!head.word[FLAG_POP_PREV] || prev_token_ok)
                    && (!head.word[FLAG_POP_NEXT] || next_token_ok);
    assign ready     = !stop && unit_ok && tokens_ok;
    assign bad_sp    = (is_preload && 32'(pl_row) + N > SP_ROWS)
                    || (is_matmul && 32'(mm_sp) + 32'(mm_rows) > SP_ROWS);
    assign bad_acc   = is_matmul && (32'(mm_acc) + 32'(mm_rows) > ACC_ROWS
                                     || (mm_split && 32'(mm_acc2) + 32'(mm_rows) > ACC_ROWS));
    assign issue     = ready && !bad_sp && !bad_acc;
    assign pop_prev  = issue && head.word[FLAG_POP_PREV];
    assign pop_next  = issue && head.word[FLAG_POP_NEXT];
    assign activity.stall_dram  = 1'b0;  // no DRAM port
    assign activity.stall_token = head_valid && !stop && unit_ok && !tokens_ok;
    assign error.valid = ready && (bad_sp || bad_acc);
    assign error.code  = bad_sp ? ERR_SP_RANGE : ERR_ACC_RANGE;
    assign error.pc    = head.pc;

    // MATMUL input stream: row 0 straight from the issuing instruction, the rest from registers.
    // Between streams port A is given the head's `sp` whether or not it issues, and port B
    // between PRELOADs the head's `row` (a read changes nothing; its data is used only when a
    // row enters): the addresses then come from the queue head and registers, not from the
    // issue decision (tokens, the range checks).
    logic mm_issue, feed;
    tag_t feed_tag;
    assign mm_issue = issue && is_matmul;
    assign feed     = mm_issue || stream_left_q != '0;
    assign sp_a_row = stream_left_q != '0 ? stream_sp_q : mm_sp;
    always_comb begin
        if (mm_issue) begin
            feed_tag.pc         = 16'(head.pc);
            feed_tag.row        = mm_acc;
            feed_tag.row2       = mm_acc2;
            feed_tag.split      = mm_split;
            feed_tag.accumulate = head.word[MATMUL_ACCUMULATE_LSB];
            feed_tag.last       = mm_rows == 16'd1;
            feed_tag.push_prev  = head.word[FLAG_PUSH_PREV];
            feed_tag.push_next  = head.word[FLAG_PUSH_NEXT];
        end else begin
            feed_tag      = stream_tag_q;
            feed_tag.last = stream_left_q == 16'd1;
        end
    end

    // PRELOAD: shadow row 0 straight from the issuing instruction, rows 1..N-1 from registers.
    logic pl_issue;
    assign pl_issue = issue && is_preload;
    assign sp_b_row = preload_active_q ? preload_base_q + 16'(preload_k_q) : pl_row;

    // The row and the shadow-weight write wait two cycles for the scratchpad's data (`_r`,
    // then `_q`).
    logic feed_r, swap_r, w_we_r, feed_q, swap_q, w_we_q;
    logic [W_ROW_W-1:0] w_row_r, w_row_q;
    tag_t feed_tag_r, feed_tag_q;
    always_ff @(posedge clk) begin
        feed_r     <= !rst && feed;
        swap_r     <= mm_issue && swaps;
        feed_tag_r <= feed_tag;
        w_we_r     <= !rst && (pl_issue || preload_active_q);
        w_row_r    <= W_ROW_W'(pl_issue ? '0 : preload_k_q);
        feed_q     <= !rst && feed_r;
        swap_q     <= swap_r;
        feed_tag_q <= feed_tag_r;
        w_we_q     <= !rst && w_we_r;
        w_row_q    <= w_row_r;
    end

    // `done_*`: the row whose result is due in the accumulator this cycle (the ISA's timing);
    // it is written two cycles later (`out_*`).
    logic done_valid, out_valid;
    logic [N-1:0][31:0] out_data, out_upper;
    // Each stage reads its part of the tag: the ISA's stage the tokens, the write its row.
    /* verilator lint_off UNUSEDSIGNAL */
    tag_t done_tag, out_tag;
    /* verilator lint_on UNUSEDSIGNAL */
    systolic_array #(.N(N), .IN_W(8), .ACC_W(32), .TAG_W($bits(feed_tag)),
                     .SPLIT(COLUMN_SPLIT)) u_array (
        .clk       (clk),
        .rst       (rst),
        .in_valid  (feed_q),
        .in_swap   (swap_q),
        .in_split  (feed_tag_q.split),
        .in_data   (sp_a_data),
        .in_tag    (feed_tag_q),
        .w_we      (w_we_q),
        .w_row     (w_row_q),
        .w_data    (sp_b_data),
        .next_valid(done_valid),
        .next_tag  (done_tag),
        .out_valid (out_valid),
        .out_data  (out_data),
        .out_upper (out_upper),
        .out_tag   (out_tag)
    );
    assign acc_we         = out_valid;
    assign acc_accumulate = out_tag.accumulate;
    assign acc_row        = out_tag.row;
    assign acc_next_row   = done_tag.row;
    assign acc_data       = out_tag.split ? out_upper : out_data;
    assign acc_we2        = out_valid && out_tag.split;
    assign acc_row2       = out_tag.row2;
    assign acc_next_row2  = done_tag.row2;
    assign acc_data2      = out_data;

    always_ff @(posedge clk) begin
        if (rst) begin
            preload_pending_q <= 1'b0;
            preload_active_q  <= 1'b0;
            stream_left_q     <= '0;
            in_flight_q       <= '0;
            mm_push_q         <= '0;
            pl_push_q         <= '0;
            sync_push_q       <= '0;
        end else begin
            if (pl_issue) preload_pending_q <= 1'b1;
            else if (mm_issue) preload_pending_q <= 1'b0;

            pl_push_q <= '0;
            if (pl_issue) begin
                preload_active_q <= 1'b1;
                preload_k_q      <= K_W'(1);
                preload_base_q   <= pl_row;
                preload_pc_q     <= head.pc;
                preload_push_q   <= {head.word[FLAG_PUSH_PREV], head.word[FLAG_PUSH_NEXT]};
            end else if (preload_active_q) begin
                preload_k_q <= preload_k_q + 1'b1;
                if (32'(preload_k_q) == N - 1) begin
                    preload_active_q <= 1'b0;
                    pl_push_q        <= preload_push_q;
                end
            end

            if (mm_issue) begin
                stream_left_q    <= mm_rows - 16'd1;
                stream_sp_q      <= mm_sp + 16'd1;
                stream_tag_q     <= feed_tag;
                stream_tag_q.row  <= mm_acc + 16'd1;
                stream_tag_q.row2 <= mm_acc2 + 16'd1;
            end else if (stream_left_q != '0) begin
                stream_left_q    <= stream_left_q - 16'd1;
                stream_sp_q      <= stream_sp_q + 16'd1;
                stream_tag_q.row  <= stream_tag_q.row + 16'd1;
                stream_tag_q.row2 <= stream_tag_q.row2 + 16'd1;
            end

            in_flight_q <= in_flight_q + 32'(feed) - 32'(done_valid);
            mm_push_q   <= done_valid && done_tag.last
                         ? {done_tag.push_prev, done_tag.push_next} : '0;
            mm_pc_q     <= 32'(done_tag.pc);
            sync_pc_q   <= head.pc;
            sync_push_q <= issue && is_sync
                         ? {head.word[FLAG_PUSH_PREV], head.word[FLAG_PUSH_NEXT]} : '0;
        end
    end

    assign push_prev   = 2'(mm_push_q[1]) + 2'(pl_push_q[1]) + 2'(sync_push_q[1]);
    assign push_next   = 2'(mm_push_q[0]) + 2'(pl_push_q[0]) + 2'(sync_push_q[0]);
    assign push_pc     = mm_push_q != '0 ? mm_pc_q : pl_push_q != '0 ? preload_pc_q : sync_pc_q;
    assign in_progress = stream_left_q != '0 || preload_active_q || in_flight_q != '0;
    assign activity.busy        = feed;  // a row enters the array this cycle
endmodule
