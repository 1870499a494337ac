; MATMUL split (docs/isa.md): the array as two halves, each summing the streamed row's first N/2
; elements into accumulator rows of its own (the upper half's weights the tile's rows 0 … N/2-1,
; the lower half's rows N/2 … N-1); a split stream right before and after a whole one, a swap
; on a split MATMUL, acc2 above and below acc, accumulate.
.equ X, 0                 ; 2N×N int8 rows streamed (elements N/2 … N-1 must not count), W1, W2
.equ OUT, 4*N*N           ; 5N+2 rows of N int32
load row=0, dram=X, run=N, count0=4*N, stride0=N, push_next
preload row=2*N, pop_prev
matmul split, sp=0, acc=0, acc2=N+1, rows=N
matmul sp=N, acc=2*N+1, rows=N
preload row=3*N
matmul split, accumulate, sp=N, acc=N+1, acc2=0, rows=N
matmul split, sp=0, acc=3*N+1, acc2=4*N+2, rows=N, push_next
store raw, row=0, dram=OUT, run=N, count0=5*N+2, stride0=4*N, pop_prev
halt
