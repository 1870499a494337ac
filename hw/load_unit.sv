// The LOAD unit (docs/isa.md, "LOAD and STORE" and "Timing"): executes its queue in order. A LOAD
// issuing in cycle t spends t on set-up and then one DRAM beat per cycle; each local row is
// assembled from its runs (zeros for out-of-bounds runs and for the columns past run·R) and
// written whole to the scratchpad or, with `acc`, as int32 to the accumulator. It completes, and
// pushes its token, in E = t + 1 + beats; SYNC completes in t + 1.
module load_unit import isa_pkg::*; #(
    // N: elements per local row
    parameter int N = 16,
    // P: bytes per DRAM beat
    parameter int PORT_BYTES = 16,
    // scratchpad rows, for SP_RANGE
    parameter int SP_ROWS = 16384,
    // accumulator rows, for ACC_RANGE
    parameter int ACC_ROWS = 4096,
    // DRAM bytes, for DRAM_RANGE
    parameter int DRAM_BYTES = 1048576
) (
    input  logic                       clk,
    input  logic                       rst,
    input  logic                       stop,          // the machine has stopped: issue nothing
    // queue head
    input  logic                       head_valid,
    // The queue carries whole instruction words; this unit reads the fields of LOAD and SYNC.
    /* verilator lint_off UNUSEDSIGNAL */
    input  logic [WORD_W-1:0]          head_word,
    /* verilator lint_on UNUSEDSIGNAL */
    input  logic [31:0]                head_pc,
    output logic                       issue,
    // tokens: pop ex2ld at issue, push ld2ex at completion
    input  logic                       token_ok,
    output logic                       pop_next,
    output logic                       push_next,
    output logic [31:0]                push_pc,       // the instruction whose push this is
    // DRAM port, shared with the STORE unit (held for [t, E); a LOAD wins a tie)
    input  logic                       store_holds_port,
    output logic                       holds_port,
    output logic                       takes_port,
    output logic [23:0]                dram_addr,
    input  logic [PORT_BYTES-1:0][7:0] dram_rdata,
    // local memories
    output logic                       sp_we,
    output logic                       acc_we,
    output logic [15:0]                row,
    output logic [N-1:0][7:0]          sp_data,
    output logic [N-1:0][31:0]         acc_data,
    // status for the counters and the deadlock rule
    output logic                       busy,
    output logic                       stall_token,
    output logic                       stall_dram,
    output logic                       error,
    output logic [ERR_W-1:0]           error_code,
    output logic [31:0]                error_pc
);
    logic is_load, is_sync, free, tokens_ok, rows_fit, range_error;
    logic wide_q, push_q, push_next_q;
    logic [15:0] base_q;
    logic [31:0] pc_q;

    logic walk_active, walk_first, walk_in, walk_row_first, walk_row_last, walk_last;
    logic [23:0] walk_run_addr;
    logic [63:0] walk_row_end;
    logic [9:0] walk_bytes, walk_offset;
    logic [15:0] walk_row;
    logic [15:0] walk_column;

    assign is_load   = head_valid && head_word[OPCODE_W-1:0] == OP_LOAD;
    assign is_sync   = head_valid && head_word[OPCODE_W-1:0] == OP_SYNC;
    assign free      = !walk_active && !stop;
    // The local rows must fit, checked when the instruction would issue.
    assign rows_fit  = walk_row_end <= (head_word[LOAD_ACC_LSB] ? 64'(ACC_ROWS) : 64'(SP_ROWS));
    assign tokens_ok = !head_word[FLAG_POP_NEXT] || token_ok;
    assign range_error = free && is_load && tokens_ok && !store_holds_port && !rows_fit;
    assign issue     = free && tokens_ok && (is_sync || (is_load && !store_holds_port && rows_fit));
    assign pop_next  = issue && head_word[FLAG_POP_NEXT];
    assign takes_port = issue && is_load;
    assign holds_port = walk_active;
    assign push_next = push_q;

    transfer_walker #(.PORT_BYTES(PORT_BYTES)) u_walk (
        .clk        (clk),
        .rst        (rst),
        .start      (takes_port),
        .word       (head_word),
        .row_end    (walk_row_end),
        .wide       (head_word[LOAD_ACC_LSB]),
        .active     (walk_active),
        .beat_addr  (dram_addr),
        .run_addr   (walk_run_addr),
        .run_bytes  (walk_bytes),
        .beat_offset(walk_offset),
        .run_first  (walk_first),
        .in_bounds  (walk_in),
        .row_index  (walk_row),
        .column     (walk_column),
        .row_first  (walk_row_first),
        .row_last   (walk_row_last),
        .last       (walk_last)
    );

    // Assemble the local row: a fresh row of zeros at its first beat, then this beat's bytes at
    // their columns (zeros when the run is out of bounds).
    logic [4*N-1:0][7:0] row_q, row_next;
    always_comb begin
        logic [31:0] at;
        at = '0;
        row_next = walk_row_first ? '0 : row_q;
        // Skipped while idle: the simulator then spends no time on this unit.
        if (walk_active) for (int i = 0; i < PORT_BYTES; i++) begin
            at = 32'(walk_offset) + i;
            if (at < 32'(walk_bytes)) begin
                row_next[(32'(walk_column) << (wide_q ? 2 : 0)) + at] =
                    walk_in ? dram_rdata[i] : '0;
            end
        end
    end

    logic dram_error;
    assign dram_error = walk_active && walk_first && walk_in
                     && 32'(walk_run_addr) + 32'(walk_bytes) > DRAM_BYTES;

    assign row      = base_q + walk_row;
    assign sp_we    = walk_active && walk_row_last && !wide_q && !dram_error;
    assign acc_we   = walk_active && walk_row_last && wide_q && !dram_error;
    assign sp_data  = row_next[N-1:0];
    assign acc_data = row_next;

    always_ff @(posedge clk) begin
        if (rst) begin
            push_q <= 1'b0;
        end else begin
            push_q <= (issue && is_sync && head_word[FLAG_PUSH_NEXT])
                   || (walk_active && walk_last && push_next_q);
        end
        if (walk_active) row_q <= row_next;
        if (issue && is_sync) push_pc <= head_pc;
        else if (walk_active && walk_last) push_pc <= pc_q;
        if (takes_port) begin
            wide_q <= head_word[LOAD_ACC_LSB];
            base_q <= head_word[XFER_ROW_LSB +: XFER_ROW_W];
            pc_q   <= head_pc;
            push_next_q <= head_word[FLAG_PUSH_NEXT];
        end
    end

    assign busy        = issue || walk_active;
    // A token stall takes precedence over a DRAM stall (docs/isa.md, "Counters").
    assign stall_token = head_valid && free && !tokens_ok;
    assign stall_dram  = is_load && free && tokens_ok && store_holds_port;

    assign error      = range_error || dram_error;
    assign error_code = dram_error ? ERR_DRAM_RANGE
                      : head_word[LOAD_ACC_LSB] ? ERR_ACC_RANGE : ERR_SP_RANGE;
    assign error_pc   = dram_error ? pc_q : head_pc;
endmodule
