; 3×3 convolution, stride 2, zero padding 1, of an NHWC int8 image (H×W×N channels) into N output
; channels, by im2col: ONE load gathers the nine kernel taps of every output pixel, reading the
; padding border as zeros, then nine weight tiles accumulate. Output: OH×OW×N raw int32 (NHWC).
.equ H, 5
.equ W, 6
.equ C, N
.equ OH, 3              ; (H + 2 - 3) / 2 + 1
.equ OW, 3              ; (W + 2 - 3) / 2 + 1
.equ IMG, 0             ; the image starts at address 0, so the first (padding) run lies
                        ; "before" address 0: the base wraps modulo 2^24 and is never read
.equ WT, IMG + H*W*C    ; weights: nine N×N tiles (tap ky*3+kx, input channel, output channel)
.equ OUT, WT + 9*N*N
.equ PIX, OH*OW
; scratchpad rows: tap t = ky*3+kx holds rows t*PIX … t*PIX+PIX-1 (one per output pixel)
; levels: 0 = ox, 1 = oy, 2 = kx, 3 = ky; y = 2*oy + ky - 1, x = 2*ox + kx - 1
load row=0, dram=IMG - (W + 1)*C, run=N, count0=OW, stride0=2*C, xcoef0=2, count1=OH, stride1=2*W*C, ycoef1=2, count2=3, stride2=C, xcoef2=1, count3=3, stride3=W*C, ycoef3=1, y0=-1, x0=-1, ylim=H, xlim=W
load row=9*PIX, dram=WT, run=N, count0=9*N, stride0=N, push_next
preload row=9*PIX, pop_prev
matmul sp=0, acc=0, rows=PIX
preload row=9*PIX + N
matmul sp=PIX, acc=0, rows=PIX, accumulate
preload row=9*PIX + 2*N
matmul sp=2*PIX, acc=0, rows=PIX, accumulate
preload row=9*PIX + 3*N
matmul sp=3*PIX, acc=0, rows=PIX, accumulate
preload row=9*PIX + 4*N
matmul sp=4*PIX, acc=0, rows=PIX, accumulate
preload row=9*PIX + 5*N
matmul sp=5*PIX, acc=0, rows=PIX, accumulate
preload row=9*PIX + 6*N
matmul sp=6*PIX, acc=0, rows=PIX, accumulate
preload row=9*PIX + 7*N
matmul sp=7*PIX, acc=0, rows=PIX, accumulate
preload row=9*PIX + 8*N
matmul sp=8*PIX, acc=0, rows=PIX, accumulate, push_next
store raw, row=0, dram=OUT, run=N, count0=PIX, stride0=4*N, pop_prev
halt
