; Biases added in the store path (STORE `bias`, docs/isa.md revision 2.5): a matmul written
; fresh into the accumulator, stored with the biases of ACC row BR by column, through ReLU and a
; requantize shift, and with ONNX's requantization (`linear`: multipliers, then biases, two
; set-up cycles); R rows of int32 values near ±2^31 loaded straight into the accumulator, stored
; raw with the biases of row BR+1 (the sums wrap), by column and by local row (`qrows`), and
; requantized by local row. The table rows are the first LOAD.
.equ M, 2*N
.equ R, 2*N
.equ BR, M + R               ; ACC rows of the two bias rows, then the multipliers
.equ QR, BR + 2
.equ SH, 9
.equ Z, -3
.equ BIAS, 0                 ; 2×N int32
.equ MUL, BIAS + 8*N         ; N float32
.equ A, MUL + 4*N            ; M×N int8
.equ WT, A + M*N             ; N×N int8
.equ X, WT + N*N             ; R×N int32
.equ OUT1, X + 4*R*N         ; M×N int8: requantize(relu(A·W + B0), SH)
.equ OUT2, OUT1 + M*N        ; M×N int8: linear(A·W + B0, MUL, Z)
.equ OUT3, OUT2 + M*N        ; R×N int32: X + B1 by column
.equ OUT4, OUT3 + 4*R*N      ; R×N int32: X + B1[i mod N] by local row
.equ OUT5, OUT4 + 4*R*N      ; R×N int8: linear(X + B1[i mod N], MUL[i mod N], Z)
load acc, row=BR, dram=BIAS, run=N, count0=3, stride0=4*N
load row=0, dram=A, run=N, count0=M, stride0=N
load row=M, dram=WT, run=N, count0=N, stride0=N, push_next
load acc, row=M, dram=X, run=N, count0=R, stride0=4*N, push_next
preload row=M, pop_prev
sync unit=exec, pop_prev
matmul sp=0, acc=0, rows=M, push_next
store bias, brow=BR, relu, shift=SH, row=0, dram=OUT1, run=N, count0=M, stride0=N, pop_prev
store linear, bias, qrow=QR, brow=BR, zero=Z, row=0, dram=OUT2, run=N, count0=M, stride0=N
store raw, bias, brow=BR+1, row=M, dram=OUT3, run=N, count0=R, stride0=4*N
store raw, bias, qrows, brow=BR+1, row=M, dram=OUT4, run=N, count0=R, stride0=4*N
store linear, bias, qrows, qrow=QR, brow=BR+1, zero=Z, row=M, dram=OUT5, run=N, count0=R, stride0=N
halt
