// The accelerator core (docs/isa.md, "Machine model"): dispatcher, four instruction queues, the
// decoupled LOAD / EXEC / STORE / VECTOR units synchronised by dependency tokens, scratchpad, accumulator,
// the error and done status, and the counters. DRAM lives outside (in the simulation top); the
// core reaches it through the data port of LOAD/STORE and the read-only instruction-fetch port
// of the fetch unit (ISA v2 A2: the program is streamed from DRAM at `program_base`).
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module accelerator #(
    // N: the array is N×N; scratchpad rows hold N int8, accumulator rows N int32
    parameter int ARRAY_SIZE = 16,
    // rows of the scratchpad
    parameter int SCRATCHPAD_ROWS = 16384,
    // rows of the accumulator memory
    parameter int ACCUMULATOR_ROWS = 4096,
    // bytes of DRAM
    parameter longint DRAM_BYTES = 64'd1048576,
    // P: bytes the DRAM port moves per cycle
    parameter int DRAM_PORT_BYTES = 16,
    // words the instruction prefetch buffer holds
    parameter int FETCH_BUFFER_WORDS = 32,
    // bytes the instruction-fetch port reads per cycle
    parameter int FETCH_PORT_BYTES = 64,
    // entries in each unit's instruction queue
    parameter int QUEUE_DEPTH = 8,
    // L: lanes the vector unit computes a cycle (a source row takes N / L cycles)
    parameter int VECTOR_LANES = 16,
    // 1: the vector unit takes turns with STORE and LOAD on their accumulator ports
    parameter int VECTOR_SHARES_PORTS = 0,
    // 1: MATMUL's `split` (two array halves, accumulator banks of even and odd rows)
    parameter int COLUMN_SPLIT = 1
) (
    input  logic                            clk,
    input  logic                            rst,          // cycle 0 is the first after reset
    input  logic                            watchdog,     // the testbench's watchdog fired: stop
    input  logic [31:0]                     program_base, // DRAM byte address of word 0
    output logic [31:0]                     fetch_addr,
    input  logic [FETCH_PORT_BYTES-1:0][7:0] fetch_rdata,
    output logic [31:0]                     dram_addr,
    input  logic [DRAM_PORT_BYTES-1:0][7:0] dram_rdata,
    output logic [DRAM_PORT_BYTES-1:0]      dram_wstrb,
    output logic [DRAM_PORT_BYTES-1:0][7:0] dram_wdata,
    output logic                            done,
    output logic [ERR_W-1:0]                error,
    output logic [31:0]                     error_pc,
    output isa_pkg::counters_t              ctr
);
    localparam int N = ARRAY_SIZE;

    // Impossible configurations (docs/isa.md, "Hardware configuration" legal values).
    if (N < 2 || N > 128) begin : g_bad_n
        $fatal(1, "ARRAY_SIZE=%0d: must be 2 … 128", N);
    end
    if (SCRATCHPAD_ROWS < N || SCRATCHPAD_ROWS > 65536) begin : g_bad_sp
        $fatal(1, "SCRATCHPAD_ROWS=%0d: must hold one N-row weight tile and be at most 65536",
               SCRATCHPAD_ROWS);
    end
    if (ACCUMULATOR_ROWS < 1 || ACCUMULATOR_ROWS > 65536) begin : g_bad_acc
        $fatal(1, "ACCUMULATOR_ROWS=%0d: must be 1 … 65536", ACCUMULATOR_ROWS);
    end
    if (DRAM_BYTES < 1 || DRAM_BYTES > (64'd1 << 32)) begin : g_bad_dram
        $fatal(1, "DRAM_BYTES=%0d: must be 1 … 2^32 (32-bit addresses)", DRAM_BYTES);
    end
    if (DRAM_PORT_BYTES < 1 || DRAM_PORT_BYTES > 256) begin : g_bad_port
        $fatal(1, "DRAM_PORT_BYTES=%0d: must be 1 … 256", DRAM_PORT_BYTES);
    end
    if (QUEUE_DEPTH < 1 || QUEUE_DEPTH > 256) begin : g_bad_queue
        $fatal(1, "QUEUE_DEPTH=%0d: must be 1 … 256", QUEUE_DEPTH);
    end
    if (VECTOR_LANES < 1 || N % VECTOR_LANES != 0) begin : g_bad_lanes
        $fatal(1, "VECTOR_LANES=%0d: must divide ARRAY_SIZE=%0d", VECTOR_LANES, N);
    end
    // The array splits at row N/2; the accumulator's banks hold the even and the odd rows.
    if (COLUMN_SPLIT != 0 && (COLUMN_SPLIT != 1 || N % 2 != 0 || ACCUMULATOR_ROWS % 2 != 0))
    begin : g_bad_split
        $fatal(1, "COLUMN_SPLIT=%0d: must be 0, or 1 with an even ARRAY_SIZE and ACCUMULATOR_ROWS",
               COLUMN_SPLIT);
    end

    // stop: issue nothing more. A unit's error stops the machine from the next cycle through
    // its registered copy (err_q, below), as done_q would, so the capture's priority and pc
    // multiplexer sit a cycle after the issue logic that raises it.
    logic done_q, stop;
    logic [4:0] err_q;
    assign stop = done_q || err_q != '0 || watchdog;

    // ---- fetch, dispatcher and queues ----
    logic [UNITS-1:0] queue_full, head_valid, queue_push, queue_pop;
    // The word being dispatched, as queued, and each unit's queue head (by UNIT_*, as bits:
    // Yosys reads no array of structs; ld_head … vu_head are the same as structs).
    isa_pkg::queue_entry_t entry, ld_head, ex_head, st_head, vu_head;
    logic [$bits(entry)-1:0] head [UNITS];
    assign ld_head = head[UNIT_LOAD];
    assign ex_head = head[UNIT_EXEC];
    assign st_head = head[UNIT_STORE];
    assign vu_head = head[UNIT_VECTOR];
    isa_pkg::unit_error_t disp_error, ld_error, ex_error, st_error, vu_error;
    logic halted, blocked, word_valid, pc_outside, dispatch;
    logic [WORD_W-1:0] word;
    logic [31:0] pc;

    // Pre-decode, as a word arrives in the prefetch buffer and kept with it: the decoder's
    // verdict (queue, HALT, legality: a function of the word alone) and row_factors' products;
    // transfer_rows finishes the row count as the word is queued. The dispatcher then reads
    // flip-flops and the buffer, no decode logic, in the cycle it dispatches.
    localparam int DECODE_W = 1 + 2 + ERR_W;
    logic [WORD_W-1:0] arriving;
    logic [2*ROWS_W-1:0] arriving_factors, word_factors;
    logic [DECODE_W-1:0] arriving_decode, word_decode;
    row_factors u_factors (
        .word(arriving), .low(arriving_factors[0 +: ROWS_W]),
        .high(arriving_factors[ROWS_W +: ROWS_W])
    );
    decoder #(.ARRAY_SIZE(N), .COLUMN_SPLIT(COLUMN_SPLIT)) u_decoder (
        .word   (arriving),
        .is_halt(arriving_decode[0]),
        .unit   (arriving_decode[1 +: 2]),
        .error  (arriving_decode[3 +: ERR_W])
    );
    fetch_unit #(.FETCH_BUFFER_WORDS(FETCH_BUFFER_WORDS), .FETCH_PORT_BYTES(FETCH_PORT_BYTES),
                 .DRAM_BYTES(DRAM_BYTES), .SIDE_W(DECODE_W + 2 * ROWS_W)) u_fetch (
        .clk, .rst, .base(program_base), .fetch_addr, .fetch_rdata,
        .word_valid, .word, .pc, .pc_outside, .dispatch,
        .word_side({word_decode, word_factors}), .arriving,
        .arriving_side({arriving_decode, arriving_factors})
    );
    dispatcher u_dispatcher (
        .clk, .rst, .stop,
        .word_valid, .pc, .pc_outside, .dispatch,
        .is_halt(word_decode[0]), .unit(word_decode[1 +: 2]),
        .decode_error(word_decode[3 +: ERR_W]),
        .queue_full, .queue_push, .halted, .blocked, .error(disp_error)
    );
    assign entry.word = word;
    assign entry.pc   = pc;
    transfer_rows #(.N(N)) u_rows (
        .word, .low(word_factors[0 +: ROWS_W]), .high(word_factors[ROWS_W +: ROWS_W]),
        .row_end(entry.row_end)
    );
    for (genvar u = 0; u < UNITS; u++) begin : g_queue
        instr_queue #(.DEPTH(QUEUE_DEPTH), .W($bits(entry))) u_queue (
            .clk, .rst,
            .push      (queue_push[u]),
            .push_data (entry),
            .pop       (queue_pop[u]),
            .full      (queue_full[u]),
            .head_valid(head_valid[u]),
            .head_data (head[u])
        );
    end

    // ---- tokens: 0 ld2ex, 1 ex2ld, 2 ex2st, 3 st2ex, 4 ld2vu, 5 vu2ld, 6 vu2st, 7 st2vu ----
    localparam int LD2EX = 0, EX2LD = 1, EX2ST = 2, ST2EX = 3;
    localparam int LD2VU = 4, VU2LD = 5, VU2ST = 6, ST2VU = 7;
    logic [7:0] tok_pop, tok_available, tok_overflow;
    logic [7:0][1:0] tok_push;
    tokens #(.COUNTERS(8)) u_tokens (
        .clk, .rst, .pop(tok_pop), .push(tok_push), .available(tok_available),
        .overflow(tok_overflow)
    );

    // ---- local memories ----
    logic sp_we;
    logic [15:0] sp_w_row, sp_a_row, sp_b_row;
    logic [15:0] vu_sp_row;
    logic [N-1:0][7:0] sp_w_data, sp_a_data, sp_b_data, vu_sp_data;
    scratchpad #(.N(N), .ROWS(SCRATCHPAD_ROWS)) u_scratchpad (
        .clk, .we(sp_we), .w_row(sp_w_row), .w_data(sp_w_data),
        .a_row(sp_a_row), .a_data(sp_a_data), .b_row(sp_b_row), .b_data(sp_b_data),
        .c_row(vu_sp_row), .c_data(vu_sp_data)
    );

    // The vector unit's accumulator read ports: one its source and old-row reads take turns on
    // when a row takes several cycles (hw/vector_unit.sv), a bank fewer per write port.
    localparam int VECTOR_READS = VECTOR_LANES < N ? 1 : 2;
    logic mm_we, mm_accumulate, mm_we2, ld_acc_we, vu_we;
    logic [15:0] vu_row;
    logic [VECTOR_READS-1:0][15:0] vu_rd_row;
    logic [VECTOR_READS-1:0][N-1:0][31:0] vu_rd_data;
    logic [N-1:0][31:0] vu_data;
    logic [15:0] mm_row, mm_next_row, mm_row2, mm_next_row2, st_row;
    logic [N-1:0][31:0] mm_data, mm_data2, ld_acc_data, st_data;
    // With VECTOR_SHARES_PORTS the vector unit takes turns with LOADs to ACC on the write port
    // and with STOREs on the read port (docs/isa.md, "Accumulator ports"): each unit's turn,
    // and what holds the others back.
    logic ld_acc_turn, st_acc_turn, vu_read_turn, vu_read_held;
    logic vu_load_turn, vu_store_turn, ld_vector_turn, st_vector_turn;
    accumulator #(.N(N), .ROWS(ACCUMULATOR_ROWS), .VECTOR_READS(VECTOR_READS),
                  .SHARED(VECTOR_SHARES_PORTS), .COLUMN_SPLIT(COLUMN_SPLIT)) u_accumulator (
        .clk,
        .mm_we(mm_we), .mm_accumulate(mm_accumulate), .mm_row(mm_row), .mm_next_row,
        .mm_data(mm_data), .mm_we2, .mm_row2, .mm_next_row2, .mm_data2,
        .ld_we(ld_acc_we), .ld_row(sp_w_row), .ld_data(ld_acc_data),
        .st_row(st_row), .st_data(st_data),
        .vu_turn(vu_read_turn), .vu_rd_row, .vu_rd_data, .vu_we, .vu_row, .vu_data
    );

    // ---- units ----
    isa_pkg::activity_t ld_activity, ex_activity, st_activity, vu_activity;
    logic ld_holds, ld_takes, ld_in_progress;
    logic ld_push, ld_push_vec;
    logic [31:0] ld_push_pc;
    logic [31:0] ld_addr;
    load_unit #(.N(N), .PORT_BYTES(DRAM_PORT_BYTES), .SP_ROWS(SCRATCHPAD_ROWS),
                .ACC_ROWS(ACCUMULATOR_ROWS), .DRAM_BYTES(DRAM_BYTES)) u_load (
        .clk, .rst, .stop,
        .head_valid(head_valid[UNIT_LOAD]), .head(ld_head), .issue(queue_pop[UNIT_LOAD]),
        .token_ok(tok_available[EX2LD]), .vec_token_ok(tok_available[VU2LD]),
        .pop_next(tok_pop[EX2LD]), .pop_vec(tok_pop[VU2LD]),
        .push_next(ld_push), .push_vec(ld_push_vec),
        .push_pc(ld_push_pc),
        .store_holds_port(st_holds), .holds_port(ld_holds), .takes_port(ld_takes),
        .dram_addr(ld_addr), .dram_rdata,
        .vector_turn(ld_vector_turn), .acc_turn(ld_acc_turn),
        .sp_we, .acc_we(ld_acc_we), .row(sp_w_row), .sp_data(sp_w_data), .acc_data(ld_acc_data),
        .in_progress(ld_in_progress), .activity(ld_activity), .error(ld_error)
    );

    logic ex_in_progress;
    logic [1:0] ex_push_prev, ex_push_next;
    logic [31:0] ex_push_pc;
    exec_unit #(.N(N), .SP_ROWS(SCRATCHPAD_ROWS), .ACC_ROWS(ACCUMULATOR_ROWS),
                .COLUMN_SPLIT(COLUMN_SPLIT)) u_exec (
        .clk, .rst, .stop,
        .head_valid(head_valid[UNIT_EXEC]), .head(ex_head), .issue(queue_pop[UNIT_EXEC]),
        .prev_token_ok(tok_available[LD2EX]), .next_token_ok(tok_available[ST2EX]),
        .pop_prev(tok_pop[LD2EX]), .pop_next(tok_pop[ST2EX]),
        .push_prev(ex_push_prev), .push_next(ex_push_next), .push_pc(ex_push_pc),
        .sp_a_row, .sp_a_data, .sp_b_row, .sp_b_data,
        .acc_we(mm_we), .acc_accumulate(mm_accumulate), .acc_row(mm_row),
        .acc_next_row(mm_next_row), .acc_data(mm_data),
        .acc_we2(mm_we2), .acc_row2(mm_row2), .acc_next_row2(mm_next_row2), .acc_data2(mm_data2),
        .in_progress(ex_in_progress), .activity(ex_activity), .error(ex_error)
    );

    logic st_holds, st_push, st_push_vec;
    logic [31:0] st_push_pc;
    logic [31:0] st_addr;
    store_unit #(.N(N), .PORT_BYTES(DRAM_PORT_BYTES), .ACC_ROWS(ACCUMULATOR_ROWS),
                 .DRAM_BYTES(DRAM_BYTES)) u_store (
        .clk, .rst, .stop,
        .head_valid(head_valid[UNIT_STORE]), .head(st_head), .issue(queue_pop[UNIT_STORE]),
        .token_ok(tok_available[EX2ST]), .vec_token_ok(tok_available[VU2ST]),
        .pop_prev(tok_pop[EX2ST]), .pop_vec(tok_pop[VU2ST]),
        .push_prev(st_push), .push_vec(st_push_vec),
        .push_pc(st_push_pc),
        .load_holds_port(ld_holds), .load_takes_port(ld_takes), .holds_port(st_holds),
        .dram_addr(st_addr), .dram_wstrb, .dram_wdata,
        .acc_row(st_row), .acc_data(st_data),
        .vector_turn(st_vector_turn), .acc_turn(st_acc_turn),
        .activity(st_activity), .error(st_error)
    );

    logic vu_in_progress, vu_push_prev, vu_push_next;
    assign vu_load_turn   = VECTOR_SHARES_PORTS != 0 && ld_acc_turn;
    assign vu_store_turn  = VECTOR_SHARES_PORTS != 0 && st_acc_turn;
    assign ld_vector_turn = VECTOR_SHARES_PORTS != 0 && vu_in_progress;
    assign st_vector_turn = VECTOR_SHARES_PORTS != 0 && vu_read_held;
    logic [31:0] vu_push_pc;
    vector_unit #(.N(N), .LANES(VECTOR_LANES), .SP_ROWS(SCRATCHPAD_ROWS),
                  .ACC_ROWS(ACCUMULATOR_ROWS), .ACC_READS(VECTOR_READS)) u_vector (
        .clk, .rst, .stop,
        .head_valid(head_valid[UNIT_VECTOR]), .head(vu_head), .issue(queue_pop[UNIT_VECTOR]),
        .prev_token_ok(tok_available[LD2VU]), .next_token_ok(tok_available[ST2VU]),
        .pop_prev(tok_pop[LD2VU]), .pop_next(tok_pop[ST2VU]),
        .push_prev(vu_push_prev), .push_next(vu_push_next), .push_pc(vu_push_pc),
        .sp_row(vu_sp_row), .sp_data(vu_sp_data), .rd_row(vu_rd_row), .rd_data(vu_rd_data),
        .load_turn(vu_load_turn), .store_turn(vu_store_turn), .read_turn(vu_read_turn),
        .read_held(vu_read_held),
        .acc_we(vu_we), .acc_row(vu_row), .acc_data(vu_data),
        .in_progress(vu_in_progress), .activity(vu_activity), .error(vu_error)
    );

    assign dram_addr = st_holds ? st_addr : ld_addr;
    always_comb begin
        tok_push        = '0;
        tok_push[LD2EX] = 2'(ld_push);
        tok_push[EX2LD] = ex_push_prev;
        tok_push[EX2ST] = ex_push_next;
        tok_push[ST2EX] = 2'(st_push);
        tok_push[LD2VU] = 2'(ld_push_vec);
        tok_push[VU2LD] = 2'(vu_push_prev);
        tok_push[VU2ST] = 2'(vu_push_next);
        tok_push[ST2VU] = 2'(st_push_vec);
    end

    // ---- done, errors, deadlock ----
    logic idle, deadlock, finished;
    logic [UNITS-1:0] waiting;
    assign waiting  = {vu_activity.stall_token, st_activity.stall_token,
                       ex_activity.stall_token, ld_activity.stall_token};
    assign idle     = !ld_in_progress && !st_holds && !ex_in_progress && !vu_in_progress;
    // docs/isa.md, "Deadlock rule": nothing in progress, every queue empty or its head waiting
    // for a token, at least one waiting, and the dispatcher unable to dispatch.
    assign deadlock = !stop && idle && blocked && waiting != '0
                   && ((waiting | ~head_valid) == '1);
    assign finished = !stop && halted && idle && head_valid == '0;

    logic [31:0] deadlock_pc, overflow_pc;
    always_comb begin
        if (waiting[UNIT_LOAD]) deadlock_pc = ld_head.pc;
        else if (waiting[UNIT_EXEC]) deadlock_pc = ex_head.pc;
        else if (waiting[UNIT_STORE]) deadlock_pc = st_head.pc;
        else deadlock_pc = vu_head.pc;
        // Each counter has one pushing unit.
        if (tok_overflow[LD2EX] || tok_overflow[LD2VU]) overflow_pc = ld_push_pc;
        else if (tok_overflow[ST2EX] || tok_overflow[ST2VU]) overflow_pc = st_push_pc;
        else if (tok_overflow[VU2LD] || tok_overflow[VU2ST]) overflow_pc = vu_push_pc;
        else overflow_pc = ex_push_pc;
    end

    // The dispatcher's and the units' errors (raised at an issue or a dispatch, the deepest
    // logic of the design) are registered as they are, in err_q, err_code_q and err_pc_q, and
    // captured the cycle after, the first of them winning. The machine issues nothing in that
    // cycle (stop) and the counters stop with it, so `cycles` and every counter are those of
    // the cycle the error happened in (docs/isa.md, "Errors and status"); only `done`, `error`
    // and `error_pc` rise a cycle later. A token overflow and a deadlock, found from registers,
    // stop the machine at once as before. A finished machine has no queue head and dispatches
    // nothing, so no unit error comes with `finished`.
    logic [4:0][ERR_W-1:0] err_code_q;
    logic [4:0][31:0]      err_pc_q;
    logic [ERR_W-1:0] error_q;
    logic [31:0] error_pc_q;
    always_ff @(posedge clk) begin
        if (rst) begin
            done_q  <= 1'b0;
            err_q   <= '0;
            error_q <= ERR_OK;
            error_pc_q <= '0;
        end else if (!stop) begin
            err_q      <= {vu_error.valid, st_error.valid, ex_error.valid, ld_error.valid,
                           disp_error.valid};
            err_code_q <= {vu_error.code, st_error.code, ex_error.code, ld_error.code,
                           disp_error.code};
            err_pc_q   <= {vu_error.pc, st_error.pc, ex_error.pc, ld_error.pc, disp_error.pc};
            if (tok_overflow != '0) begin
                done_q <= 1'b1;
                error_q <= ERR_TOKEN_OVERFLOW;
                error_pc_q <= overflow_pc;
            end else if (deadlock) begin
                done_q <= 1'b1;
                error_q <= ERR_DEADLOCK;
                error_pc_q <= deadlock_pc;
            end else done_q <= finished;
        end else if (!done_q && err_q != '0) begin
            // Several in one cycle report one of them (docs/isa.md): the dispatcher's first,
            // then load, exec, store, vector.
            done_q <= 1'b1;
            for (int k = 4; k >= 0; k--)
                if (err_q[k]) begin
                    error_q    <= err_code_q[k];
                    error_pc_q <= err_pc_q[k];
                end
        end
    end
    assign done     = done_q || watchdog;
    assign error    = error_q;
    assign error_pc = error_pc_q;

    // `cycles` is the cycle in which the machine finished: cycles 0 … cycles-1 are counted.
    counters #(.N(N)) u_counters (
        .clk, .rst, .count(!stop && !finished),
        .load(ld_activity), .exec(ex_activity), .store(st_activity), .vector(vu_activity), .ctr
    );
endmodule
