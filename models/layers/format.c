/* The number formats: the one place that knows how a dtype is stored, fed
 * to a GEMM and rounded into. A layer asks here what array its GEMM reads
 * and how to get it; a new format (FP8, a block-scaled one) plugs in by
 * teaching these four functions its storage and its rounding.
 *
 * Where the backend widens 16-bit GEMM inputs to FP32 anyway
 * (be->info.widened_gemm), the layer's GEMM is fed FP32 arrays holding the
 * values rounded through its dtype (what the widening would give, so the
 * bits are those of the 16-bit GEMM): the working copy is such an array,
 * cast once per step, and an operand is widened once, not at every GEMM. */
#include <stdio.h>

#include "kit_state.h"

amp_dtype amp_format_feed(const amp_model *m, amp_dtype gemm) {
    int widened = gemm != AMP_DTYPE_F32 && ((m->be->info.widened_gemm >> gemm) & 1u);
    return widened ? AMP_DTYPE_F32 : gemm;
}

/* 1 when v's values change on their way into gemm */
static int rounds(amp_dtype gemm, amp_dtype vals) {
    return gemm != AMP_DTYPE_F32 && vals != gemm;
}

int amp_format_converts(amp_dtype feed, amp_dtype gemm, amp_dtype store, amp_dtype vals) {
    return rounds(gemm, vals) || store != feed;
}

const void *amp_format_operand(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                               const amp_array *v, size_t n) {
    return amp_format_operand_counted(m, feed, gemm, slot, v, n, NULL);
}

const void *amp_format_operand_counted(amp_model *m, amp_dtype feed, amp_dtype gemm, int slot,
                                       const amp_array *v, size_t n, amp_round_count *cnt) {
    amp_kit *k = m->kit;
    amp_backend *be = m->be;
    int r = rounds(gemm, v->vals);
    if (!r && v->store == feed) return v->p;
    if (!r && feed == AMP_DTYPE_F32 && v->f32) return v->f32;
    if (n > k->need[AMP_SCRATCH_OPERAND]) {
        snprintf(be->err, sizeof be->err, "model '%s': operand conversion of %zu elements exceeds "
                 "the scratch of %zu (a dtype mix the layers did not plan for)", m->ops->name, n,
                 k->need[AMP_SCRATCH_OPERAND]);
        return NULL;
    }
    const float *wide = v->store == AMP_DTYPE_F32 ? v->p : v->f32;
    if (!wide) {
        if (be->ops->widen(be, k->op_f32[slot], v->p, v->store, n) != 0) return NULL;
        wide = k->op_f32[slot];
    }
    if (feed == AMP_DTYPE_F32) { /* a widened GEMM, or an F32 GEMM fed 16-bit values */
        if (!r) return wide;
        if (be->ops->quantize(be, k->op_f32[slot], wide, n, gemm, cnt, 0) != 0) return NULL;
        return k->op_f32[slot];
    }
    if (be->ops->round(be, k->op_16[slot], gemm, wide, n, cnt) != 0) return NULL;
    return k->op_16[slot];
}

int amp_format_cast(amp_model *m, const amp_kit_copy *c, const float *master, size_t n) {
    amp_backend *be = m->be;
    amp_round_count *cnt = amp_model_rounds(m, c->layer, AMP_ROUND_FWD);
    if (c->f32_store) /* FP32 arrays of the rounded values, counted the same */
        return be->ops->quantize(be, c->ptr, master, n, c->dt, cnt, 0);
    return be->ops->round(be, c->ptr, c->dt, master, n, cnt);
}
