"""The RTL in Verilator under cocotb: cached builds (build.py), the program runner the compiler
calls (run.py: run_program -> SimResult), the cocotb harness it runs (harness.py), the generated
RTL copy of the instruction layout (isa_pkg.py) and the `glc rtl` command (commands.py)."""
