/* Per-element math of the convolution-network ops (2-D convolution glue,
 * max pooling, batch normalisation), shared by the CPU loops and the CUDA
 * kernels (see amp_hd.h). Layout is NCHW throughout, as PyTorch's.
 *
 * Every function here computes ONE output element from its inputs, in a
 * fixed order, so the CPU loop and a CUDA thread that call it produce the
 * same bits. Nothing here scatters: the backward passes are written as
 * gathers (each input element sums what reaches it), which needs no atomics
 * and keeps the summation order fixed (deterministic on the GPU). */
#ifndef AMP_KERNELS_CONV_H
#define AMP_KERNELS_CONV_H

#include <math.h>
#include <stdint.h>

#include "backend/kernels/amp_hd.h"
#include "backend/kernels/convert.h"

/* Reads element i of a tensor stored in dt (F32, F16 or BF16) as FP32. */
static inline AMP_HD float amp_load_dt(const void *p, size_t i, int dt) {
    if (dt == AMP_DTYPE_F32) return ((const float *)p)[i];
    return amp_widen16(((const uint16_t *)p)[i], dt);
}

/* ---- convolution (im2col / col2im for the CPU's GEMM path) ---------------- */

/* Output extent of a convolution or pooling window sweep (floor mode). */
static inline AMP_HD int amp_window_out(int in, int k, int stride, int pad) {
    return (in + 2 * pad - k) / stride + 1;
}

/* One element of the im2col matrix of one image: row (ci, ky, kx), column
 * (oy, ox) of the output grid; 0 in the padding. x is the image [c, h, w]
 * in dt. */
static inline AMP_HD float amp_im2col_value(const void *x, int dt, int h, int w, int ci, int ky,
                                            int kx, int oy, int ox, int stride_h, int stride_w,
                                            int pad_h, int pad_w) {
    int iy = oy * stride_h - pad_h + ky, ix = ox * stride_w - pad_w + kx;
    if (iy < 0 || iy >= h || ix < 0 || ix >= w) return 0.0f;
    return amp_load_dt(x, ((size_t)ci * h + iy) * w + ix, dt);
}

/* col2im as a gather: input element (ci, iy, ix) of one image's gradient is
 * the sum of every column-matrix entry that im2col read from it, in the
 * order (ky, kx) ascending. dcol is [c*kh*kw, p*q] in FP32. */
static inline AMP_HD float amp_col2im_value(const float *dcol, int p, int q, int kh, int kw,
                                            int ci, int iy, int ix, int stride_h, int stride_w,
                                            int pad_h, int pad_w) {
    float s = 0.0f;
    size_t cols = (size_t)p * q;
    for (int ky = 0; ky < kh; ky++) {
        int ty = iy + pad_h - ky; /* = oy * stride_h */
        if (ty < 0 || ty % stride_h) continue;
        int oy = ty / stride_h;
        if (oy >= p) continue;
        for (int kx = 0; kx < kw; kx++) {
            int tx = ix + pad_w - kx;
            if (tx < 0 || tx % stride_w) continue;
            int ox = tx / stride_w;
            if (ox >= q) continue;
            s += dcol[((size_t)(ci * kh + ky) * kw + kx) * cols + (size_t)oy * q + ox];
        }
    }
    return s;
}

/* ---- max pooling ---------------------------------------------------------- */

/* Max over the window of output (oy, ox) of one plane x [h, w] (FP32), as
 * PyTorch's max_pool2d: padding never wins (it is -inf), the first maximum
 * in row-major window order wins ties, and a NaN wins and stays. *arg is
 * the flat index iy * w + ix of the winner in the plane (PyTorch's
 * `indices`); a window of only -inf reports its first in-bounds element. */
static inline AMP_HD float amp_maxpool_value(int32_t *arg, const float *x, int h, int w, int kh,
                                             int kw, int oy, int ox, int stride_h, int stride_w,
                                             int pad_h, int pad_w) {
    int y0 = oy * stride_h - pad_h, x0 = ox * stride_w - pad_w;
    int y1 = y0 + kh < h ? y0 + kh : h, x1 = x0 + kw < w ? x0 + kw : w;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    float best = -INFINITY;
    int32_t bi = y0 * w + x0;
    for (int iy = y0; iy < y1; iy++) {
        for (int ix = x0; ix < x1; ix++) {
            float v = x[(size_t)iy * w + ix];
            if (v > best || v != v) {
                best = v;
                bi = iy * w + ix;
                if (v != v) {
                    *arg = bi;
                    return v;
                }
            }
        }
    }
    *arg = bi;
    return best;
}

/* Gradient of input element (iy, ix) of one plane: the sum, over the
 * outputs whose window covers it and chose it, of their gradient, in
 * (oy, ox) ascending order. dy and idx are the plane's [p, q]. */
static inline AMP_HD float amp_maxpool_grad(const float *dy, const int32_t *idx, int w, int p,
                                            int q, int kh, int kw, int iy, int ix, int stride_h,
                                            int stride_w, int pad_h, int pad_w) {
    /* oy covers iy when oy*s - pad <= iy < oy*s - pad + kh */
    int oy0 = iy + pad_h - kh + 1, ox0 = ix + pad_w - kw + 1;
    oy0 = oy0 <= 0 ? 0 : (oy0 + stride_h - 1) / stride_h;
    ox0 = ox0 <= 0 ? 0 : (ox0 + stride_w - 1) / stride_w;
    int oy1 = (iy + pad_h) / stride_h, ox1 = (ix + pad_w) / stride_w;
    if (oy1 > p - 1) oy1 = p - 1;
    if (ox1 > q - 1) ox1 = q - 1;
    int32_t me = iy * w + ix;
    float s = 0.0f;
    for (int oy = oy0; oy <= oy1; oy++)
        for (int ox = ox0; ox <= ox1; ox++)
            if (idx[(size_t)oy * q + ox] == me) s += dy[(size_t)oy * q + ox];
    return s;
}

/* ---- batch normalisation (FP32 values, FP64 channel sums) ----------------- */

/* 1 / sqrt(var + eps) of a channel, from its biased batch (or running)
 * variance; in double, then rounded once. */
static inline AMP_HD float amp_bn_invstd(double var, float eps) {
    return (float)(1.0 / sqrt(var + (double)eps));
}

/* The normalised value (x - mean) * invstd, as forward and backward use it. */
static inline AMP_HD float amp_bn_xhat(float x, float mean, float invstd) {
    return (x - mean) * invstd;
}

/* y = (x - mean) * invstd * gamma + beta */
static inline AMP_HD float amp_bn_apply(float x, float mean, float invstd, float gamma,
                                        float beta) {
    return amp_bn_xhat(x, mean, invstd) * gamma + beta;
}

/* The running statistics update of nn.BatchNorm2d (momentum form):
 * r = (1 - m) r + m * batch, the variance unbiased (var * M / (M - 1)). */
static inline AMP_HD void amp_bn_running_update(float *running_mean, float *running_var,
                                                double mean, double var_biased, double count,
                                                float momentum) {
    double unbiased = count > 1.0 ? var_biased * count / (count - 1.0) : var_biased;
    *running_mean = (float)((1.0 - (double)momentum) * (double)*running_mean +
                            (double)momentum * mean);
    *running_var = (float)((1.0 - (double)momentum) * (double)*running_var +
                           (double)momentum * unbiased);
}

/* dx of one element. Training mode (the mean and variance depend on x):
 *   dx = gamma * invstd * (dy - sum_dy / M - xhat * sum_dy_xhat / M)
 * evaluation mode (running statistics are constants): dx = gamma * invstd * dy.
 * xhat = (x - mean) * invstd; sum_dy and sum_dy_xhat are the channel's
 * sums, already divided by M (mean_dy, mean_dy_xhat). */
static inline AMP_HD float amp_bn_grad(float dy, float x, float mean, float invstd, float gamma,
                                       float mean_dy, float mean_dy_xhat, int training) {
    if (!training) return dy * gamma * invstd;
    float xhat = amp_bn_xhat(x, mean, invstd);
    return gamma * invstd * (dy - mean_dy - xhat * mean_dy_xhat);
}

#endif
