; When weights swap: a MATMUL swaps in the shadow tile only if a PRELOAD issued since the previous
; MATMUL, else it keeps the active weights; of two PRELOADs in a row the later one wins.
.equ X, 0                 ; N×N int8 inputs, then the tiles W1, W2, W3 (N×N int8 each)
.equ OUT, 4*N*N           ; 3N×N int32: x·W1, x·W1, x·W3
load row=0, dram=X, run=N, count0=4*N, stride0=N, push_next
preload row=N, pop_prev
matmul sp=0, acc=0, rows=N
matmul sp=0, acc=N, rows=N
preload row=2*N
preload row=3*N
matmul sp=0, acc=2*N, rows=N, push_next
store raw, row=0, dram=OUT, run=N, count0=3*N, stride0=4*N, pop_prev
halt
