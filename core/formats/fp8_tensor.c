/* Per-tensor FP8 (FP8_SPEC's Linear): E4M3 or E5M2 codes with one FP32
 * scale per tensor, from the amax history (DELAYED) or the tensor's own
 * amax (CURRENT). The weight's working copy is 1 byte per value and the
 * scale it was quantized with. */

#include "formats/family.h"

static int serves(const amp_operand_format *f) {
    return (f->format == AMP_FORMAT_F8_E4M3 || f->format == AMP_FORMAT_F8_E5M2) &&
           (f->scaling == AMP_SCALING_DELAYED || f->scaling == AMP_SCALING_CURRENT);
}

/* The scale that quantizes x[n] now: CURRENT from x's own amax when
 * `fresh` (a re-quantization keeps the scale it was counted with). The
 * slot's amax and scale are in unscaled units, x in the slot's unit (a
 * gradient times the loss scale): x quantizes with scale / unit. */
static int scale_for(const amp_family_env *e, const float *x, size_t n, int fresh, float *scale) {
    amp_backend *be = e->be;
    amp_scaled_slot *sl = e->sl;
    float unit = amp_scaled_unit(e->s, sl);
    if (fresh && sl->fmt.scaling == AMP_SCALING_CURRENT) {
        float amax;
        if (AMP_SCALED(be, fp8_amax, &amax, x, n) != 0) return -1;
        if (amp_scaled_current(e->s, sl, amax / unit, be->err, sizeof be->err) != 0) return -1;
    }
    *scale = sl->scale / unit;
    return 0;
}

static size_t weight_bytes(const amp_scaled_slot *sl, int out, int in) {
    (void)sl;
    return (size_t)out * (size_t)in;
}

/* qW = quant(master, s_w), the master's stats to the WEIGHT slot */
static int cast(const amp_family_env *e, const amp_family_weight *w) {
    size_t n = (size_t)w->out * (size_t)w->in;
    float scale;
    if (scale_for(e, w->master, n, 1, &scale) != 0) return -1;
    *w->scale = scale;
    return AMP_SCALED(e->be, fp8_quantize, w->codes, w->master, n, scale,
                      amp_format_fp8(e->sl->fmt.format), e->stats);
}

/* One scale per tensor: deq(codes, scale) is qdq(x, scale), the operand
 * the weight gradient's uncounted call would make again from x (and W^T's
 * codes are W's). */
static const float *kept(const amp_family_env *e, float *dst, const uint8_t *codes, float scale,
                         size_t n) {
    return AMP_SCALED(e->be, fp8_dequantize, dst, codes, n, scale,
                      amp_format_fp8(e->sl->fmt.format)) != 0
               ? NULL
               : dst;
}

static const float *operand(const amp_family_env *e, float *dst, const float *wide, int rows,
                            int cols, int along_cols, int count) {
    (void)along_cols;
    size_t n = (size_t)rows * (size_t)cols;
    float scale;
    if (scale_for(e, wide, n, count, &scale) != 0) return NULL;
    int fmt = amp_format_fp8(e->sl->fmt.format);
    if (count && e->keep) { /* the codes kept: qdq composed (the same bits) */
        *e->keep_scale = scale;
        if (AMP_SCALED(e->be, fp8_quantize, e->keep, wide, n, scale, fmt, e->stats) != 0)
            return NULL;
        return kept(e, dst, e->keep, scale, n);
    }
    if (AMP_SCALED(e->be, fp8_qdq, dst, wide, n, scale, fmt, count ? e->stats : NULL) != 0)
        return NULL;
    return dst;
}

static const float *weight(const amp_family_env *e, float *dst, const amp_family_weight *w,
                           int along_cols) {
    (void)along_cols; /* one scale: W and W^T are the same codes */
    return kept(e, dst, w->codes, *w->scale, (size_t)w->out * (size_t)w->in);
}

/* The backend's fp8_gemm on X's codes (scratch 0, its own scale) and W's. */
static int gemm(const amp_family_env *ex, const amp_family_env *ew, const amp_family_weight *w,
                const amp_family_values *x, amp_gemm_desc *g) {
    amp_backend *be = ex->be;
    size_t n = (size_t)g->m * (size_t)g->k;
    int fits = amp_family_fp8_gemm_fits(ex, n);
    if (fits <= 0) return fits;
    uint8_t *codes = ex->keep ? ex->keep : (uint8_t *)ex->scratch[0];
    const float *wide = amp_family_wide(be, ex->scratch[1], x, n);
    if (!wide) return -1;
    int fmt = amp_format_fp8(ex->sl->fmt.format);
    amp_fp8_gemm_operands q = {fmt, amp_format_fp8(ew->sl->fmt.format), 0.0f, *w->scale, NULL,
                               NULL};
    if (scale_for(ex, wide, n, 1, &q.a_scale) != 0) return -1;
    if (ex->keep) *ex->keep_scale = q.a_scale;
    if (AMP_SCALED(be, fp8_quantize, codes, wide, n, q.a_scale, fmt, ex->stats) != 0) return -1;
    return amp_family_fp8_gemm_run(be, g, codes, w->codes, &q);
}

const amp_format_family amp_family_fp8_tensor = {
    .name = "fp8",
    .serves = serves,
    .weight_bytes = weight_bytes,
    .cast = cast,
    .operand = operand,
    .weight = weight,
    .gemm = gemm,
    .kept = kept,
};
