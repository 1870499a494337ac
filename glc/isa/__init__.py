"""The accelerator's instruction set: field table, encoding, assembler, ISA simulator and cycle
model (docs/isa.md)."""
