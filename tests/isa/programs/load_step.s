; Strided runs (LOAD `step`, docs/isa.md revision 2.4): elements 2^step bytes apart. An image
; IMG of HI×WI is read at every other pixel from x = -1, so a run straddles both of its borders
; (`xrun`, PADV outside) and its first row lies above it (y = -1); Y is read at every fourth
; byte; the even columns of an N×2N matrix Z are loaded transposed; two strided runs of N/2
; share one local row (an inner level). The identity EYE moves the scratchpad rows into the
; accumulator, stored raw.
.equ HI, 2
.equ WI, 2*N - 3             ; x = -1, 1, …, 2N-3: both borders crossed
.equ PADV, -5
.equ T, N + 6                ; scratchpad rows loaded
.equ IMG, 16
.equ Y, IMG + HI*WI + 8      ; 4N+4 int8
.equ Z, Y + 4*N + 4          ; N×2N int8
.equ V, Z + 2*N*N            ; N int8
.equ EYE, V + N              ; N×N int8 identity
.equ OUT, EYE + N*N + 4      ; T×N int32
load xrun, step=1, pad=PADV, row=0, dram=IMG-WI-1, run=N, count0=HI+1, stride0=WI, ycoef0=1, y0=-1, ylim=HI, x0=-1, xlim=WI
load step=2, row=3, dram=Y, run=N, count0=2, stride0=1
load transpose, step=1, row=5, dram=Z, run=N, count0=N, stride0=2*N
load step=1, inner=1, row=N+5, dram=V, run=N/2, count0=2, stride0=1
load row=T, dram=EYE, run=N, count0=N, stride0=N, push_next
preload row=T, pop_prev
matmul sp=0, acc=0, rows=T, push_next
store raw, row=0, dram=OUT, run=N, count0=T, stride0=4*N, pop_prev
halt
