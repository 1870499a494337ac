// Simulation model of the DRAM: BYTES bytes, byte-addressed, with one port that reads or writes
// PORT_BYTES consecutive bytes per cycle (docs/isa.md, "Machine model"). Its contents come from
// the hex file named by the plusarg +dram_in=PATH (one byte per line, $readmemh) and are dumped
// to +dram_out=PATH in the cycle `dump` is high (a one-cycle pulse when the machine stops).
module dram_model #(
    // bytes of DRAM (the configuration's dram_bytes)
    parameter int BYTES = 1048576,
    // P: bytes per beat (the configuration's dram_port_bytes)
    parameter int PORT_BYTES = 16
) (
    input  logic                       clk,
    input  logic [23:0]                addr,
    output logic [PORT_BYTES-1:0][7:0] rdata,
    input  logic [PORT_BYTES-1:0]      wstrb,   // write byte i at addr+i
    input  logic [PORT_BYTES-1:0][7:0] wdata,
    input  logic                       dump
);
    logic [7:0] mem [BYTES];
    string path_out;

    initial begin
        string path_in;
        for (int i = 0; i < BYTES; i++) mem[i] = '0;
        if ($value$plusargs("dram_in=%s", path_in)) $readmemh(path_in, mem);
        if (!$value$plusargs("dram_out=%s", path_out)) path_out = "";
    end

    // Bytes past the end read as zero and are never written: the units range-check every
    // in-bounds run before touching it, so this only trims a beat's tail beyond its run.
    always_comb begin
        for (int i = 0; i < PORT_BYTES; i++) begin
            rdata[i] = 32'(addr) + i < BYTES ? mem[32'(addr) + i] : '0;
        end
    end

    always_ff @(posedge clk) begin
        for (int i = 0; i < PORT_BYTES; i++) begin
            if (wstrb[i] && 32'(addr) + i < BYTES) mem[32'(addr) + i] <= wdata[i];
        end
        if (dump && path_out != "") $writememh(path_out, mem);
    end
endmodule
