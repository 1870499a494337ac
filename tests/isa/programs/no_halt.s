; A program that runs off its end: the next word reads as zero, an illegal opcode, so it stops
; with ILLEGAL_OPCODE at instruction 2.
load row=0, dram=0, run=N, count0=N, stride0=N
sync unit=store
