/* LayerNorm over the last dimension, one row at a time, in FP32 whatever the
 * policy (autocast runs layer_norm in FP32), as llm.c's layernorm_forward /
 * layernorm_backward write it: biased variance, rstd = 1/sqrt(var + eps).
 * RMSNorm (Llama's) is the same row with the mean held at 0 (rms = 1): rstd
 * = 1/sqrt(mean(x^2) + eps), and its backward drops the mean term.
 * The CPU loops call the row functions; the CUDA kernels (one warp per row,
 * sums as warp butterflies, parameter gradients as chunk partials) share
 * the per-element ones, amp_ln_value and amp_ln_xhat. */
#ifndef AMP_KERNELS_LAYERNORM_H
#define AMP_KERNELS_LAYERNORM_H

#include <math.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/store.h"

/* The mean and rstd (biased variance) of R rows (R <= AMP_LN_ROWS) ld
 * apart, each summed in index order: R independent sums side by side, so a
 * CPU overlaps their latency (called with a constant R the compiler keeps
 * them in registers); every row gets the bits the one-row sum gives. */
#define AMP_LN_ROWS 4
static inline AMP_HD void amp_ln_stats_rows(const float *x, size_t ld, int R, int C, float eps,
                                            int rms, float *mean_out, float *rstd_out) {
    float m[AMP_LN_ROWS], v[AMP_LN_ROWS];
    for (int r = 0; r < R; r++) m[r] = v[r] = 0.0f;
    if (!rms) {
        for (int i = 0; i < C; i++)
            for (int r = 0; r < R; r++) m[r] += x[(size_t)r * ld + i];
        for (int r = 0; r < R; r++) m[r] = m[r] / (float)C;
    }
    for (int i = 0; i < C; i++)
        for (int r = 0; r < R; r++) {
            float d = x[(size_t)r * ld + i] - m[r];
            v[r] += d * d;
        }
    for (int r = 0; r < R; r++) {
        float var = v[r] / (float)C;
        mean_out[r] = m[r];
        rstd_out[r] = 1.0f / sqrtf(var + eps);
    }
}

/* One row's mean and rstd. */
static inline AMP_HD void amp_ln_stats(const float *x, int C, float eps, int rms, float *mean_out,
                                       float *rstd_out) {
    amp_ln_stats_rows(x, (size_t)C, 1, C, eps, rms, mean_out, rstd_out);
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
                                             int C, float eps, int rms, amp_round_tally *t) {
    float m, s;
    amp_ln_stats(x, C, eps, rms, &m, &s);
    for (int i = 0; i < C; i++)
        amp_store(out, (size_t)i, dt, 0, amp_ln_value(x[i], m, s, w[i], b ? b[i] : 0.0f), t);
    *mean_out = m;
    *rstd_out = s;
}

/* dx[C] += the input gradient of a row, from dout (FP32) and the saved
 * mean/rstd; R rows (R <= AMP_LN_ROWS) ld apart side by side, each with the
 * bits of the one-row computation (as amp_ln_stats_rows). The weight and
 * bias gradients are column sums over rows: see amp_ln_param_grad_col. */
static inline AMP_HD void amp_ln_backward_rows(float *dx, const float *dout, const float *x,
                                               const float *w, const float *mean,
                                               const float *rstd, size_t ld, int R, int C,
                                               int rms) {
    float dnorm_mean[AMP_LN_ROWS], dnorm_norm_mean[AMP_LN_ROWS];
    for (int r = 0; r < R; r++) dnorm_mean[r] = dnorm_norm_mean[r] = 0.0f;
    for (int i = 0; i < C; i++)
        for (int r = 0; r < R; r++) {
            size_t k = (size_t)r * ld + i;
            float xhat = amp_ln_xhat(x[k], mean[r], rstd[r]);
            float dnorm = w[i] * dout[k];
            dnorm_mean[r] += dnorm;
            dnorm_norm_mean[r] += dnorm * xhat;
        }
    for (int r = 0; r < R; r++) {
        dnorm_mean[r] = rms ? 0.0f : dnorm_mean[r] / (float)C; /* RMSNorm: no mean to move */
        dnorm_norm_mean[r] = dnorm_norm_mean[r] / (float)C;
    }
    for (int r = 0; r < R; r++)
        for (int i = 0; i < C; i++) {
            size_t k = (size_t)r * ld + i;
            float xhat = amp_ln_xhat(x[k], mean[r], rstd[r]);
            float dval = w[i] * dout[k] - dnorm_mean[r] - xhat * dnorm_norm_mean[r];
            dx[k] += dval * rstd[r];
        }
}

static inline AMP_HD void amp_ln_backward_row(float *dx, const float *dout, const float *x,
                                              const float *w, float mean, float rstd, int C,
                                              int rms) {
    amp_ln_backward_rows(dx, dout, x, w, &mean, &rstd, (size_t)C, 1, C, rms);
}

/* Column j of the parameter gradients, rows in order (the CPU's order; the
 * GPU adds per-chunk partials in chunk order): dw[j] += sum dout*xhat, db[j] += sum dout
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
