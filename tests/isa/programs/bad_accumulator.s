; A store reading past the last accumulator row: stops with ACC_RANGE at instruction 0.
store raw, row=ACC_ROWS - 1, dram=0, run=N, count0=2, stride0=4*N
halt
