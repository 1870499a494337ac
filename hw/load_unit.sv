// The LOAD unit (docs/isa.md, "LOAD and STORE" and "Timing"; ISA v2 A1): executes its queue in
// order. A LOAD issuing in cycle t spends t on set-up and then one DRAM beat per cycle; each
// local row is assembled from its runs (`pad` for out-of-bounds elements, zeros for the columns
// past run·R) and written whole to the scratchpad or, with `acc`, as int32 to the accumulator.
// It completes, and pushes its token, in E = t + 1 + beats; SYNC completes in t + 1. A
// transposing LOAD hands its rows to the transpose buffer instead and completes when the buffer
// has written the last block; it releases the DRAM port after its last beat all the same.
// Where the vector unit shares the accumulator's write port, a LOAD with `acc` issues only
// while no VECTOR is in progress, and holds the port (acc_turn) until it completes.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module load_unit #(
    // N: elements per local row
    parameter int N = 16,
    // P: bytes per DRAM beat
    parameter int PORT_BYTES = 16,
    // scratchpad rows, for SP_RANGE
    parameter int SP_ROWS = 16384,
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
    // The queue carries whole instruction words; this unit reads the fields of LOAD and SYNC.
    /* verilator lint_off UNUSEDSIGNAL */
    input  isa_pkg::queue_entry_t      head,
    /* verilator lint_on UNUSEDSIGNAL */
    output logic                       issue,
    // tokens: pop ex2ld (next) and vu2ld (vec) at issue, push ld2ex / ld2vu at completion
    input  logic                       token_ok,
    input  logic                       vec_token_ok,
    output logic                       pop_next,
    output logic                       pop_vec,
    output logic                       push_next,
    output logic                       push_vec,
    output logic [31:0]                push_pc,       // the instruction whose push this is
    // DRAM port, shared with the STORE unit (held for [t, t + 1 + beats); a LOAD wins a tie)
    input  logic                       store_holds_port,
    output logic                       holds_port,
    output logic                       takes_port,
    output logic [31:0]                dram_addr,
    input  logic [PORT_BYTES-1:0][7:0] dram_rdata,
    // the accumulator's write port, where it is shared with the vector unit (docs/isa.md,
    // "Accumulator ports"; 0 where it is not): a VECTOR is in progress; a LOAD with acc issues
    // or is in progress
    input  logic                       vector_turn,
    output logic                       acc_turn,
    // local memories
    output logic                       sp_we,
    output logic                       acc_we,
    output logic [15:0]                row,
    output logic [N-1:0][7:0]          sp_data,
    output logic [N-1:0][31:0]         acc_data,
    // status for the counters and the deadlock rule
    output logic                       in_progress,   // a LOAD issued and not completed
    output isa_pkg::activity_t         activity,
    output isa_pkg::unit_error_t       error
);
    logic is_load, is_sync, free, tokens_ok, rows_fit, range_error, acc_waits;
    logic wide_q, transpose_q, push_q, push_next_q, push_vec_q, push_vec_r;
    logic [7:0] pad_q;
    logic [1:0] step_q;
    logic [15:0] base_q;
    logic [31:0] pc_q;

    logic walk_active, walk_row_first, walk_row_last, walk_last, dram_error;
    logic [9:0] walk_bytes, walk_offset;
    logic [7:0] walk_lo, walk_hi;
    logic [15:0] walk_row;
    logic [15:0] walk_column;
    logic tr_busy, tr_we, tr_finishing;
    logic [15:0] tr_row;
    logic [N-1:0][7:0] tr_data;

    assign is_load   = head_valid && head.word[OPCODE_W-1:0] == OP_LOAD;
    assign is_sync   = head_valid && head.word[OPCODE_W-1:0] == OP_SYNC;
    assign free      = !walk_active && !tr_busy && !stop;
    // The local rows must fit, checked when the instruction would issue (a transposing LOAD
    // writes whole blocks of N rows: SP_RANGE on all of them; transfer_rows counts them).
    assign rows_fit  = 32'(head.row_end) <= (head.word[LOAD_ACC_LSB] ? ACC_ROWS : SP_ROWS);
    assign tokens_ok = (!head.word[FLAG_POP_NEXT] || token_ok)
                    && (!head.word[FLAG_POP_VEC] || vec_token_ok);
    assign acc_waits = head.word[LOAD_ACC_LSB] && vector_turn;
    assign range_error = free && is_load && tokens_ok && !store_holds_port && !acc_waits
                      && !rows_fit;
    assign issue     = free && tokens_ok
                    && (is_sync || (is_load && !store_holds_port && !acc_waits && rows_fit));
    assign pop_next  = issue && head.word[FLAG_POP_NEXT];
    assign pop_vec   = issue && head.word[FLAG_POP_VEC];
    assign takes_port = issue && is_load;
    assign holds_port = walk_active;
    assign acc_turn  = takes_port && head.word[LOAD_ACC_LSB] || walk_active && wide_q;
    assign push_next = push_q;
    assign push_vec  = push_vec_r;

    transfer_walker #(.PORT_BYTES(PORT_BYTES), .DRAM_BYTES(DRAM_BYTES)) u_walk (
        .clk        (clk),
        .rst        (rst),
        .start      (takes_port),
        .word       (head.word),
        .wide       (head.word[LOAD_ACC_LSB]),
        .active     (walk_active),
        .beat_addr  (dram_addr),
        .run_bytes  (walk_bytes),
        .beat_offset(walk_offset),
        .elem_lo    (walk_lo),
        .elem_hi    (walk_hi),
        .dram_error (dram_error),
        .row_index  (walk_row),
        .column     (walk_column),
        .row_first  (walk_row_first),
        .row_last   (walk_row_last),
        .last       (walk_last)
    );

    // Assemble the local row: a fresh row of zeros at its first beat, then this beat's bytes at
    // their columns: DRAM bytes for in-bounds elements, the `pad` value (to ACC sign-extended to
    // int32, little-endian) for the others. A strided run (`step`, to SP only) takes the bytes
    // 2^step apart and skips the ones between.
    logic [4*N-1:0][7:0] row_q, row_next;
    always_comb begin
        logic [31:0] at, element, place;
        logic taken;
        at = '0;
        element = '0;
        place = '0;
        taken = 1'b0;
        row_next = walk_row_first ? '0 : row_q;
        // Skipped while idle: the simulator then spends no time on this unit.
        if (walk_active) for (int i = 0; i < PORT_BYTES; i++) begin
            at = 32'(walk_offset) + i;
            element = wide_q ? at >> 2 : at >> step_q;
            place = wide_q ? (32'(walk_column) << 2) + at : 32'(walk_column) + element;
            taken = wide_q || (at & ((32'd1 << step_q) - 32'd1)) == '0;
            if (at < 32'(walk_bytes) && taken) begin
                row_next[place] =
                    element >= 32'(walk_lo) && element < 32'(walk_hi) ? dram_rdata[i]
                    : !wide_q || at[1:0] == 2'd0 ? pad_q : {8{pad_q[7]}};
            end
        end
    end

    logic row_done;
    assign row_done = walk_active && walk_row_last && !dram_error;

    transpose_buffer #(.N(N)) u_transpose (
        .clk, .rst,
        .start    (takes_port),
        .row_we   (row_done && transpose_q),
        .row_data (row_next[N-1:0]),
        .row_final(walk_last),
        .out_we   (tr_we),
        .out_row  (tr_row),
        .out_data (tr_data),
        .busy     (tr_busy),
        .finishing(tr_finishing)
    );

    assign row      = tr_we ? base_q + tr_row : base_q + walk_row;
    assign sp_we    = tr_we || (row_done && !wide_q && !transpose_q);
    assign acc_we   = row_done && wide_q;
    assign sp_data  = tr_we ? tr_data : row_next[N-1:0];
    assign acc_data = row_next;

    // The LOAD completes after its last beat, or with transpose after its last block's drain.
    logic completes;
    assign completes = transpose_q ? tr_finishing : walk_active && walk_last;

    always_ff @(posedge clk) begin
        if (rst) begin
            push_q     <= 1'b0;
            push_vec_r <= 1'b0;
        end else begin
            push_q     <= (issue && is_sync && head.word[FLAG_PUSH_NEXT])
                       || (completes && push_next_q);
            push_vec_r <= (issue && is_sync && head.word[FLAG_PUSH_VEC]) || (completes && push_vec_q);
        end
        if (walk_active) row_q <= row_next;
        if (issue && is_sync) push_pc <= head.pc;
        else if (completes) push_pc <= pc_q;
        if (takes_port) begin
            wide_q      <= head.word[LOAD_ACC_LSB];
            transpose_q <= head.word[LOAD_TRANSPOSE_LSB];
            pad_q       <= head.word[LOAD_PAD_LSB +: LOAD_PAD_W];
            step_q      <= head.word[LOAD_STEP_LSB +: LOAD_STEP_W];
            base_q      <= head.word[XFER_ROW_LSB +: XFER_ROW_W];
            pc_q        <= head.pc;
            push_next_q <= head.word[FLAG_PUSH_NEXT];
            push_vec_q  <= head.word[FLAG_PUSH_VEC];
        end
    end

    assign in_progress = walk_active || tr_busy;
    assign activity.busy        = issue || in_progress;
    // A token stall takes precedence over a DRAM stall (docs/isa.md, "Counters").
    assign activity.stall_token = head_valid && free && !tokens_ok;
    assign activity.stall_dram  = is_load && free && tokens_ok && store_holds_port;

    assign error.valid = range_error || dram_error;
    assign error.code  = dram_error ? ERR_DRAM_RANGE
                       : head.word[LOAD_ACC_LSB] ? ERR_ACC_RANGE : ERR_SP_RANGE;
    assign error.pc    = dram_error ? pc_q : head.pc;
endmodule
