; Tiled int8 matmul C = A·B with K = 2N and Nout = 2N, so each output tile accumulates over two
; K tiles. A is M×K, B is K×Nout (row-major int8), C is M×Nout raw int32 (row-major).
.equ M, 3*N
.equ K, 2*N
.equ NOUT, 2*N
.equ A, 64
.equ B, A + M*K
.equ C, B + K*NOUT
.equ A0, 0            ; scratchpad: A[:, 0:N] in rows A0 …, A[:, N:2N] in rows A1 …
.equ A1, M
.equ W, 2*M           ; four weight tiles B[kk, j] at rows W + (2*kk + j)*N
; both K slices of A with one two-level load: level 1 steps the K tile (N bytes right)
load row=A0, dram=A, run=N, count0=M, stride0=K, count1=2, stride1=N
; the four weight tiles: level 0 the N rows of a tile, level 1 j, level 2 kk
load row=W, dram=B, run=N, count0=N, stride0=NOUT, count1=2, stride1=N, count2=2, stride2=N*NOUT, push_next
preload row=W, pop_prev
matmul sp=A0, acc=0, rows=M
preload row=W + 2*N
matmul sp=A1, acc=0, rows=M, accumulate
preload row=W + N
matmul sp=A0, acc=M, rows=M
preload row=W + 3*N
matmul sp=A1, acc=M, rows=M, accumulate, push_next
; accumulator rows 0 … M-1 hold C[:, 0:N], rows M … 2M-1 hold C[:, N:2N]
store raw, row=0, dram=C, run=N, count0=M, stride0=4*NOUT, count1=2, stride1=4*N, pop_prev
halt
