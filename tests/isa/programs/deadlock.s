; The exec unit waits for data (ld2ex) that no load ever sends: stops with DEADLOCK at
; instruction 1, never hangs.
load row=0, dram=0, run=N, count0=N, stride0=N
preload row=0, pop_prev
halt
