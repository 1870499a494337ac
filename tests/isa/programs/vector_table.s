; VECTOR table and lut (docs/isa.md, VECTOR): per-column tables filled from 256 scratchpad rows
; (entry k of column n from row k, column n), R rows of codes mapped through them; entries
; 100 … 119 refilled from every other row of a patch, the codes mapped again; then one table for
; every column, written by a transposing LOAD of its 256 bytes (each block's N rows the same run,
; turned into N rows each holding one entry N times), and the codes mapped a third time.
.equ R, 23                   ; rows of codes
.equ T, 0                    ; 256×N int8: column n's table in column n
.equ D, T + 256*N            ; R×N int8: the codes
.equ PT, D + R*N             ; 40×N int8: the patch (its even rows are used)
.equ U, PT + 40*N            ; 256 int8: one table
.equ OUT, U + 256            ; 3R×N int8: the three lookups
.equ CODES, 256              ; SP rows of the codes, the patch, the one table
.equ PATCH, CODES + R
.equ ONE, PATCH + 40
load row=0, dram=T, run=N, count0=256, stride0=N
load row=CODES, dram=D, run=N, count0=R, stride0=N
load row=PATCH, dram=PT, run=N, count0=40, stride0=N
load transpose, row=ONE, dram=U, run=N, count0=N, stride0=0, count1=(256+N-1)/N, stride1=N, push_vec
vector op=table, src=0, dst=0, count=256, ostride=1, pop_prev
vector op=lut, src=CODES, dst=0, count=R, ostride=1
vector op=table, src=PATCH, dst=100, count=20, ostride=2
vector op=lut, src=CODES, dst=R, count=R, ostride=1
vector op=table, src=ONE, dst=0, count=256, ostride=1
vector op=lut, src=CODES, dst=2*R, count=R, ostride=1, push_next
store row=0, dram=OUT, run=N, count0=3*R, stride0=N, pop_vec
halt
