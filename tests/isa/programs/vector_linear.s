; VECTOR lin (docs/isa.md, VECTOR): onnxruntime's QLinearAdd of two uint8 blocks carried as int8
; (offset 128; scale0 = sb/sc for the first row of a group, scale1 = sa/sc, fixed = F), then a
; one-row lin with a negative offset whose scale 2^40 sends most values past int32 (INT_MIN: the
; low bound) and a sign-flipping small one, stored as int8 and as raw int32.
.equ R, 23                   ; rows per block (not a multiple of lin's blocks of 3)
.equ D, 0                    ; 2R×N int8: the b block, then the a block
.equ OUT, D + 2*R*N          ; 3R×N int8: the add, the 2^40 row-wise lin, the small one
.equ RAW, OUT + 3*R*N        ; R×N int32: the add again, raw
.equ OFFSET, 128
.equ FIXED, 0x41a56a1e       ; 20.676815
.equ SB, 0x3f3a744f          ; 0.7283372
.equ SA, 0x3eff6684          ; 0.498829
.equ HUGE, 0x53800000        ; 2^40
.equ SMALL, 0xbac49ba6       ; -1.5e-3
.equ HALF, 0x3ebd70a4        ; 0.37
load row=0, dram=D, run=N, count0=2*R, stride0=N, push_vec
vector op=lin, src=0, dst=0, count=R, group=2, ostride=1, gstride=R, offset=OFFSET, fixed=FIXED, scale0=SB, scale1=SA, pop_prev
vector op=lin, src=0, dst=R, count=R, ostride=1, offset=-3, fixed=HALF, scale0=HUGE
vector op=lin, src=R, dst=2*R, count=R, ostride=1, offset=-100, fixed=HALF, scale0=SMALL, push_next
store row=0, dram=OUT, run=N, count0=3*R, stride0=N, pop_vec
store raw, row=0, dram=RAW, run=N, count0=R, stride0=4*N
halt
