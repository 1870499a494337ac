"""VECTOR `table` and `lut` (docs/isa.md, VECTOR): a 256-entry int8 table per column, and every
int8 element of a scratchpad row mapped through its column's table.

A quantized graph's elementwise float island — DequantizeLinear, any unary float ops,
QuantizeLinear — is a function of one int8 code, so a table of 256 int8 values computes it
exactly, whatever the ops (docs/onnx.md). Entry ``k`` of a table is the result for the code
``k − 128``: the tables read in code order, −128 first. Each column has its own table (a
per-channel function when the channels are the columns; one function is the same table in every
column, which one transposing LOAD of the 256 bytes writes: glc/lower/lookup.py).

Timing: the tables are one memory per column, read with its address and output registered (an
FPGA block RAM's output register, docs/architecture.md): a row's lookups reach the accumulator
LATENCY cycles after it is read, as a fold's combine does (glc/isa/vector_fold.py).
"""

from __future__ import annotations

import numpy as np

ENTRIES = 256  # entries per column's table: one per int8 code
LATENCY = 2  # cycles lut's writes, completion and pushes come after its reads (Timing)


def empty(columns: int) -> np.ndarray:
    """The tables after reset: int8[ENTRIES, columns], all 0 (entry k of column n at [k, n])."""
    return np.zeros((ENTRIES, columns), dtype=np.int8)


def fill(tables: np.ndarray, first: int, rows: np.ndarray) -> None:
    """`table`: entries ``first … first + len(rows) − 1`` of every column from int8 ``rows``."""
    tables[first:first + rows.shape[0]] = rows


def lookup(tables: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`lut`: each int8 element of ``rows`` through its column's table, as int32."""
    columns = np.arange(rows.shape[1])
    return tables[rows.astype(np.int64) + ENTRIES // 2, columns].astype(np.int32)
