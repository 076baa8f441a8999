/* What the families share (family.h): an operand's FP32 values and the
 * room for a GEMM's codes and block scales. */
#include "formats/family.h"

#include <stdio.h>

const float *amp_family_wide(amp_backend *be, float *dst, const amp_family_values *x, size_t n) {
    if (x->store == AMP_DTYPE_F32) return x->p;
    if (x->f32) return x->f32;
    return be->ops->widen(be, dst, x->p, x->store, n) != 0 ? NULL : dst;
}

uint8_t *amp_family_codes(const amp_family_env *e, size_t code_bytes, size_t nscales,
                          uint8_t **scales) {
    size_t at = (code_bytes + 15) / 16 * 16;
    if (at + nscales > e->codes_n * sizeof(float)) return NULL;
    uint8_t *codes = (uint8_t *)e->scratch[0];
    *scales = codes + at;
    return codes;
}

int amp_family_fp8_gemm_fits(const amp_family_env *ex, size_t n) {
    amp_backend *be = ex->be;
    if (!amp_backend_supports(be, "fp8_gemm")) return 0;
    if (n <= ex->scratch_n) return 1;
    snprintf(be->err, sizeof be->err, "model '%s': FP8 operand of %zu elements exceeds the "
             "scratch of %zu", ex->who, n, ex->scratch_n);
    return -1;
}

int amp_family_fp8_gemm_run(amp_backend *be, amp_gemm_desc *g, const void *a, const void *b,
                            const amp_fp8_gemm_operands *q) {
    g->a = a;
    g->b = b;
    g->in_dtype = AMP_DTYPE_F32;
    return AMP_FUSED(be, fp8_gemm, g, q) != 0 ? -1 : 1;
}
