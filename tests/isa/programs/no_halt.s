; A program that runs off its end. The host places an image at the end of DRAM, so the next word
; lies outside DRAM: it stops with FETCH_RANGE at instruction 2.
load row=0, dram=0, run=N, count0=N, stride0=N
sync unit=store
