/* MX block scaling (OCP MX v1.0, MXFP8): E4M3 or E5M2 codes with one E8M0
 * scale per 32 values along a GEMM's reduction dimension, so an operand is
 * blocked again for each GEMM that reduces along another one. The weight's
 * working copy is its codes, then the forward's scales (blocks along in);
 * dX's blocks down its columns come from the FP32 master. */

#include "backend/kernels/mx.h"
#include "formats/family.h"

static int serves(const amp_operand_format *f) {
    return (f->format == AMP_FORMAT_F8_E4M3 || f->format == AMP_FORMAT_F8_E5M2) &&
           f->scaling == AMP_SCALING_MX32;
}

static size_t weight_bytes(const amp_scaled_slot *sl, int out, int in) {
    (void)sl;
    return (size_t)out * (size_t)in + (size_t)out * (((size_t)in + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK);
}

static amp_mx_desc weight_blocks(const amp_family_env *e, const amp_family_weight *w,
                                 int along_cols) {
    return (amp_mx_desc){w->out, w->in, amp_format_fp8(e->sl->fmt.format), along_cols};
}

static int cast(const amp_family_env *e, const amp_family_weight *w) {
    size_t n = (size_t)w->out * (size_t)w->in;
    amp_mx_desc d = weight_blocks(e, w, 0);
    return AMP_SCALED(e->be, mx_quantize, w->codes, (uint8_t *)w->codes + n, w->master, &d,
                      e->stats);
}

static const float *operand(const amp_family_env *e, float *dst, const float *wide, int rows,
                            int cols, int along_cols, int count) {
    amp_mx_desc d = {rows, cols, amp_format_fp8(e->sl->fmt.format), along_cols};
    return AMP_SCALED(e->be, mx_qdq, dst, wide, &d, count ? e->stats : NULL) != 0 ? NULL : dst;
}

static const float *weight(const amp_family_env *e, float *dst, const amp_family_weight *w,
                           int along_cols) {
    size_t n = (size_t)w->out * (size_t)w->in;
    amp_mx_desc d = weight_blocks(e, w, along_cols);
    int rc = along_cols ? AMP_SCALED(e->be, mx_qdq, dst, w->master, &d, NULL)
                        : AMP_SCALED(e->be, mx_dequantize, dst, w->codes,
                                     (const uint8_t *)w->codes + n, &d);
    return rc != 0 ? NULL : dst;
}

/* The backend's fp8_gemm on MX32 X and W, both in blocks along in: X's
 * codes and scales in scratch 0 (0 when they do not fit). */
static int gemm(const amp_family_env *ex, const amp_family_env *ew, const amp_family_weight *w,
                const amp_family_values *x, amp_gemm_desc *g) {
    amp_backend *be = ex->be;
    size_t n = (size_t)g->m * (size_t)g->k;
    int fits = amp_family_fp8_gemm_fits(ex, n);
    if (fits <= 0) return fits;
    uint8_t *x_scales,
        *codes = amp_family_codes(ex, n, amp_mx_block_count((size_t)g->m, (size_t)g->k, 0),
                                  &x_scales);
    if (!codes) return 0;
    const float *wide = amp_family_wide(be, ex->scratch[1], x, n);
    if (!wide) return -1;
    int fmt = amp_format_fp8(ex->sl->fmt.format);
    amp_fp8_gemm_operands q = {fmt, amp_format_fp8(ew->sl->fmt.format), 0.0f, *w->scale, NULL,
                               NULL};
    amp_mx_desc d = {g->m, g->k, fmt, 0};
    if (AMP_SCALED(be, mx_quantize, codes, x_scales, wide, &d, ex->stats) != 0) return -1;
    q.a_mx = x_scales;
    q.b_mx = (const uint8_t *)w->codes + (size_t)w->out * (size_t)w->in;
    return amp_family_fp8_gemm_run(be, g, codes, w->codes, &q);
}

const amp_format_family amp_family_mx = {
    .name = "mx",
    .serves = serves,
    .blocked = 1,
    .weight_bytes = weight_bytes,
    .cast = cast,
    .operand = operand,
    .weight = weight,
    .gemm = gemm,
};
