"""Benchmark sections for scripts/bench.py: one module per section."""
