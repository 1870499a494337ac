; A matmul streaming past the last scratchpad row: stops with SP_RANGE at instruction 1.
sync unit=exec
matmul sp=SP_ROWS - 1, acc=0, rows=2
halt
