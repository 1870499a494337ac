; An illegal opcode (8) after a legal instruction: stops with ILLEGAL_OPCODE at instruction 1.
sync unit=load
.word 8
halt
