// The STORE unit (docs/isa.md, "LOAD and STORE" and "Timing"): executes its queue in order. A
// STORE issuing in cycle t spends t on set-up and then one DRAM beat per cycle, reading each
// local accumulator row, converting its elements (ReLU, requantize to int8 or raw int32) and
// writing the elements that are inside the bounds (out-of-bounds runs, or with `xrun` elements,
// crop an edge tile and write nothing). The accumulator's reads are registered (ISA revision
// 3.1: the row addressed in c arrives in c+2), so each beat is written a cycle after its walker
// step, which addresses the next beat's row: the beats take t+2 … t+1+beats, and the STORE
// completes, and pushes its token, in E = t + 2 + beats; SYNC completes in t + 1.
// A `linear` STORE (ONNX's requantization) first reads its multipliers' ACC row `qrow`, a
// `bias` STORE its biases' row `brow` (ISA 2.5), both in that order: each row is addressed one
// cycle and latched two cycles later while the following ones (the other table row, the first
// local row) are addressed, so the beats start one cycle later per table row, E = t + 2 +
// linear + bias + beats, holding the DRAM port throughout. Where the vector unit shares the
// accumulator's read port, a STORE issues only while no VECTOR that reads ACC is in progress,
// and holds the port (acc_turn) until it completes.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module store_unit #(
    // N: elements per accumulator row
    parameter int N = 16,
    // P: bytes per DRAM beat
    parameter int PORT_BYTES = 16,
    // accumulator rows, for ACC_RANGE
    parameter int ACC_ROWS = 4096,
    // DRAM bytes, for DRAM_RANGE
    parameter longint DRAM_BYTES = 64'd1048576
) (
    input  logic                       clk,
    input  logic                       rst,
    input  logic                       stop,          // the machine has stopped: issue nothing
    // queue head
    input  logic                       head_valid,
    // The queue carries whole instruction words; this unit reads the fields of STORE and SYNC.
    /* verilator lint_off UNUSEDSIGNAL */
    input  isa_pkg::queue_entry_t      head,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                       issue,
    // tokens: pop ex2st (prev) and vu2st (vec) at issue, push st2ex / st2vu at completion
    input  logic                       token_ok,
    input  logic                       vec_token_ok,
    output logic                       pop_prev,
    output logic                       pop_vec,
    output logic                       push_prev,
    output logic                       push_vec,
    output logic [31:0]                push_pc,       // the instruction whose push this is
    // DRAM port, shared with the LOAD unit (a LOAD wins a tie)
    input  logic                       load_holds_port,
    input  logic                       load_takes_port,
    output logic                       holds_port,
    output logic [31:0]                dram_addr,
    output logic [PORT_BYTES-1:0]      dram_wstrb,
    output logic [PORT_BYTES-1:0][7:0] dram_wdata,
    // accumulator read port; where the vector unit shares it (docs/isa.md, "Accumulator
    // ports"; 0 where it does not): a VECTOR that reads ACC is in progress; a STORE issues or
    // is in progress
    output logic [15:0]                acc_row,
    input  logic [N-1:0][31:0]         acc_data,
    input  logic                       vector_turn,
    output logic                       acc_turn,
    // status for the counters and the deadlock rule
    output isa_pkg::activity_t         activity,
    output isa_pkg::unit_error_t       error
);
    logic is_store, is_sync, free, tokens_ok, port_free, rows_fit, range_error;
    logic raw_q, relu_q, push_q, push_prev_q, push_vec_q, push_vec_r;
    logic is_linear, is_bias, linear_q, bias_q, qrows_q, setup_q, qrow_fits, brow_fits;
    // The set-up cycle latches the multipliers' row (reading_mult_q; the biases' may follow),
    // else the biases'.
    logic reading_mult_q, last_setup;
    // With `qrows`, the local row's index mod N chooses the multiplier: counted per row.
    logic [$clog2(N)-1:0] qindex_q;
    logic [4:0] shift_q;
    logic signed [7:0] zero_q;
    logic [N-1:0][31:0] multiplier_q, bias_row_q;
    // The walker starts at issue, or a cycle later (with this copy of the word) for `linear`.
    /* verilator lint_off UNUSEDSIGNAL */
    logic [WORD_W-1:0] word_q;
    /* verilator lint_on UNUSEDSIGNAL */
    logic [15:0] base_q;
    logic [31:0] pc_q;

    logic walk_active, walk_last, walk_row_last, dram_error;
    logic [9:0] walk_bytes, walk_offset;
    logic [7:0] walk_lo, walk_hi;
    logic [15:0] walk_row, walk_column;
    // The walker's step, a cycle later: the beat it writes, when its row's data has arrived.
    logic beat_active_q, beat_last_q, beat_row_last_q, beat_error_q;
    logic [31:0] beat_addr_q;
    logic [9:0] beat_bytes_q, beat_offset_q;
    logic [7:0] beat_lo_q, beat_hi_q;
    logic [15:0] beat_column_q;
    logic [31:0] walk_addr;
    // Set-up cycles a cycle later, when the table row each addressed arrives.
    logic latch_q, latch_mult_q;

    assign is_store  = head_valid && head.word[OPCODE_W-1:0] == OP_STORE;
    assign is_sync   = head_valid && head.word[OPCODE_W-1:0] == OP_SYNC;
    assign free      = !walk_active && !beat_active_q && !setup_q && !stop;
    assign is_linear = head.word[STORE_LINEAR_LSB];
    assign is_bias   = head.word[STORE_BIAS_LSB];
    // The local rows and table rows must fit, checked when the instruction would issue.
    assign qrow_fits = !is_linear || 32'(head.word[STORE_QROW_LSB +: STORE_QROW_W]) < ACC_ROWS;
    assign brow_fits = !is_bias || 32'(head.word[STORE_BROW_LSB +: STORE_BROW_W]) < ACC_ROWS;
    assign rows_fit  = 32'(head.row_end) <= ACC_ROWS && qrow_fits && brow_fits;
    // The set-up cycle that latches the last table row (the biases' when there are both).
    assign last_setup = setup_q && !(reading_mult_q && bias_q);
    assign tokens_ok = (!head.word[FLAG_POP_PREV] || token_ok)
                    && (!head.word[FLAG_POP_VEC] || vec_token_ok);
    assign port_free = !load_holds_port && !load_takes_port;
    assign range_error = free && is_store && tokens_ok && port_free && !vector_turn && !rows_fit;
    assign issue     = free && tokens_ok
                    && (is_sync || (is_store && port_free && !vector_turn && rows_fit));
    assign pop_prev  = issue && head.word[FLAG_POP_PREV];
    assign pop_vec   = issue && head.word[FLAG_POP_VEC];
    assign holds_port = walk_active || beat_active_q || setup_q;
    assign acc_turn  = issue && is_store || holds_port;
    assign push_prev = push_q;
    assign push_vec  = push_vec_r;

    transfer_walker #(.PORT_BYTES(PORT_BYTES), .DRAM_BYTES(DRAM_BYTES), .STRIDED(1'b0)) u_walk (
        .clk        (clk),
        .rst        (rst),
        .start      (issue && is_store && !is_linear && !is_bias || last_setup),
        .word       (setup_q ? word_q : head.word),
        .wide       (setup_q ? raw_q : head.word[STORE_RAW_LSB]),
        .active     (walk_active),
        .beat_addr  (walk_addr),
        .run_bytes  (walk_bytes),
        .beat_offset(walk_offset),
        .elem_lo    (walk_lo),
        .elem_hi    (walk_hi),
        .dram_error (dram_error),
        .row_index  (walk_row),
        .column     (walk_column),
        /* verilator lint_off PINCONNECTEMPTY */
        .row_first  (),
        /* verilator lint_on PINCONNECTEMPTY */
        .row_last   (walk_row_last),
        .last       (walk_last)
    );

    // Address the row of the walker's next step (the next row after a row's last step): it
    // arrives two cycles later, with that step's beat. A `linear` or `bias` STORE reads its
    // table rows first, its first row in the last set-up cycle. While the unit holds nothing it
    // addresses the first row the head would read were it to issue now, whether or not it
    // does (a read changes nothing): the address is then the queue head's field, not the issue
    // decision's (tokens, the DRAM port, the vector unit's turn), which would otherwise run on
    // into the accumulator's bank address ports in the same cycle.
    always_comb begin
        if (setup_q && !last_setup) acc_row = word_q[STORE_BROW_LSB +: STORE_BROW_W];
        else if (setup_q) acc_row = base_q;
        else if (walk_active) acc_row = base_q + walk_row + 16'(walk_row_last);
        else acc_row = is_linear ? head.word[STORE_QROW_LSB +: STORE_QROW_W]
                     : is_bias ? head.word[STORE_BROW_LSB +: STORE_BROW_W]
                     : head.word[XFER_ROW_LSB +: XFER_ROW_W];
    end

    // Convert the whole row (the bias added first, wrapping like the accumulator); each beat
    // then picks its run's bytes. With `qrows` the local row's index mod N picks the multiplier
    // and the bias.
    logic [N-1:0][31:0] raw, biased;
    logic [N-1:0][7:0]  narrow, shifted, linear;
    for (genvar n = 0; n < N; n++) begin : g_convert
        assign biased[n] = acc_data[n] + (!bias_q ? '0 : qrows_q ? bias_row_q[qindex_q]
                                                              : bias_row_q[n]);
        requantize u_requantize (
            .x     (biased[n]),
            .relu  (relu_q),
            .shift (shift_q),
            .raw   (raw[n]),
            .narrow(shifted[n])
        );
        requantize_linear u_linear (
            .x   (raw[n]),
            .m   (qrows_q ? multiplier_q[qindex_q] : multiplier_q[n]),
            .zero(zero_q),
            .q   (linear[n])
        );
        assign narrow[n] = linear_q ? linear[n] : shifted[n];
    end

    always_comb begin
        logic [31:0] at, element, index;
        at = '0;
        element = '0;
        index = '0;
        dram_wstrb = '0;
        dram_wdata = '0;
        // Skipped while idle: the simulator then spends no time on this unit.
        if (beat_active_q) for (int i = 0; i < PORT_BYTES; i++) begin
            at = 32'(beat_offset_q) + i;
            // Element `index` of the run is column `element` of the row; only in-bounds
            // elements are written (ISA v2 A1, `xrun`).
            index = raw_q ? at >> 2 : at;
            element = 32'(beat_column_q) + index;
            dram_wstrb[i] = !beat_error_q && at < 32'(beat_bytes_q)
                         && index >= 32'(beat_lo_q) && index < 32'(beat_hi_q);
            if (element >= N) dram_wdata[i] = '0;
            else if (raw_q) dram_wdata[i] = raw[element[$clog2(N)-1:0]][8 * at[1:0] +: 8];
            else dram_wdata[i] = narrow[element[$clog2(N)-1:0]];
        end
    end

    assign dram_addr = beat_addr_q;
    always_ff @(posedge clk) begin
        beat_addr_q     <= walk_addr;
        beat_last_q     <= walk_last;
        beat_row_last_q <= walk_row_last;
        beat_error_q    <= dram_error;
        beat_bytes_q    <= walk_bytes;
        beat_offset_q   <= walk_offset;
        beat_lo_q       <= walk_lo;
        beat_hi_q       <= walk_hi;
        beat_column_q   <= walk_column;
        latch_mult_q    <= reading_mult_q;
        if (rst) begin
            push_q        <= 1'b0;
            push_vec_r    <= 1'b0;
            setup_q       <= 1'b0;
            beat_active_q <= 1'b0;
            latch_q       <= 1'b0;
        end else begin
            beat_active_q <= walk_active;
            latch_q       <= setup_q;
            setup_q    <= issue && is_store && (is_linear || is_bias) || setup_q && !last_setup;
            push_q     <= (issue && is_sync && head.word[FLAG_PUSH_PREV])
                       || (beat_active_q && beat_last_q && push_prev_q);
            push_vec_r <= (issue && is_sync && head.word[FLAG_PUSH_VEC])
                       || (beat_active_q && beat_last_q && push_vec_q);
        end
        if (issue && is_sync) push_pc <= head.pc;
        else if (beat_active_q && beat_last_q) push_pc <= pc_q;
        if (issue && is_store) begin
            raw_q       <= head.word[STORE_RAW_LSB];
            relu_q      <= head.word[STORE_RELU_LSB];
            shift_q     <= head.word[STORE_SHIFT_LSB +: STORE_SHIFT_W];
            linear_q    <= is_linear;
            bias_q      <= is_bias;
            reading_mult_q <= is_linear;
            qrows_q     <= head.word[STORE_QROWS_LSB];
            zero_q      <= head.word[STORE_ZERO_LSB +: STORE_ZERO_W];
            word_q      <= head.word;
            base_q      <= head.word[XFER_ROW_LSB +: XFER_ROW_W];
            pc_q        <= head.pc;
            push_prev_q <= head.word[FLAG_PUSH_PREV];
            push_vec_q  <= head.word[FLAG_PUSH_VEC];
        end
        if (latch_q && latch_mult_q) multiplier_q <= acc_data;
        if (latch_q && !latch_mult_q) bias_row_q <= acc_data;
        if (setup_q) reading_mult_q <= 1'b0;
        if (issue && is_store) qindex_q <= '0;
        else if (beat_active_q && beat_row_last_q)
            qindex_q <= 32'(qindex_q) == N - 1 ? '0 : qindex_q + $clog2(N)'(1);
    end

    assign activity.busy        = issue || walk_active || beat_active_q || setup_q;
    // A token stall takes precedence over a DRAM stall (docs/isa.md, "Counters").
    assign activity.stall_token = head_valid && free && !tokens_ok;
    assign activity.stall_dram  = is_store && free && tokens_ok && !port_free;

    assign error.valid = range_error || dram_error;
    assign error.code  = dram_error ? ERR_DRAM_RANGE : ERR_ACC_RANGE;
    assign error.pc    = dram_error ? pc_q : head.pc;
endmodule
