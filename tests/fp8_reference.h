/* The scalar reference of scaled GEMM operands the kit's tests share
 * (test_linear_fp8.c, test_conv_fp8.c): quantize-dequantize per tensor and
 * MX32 written plainly from kernels/fp8.h and mx.h's element functions,
 * double-precision GEMMs, and the comparisons within FP32 rounding. */
#ifndef AMP_TEST_FP8_REFERENCE_H
#define AMP_TEST_FP8_REFERENCE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/kernels/mx.h"
#include "expect.h"
#include "formats/scaled.h"

typedef struct ref_stats {
    float amax;
    unsigned long long sat, flush, nan;
} ref_stats;

/* q = quant(v, s), stats added; returns deq(q, s). */
static inline float qdq(float v, float s, uint32_t format, ref_stats *st, uint8_t *code) {
    int fmt = amp_format_fp8(format);
    unsigned fl = 0;
    uint8_t q = amp_fp8_quantize_element(v, s, fmt, &fl);
    if (st) {
        if (!isnan(v) && fabsf(v) > st->amax) st->amax = fabsf(v);
        st->sat += (fl & AMP_F8_SATURATED) != 0;
        st->flush += (fl & AMP_F8_FLUSHED) != 0;
        st->nan += (fl & AMP_F8_NAN) != 0;
    }
    if (code) *code = q;
    return amp_fp8_to_float(q, fmt) * amp_fp8_inv_scale(s);
}

/* MX32 of x [rows, cols] in blocks of 32 along each row (along_cols 0) or
 * down each column, written plainly: y = decoded values, codes/scales (may
 * be NULL) in the backend's layout, counts into st (may be NULL). */
static inline void mx_ref(float *y, const float *x, int rows, int cols, int along_cols, uint32_t format,
                   ref_stats *st, uint8_t *codes, uint8_t *scales) {
    int fmt = amp_format_fp8(format);
    int lines = along_cols ? cols : rows, len = along_cols ? rows : cols;
    int nb = (len + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK;
    for (int l = 0; l < lines; l++)
        for (int b = 0; b < nb; b++) {
            int n = len - b * AMP_MX_BLOCK < AMP_MX_BLOCK ? len - b * AMP_MX_BLOCK : AMP_MX_BLOCK;
            float v[AMP_MX_BLOCK];
            int idx[AMP_MX_BLOCK];
            for (int i = 0; i < n; i++) {
                int e = b * AMP_MX_BLOCK + i;
                idx[i] = along_cols ? e * cols + l : l * cols + e;
                v[i] = x[idx[i]];
            }
            uint8_t q[AMP_MX_BLOCK], sc;
            amp_mx_quantize_block(q, &sc, v, n, fmt);
            if (scales) scales[along_cols ? b * cols + l : l * nb + b] = sc;
            for (int i = 0; i < n; i++) {
                unsigned fl = 0;
                amp_fp8_quantize_element(v[i], amp_mx_element_factor(sc), fmt, &fl);
                if (st) {
                    st->sat += (fl & AMP_F8_SATURATED) != 0;
                    st->flush += (fl & AMP_F8_FLUSHED) != 0;
                    st->nan += (fl & AMP_F8_NAN) != 0;
                }
                if (codes) codes[idx[i]] = q[i];
                y[idx[i]] = amp_mx_dequantize_element(q[i], sc, fmt);
            }
        }
}

/* c[M, N] = a[M, K] . b[K, N] with strides (naive, double sums); mag gets
 * the sum of |terms| for the tolerance. */
static inline void gemm(float *c, double *mag, const float *a, int as_m, int as_k, const float *b,
                 int bs_k, int bs_n, int M, int N, int K) {
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0, g = 0.0;
            for (int k = 0; k < K; k++) {
                double t = (double)a[i * as_m + k * as_k] * b[k * bs_k + j * bs_n];
                s += t;
                g += fabs(t);
            }
            c[i * N + j] = (float)s;
            if (mag) mag[i * N + j] = g;
        }
}

static inline int close_to(float got, float want, double mag) {
    return fabs((double)got - want) <= 1e-5 * mag + 1e-6 * fabs(want) + 1e-30;
}

static inline int check_array(const char *what, const float *got, const float *want, const double *mag,
                       int n) {
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (!close_to(got[i], want[i], mag ? mag[i] : fabs(want[i])) && bad++ < 3)
            fprintf(stderr, "  %s[%d]: %.9g, reference %.9g\n", what, i, got[i], want[i]);
    EXPECT(bad == 0, "%s: %d of %d values off the reference", what, bad, n);
    return bad;
}

/* The amax exactly where the operand is known exactly here (the batch, the
 * master weights; exact), else within FP32 rounding (a GEMM's or the
 * loss's result, summed in another order here); the counts within slack
 * (0: exactly). */
static inline void check_stats(const char *what, const amp_fp8_stats *got, const ref_stats *want,
                               int exact, long long slack) {
    int amax_ok = exact ? got->amax == want->amax
                        : fabs((double)got->amax - want->amax) <= 1e-6 * want->amax;
    int counts_ok = llabs((long long)got->saturated - (long long)want->sat) <= slack &&
                    llabs((long long)got->flushed - (long long)want->flush) <= slack &&
                    got->nan == want->nan;
    EXPECT(amax_ok && counts_ok,
           "%s stats: amax %.9g sat %llu flush %llu nan %llu, reference amax %.9g sat %llu flush "
           "%llu nan %llu",
           what, got->amax, got->saturated, got->flushed, got->nan, want->amax, want->sat,
           want->flush, want->nan);
}

#endif
