/* A test number-format family written only against core/formats/family.h
 * (as tests/testmodel/kitnet.c is written only against the layer kit):
 * symmetric INT8 with one scale per tensor from the tensor's own amax,
 * q = round(x * 127 / amax) in [-127, 127], x ~ q * amax / 127. Its GEMM
 * multiplies the codes exactly (integers in FP32: every product and sum
 * below 2^24 is exact) through the backend's gemm_ex and scales the sum
 * once by alpha. It keeps its codes in host memory, so it runs on the CPU
 * backend only. Selected by the format code AMP_TEST_FORMAT_INT8 with
 * CURRENT scaling (tests/testfamily/policy.c). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "formats/family.h"
#include "int8.h"

static int serves(const amp_operand_format *f) {
    return f->format == AMP_TEST_FORMAT_INT8 && f->scaling == AMP_SCALING_CURRENT;
}

static const char *lacks(const amp_backend *be) {
    return be->device == AMP_DEVICE_CPU ? NULL : "host-memory operands (the int8 test family)";
}

static size_t weight_bytes(const amp_scaled_slot *sl, int out, int in) {
    (void)sl;
    return (size_t)out * (size_t)in;
}

/* 127 / amax of x[n] (1 when the amax is 0 or not finite), its amax, NaNs
 * and flushed values (nonzero, quantized to 0) into st when counted. */
static float scale_of(const float *x, size_t n, amp_fp8_stats *st) {
    float amax = 0.0f;
    unsigned long long nan = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(x[i])) nan++;
        else if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    }
    float s = amax > 0.0f ? 127.0f / amax : 1.0f;
    if (st) {
        unsigned long long flushed = 0;
        for (size_t i = 0; i < n; i++) flushed += x[i] != 0.0f && nearbyintf(x[i] * s) == 0.0f;
        amp_fp8_stats seen = {amax, 0, flushed, nan};
        amp_fp8_stats_merge(st, &seen);
    }
    return s;
}

static float code(float x, float s) {
    float q = isfinite(x) ? nearbyintf(x * s) : 0.0f;
    return q > 127.0f ? 127.0f : q < -127.0f ? -127.0f : q;
}

/* The scale of operand x: a fresh one from its amax when counted (kept in
 * the slot in unscaled units), else the one it was counted with. */
static float operand_scale(const amp_family_env *e, const float *x, size_t n, int count) {
    float unit = amp_scaled_unit(e->s, e->sl);
    if (!count) return e->sl->scale / unit;
    float s = scale_of(x, n, e->stats);
    e->sl->scale = s * unit;
    return s;
}

static int cast(const amp_family_env *e, const amp_family_weight *w) {
    size_t n = (size_t)w->out * (size_t)w->in;
    float s = scale_of(w->master, n, e->stats);
    int8_t *q = w->codes;
    for (size_t i = 0; i < n; i++) q[i] = (int8_t)code(w->master[i], s);
    *w->scale = s;
    e->sl->scale = s;
    return 0;
}

static const float *operand(const amp_family_env *e, float *dst, const float *wide, int rows,
                            int cols, int along_cols, int count) {
    (void)along_cols; /* one scale per tensor */
    size_t n = (size_t)rows * (size_t)cols;
    float s = operand_scale(e, wide, n, count);
    for (size_t i = 0; i < n; i++) dst[i] = code(wide[i], s) / s;
    return dst;
}

static const float *weight(const amp_family_env *e, float *dst, const amp_family_weight *w,
                           int along_cols) {
    (void)e, (void)along_cols;
    size_t n = (size_t)w->out * (size_t)w->in;
    const int8_t *q = w->codes;
    for (size_t i = 0; i < n; i++) dst[i] = (float)q[i] / *w->scale;
    return dst;
}

/* X's codes (as FP32 integers) into scratch 0 and W's into scratch 1,
 * their exact product scaled by 1 / (s_x s_w) in the GEMM's alpha. FP32
 * codes need 4 bytes each: where scratch 0 has room for 1-byte codes only
 * (the kit's packed call) it declines and the kit composes. */
static int gemm(const amp_family_env *ex, const amp_family_env *ew, const amp_family_weight *w,
                const amp_family_values *x, amp_gemm_desc *g) {
    (void)ew;
    size_t n = (size_t)g->m * (size_t)g->k, wn = (size_t)w->out * (size_t)w->in;
    if (n > ex->codes_n || n > ex->scratch_n || wn > ex->scratch_n || g->k > 1024)
        return 0; /* no room, or sums past 2^24 */
    const float *wide = amp_family_wide(ex->be, ex->scratch[1], x, n);
    if (!wide) return -1;
    float s = operand_scale(ex, wide, n, 1), *xq = ex->scratch[0], *wq = ex->scratch[1];
    for (size_t i = 0; i < n; i++) xq[i] = code(wide[i], s);
    const int8_t *q = w->codes;
    for (size_t i = 0; i < wn; i++) wq[i] = (float)q[i];
    g->a = xq;
    g->b = wq;
    g->in_dtype = AMP_DTYPE_F32;
    g->alpha /= s * *w->scale;
    return AMP_CALL(ex->be, gemm_ex, g) != 0 ? -1 : 1;
}

/* its own telemetry: the tensors' step amax as the INT8 step size */
static void json(FILE *f, const amp_scaled_slot *sl) {
    fprintf(f, ",\"int8_step\":%.9g", sl->last.amax > 0.0f ? sl->last.amax / 127.0 : 0.0);
}

const amp_format_family amp_test_family_int8 = {
    .name = "int8",
    .serves = serves,
    .lacks = lacks,
    .weight_bytes = weight_bytes,
    .cast = cast,
    .operand = operand,
    .weight = weight,
    .gemm = gemm,
    .json = json,
};
