; An illegal opcode (7) after a legal instruction: stops with ILLEGAL_OPCODE at instruction 1.
sync unit=load
.word 7
halt
