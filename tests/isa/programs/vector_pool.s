; The vector unit (docs/isa.md, VECTOR): a max over groups of 4 rows (a pool), a residual add of
; two row blocks (gstride), a product of 3 rows, an accumulating add, a max over accumulator
; rows (src_acc), and EXEC → VECTOR ordering through a STORE-unit SYNC: the vector unit sums two
; rows of a matmul's result once the store unit passes the matmul's token on. The last VECTOR
; reads a row its own first output wrote (outputs are made in order).
.equ D, 0                    ; 19×N int8
.equ OUT, D + 19*N           ; 13×N int32: accumulator rows 0 … 12
load row=0, dram=D, run=N, count0=19, stride0=N, push_vec, push_next
vector op=max, src=0, dst=0, count=3, group=4, ostride=4, gstride=1, pop_prev
vector op=add, src=12, dst=4, count=2, group=2, ostride=1, gstride=2
vector op=mul, src=16, dst=6, count=1, group=3, gstride=1
vector op=add, accumulate, src=0, dst=4, count=2, ostride=1
vector op=max, src_acc, src=0, dst=7, count=1, group=3, gstride=1
preload row=0, pop_prev
matmul sp=0, acc=8, rows=2, push_next
sync unit=store, pop_prev, push_vec
vector op=add, src_acc, src=8, dst=10, count=1, group=2, gstride=1, pop_next
vector op=add, src_acc, src=10, dst=11, count=2, ostride=1, push_next
store raw, row=0, dram=OUT, run=N, count0=13, stride0=4*N, pop_vec
halt
