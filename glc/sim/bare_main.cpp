// The bare runner: sim_top's Verilator model clocked from C++, no cocotb and no VPI
// (glc/sim/bare.py builds it; glc/sim/harness.py is the cocotb testbench it stands beside).
// It does what the harness does, in the same order: hold reset for RESET_CYCLES rising edges,
// release it, clock until `done` rises (the program, an error or the RTL's watchdog at
// +max_cycles raises it), keep the counters WINDOW cycles before the watchdog, and write the
// status and counters as the harness's JSON to +result=PATH. DRAM comes in and goes out through
// the RTL's own +dram_in / +dram_out files. A second guard stops the loop if the RTL never
// raises `done` at all (`rtl_hung`), as the harness's timer does.
#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>

#include "Vtop.h"
#include "verilated.h"

namespace {

constexpr uint64_t RESET_CYCLES = 2;
constexpr uint64_t WINDOW = 256;  // as glc/sim/harness.py

struct Counters {
    uint32_t values[12];
};

Counters read_counters(const Vtop& top) {
    return {{top.ctr_cycles, top.ctr_busy_load, top.ctr_busy_exec, top.ctr_busy_store,
             top.ctr_busy_vector, top.ctr_stall_token_load, top.ctr_stall_token_exec,
             top.ctr_stall_token_store, top.ctr_stall_token_vector, top.ctr_stall_dram_load,
             top.ctr_stall_dram_store, top.ctr_macs}};
}

// The names of glc.isa.status.Counters, in its order.
const char* const NAMES[12] = {"cycles", "busy_load", "busy_exec", "busy_store", "busy_vector",
                               "stall_token_load", "stall_token_exec", "stall_token_store",
                               "stall_token_vector", "stall_dram_load", "stall_dram_store",
                               "macs"};

void write_counters(FILE* out, const Counters& counters) {
    std::fprintf(out, "{");
    for (int i = 0; i < 12; i++) {
        std::fprintf(out, "%s\"%s\": %" PRIu32, i ? ", " : "", NAMES[i], counters.values[i]);
    }
    std::fprintf(out, "}");
}

// One clock period: the rising edge, then the falling edge.
void cycle(VerilatedContext& context, Vtop& top) {
    top.clk = 1;
    top.eval();
    context.timeInc(1);
    top.clk = 0;
    top.eval();
    context.timeInc(1);
}

uint64_t plusarg(VerilatedContext& context, const char* name) {
    const std::string prefix = std::string("+") + name + "=";
    const char* found = context.commandArgsPlusMatch(prefix.c_str() + 1);
    if (!*found) {
        std::fprintf(stderr, "bare runner: missing %s<value>\n", prefix.c_str());
        std::exit(2);
    }
    return std::strtoull(found + prefix.size(), nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
    auto context = std::make_unique<VerilatedContext>();
    context->commandArgs(argc, argv);
    const uint64_t max_cycles = plusarg(*context, "max_cycles");
    const uint64_t program_base = plusarg(*context, "program_base");
    const char* result_arg = context->commandArgsPlusMatch("result=");
    if (!*result_arg) {
        std::fprintf(stderr, "bare runner: missing +result=PATH\n");
        return 2;
    }
    const std::string result_path = result_arg + std::strlen("+result=");

    auto top = std::make_unique<Vtop>(context.get(), "");
    top->max_cycles = static_cast<uint32_t>(max_cycles);
    top->program_base = static_cast<uint32_t>(program_base);
    top->rst = 1;
    top->clk = 0;
    top->eval();
    for (uint64_t i = 0; i < RESET_CYCLES; i++) cycle(*context, *top);
    top->rst = 0;

    const uint64_t window = std::min(WINDOW, max_cycles / 2);
    // The RTL watchdog raises `done` by max_cycles; past this (the harness's own timer limit)
    // the RTL itself is broken.
    const uint64_t limit = max_cycles + 16 * RESET_CYCLES + 64;
    const auto start = std::chrono::steady_clock::now();
    const std::clock_t cpu_start = std::clock();
    Counters before{};
    bool have_before = false;
    uint64_t run = 0;
    for (; run < limit && !top->done && !context->gotFinish(); run++) {
        if (run == max_cycles - window) {
            before = read_counters(*top);
            have_before = true;
        }
        cycle(*context, *top);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double cpu_seconds = double(std::clock() - cpu_start) / CLOCKS_PER_SEC;
    const bool hung = !top->done;
    top->final();

    FILE* out = std::fopen(result_path.c_str(), "w");
    if (!out) {
        std::perror(result_path.c_str());
        return 2;
    }
    std::fprintf(out,
                 "{\"done\": %d, \"timed_out\": %s, \"rtl_hung\": %s, \"run_seconds\": %.9f, "
                 "\"run_cpu_seconds\": %.9f, \"error\": %u, \"error_pc\": %" PRIu32
                 ", \"counters\": ",
                 int(top->done), (top->timed_out || hung) ? "true" : "false",
                 hung ? "true" : "false", seconds, cpu_seconds, unsigned(top->error),
                 top->error_pc);
    write_counters(out, read_counters(*top));
    std::fprintf(out, ", \"before_watchdog\": ");
    if (have_before) {
        write_counters(out, before);
    } else {
        std::fprintf(out, "null");
    }
    std::fprintf(out, "}\n");
    std::fclose(out);
    return 0;
}
