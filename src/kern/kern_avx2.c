/* kern_avx2.c - placeholder table: reference matmul entries, reference activation quantizers. */
#include "kern_isa.h"
#include "quant/quant_ref.h"

static const g4_kern TABLE = {
    .name = "avx2",
    .matmul = { KERN_REF_MATMUL_ALL },
    .quantize_act = {
        [G4_TYPE_F32] = quant_act_f32, [G4_TYPE_F16] = quant_act_f16, [G4_TYPE_BF16] = quant_act_bf16,
        [G4_TYPE_Q8_0] = quant_act_q8_0, [G4_TYPE_Q8_1] = quant_act_q8_1, [G4_TYPE_Q8_K] = quant_act_q8_K,
    },
};

const g4_kern *kern_table_avx2(void) { return &TABLE; }
