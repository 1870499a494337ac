// Instruction decode for the dispatcher: which queue an instruction goes to, and whether it is
// legal on this array (docs/isa.md, "Instruction format" and the ILLEGAL_* codes). The checks are
// those of glc/isa/encoding.py's illegal_reason, in hardware.
// The package is imported at file scope: Yosys's SystemVerilog front end reads no import in a
// module header (`module m import p::*; #(`), and the ports use its widths.
/* verilator lint_off IMPORTSTAR */
import isa_pkg::*;
/* verilator lint_on IMPORTSTAR */
module decoder #(
    // N: the array size, which bounds a transfer's runs per local row
    parameter int ARRAY_SIZE = 16,
    // 1: MATMUL may take `split`; 0: `split` is ILLEGAL_FIELD (docs/isa.md, `column_split`)
    parameter int COLUMN_SPLIT = 1
) (
    input  logic [WORD_W-1:0] word,
    output logic              is_halt,
    output logic [1:0]        unit,      // UNIT_LOAD / UNIT_EXEC / UNIT_STORE / UNIT_VECTOR
    output logic [ERR_W-1:0]  error      // ERR_OK when legal
);
    localparam int LEVELS = 4;
    logic [OPCODE_W-1:0] opcode;
    logic [WORD_W-1:0]   mask;
    logic                known;
    assign opcode = word[OPCODE_W-1:0];

    always_comb begin
        known = 1'b1;
        mask  = '0;
        unit  = 2'(UNIT_EXEC);
        case (opcode)
            OP_LOAD:    begin mask = MASK_LOAD;    unit = 2'(UNIT_LOAD);  end
            OP_STORE:   begin mask = MASK_STORE;   unit = 2'(UNIT_STORE); end
            OP_PRELOAD: mask = MASK_PRELOAD;
            OP_MATMUL:  mask = MASK_MATMUL;
            OP_SYNC:    begin mask = MASK_SYNC; unit = word[SYNC_UNIT_LSB +: 2]; end
            OP_HALT:    mask = MASK_HALT;
            OP_VECTOR:  begin mask = MASK_VECTOR; unit = 2'(UNIT_VECTOR); end
            default:    known = 1'b0;
        endcase
    end
    assign is_halt = opcode == OP_HALT;

    // The transfer pattern's legality: counts >= 1, 1 <= run <= N, inner <= 4, run·R <= N.
    // R·run <= N is checked on factors clamped to N + 1 (each factor is >= 1 once the other
    // checks pass, so one above N already fails), multiplied as a balanced tree of saturating
    // FW-bit products read from a constant table: a few LUT levels each, where a 64-bit
    // multiplier chain took most of a 20 ns cycle.
    localparam int CLAMP = ARRAY_SIZE + 1;
    localparam int FW = $clog2(CLAMP + 1);
    localparam int TABLE_BITS = FW << (2 * FW);
    function automatic logic [FW-1:0] clamp(input logic [31:0] x);
        clamp = x > 32'(CLAMP) ? FW'(CLAMP) : FW'(x);
    endfunction
    // Entry {a, b}: min(a·b, N + 1).
    function automatic logic [TABLE_BITS-1:0] product_table();
        product_table = '0;
        for (int a = 0; a < (1 << FW); a++) begin
            for (int b = 0; b < (1 << FW); b++) begin
                product_table[((a << FW) + b) * FW +: FW] = clamp(32'(a * b));
            end
        end
    endfunction
    localparam logic [TABLE_BITS-1:0] PRODUCT = product_table();
    function automatic logic [FW-1:0] times(input logic [FW-1:0] a, input logic [FW-1:0] b);
        times = PRODUCT[32'({a, b}) * FW +: FW];
    endfunction
    logic transfer_bad;
    always_comb begin
        logic [FW-1:0] f [LEVELS + 1];
        logic [XFER_RUN_W-1:0]   run;
        logic [XFER_INNER_W-1:0] inner;
        run          = word[XFER_RUN_LSB +: XFER_RUN_W];
        inner        = word[XFER_INNER_LSB +: XFER_INNER_W];
        transfer_bad = run == '0 || 32'(run) > ARRAY_SIZE || 32'(inner) > LEVELS;
        f[LEVELS]    = clamp(32'(run));
        for (int k = 0; k < LEVELS; k++) begin
            logic [XFER_COUNT0_W-1:0] count;
            count = word[XFER_COUNT0_LSB + k * XFER_LEVEL_BITS +: XFER_COUNT0_W];
            if (count == '0) transfer_bad = 1'b1;
            f[k] = k < 32'(inner) ? clamp(32'(count)) : FW'(1);
        end
        if (32'(times(times(f[0], f[1]), times(f[2], times(f[3], f[4])))) > ARRAY_SIZE) begin
            transfer_bad = 1'b1;
        end
    end

    // Flags towards a unit that does not exist; for the other opcodes the masks already
    // exclude them, SYNC decides by its unit field (ISA v2 B: only LOAD and STORE have
    // pop_vec/push_vec; EXEC and VECTOR have prev and next).
    logic sync_bad;
    always_comb begin
        case (word[SYNC_UNIT_LSB +: 2])
            2'(UNIT_LOAD):  sync_bad = word[FLAG_POP_PREV] || word[FLAG_PUSH_PREV];
            2'(UNIT_STORE): sync_bad = word[FLAG_POP_NEXT] || word[FLAG_PUSH_NEXT];
            default:        sync_bad = word[FLAG_POP_VEC] || word[FLAG_PUSH_VEC];
        endcase
    end

    // MATMUL: `acc2` only with `split`, which needs a splitting array, and its rows then in the
    // other accumulator bank than acc's (acc2 - acc odd) and clear of them (|acc2 - acc| >=
    // rows): docs/isa.md, MATMUL, and glc/isa/encoding.py's _matmul_reason.
    logic matmul_bad;
    always_comb begin
        logic [MATMUL_ACC_W-1:0] acc, acc2, distance;
        acc        = word[MATMUL_ACC_LSB +: MATMUL_ACC_W];
        acc2       = word[MATMUL_ACC2_LSB +: MATMUL_ACC2_W];
        distance   = acc2 >= acc ? acc2 - acc : acc - acc2;
        matmul_bad = word[MATMUL_ROWS_LSB +: MATMUL_ROWS_W] == '0;
        if (!word[MATMUL_SPLIT_LSB]) begin
            if (acc2 != '0) matmul_bad = 1'b1;
        end else if (COLUMN_SPLIT == 0 || acc2[0] == acc[0]
                     || 32'(distance) < 32'(word[MATMUL_ROWS_LSB +: MATMUL_ROWS_W])) begin
            matmul_bad = 1'b1;
        end
    end

    // VECTOR lin folds at most LIN_GROUP int8 rows into a new value, its float32 constants
    // below 2^64 (so nothing overflows: glc/isa/vector_linear.py); the other ops leave its
    // fields 0.
    logic lin_bad;
    always_comb begin
        if (32'(word[VECTOR_OP_LSB +: VECTOR_OP_W]) == VOP_LIN)
            lin_bad = 32'(word[VECTOR_GROUP_LSB +: VECTOR_GROUP_W]) > LIN_GROUP
                   || word[VECTOR_SRC_ACC_LSB] || word[VECTOR_ACCUMULATE_LSB]
                   || 32'(word[VECTOR_FIXED_LSB + 23 +: 8]) > LIN_MAX_EXPONENT
                   || 32'(word[VECTOR_SCALE0_LSB + 23 +: 8]) > LIN_MAX_EXPONENT
                   || 32'(word[VECTOR_SCALE1_LSB + 23 +: 8]) > LIN_MAX_EXPONENT;
        else
            lin_bad = word[VECTOR_OFFSET_LSB +: VECTOR_OFFSET_W] != '0
                   || word[VECTOR_FIXED_LSB +: VECTOR_FIXED_W] != '0
                   || word[VECTOR_SCALE0_LSB +: VECTOR_SCALE0_W] != '0
                   || word[VECTOR_SCALE1_LSB +: VECTOR_SCALE1_W] != '0;
    end

    // VECTOR table and lut map int8 scratchpad rows one by one (group 1, no src_acc, no
    // accumulate); table's entries dst … dst + count - 1 lie in the TABLE_ENTRIES.
    logic table_bad;
    always_comb begin
        logic [31:0] op;
        op        = 32'(word[VECTOR_OP_LSB +: VECTOR_OP_W]);
        table_bad = (op == VOP_LUT || op == VOP_TABLE)
                    && (32'(word[VECTOR_GROUP_LSB +: VECTOR_GROUP_W]) != 1
                        || word[VECTOR_SRC_ACC_LSB] || word[VECTOR_ACCUMULATE_LSB])
                 || op == VOP_TABLE && 32'(word[VECTOR_DST_LSB +: VECTOR_DST_W])
                                       + 32'(word[VECTOR_COUNT_LSB +: VECTOR_COUNT_W])
                                       > TABLE_ENTRIES;
    end

    always_comb begin
        if (!known) error = ERR_ILLEGAL_OPCODE;
        else if ((word & ~mask) != '0) error = ERR_ILLEGAL_FIELD;
        else begin
            case (opcode)
                // A transposing LOAD writes the scratchpad only (ISA v2 A1), so does a strided
                // one; `step` is 0 … 2 (ISA 2.4).
                OP_LOAD:   error = transfer_bad || (word[LOAD_ACC_LSB] && (word[LOAD_TRANSPOSE_LSB]
                                   || word[LOAD_STEP_LSB +: LOAD_STEP_W] != '0))
                                   || word[LOAD_STEP_LSB +: LOAD_STEP_W] == 2'd3
                               ? ERR_ILLEGAL_FIELD : ERR_OK;
                // STORE: raw int32 takes no requantize shift; `linear` (int8) takes neither
                // raw nor shift, and only it takes a zero point and a multipliers' row; only
                // `bias` takes a biases' row; qrows needs one of the two.
                OP_STORE:  error = transfer_bad || (word[STORE_RAW_LSB]
                                   && word[STORE_SHIFT_LSB +: STORE_SHIFT_W] != '0)
                                   || (word[STORE_LINEAR_LSB] && (word[STORE_RAW_LSB]
                                       || word[STORE_SHIFT_LSB +: STORE_SHIFT_W] != '0))
                                   || (!word[STORE_LINEAR_LSB]
                                       && (word[STORE_ZERO_LSB +: STORE_ZERO_W] != '0
                                           || word[STORE_QROW_LSB +: STORE_QROW_W] != '0))
                                   || (!word[STORE_BIAS_LSB]
                                       && word[STORE_BROW_LSB +: STORE_BROW_W] != '0)
                                   || (word[STORE_QROWS_LSB] && !word[STORE_LINEAR_LSB]
                                       && !word[STORE_BIAS_LSB])
                               ? ERR_ILLEGAL_FIELD : ERR_OK;
                OP_MATMUL: error = matmul_bad ? ERR_ILLEGAL_FIELD : ERR_OK;
                OP_SYNC:   error = sync_bad ? ERR_ILLEGAL_FIELD : ERR_OK;
                OP_VECTOR: error = 32'(word[VECTOR_OP_LSB +: VECTOR_OP_W]) >= VOPS
                                   || word[VECTOR_COUNT_LSB +: VECTOR_COUNT_W] == '0
                                   || word[VECTOR_GROUP_LSB +: VECTOR_GROUP_W] == '0
                                   || lin_bad || table_bad
                               ? ERR_ILLEGAL_FIELD : ERR_OK;
                default:   error = ERR_OK;
            endcase
        end
    end
endmodule
