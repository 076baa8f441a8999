/* The kit's scratch in the workspace. A Linear's call holds its two
 * operand slots (its FP32 results and FP32 dY are packed into slot 0); an
 * attention's call holds its workspace and its dY (and operand slot 0 where
 * it converts its qkv). No call of one holds the other's, so the two sets
 * share one region: the lower-precision policies' widened and dequantized
 * operands take bytes the attention needs anyway, instead of adding to
 * them. The convolutions' FP32 results and a scaled Linear's FP32 dY (ACC,
 * DY32) are one array in the Linear's set. */
#include "kit_state.h"

#define ALIGN(b) (((b) + 255u) & ~(size_t)255u)

static size_t max2(size_t a, size_t b) { return a > b ? a : b; }

/* base + at, or NULL for an empty part (or while measuring) */
static void *at_or_null(char *base, size_t at, size_t bytes) {
    return base && bytes ? base + at : NULL;
}

void amp_kit_layout_scratch(amp_model *m) {
    amp_kit *k = m->kit;
    amp_arena *W = &m->mem[AMP_MEM_WORKSPACE];
    size_t op = k->need[AMP_SCRATCH_OPERAND];
    for (int i = 0; i < 2; i++) {
        k->cap32[i] = max2(op, k->slot_need[i][0]);
        k->cap16[i] = max2(op, k->slot_need[i][1]);
    }
    size_t b32[2], b16[2];
    for (int i = 0; i < 2; i++) {
        b32[i] = ALIGN(k->cap32[i] * 4);
        b16[i] = ALIGN(k->cap16[i] * 2);
    }
    /* ACC: a convolution's results (or its scaled backward's dY); DY32: a
     * scaled Linear's FP32 dY: never held at once */
    size_t acc = ALIGN(max2(k->need[AMP_SCRATCH_ACC], k->need[AMP_SCRATCH_DY32]) * 4);
    size_t att_ws = ALIGN(k->need[AMP_SCRATCH_ATT_WS] * 4), att_dy = ALIGN(k->need[AMP_SCRATCH_ATT_DY] * 4);
    /* [slot 1 | acc/dy32 ... slot 0] against [att ws | att dy ... slot 0] */
    size_t op0 = b32[0] + b16[0];
    size_t lin = b32[1] + b16[1] + acc + op0;
    size_t att = att_ws + att_dy + (k->att_operand ? op0 : 0);
    size_t region = max2(lin, att);
    char *base = amp_arena_take(W, region);
    k->op_f32[1] = at_or_null(base, 0, b32[1]);
    k->op_16[1] = at_or_null(base, b32[1], b16[1]);
    k->scratch[AMP_SCRATCH_ACC] = at_or_null(base, b32[1] + b16[1], acc);
    k->scratch[AMP_SCRATCH_DY32] = k->scratch[AMP_SCRATCH_ACC];
    k->op_f32[0] = at_or_null(base, region - op0, b32[0]);
    k->op_16[0] = at_or_null(base, region - b16[0], b16[0]);
    k->scratch[AMP_SCRATCH_ATT_WS] = at_or_null(base, 0, att_ws);
    k->scratch[AMP_SCRATCH_ATT_DY] = at_or_null(base, att_ws, att_dy);
    for (int i = AMP_SCRATCH_OPERAND + 1; i < AMP_SCRATCH_COUNT; i++) {
        int shared = i == AMP_SCRATCH_ACC || i == AMP_SCRATCH_DY32 || i == AMP_SCRATCH_ATT_WS ||
                     i == AMP_SCRATCH_ATT_DY || i == AMP_SCRATCH_CONV_WS;
        if (!shared) k->scratch[i] = amp_arena_take(W, k->need[i] * 4);
    }
}
