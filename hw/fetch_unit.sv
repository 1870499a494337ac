// The instruction fetch (ISA v2 A2, docs/isa.md "Instructions streamed from DRAM"): reads the
// program's 64-byte words from DRAM at `base` in order, FETCH_PORT_BYTES per cycle through its
// own read-only port, into a prefetch buffer of FETCH_BUFFER_WORDS words that the dispatcher
// empties. Timing, with fb = ceil(64 / FETCH_PORT_BYTES):
//   the fetch of word p starts at s_p = max(s_{p-1} + fb, d_{p-F} + 1) and the word can be
//   dispatched from s_p + fb;
// a buffer slot is taken when a fetch starts and freed by a dispatch (reusable the next cycle).
// It fetches without decoding (past HALT too) and stops before the first word that does not
// lie wholly inside DRAM; the dispatcher reports FETCH_RANGE when it reaches that word.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module fetch_unit #(
    // F: words the prefetch buffer holds (the configuration's fetch_buffer_words)
    parameter int FETCH_BUFFER_WORDS = 32,
    // bytes the fetch port reads per cycle (the configuration's fetch_port_bytes)
    parameter int FETCH_PORT_BYTES = 64,
    // bytes of DRAM, for the last word that can be fetched (64-bit: up to 2^32; a -G override
    // of a top-level build arrives as a 32-bit constant)
    /* verilator lint_off WIDTHEXPAND */
    parameter longint DRAM_BYTES = 64'd1048576,
    /* verilator lint_on WIDTHEXPAND */
    // bits the caller computes from a word as it arrives, kept with it (pre-decode)
    parameter int SIDE_W = 1
) (
    input  logic                             clk,
    input  logic                             rst,
    input  logic [31:0]                      base,        // byte address of word 0 (64-aligned)
    // the fetch port
    output logic [31:0]                      fetch_addr,
    input  logic [FETCH_PORT_BYTES-1:0][7:0] fetch_rdata,
    // to the dispatcher: the next word in program order
    output logic                             word_valid,
    output logic [WORD_W-1:0]                word,
    output logic [31:0]                      pc,          // its index
    output logic                             pc_outside,  // word `pc` can never be fetched
    output logic [SIDE_W-1:0]                word_side,   // the side bits of `word`
    // the word arriving in the buffer this cycle, and its side bits (computed by the caller)
    output logic [WORD_W-1:0]                arriving,
    input  logic [SIDE_W-1:0]                arriving_side,
    input  logic                             dispatch     // the dispatcher takes `word`
);
    localparam int F = FETCH_BUFFER_WORDS;
    localparam int FP = FETCH_PORT_BYTES;
    localparam int WORD_BYTES = WORD_W / 8;
    localparam int FB = (WORD_BYTES + FP - 1) / FP;   // cycles per word
    localparam int SLOT_W = F > 1 ? $clog2(F) : 1;
    localparam int COUNT_W = $clog2(F + 1);
    localparam int BEAT_W = FB > 1 ? $clog2(FB) : 1;

    if (F < 1 || F > 65536) begin : g_bad_words
        $fatal(1, "FETCH_BUFFER_WORDS=%0d: must be 1 … 65536", F);
    end
    if (FP < 1 || FP > WORD_BYTES) begin : g_bad_port
        $fatal(1, "FETCH_PORT_BYTES=%0d: must be 1 … %0d", FP, WORD_BYTES);
    end

    logic [WORD_W-1:0]  buffer [F];
    logic [SIDE_W-1:0]  side [F];
    logic [SLOT_W-1:0]  read_q, write_q;
    logic [COUNT_W-1:0] taken_q, arrived_q;    // slots taken by started fetches; words arrived
    logic [31:0]        next_q, pc_q;          // the word to fetch next; the word to dispatch
    logic [BEAT_W-1:0]  beat_q;                // chunk of the word being fetched
    logic               midway_q;              // a fetch is past its first chunk
    logic [WORD_W-1:0]  partial_q;             // the chunks fetched so far (fb > 1)

    // A word is fetchable when it lies wholly inside DRAM (64-bit: no wrap-around).
    function automatic logic in_dram(input logic [31:0] p);
        in_dram = 64'(base) + 64'(p) * 64'(WORD_BYTES) + 64'(WORD_BYTES) <= 64'(DRAM_BYTES);
    endfunction

    function automatic logic [SLOT_W-1:0] next_slot(input logic [SLOT_W-1:0] slot);
        next_slot = slot == SLOT_W'(F - 1) ? '0 : slot + 1'b1;
    endfunction

    logic start, reading, completes;
    logic [BEAT_W-1:0] chunk;
    logic [WORD_W-1:0] assembled;
    assign start     = !midway_q && 32'(taken_q) < F && in_dram(next_q);
    assign reading   = start || midway_q;
    assign chunk     = midway_q ? beat_q : '0;
    assign completes = reading && 32'(chunk) == FB - 1;
    assign fetch_addr = base + next_q * 32'(WORD_BYTES) + 32'(chunk) * 32'(FP);

    // This cycle's chunk placed over the earlier ones; bytes past the word's end are dropped.
    always_comb begin
        assembled = partial_q;
        for (int i = 0; i < FP; i++) begin
            if (32'(chunk) * FP + i < WORD_BYTES) begin
                assembled[8 * (32'(chunk) * FP + i) +: 8] = fetch_rdata[i];
            end
        end
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            read_q    <= '0;
            write_q   <= '0;
            taken_q   <= '0;
            arrived_q <= '0;
            next_q    <= '0;
            pc_q      <= '0;
            beat_q    <= '0;
            midway_q  <= 1'b0;
        end else begin
            taken_q   <= taken_q + COUNT_W'(start) - COUNT_W'(dispatch);
            arrived_q <= arrived_q + COUNT_W'(completes) - COUNT_W'(dispatch);
            if (completes) begin
                buffer[write_q] <= assembled;
                side[write_q]   <= arriving_side;
                write_q  <= next_slot(write_q);
                next_q   <= next_q + 1'b1;
                beat_q   <= '0;
                midway_q <= 1'b0;
            end else if (reading) begin
                partial_q <= assembled;
                beat_q    <= chunk + 1'b1;
                midway_q  <= 1'b1;
            end
            if (dispatch) begin
                read_q <= next_slot(read_q);
                pc_q   <= pc_q + 1'b1;
            end
        end
    end

    assign word_valid = arrived_q != '0;
    assign word       = buffer[read_q];
    assign word_side  = side[read_q];
    assign arriving   = assembled;
    assign pc         = pc_q;
    assign pc_outside = !in_dram(pc_q);
endmodule
