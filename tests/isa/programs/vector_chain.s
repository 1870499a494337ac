; Folds that read rows they write (docs/isa.md, VECTOR: outputs are made in order; Timing: such a
; fold reads each output after the first 2 cycles late, when the previous output's write has
; landed): running sums and products over accumulator rows, each output reading the row the one
; before it wrote, `mul` over groups of 3 (one slice a cycle), and a `max` whose second output
; reads its first one's row.
.equ D, 0                    ; 8×N int8
.equ OUT, D + 8*N            ; 12×N int32: accumulator rows 0 … 11
load row=0, dram=D, run=N, count0=8, stride0=N, push_vec
vector op=add, src=0, dst=0, count=8, ostride=1, pop_prev
; rows 1 … 3: x0 + … + xk (row k + 1 reads row k, the previous output's)
vector op=add, src_acc, src=0, dst=1, count=3, group=2, ostride=1, gstride=1
; rows 5 … 7: x4 · … · xk (accumulate: row k times row k − 1, the previous output's)
vector op=mul, accumulate, src_acc, src=4, dst=5, count=3, ostride=1
; rows 8, 9: x0·x1·x2, x3·x4·x5
vector op=mul, src=0, dst=8, count=2, group=3, ostride=3, gstride=1
; row 10: max(row 8, row 9); row 11: max(row 10, row 11), row 10 the first output's
vector op=max, src_acc, src=8, dst=10, count=2, group=2, ostride=2, gstride=1, push_next
store raw, row=0, dram=OUT, run=N, count0=12, stride0=4*N, pop_vec
halt
