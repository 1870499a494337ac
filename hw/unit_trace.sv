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
    // by unit; only LOAD and STORE have a DRAM-port stall
    input  isa_pkg::activity_t [UNITS-1:0] activity,
    input  logic                    dispatch,
    input  logic [31:0]             dispatch_pc,
    input  logic                    fetch_start,
    input  logic [31:0]             fetch_pc,
    input  logic                    fetch_reading
);
    int fd = 0;
    logic counted_q, closed_q;
    isa_pkg::activity_t [UNITS-1:0] activity_q;
    logic reading_q;

    initial begin
        string path;
        if ($value$plusargs("trace=%s", path)) fd = $fopen(path, "w");
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            counted_q  <= 1'b0;
            closed_q   <= 1'b0;
            activity_q <= '0;
            reading_q  <= 1'b0;
        end else if (fd != 0 && !closed_q) begin
            counted_q <= count;
            if (count) begin
                for (int u = 0; u < UNITS; u++) begin
                    if (issue[u]) $fwrite(fd, "%0d I %0d %0d\n", cycle, u, head_pc[u]);
                    if (activity[u].busy != activity_q[u].busy)
                        $fwrite(fd, "%0d B %0d %0d\n", cycle, u, activity[u].busy);
                    if (activity[u].stall_token != activity_q[u].stall_token)
                        $fwrite(fd, "%0d T %0d %0d %0d\n", cycle, u, activity[u].stall_token,
                                head_pc[u]);
                    if (activity[u].stall_dram != activity_q[u].stall_dram)
                        $fwrite(fd, "%0d D %0d %0d %0d\n", cycle, u, activity[u].stall_dram,
                                head_pc[u]);
                end
                if (dispatch) $fwrite(fd, "%0d P 0 %0d\n", cycle, dispatch_pc);
                if (fetch_start) $fwrite(fd, "%0d F 0 %0d\n", cycle, fetch_pc);
                if (fetch_reading != reading_q)
                    $fwrite(fd, "%0d R 0 %0d\n", cycle, fetch_reading);
                activity_q <= activity;
                reading_q  <= fetch_reading;
            end else if (counted_q) begin
                // The counters stopped: so does the file, before `done` reaches the testbench.
                $fwrite(fd, "%0d E\n", cycle);
                $fclose(fd);
                closed_q <= 1'b1;
            end
        end
    end
endmodule
