// The simulated system behind sim_top: the accelerator with its instruction memory, the DRAM
// model and the cycle watchdog (see sim_top for the testbench interface).
module sim_system #(
    // N: the array is N×N
    parameter int ARRAY_SIZE = 16,
    // rows of the scratchpad
    parameter int SCRATCHPAD_ROWS = 16384,
    // rows of the accumulator memory
    parameter int ACCUMULATOR_ROWS = 4096,
    // bytes of DRAM
    parameter int DRAM_BYTES = 1048576,
    // P: bytes the DRAM port moves per cycle
    parameter int DRAM_PORT_BYTES = 16,
    // instruction memory words
    parameter int IMEM_WORDS = 4096,
    // entries in each unit's instruction queue
    parameter int QUEUE_DEPTH = 8
) (
    input  logic        clk,
    input  logic        rst,
    input  logic [31:0] max_cycles,
    output logic        done,
    output logic        timed_out,
    output logic [3:0]  error,
    output logic [31:0] error_pc,
    output logic [31:0] ctr_cycles,
    output logic [31:0] ctr_busy_load,
    output logic [31:0] ctr_busy_exec,
    output logic [31:0] ctr_busy_store,
    output logic [31:0] ctr_stall_token_load,
    output logic [31:0] ctr_stall_token_exec,
    output logic [31:0] ctr_stall_token_store,
    output logic [31:0] ctr_stall_dram_load,
    output logic [31:0] ctr_stall_dram_store,
    output logic [31:0] ctr_macs
);
    localparam int P = DRAM_PORT_BYTES;
    localparam int IMEM_IDX_W = IMEM_WORDS > 1 ? $clog2(IMEM_WORDS) : 1;

    logic [255:0] imem [IMEM_WORDS];
    initial begin
        string path;
        for (int i = 0; i < IMEM_WORDS; i++) imem[i] = '0;
        if ($value$plusargs("imem=%s", path)) $readmemh(path, imem);
    end

    logic [31:0]        fetch_pc;
    logic [255:0]       fetch_word;
    logic [23:0]        dram_addr;
    logic [P-1:0][7:0]  dram_rdata, dram_wdata;
    logic [P-1:0]       dram_wstrb;
    logic               core_done, timed_out_q, done_q;
    logic [31:0]        elapsed_q;

    // Words past the end of the program read as zero (opcode 0 is ILLEGAL_OPCODE).
    assign fetch_word = fetch_pc < IMEM_WORDS ? imem[IMEM_IDX_W'(fetch_pc)] : '0;

    accelerator #(
        .ARRAY_SIZE(ARRAY_SIZE), .SCRATCHPAD_ROWS(SCRATCHPAD_ROWS),
        .ACCUMULATOR_ROWS(ACCUMULATOR_ROWS), .DRAM_BYTES(DRAM_BYTES),
        .DRAM_PORT_BYTES(DRAM_PORT_BYTES), .IMEM_WORDS(IMEM_WORDS), .QUEUE_DEPTH(QUEUE_DEPTH)
    ) u_core (
        .clk, .rst, .watchdog(timed_out_q), .fetch_pc, .fetch_word,
        .dram_addr, .dram_rdata, .dram_wstrb, .dram_wdata,
        .done(core_done), .error, .error_pc,
        .ctr_cycles, .ctr_busy_load, .ctr_busy_exec, .ctr_busy_store,
        .ctr_stall_token_load, .ctr_stall_token_exec, .ctr_stall_token_store,
        .ctr_stall_dram_load, .ctr_stall_dram_store, .ctr_macs
    );

    dram_model #(.BYTES(DRAM_BYTES), .PORT_BYTES(P)) u_dram (
        .clk, .addr(dram_addr), .rdata(dram_rdata), .wstrb(dram_wstrb), .wdata(dram_wdata),
        .dump(core_done && !done_q)
    );

    always_ff @(posedge clk) begin
        if (rst) begin
            elapsed_q   <= '0;
            timed_out_q <= 1'b0;
            done_q      <= 1'b0;
        end else begin
            elapsed_q   <= elapsed_q + 1'b1;
            if (max_cycles != '0 && elapsed_q + 1'b1 >= max_cycles && !core_done) begin
                timed_out_q <= 1'b1;
            end
            done_q      <= core_done;
        end
    end
    // `done` follows the dump by a cycle, so DRAM is on disk when the testbench sees it.
    assign done      = done_q;
    assign timed_out = timed_out_q;
endmodule
