; ONNX's requantization in the store path (STORE `linear`): a bias broadcast into the accumulator
; and a matmul accumulated onto it, stored through ReLU with per-column float32 multipliers; then
; R rows of int32 values loaded straight into the accumulator, stored with a second table
; (powers of two, for rounding ties, and random scales) and with a third (the special
; multipliers: infinities, NaN, subnormal, the largest and smallest normal, zero) through an
; inner level that sends each half row elsewhere; and with the second table by local row (qrows). The tables are the first LOAD: every later
; token is pushed after it completes.
.equ M, 2*N
.equ R, 16*N
.equ Q, M + R                ; ACC rows of the three multiplier tables
.equ ZA, -5
.equ ZB, 3
.equ ZC, -128
.equ BIAS, 0                 ; N int32
.equ A, BIAS + 4*N           ; M×N int8
.equ WT, A + M*N             ; N×N int8
.equ MUL, WT + N*N           ; 3×N float32: the tables
.equ X, MUL + 12*N           ; R×N int32
.equ OUT1, X + 4*R*N         ; M×N int8: linear(relu(A·W + bias), table 0, ZA)
.equ OUT2, OUT1 + M*N        ; R×N int8: linear(X, table 1, ZB)
.equ OUT4, OUT2 + R*N         ; R×N int8: linear(X, table 1 by local row mod N (qrows), ZB)
.equ OUT3, OUT4 + R*N        ; 2×R×N/2 int8: linear(X, table 2, ZC), left halves then right
load acc, row=Q, dram=MUL, run=N, count0=3, stride0=4*N
load acc, row=0, dram=BIAS, run=N, count0=M, stride0=0
load row=0, dram=A, run=N, count0=M, stride0=N
load row=M, dram=WT, run=N, count0=N, stride0=N, push_next
load acc, row=M, dram=X, run=N, count0=R, stride0=4*N, push_next
preload row=M, pop_prev
sync unit=exec, pop_prev
matmul sp=0, acc=0, rows=M, accumulate, push_next
store relu, linear, zero=ZA, qrow=Q, row=0, dram=OUT1, run=N, count0=M, stride0=N, pop_prev
store linear, zero=ZB, qrow=Q+1, row=M, dram=OUT2, run=N, count0=R, stride0=N
store linear, qrows, zero=ZB, qrow=Q+1, row=M, dram=OUT4, run=N, count0=R, stride0=N
store linear, zero=ZC, qrow=Q+2, row=M, dram=OUT3, run=N/2, inner=1, count0=2, stride0=R*(N/2), count1=R, stride1=N/2
halt
