/* LayerNorm over the last dimension, one row at a time, in FP32 whatever the
 * policy (autocast runs layer_norm in FP32), as llm.c's layernorm_forward /
 * layernorm_backward write it: biased variance, rstd = 1/sqrt(var + eps).
 * Shared by the CPU loops and the CUDA kernels. */
#ifndef AMP_KERNELS_LAYERNORM_H
#define AMP_KERNELS_LAYERNORM_H

#include <math.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/store.h"

/* The row's mean and rstd (biased variance), summed in index order. */
static inline AMP_HD void amp_ln_stats(const float *x, int C, float eps, float *mean_out,
                                       float *rstd_out) {
    float m = 0.0f;
    for (int i = 0; i < C; i++) m += x[i];
    m = m / (float)C;
    float v = 0.0f;
    for (int i = 0; i < C; i++) {
        float d = x[i] - m;
        v += d * d;
    }
    v = v / (float)C;
    *mean_out = m;
    *rstd_out = 1.0f / sqrtf(v + eps);
}

/* One output element before its rounding: (x - mean) * rstd * w + b (b is
 * 0.0f without a bias, which turns -0 into +0 as the addition always did). */
static inline AMP_HD float amp_ln_value(float x, float m, float s, float w, float b) {
    float n = (x - m) * s;
    return n * w + b;
}

/* xhat of one element, as the backward recomputes it. */
static inline AMP_HD float amp_ln_xhat(float x, float mean, float rstd) { return (x - mean) * rstd; }

/* out[C] = round_dt((x - mean) * rstd * w + b) (b may be NULL); writes the
 * row's mean and rstd, which backward reads. */
static inline AMP_HD void amp_ln_forward_row(void *out, int dt, float *mean_out, float *rstd_out,
                                             const float *x, const float *w, const float *b,
                                             int C, float eps, amp_round_tally *t) {
    float m, s;
    amp_ln_stats(x, C, eps, &m, &s);
    for (int i = 0; i < C; i++)
        amp_store(out, (size_t)i, dt, 0, amp_ln_value(x[i], m, s, w[i], b ? b[i] : 0.0f), t);
    *mean_out = m;
    *rstd_out = s;
}

/* dx[C] += the input gradient of one row, from dout (FP32) and the saved
 * mean/rstd. The weight and bias gradients are column sums over rows: see
 * amp_ln_param_grad_col. */
static inline AMP_HD void amp_ln_backward_row(float *dx, const float *dout, const float *x,
                                              const float *w, float mean, float rstd, int C) {
    float dnorm_mean = 0.0f, dnorm_norm_mean = 0.0f;
    for (int i = 0; i < C; i++) {
        float xhat = amp_ln_xhat(x[i], mean, rstd);
        float dnorm = w[i] * dout[i];
        dnorm_mean += dnorm;
        dnorm_norm_mean += dnorm * xhat;
    }
    dnorm_mean = dnorm_mean / (float)C;
    dnorm_norm_mean = dnorm_norm_mean / (float)C;
    for (int i = 0; i < C; i++) {
        float xhat = amp_ln_xhat(x[i], mean, rstd);
        float dval = w[i] * dout[i] - dnorm_mean - xhat * dnorm_norm_mean;
        dx[i] += dval * rstd;
    }
}

/* Column j of the parameter gradients, rows in order (the same summation
 * order on the CPU and the GPU): dw[j] += sum dout*xhat, db[j] += sum dout
 * (db may be NULL). */
static inline AMP_HD void amp_ln_param_grad_col(float *dw, float *db, const float *dout,
                                                const float *x, const float *mean,
                                                const float *rstd, int rows, int C, int j) {
    float sw = 0.0f, sb = 0.0f;
    for (int r = 0; r < rows; r++) {
        size_t k = (size_t)r * C + j;
        float xhat = amp_ln_xhat(x[k], mean[r], rstd[r]);
        sw += dout[k] * xhat;
        sb += dout[k];
    }
    dw[j] += sw;
    if (db) db[j] += sb;
}

#endif
