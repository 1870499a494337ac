; Transposing loads, pad values and per-element x bounds (docs/isa.md, revision 2). Out×in weights
; W become the weight tile of A·Wᵀ with one transposing LOAD; a partial block of K2 rows is
; transposed with zero rows past its end; a signal X is loaded in runs that straddle both of its
; ends with `xrun`, out-of-range elements reading PADV. The identity weights EYE make the
; scratchpad's contents visible in the accumulator, and a cropping `xrun` STORE skips element 0.
.equ M, 2*N
.equ K2, N - 1               ; rows of the partial block
.equ L, 2*N - 3              ; length of the signal
.equ PADV, -7
.equ A, 0                    ; M×N int8
.equ W, A + M*N              ; N×N int8, out×in
.equ W2, W + N*N             ; K2×N int8
.equ EYE, W2 + K2*N          ; N×N int8 identity
.equ X, EYE + N*N + 8        ; L int8, 8 clear bytes below it
.equ C1, X + L + 8           ; M×N int32: A·Wᵀ
.equ C2, C1 + 4*M*N          ; N×N int32: W2 transposed into a block
.equ C3, C2 + 4*N*N          ; 2×N int32: the padded signal rows
.equ C4, C3 + 8*N            ; N int8: the first signal row, element 0 cropped
load row=0, dram=A, run=N, count0=M, stride0=N
load transpose, row=M, dram=W, run=N, count0=N, stride0=N
load transpose, row=M+N, dram=W2, run=N, count0=K2, stride0=N
load row=M+2*N, dram=EYE, run=N, count0=N, stride0=N
load xrun, pad=PADV, row=M+3*N, dram=X-2, run=N, count0=2, stride0=N, xcoef0=N, x0=-2, xlim=L, push_next
preload row=M, pop_prev
matmul sp=0, acc=0, rows=M
preload row=M+2*N
matmul sp=M+N, acc=M, rows=N
matmul sp=M+3*N, acc=M+N, rows=2, push_next
store raw, row=0, dram=C1, run=N, count0=M, stride0=4*N, pop_prev
store raw, row=M, dram=C2, run=N, count0=N, stride0=4*N
store raw, row=M+N, dram=C3, run=N, count0=2, stride0=4*N
store xrun, row=M+N, dram=C4, run=N, count0=1, x0=-1, xlim=N-1
halt
