; The store path: a bias broadcast into the accumulator, a matmul accumulated onto it, then int8
; through ReLU and requantize; and int32 values loaded straight into the accumulator stored with
; clamp only (shift 0) and with rounding (shift 5, negative values included). The exec unit takes
; the second load's token with a SYNC before the matmul, so the matmul's one token tells the store
; unit that both are in the accumulator.
.equ M, 2*N
.equ SHIFT, 6
.equ BIAS, 0                 ; N int32
.equ A, BIAS + 4*N           ; M×N int8
.equ WT, A + M*N             ; N×N int8
.equ X, WT + N*N             ; M×N int32
.equ OUT1, X + 4*M*N         ; M×N int8: relu(requantize(A·W + bias, SHIFT))
.equ OUT2, OUT1 + M*N        ; M×N int8: clamp(X)
.equ OUT3, OUT2 + M*N        ; M×N int8: requantize(X, 5)
load acc, row=0, dram=BIAS, run=N, count0=M, stride0=0
load row=0, dram=A, run=N, count0=M, stride0=N
load row=M, dram=WT, run=N, count0=N, stride0=N, push_next
load acc, row=M, dram=X, run=N, count0=M, stride0=4*N, push_next
preload row=M, pop_prev
sync unit=exec, pop_prev
matmul sp=0, acc=0, rows=M, accumulate, push_next
store relu, shift=SHIFT, row=0, dram=OUT1, run=N, count0=M, stride0=N, pop_prev
store row=M, dram=OUT2, run=N, count0=M, stride0=N
store shift=5, row=M, dram=OUT3, run=N, count0=M, stride0=N
halt
