; 3×3 convolution, stride 1, zero padding 1, of an NCHW int8 image (2 channels, H×W) into N output
; channels. Each scratchpad row holds the three kx taps of one (channel, ky) for one output pixel
; (runs of one element packed by the inner level, columns 3 … N-1 zero-filled); one load per
; channel. The result is stored NCHW: runs of one int32, the inner level walking the channels.
.equ CIN, 2
.equ H, 4
.equ W, 5
.equ PIX, H*W
.equ IMG, 100
.equ WT, IMG + CIN*H*W          ; six weight tiles (c, ky): row kx < 3 holds W[:, c, ky, kx]
.equ OUT, WT + 6*N*N            ; N×H×W int32
; rows (c, ky, pixel) = c*3*PIX + ky*PIX + oy*W + ox; levels 0 = kx (in the row), 1 = ox, 2 = oy, 3 = ky
load row=0, dram=IMG - W - 1, run=1, inner=1, count0=3, stride0=1, xcoef0=1, count1=W, stride1=1, xcoef1=1, count2=H, stride2=W, ycoef2=1, count3=3, stride3=W, ycoef3=1, y0=-1, x0=-1, ylim=H, xlim=W
load row=3*PIX, dram=IMG + H*W - W - 1, run=1, inner=1, count0=3, stride0=1, xcoef0=1, count1=W, stride1=1, xcoef1=1, count2=H, stride2=W, ycoef2=1, count3=3, stride3=W, ycoef3=1, y0=-1, x0=-1, ylim=H, xlim=W
load row=6*PIX, dram=WT, run=N, count0=6*N, stride0=N, push_next
preload row=6*PIX, pop_prev
matmul sp=0, acc=0, rows=PIX
preload row=6*PIX + N
matmul sp=PIX, acc=0, rows=PIX, accumulate
preload row=6*PIX + 2*N
matmul sp=2*PIX, acc=0, rows=PIX, accumulate
preload row=6*PIX + 3*N
matmul sp=3*PIX, acc=0, rows=PIX, accumulate
preload row=6*PIX + 4*N
matmul sp=4*PIX, acc=0, rows=PIX, accumulate
preload row=6*PIX + 5*N
matmul sp=5*PIX, acc=0, rows=PIX, accumulate, push_next
; accumulator row p = pixel, column = output channel -> OUT[channel][pixel]
store raw, row=0, dram=OUT, run=1, inner=1, count0=N, stride0=4*PIX, count1=PIX, stride1=4, pop_prev
halt
