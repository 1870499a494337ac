// Simulation model of the DRAM (docs/isa.md, "Machine model"; ISA v2 A3): BYTES bytes,
// byte-addressed with 32-bit addresses, and two ports: the data port of LOAD/STORE, which reads
// or writes PORT_BYTES consecutive bytes per cycle, and the read-only instruction-fetch port,
// FETCH_BYTES per cycle. Both read combinationally.
// The host's image is loaded sparsely: +dram_in=PATH is a $readmemh file with `@hexaddr` lines
// holding only the nonzero 4 KiB pages (the rest is zero). When `dump` pulses (the machine
// stopped), every page the machine wrote (a dirty bit per page) goes to +dram_out=PATH as
// `@<byte address>` and its 4096 bytes, one per line: the same format, so the host rebuilds the
// final DRAM from its image plus these pages without the model writing all of DRAM.
module dram_model #(
    // bytes of DRAM (the configuration's dram_bytes); held densely, so at most 1 GiB here
    parameter longint BYTES = 1048576,
    // P: bytes per data-port beat (the configuration's dram_port_bytes)
    parameter int PORT_BYTES = 16,
    // bytes per fetch-port cycle (the configuration's fetch_port_bytes)
    parameter int FETCH_BYTES = 64
) (
    input  logic                        clk,
    input  logic [31:0]                 addr,
    output logic [PORT_BYTES-1:0][7:0]  rdata,
    input  logic [PORT_BYTES-1:0]       wstrb,   // write byte i at addr+i
    input  logic [PORT_BYTES-1:0][7:0]  wdata,
    input  logic [31:0]                 fetch_addr,
    output logic [FETCH_BYTES-1:0][7:0] fetch_rdata,
    input  logic                        dump
);
    localparam int PAGE_BITS = 12;   // 4 KiB pages: the granule of the sparse load and dump
    localparam longint PAGES = (BYTES + (64'd1 << PAGE_BITS) - 1) >> PAGE_BITS;
    localparam int unsigned BYTES_U = 32'(BYTES), PAGES_U = 32'(PAGES);
    localparam int ADDR_W = BYTES > 1 ? $clog2(BYTES) : 1;
    localparam int PAGE_W = PAGES > 1 ? $clog2(PAGES) : 1;
    if (BYTES < 1 || BYTES > (64'd1 << 30)) begin : g_bad_bytes
        $fatal(1, "dram_model: BYTES=%0d must be 1 … 2^30 (the model is dense)", BYTES);
    end

    logic [7:0] mem [BYTES];
    logic       dirty [PAGES];
    string path_out;

    initial begin
        string path_in;
        // Unsigned 32-bit indices (BYTES <= 2^30): Verilator compiles a signed loop bound into
        // calls of its sign-extending compare helpers, which made this loop of 2^26 steps (n16)
        // most of a run's start-up.
        for (int unsigned i = 0; i < BYTES_U; i++) mem[ADDR_W'(i)] = '0;
        for (int unsigned p = 0; p < PAGES_U; p++) dirty[PAGE_W'(p)] = 1'b0;
        if ($value$plusargs("dram_in=%s", path_in)) $readmemh(path_in, mem);
        if (!$value$plusargs("dram_out=%s", path_out)) path_out = "";
    end

    // Bytes past the end read as zero and are never written: the units range-check every
    // in-bounds element before touching it, so this only trims a beat's tail beyond its run
    // (and the fetch port's last chunk of the last word).
    always_comb begin
        for (int i = 0; i < PORT_BYTES; i++) begin
            rdata[i] = 64'(addr) + 64'(i) < BYTES ? mem[ADDR_W'(64'(addr) + 64'(i))] : '0;
        end
        for (int i = 0; i < FETCH_BYTES; i++) begin
            fetch_rdata[i] = 64'(fetch_addr) + 64'(i) < BYTES ? mem[ADDR_W'(64'(fetch_addr) + 64'(i))] : '0;
        end
    end

    always_ff @(posedge clk) begin
        for (int i = 0; i < PORT_BYTES; i++) begin
            if (wstrb[i] && 64'(addr) + 64'(i) < BYTES) begin
                mem[ADDR_W'(64'(addr) + 64'(i))] <= wdata[i];
                dirty[PAGE_W'((64'(addr) + 64'(i)) >> PAGE_BITS)] <= 1'b1;
            end
        end
        if (dump && path_out != "") write_dirty_pages();
    end

    task automatic write_dirty_pages();
        int fd;
        fd = $fopen(path_out, "w");
        for (int unsigned p = 0; p < PAGES_U; p++) begin
            if (dirty[PAGE_W'(p)]) begin
                $fwrite(fd, "@%0h\n", p << PAGE_BITS);
                for (int unsigned i = p << PAGE_BITS; i < ((p + 1) << PAGE_BITS) && i < BYTES_U;
                     i++) begin
                    $fwrite(fd, "%h\n", mem[ADDR_W'(i)]);
                end
            end
        end
        $fclose(fd);
    endtask
endmodule
