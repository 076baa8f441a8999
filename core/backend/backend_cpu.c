/* CPU backend: OpenBLAS sgemm for GEMMs (16-bit inputs are widened exactly to
 * FP32 first, so accumulation is FP32), plain loops over the shared AMP_HD
 * element math for everything else. Single-threaded loops keep results
 * deterministic; OpenBLAS threads the GEMMs.
 *
 * The 16-bit loops (round, quantize, widen) are the hot non-GEMM work of a
 * mixed-precision step. Each is specialised on its dtype (a constant, so the
 * dtype test inside the shared functions folds away) and keeps its rounding
 * counts in local integers; the per-element math is always the functions of
 * kernels/convert.h, so results are bit-identical to calling them one by
 * one. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/kernels/act.h"
#include "backend/kernels/convert.h"
#include "backend/kernels/optim.h"
#include "backend/kernels/unscale.h"
#include "backend/kernels/xent.h"

#define AMP_INLINE static inline __attribute__((always_inline))

/* ---- 16-bit conversion loops -------------------------------------------- */

/* FP16 -> FP32 by table: f16_table[h] is amp_widen16(h, AMP_DTYPE_F16) for
 * every one of the 65536 bit patterns -- the shared function evaluated
 * exhaustively, once -- so a load replaces its branches (inf/NaN, and the
 * normalisation loop for subnormals) with the same result. */
static float f16_table[65536];
static pthread_once_t f16_table_once = PTHREAD_ONCE_INIT;

static void f16_table_fill(void) {
    for (uint32_t h = 0; h < 65536; h++) f16_table[h] = amp_widen16((uint16_t)h, AMP_DTYPE_F16);
}

static const float *f16_widen_table(void) {
    pthread_once(&f16_table_once, f16_table_fill);
    return f16_table;
}

/* dst[n] = widen(src[n]); dt is F16 or BF16. */
static void widen16(float *dst, const uint16_t *src, amp_dtype dt, size_t n) {
    if (dt == AMP_DTYPE_BF16) {
        for (size_t i = 0; i < n; i++) dst[i] = amp_widen16(src[i], AMP_DTYPE_BF16);
    } else {
        const float *t = f16_widen_table();
        for (size_t i = 0; i < n; i++) dst[i] = t[src[i]];
    }
}

typedef struct round_tally {
    unsigned long long nz, uf, of;
} round_tally;

AMP_INLINE void tally(round_tally *t, unsigned f) {
    t->nz += f & AMP_RF_NONZERO;
    t->uf += (f & AMP_RF_UNDERFLOW) != 0;
    t->of += (f & AMP_RF_OVERFLOW) != 0;
}

static void count_add(amp_round_count *cnt, const round_tally *t) {
    if (!cnt) return;
    cnt->nonzero += t->nz;
    cnt->underflow += t->uf;
    cnt->overflow += t->of;
}

/* dst(dt)[n] = round(src[n]), tallying the flags when counted; dt is a
 * constant at every call so each instance is one dtype's loop. */
AMP_INLINE void round_loop(uint16_t *dst, const float *src, size_t n, const int dt,
                           const int counted, round_tally *t) {
    round_tally l = {0, 0, 0};
    for (size_t i = 0; i < n; i++) {
        unsigned f = 0;
        dst[i] = amp_round16(src[i], dt, counted ? &f : NULL);
        if (counted) tally(&l, f);
    }
    *t = l;
}

static void round16(uint16_t *dst, const float *src, size_t n, amp_dtype dt, round_tally *t) {
    if (dt == AMP_DTYPE_BF16) {
        if (t)
            round_loop(dst, src, n, AMP_DTYPE_BF16, 1, t);
        else
            round_loop(dst, src, n, AMP_DTYPE_BF16, 0, &(round_tally){0, 0, 0});
    } else {
        if (t)
            round_loop(dst, src, n, AMP_DTYPE_F16, 1, t);
        else
            round_loop(dst, src, n, AMP_DTYPE_F16, 0, &(round_tally){0, 0, 0});
    }
}

/* d + q, except that when q is NaN the result is q quieted whatever d is.
 * Which NaN a plain d + q returns when both are NaN depends on the operand
 * order the compiler picks; this fixes it to the order the loops had before
 * they were specialised (q's), so results stay bit-identical, NaN payloads
 * included. */
AMP_INLINE float accumulate_add(float d, float q) { return q != q ? q + q : d + q; }

/* dst[n] = (accumulate ? dst : 0) + quantize(src[n]) for a 16-bit dt, which
 * is amp_quantize: amp_widen16(amp_round16(x)), the widening for F16 read
 * from the table of amp_widen16. dst may equal src. */
AMP_INLINE void quantize_loop(float *dst, const float *src, size_t n, const int dt,
                              const int accumulate, round_tally *t) {
    round_tally l = {0, 0, 0};
    const float *tab = dt == AMP_DTYPE_F16 ? f16_widen_table() : NULL;
    for (size_t i = 0; i < n; i++) {
        unsigned f = 0;
        uint16_t r = amp_round16(src[i], dt, &f);
        float q = dt == AMP_DTYPE_F16 ? tab[r] : amp_widen16(r, dt);
        dst[i] = accumulate ? accumulate_add(dst[i], q) : q;
        tally(&l, f);
    }
    *t = l;
}

static void quantize16(float *dst, const float *src, size_t n, amp_dtype dt, int accumulate,
                       round_tally *t) {
    if (dt == AMP_DTYPE_BF16) {
        if (accumulate)
            quantize_loop(dst, src, n, AMP_DTYPE_BF16, 1, t);
        else
            quantize_loop(dst, src, n, AMP_DTYPE_BF16, 0, t);
    } else {
        if (accumulate)
            quantize_loop(dst, src, n, AMP_DTYPE_F16, 1, t);
        else
            quantize_loop(dst, src, n, AMP_DTYPE_F16, 0, t);
    }
}

typedef struct cpu_impl {
    float *scratch[2]; /* widened GEMM operands */
    size_t scratch_len[2];
} cpu_impl;

static void *cpu_alloc(amp_backend *be, size_t bytes) {
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        snprintf(be->err, sizeof be->err, "out of host memory allocating %zu bytes", bytes);
        return NULL;
    }
    return p;
}

static void cpu_release(amp_backend *be, void *p) { free(p); }

static int cpu_copy(amp_backend *be, void *dst, const void *src, size_t bytes) {
    memcpy(dst, src, bytes);
    return 0;
}

static int cpu_zero(amp_backend *be, void *dst, size_t bytes) {
    memset(dst, 0, bytes);
    return 0;
}

/* Widened copy of a stored 16-bit matrix in scratch slot `slot`. */
static const float *widened(amp_backend *be, int slot, const void *src, amp_dtype dt, size_t n) {
    cpu_impl *im = be->impl;
    if (im->scratch_len[slot] < n) {
        free(im->scratch[slot]);
        im->scratch[slot] = cpu_alloc(be, n * sizeof(float));
        im->scratch_len[slot] = im->scratch[slot] ? n : 0;
        if (!im->scratch[slot]) return NULL;
    }
    widen16(im->scratch[slot], src, dt, n);
    return im->scratch[slot];
}

static int cpu_gemm(amp_backend *be, float *c, const void *a, const void *b, amp_dtype dt,
                    int trans_a, int trans_b, int m, int n, int k, int lda, int ldb, int ldc,
                    float alpha, float beta) {
    const float *af = a, *bf = b;
    if (dt != AMP_DTYPE_F32) {
        af = widened(be, 0, a, dt, (size_t)(trans_a ? k : m) * (size_t)lda);
        bf = widened(be, 1, b, dt, (size_t)(trans_b ? n : k) * (size_t)ldb);
        if (!af || !bf) return 1;
    }
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, af, lda, bf, ldb, beta, c,
                ldc);
    return 0;
}

static int cpu_round(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                     amp_round_count *cnt) {
    if (dt == AMP_DTYPE_F32) {
        if (dst != src) memmove(dst, src, n * sizeof(float));
        return 0;
    }
    round_tally t = {0, 0, 0};
    round16(dst, src, n, dt, cnt ? &t : NULL);
    count_add(cnt, &t);
    return 0;
}

static int cpu_quantize(amp_backend *be, float *dst, const float *src, size_t n, amp_dtype dt,
                        amp_round_count *cnt, int accumulate) {
    if (dt == AMP_DTYPE_F32) { /* amp_quantize is the identity and counts nothing */
        if (accumulate)
            for (size_t i = 0; i < n; i++) dst[i] = accumulate_add(dst[i], src[i]);
        else if (dst != src)
            memmove(dst, src, n * sizeof(float));
        return 0;
    }
    round_tally t = {0, 0, 0};
    quantize16(dst, src, n, dt, accumulate, &t);
    count_add(cnt, &t);
    return 0;
}

static int cpu_widen(amp_backend *be, float *dst, const void *src, amp_dtype dt, size_t n) {
    if (dt == AMP_DTYPE_F32) {
        if (dst != src) memmove(dst, src, n * sizeof(float));
        return 0;
    }
    widen16(dst, src, dt, n);
    return 0;
}

static int cpu_add_bias(amp_backend *be, float *y, const float *bias, int rows, int cols) {
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) y[(size_t)r * cols + j] += bias[j];
    return 0;
}

static int cpu_act_forward(amp_backend *be, float *out, const float *in, size_t n, amp_act act) {
    for (size_t i = 0; i < n; i++) out[i] = amp_act_apply(in[i], (int)act);
    return 0;
}

/* The descriptor GEMM: cblas per batch matrix, then the epilogue as the
 * same element ops a caller would run one by one (bias add, rounding with
 * telemetry, activation), so a fused call and the separate ops give the
 * same bits. */
static int cpu_gemm_ex(amp_backend *be, const amp_gemm_desc *d) {
    size_t in_size = d->in_dtype == AMP_DTYPE_F32 ? 4 : 2;
    size_t out_size = d->out_dtype == AMP_DTYPE_F32 ? 4 : 2;
    int has_epilogue = d->bias || d->out;
    if (amp_gemm_desc_check(be, d) != 0) return 1;
    float *bias = NULL;
    if (d->bias) {
        bias = d->bias_dtype == AMP_DTYPE_F32 ? (float *)d->bias : malloc((size_t)d->n * sizeof *bias);
        if (!bias) {
            snprintf(be->err, sizeof be->err, "out of host memory");
            return 1;
        }
        if (d->bias_dtype != AMP_DTYPE_F32) widen16(bias, d->bias, d->bias_dtype, (size_t)d->n);
    }
    int rc = 0;
    for (int i = 0; i < d->batch && rc == 0; i++) {
        const char *a = (const char *)d->a + (size_t)i * (size_t)d->stride_a * in_size;
        const char *b = (const char *)d->b + (size_t)i * (size_t)d->stride_b * in_size;
        float *acc = d->acc + (size_t)i * (size_t)d->stride_c;
        rc = cpu_gemm(be, acc, a, b, d->in_dtype, d->trans_a, d->trans_b, d->m, d->n, d->k, d->lda,
                      d->ldb, d->ldc, d->alpha, d->beta);
        if (rc != 0 || !has_epilogue) continue;
        size_t mn = (size_t)d->m * (size_t)d->n, off = (size_t)i * (size_t)d->stride_c * out_size;
        if (bias) cpu_add_bias(be, acc, bias, d->m, d->n);
        if (!d->out) continue;
        void *out = (char *)d->out + off;
        cpu_round(be, out, d->out_dtype, acc, mn, d->cnt);
        if (d->act == AMP_ACT_NONE) continue;
        cpu_widen(be, acc, out, d->out_dtype, mn);
        cpu_act_forward(be, acc, acc, mn, d->act);
        cpu_round(be, (char *)d->act_out + off, d->out_dtype, acc, mn, d->cnt);
    }
    if (bias && bias != d->bias) free(bias);
    return rc;
}

static int cpu_act_backward(amp_backend *be, float *dz, const float *da, const float *z, size_t n,
                            amp_act act) {
    for (size_t i = 0; i < n; i++) dz[i] = da[i] * amp_act_grad(z[i], (int)act);
    return 0;
}

static int cpu_col_sum(amp_backend *be, float *out, const float *in, int rows, int cols) {
    for (int j = 0; j < cols; j++) out[j] = 0.0f;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < cols; j++) out[j] += in[(size_t)r * cols + j];
    return 0;
}

static int cpu_softmax_xent(amp_backend *be, float *dlogits, amp_step_stats *stats,
                            const float *logits, const int32_t *labels, int rows, int cols,
                            float grad_scale) {
    double loss = 0.0;
    unsigned long long correct = 0;
    for (int r = 0; r < rows; r++) {
        int hit = 0;
        loss += amp_xent_row(dlogits ? dlogits + (size_t)r * cols : NULL, &hit,
                             logits + (size_t)r * cols, labels[r], cols, grad_scale);
        correct += (unsigned long long)hit;
    }
    stats->loss_sum += loss;
    stats->correct += correct;
    return 0;
}

static int cpu_unscale_check(amp_backend *be, float *g, amp_step_stats *stats, size_t n,
                             float inv_scale) {
    unsigned long long bad = 0;
    double sumsq = 0.0;
    float mx = stats->maxabs;
    for (size_t i = 0; i < n; i++) bad += !amp_unscale_element(&g[i], inv_scale, &sumsq, &mx);
    stats->nonfinite += bad;
    stats->checked += n;
    stats->sumsq += sumsq;
    stats->maxabs = mx;
    return 0;
}

static int cpu_scale(amp_backend *be, float *x, size_t n, float s) {
    for (size_t i = 0; i < n; i++) x[i] *= s;
    return 0;
}

static int cpu_sgd_step(amp_backend *be, float *w, float *mom, const float *g, size_t n, float lr,
                        float momentum, float weight_decay) {
    for (size_t i = 0; i < n; i++) amp_sgd_element(&w[i], &mom[i], g[i], lr, momentum, weight_decay);
    return 0;
}

static int cpu_adamw_step(amp_backend *be, float *w, float *m, float *v, const float *g, size_t n,
                          float lr, float beta1, float beta2, float eps, float weight_decay,
                          int64_t t) {
    float bc1 = (float)(1.0 - pow((double)beta1, (double)t));
    float bc2_sqrt = (float)sqrt(1.0 - pow((double)beta2, (double)t));
    for (size_t i = 0; i < n; i++)
        amp_adamw_element(&w[i], &m[i], &v[i], g[i], lr, beta1, beta2, eps, weight_decay, bc1,
                          bc2_sqrt);
    return 0;
}

static size_t cpu_device_bytes_used(amp_backend *be) { return 0; }

static double cpu_overcommit_limit(amp_backend *be) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0.0;
}

static void cpu_destroy(amp_backend *be) {
    if (!be) return;
    cpu_impl *im = be->impl;
    if (im) {
        free(im->scratch[0]);
        free(im->scratch[1]);
        free(im);
    }
    free(be);
}

static const amp_backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_copy,
    .download = cpu_copy,
    .zero = cpu_zero,
    .gemm = cpu_gemm,
    .gemm_ex = cpu_gemm_ex,
    .round = cpu_round,
    .quantize = cpu_quantize,
    .widen = cpu_widen,
    .add_bias = cpu_add_bias,
    .act_forward = cpu_act_forward,
    .act_backward = cpu_act_backward,
    .col_sum = cpu_col_sum,
    .softmax_xent = cpu_softmax_xent,
    .unscale_check = cpu_unscale_check,
    .scale = cpu_scale,
    .sgd_step = cpu_sgd_step,
    .adamw_step = cpu_adamw_step,
    .device_bytes_used = cpu_device_bytes_used,
    .overcommit_limit = cpu_overcommit_limit,
};

amp_backend *amp_backend_cpu_create(char *err, size_t errlen) {
    amp_backend *be = calloc(1, sizeof *be);
    cpu_impl *im = calloc(1, sizeof *im);
    if (!be || !im) {
        free(be);
        free(im);
        snprintf(err, errlen, "out of host memory creating the CPU backend");
        return NULL;
    }
    be->ops = &cpu_ops;
    be->device = AMP_DEVICE_CPU;
    be->impl = im;
    return be;
}
