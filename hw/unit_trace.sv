// Simulation only: records when each unit of the accelerator is busy, stalled and issuing, for
// `glc run --trace` (glc/trace.py reads the file; docs/trace.md). Given +trace=PATH it writes one
// line per change, `<cycle> <kind> <unit> [<value>]`, in each cycle the counters count (the same
// condition and the same cycle numbers as hw/counters.sv, so a unit's busy cycles in the file sum
// to its busy counter):
//   I u pc    unit u issued instruction pc      B u 0|1   unit u's busy signal fell / rose
//   T u 0|1 pc  u's token stall fell / rose, its head instruction pc
//   D u 0|1 pc  u's DRAM-port stall (load 0, store 2)   P 0 pc    the dispatcher took word pc
//   F 0 pc    the fetch of word pc started      R 0 0|1   the fetch port's reading fell / rose
//   E         the machine stopped counting (the file ends)
// Without +trace nothing is written and each cycle costs one comparison.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module unit_trace (
    input  logic                    clk,
    input  logic                    rst,
    input  logic                    count,        // the counters count this cycle
    input  logic [31:0]             cycle,        // the cycle counter: this cycle's number
    input  logic [UNITS-1:0]        issue,
    input  logic [UNITS-1:0][31:0]  head_pc,
    input  logic [UNITS-1:0]        busy,
    input  logic [UNITS-1:0]        stall_token,
    input  logic [UNITS-1:0]        stall_dram,   // only load's and store's are driven
    input  logic                    dispatch,
    input  logic [31:0]             dispatch_pc,
    input  logic                    fetch_start,
    input  logic [31:0]             fetch_pc,
    input  logic                    fetch_reading
);
    int fd = 0;
    logic counted_q, closed_q;
    logic [UNITS-1:0] busy_q, token_q, dram_q;
    logic reading_q;

    initial begin
        string path;
        if ($value$plusargs("trace=%s", path)) fd = $fopen(path, "w");
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            counted_q <= 1'b0;
            closed_q  <= 1'b0;
            busy_q    <= '0;
            token_q   <= '0;
            dram_q    <= '0;
            reading_q <= 1'b0;
        end else if (fd != 0 && !closed_q) begin
            counted_q <= count;
            if (count) begin
                for (int u = 0; u < UNITS; u++) begin
                    if (issue[u]) $fwrite(fd, "%0d I %0d %0d\n", cycle, u, head_pc[u]);
                    if (busy[u] != busy_q[u]) $fwrite(fd, "%0d B %0d %0d\n", cycle, u, busy[u]);
                    if (stall_token[u] != token_q[u])
                        $fwrite(fd, "%0d T %0d %0d %0d\n", cycle, u, stall_token[u], head_pc[u]);
                    if (stall_dram[u] != dram_q[u])
                        $fwrite(fd, "%0d D %0d %0d %0d\n", cycle, u, stall_dram[u], head_pc[u]);
                end
                if (dispatch) $fwrite(fd, "%0d P 0 %0d\n", cycle, dispatch_pc);
                if (fetch_start) $fwrite(fd, "%0d F 0 %0d\n", cycle, fetch_pc);
                if (fetch_reading != reading_q)
                    $fwrite(fd, "%0d R 0 %0d\n", cycle, fetch_reading);
                busy_q    <= busy;
                token_q   <= stall_token;
                dram_q    <= stall_dram;
                reading_q <= fetch_reading;
            end else if (counted_q) begin
                // The counters stopped: so does the file, before `done` reaches the testbench.
                $fwrite(fd, "%0d E\n", cycle);
                $fclose(fd);
                closed_q <= 1'b1;
            end
        end
    end
endmodule
