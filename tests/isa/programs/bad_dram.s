; A load whose second run ends past the end of DRAM: stops with DRAM_RANGE at instruction 0.
load row=0, dram=DRAM_BYTES - N - 1, run=N, count0=2, stride0=2
halt
