; A LOAD whose count0 is 0 (written as a raw word: opcode 1, run = N at bit 19, counts 1..3 = 1
; at bits 104, 141, 178, count0 at bit 67 left 0): stops with ILLEGAL_FIELD at instruction 0.
.word 1 | (N << 19) | (1 << 104) | (1 << 141) | (1 << 178)
halt
