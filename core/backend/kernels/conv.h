/* Per-element math of the convolutional-network ops (max pooling, batch
 * normalisation, reading a tensor stored in F32/F16/BF16), shared by the CPU loops and the CUDA
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

/* (The convolutions themselves are cuDNN on the GPU and im2col + sgemm on
 * the CPU, backend_cpu_cnn.c; only dy's widening above is shared.) */

/* ---- max pooling ---------------------------------------------------------- */

/* Max over the window of output (oy, ox) of one plane x [h, w] (FP32), as
 * PyTorch's max_pool2d: padding never wins (it is -inf), the first maximum
 * in row-major window order wins ties, and a NaN wins and stays. *arg is
 * the winner's offset in its window, (iy - wy) * kw + (ix - wx) with (wy, wx)
 * the window's corner (padding included): under kh * kw <= 65536
 * (amp_pool2d_desc_check), so 2 bytes per output where PyTorch's flat
 * `indices` take 8 (amp_maxpool_arg_index gives that flat index). A window
 * of only -inf reports its first in-bounds element. */
static inline AMP_HD float amp_maxpool_value(uint16_t *arg, const float *x, int h, int w, int kh,
                                             int kw, int oy, int ox, int stride_h, int stride_w,
                                             int pad_h, int pad_w) {
    int wy = oy * stride_h - pad_h, wx = ox * stride_w - pad_w;
    int y0 = wy, x0 = wx;
    int y1 = y0 + kh < h ? y0 + kh : h, x1 = x0 + kw < w ? x0 + kw : w;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    float best = -INFINITY;
    int bi = (y0 - wy) * kw + (x0 - wx);
    for (int iy = y0; iy < y1; iy++) {
        for (int ix = x0; ix < x1; ix++) {
            float v = x[(size_t)iy * w + ix];
            if (v > best || v != v) {
                best = v;
                bi = (iy - wy) * kw + (ix - wx);
                if (v != v) {
                    *arg = (uint16_t)bi;
                    return v;
                }
            }
        }
    }
    *arg = (uint16_t)bi;
    return best;
}

/* The flat index iy * w + ix in its plane of window offset `off` of output
 * (oy, ox) (PyTorch's `indices`). */
static inline AMP_HD int amp_maxpool_arg_index(unsigned off, int w, int kw, int oy, int ox,
                                               int stride_h, int stride_w, int pad_h, int pad_w) {
    return (oy * stride_h - pad_h + (int)off / kw) * w + ox * stride_w - pad_w + (int)off % kw;
}

/* Gradient of input element (iy, ix) of one plane: the sum, over the
 * outputs whose window covers it and chose it, of their gradient, in
 * (oy, ox) ascending order. dy and idx are the plane's [p, q]. */
static inline AMP_HD float amp_maxpool_grad(const float *dy, const uint16_t *idx, int w, int p,
                                            int q, int kh, int kw, int iy, int ix, int stride_h,
                                            int stride_w, int pad_h, int pad_w) {
    /* oy covers iy when oy*s - pad <= iy < oy*s - pad + kh */
    int oy0 = iy + pad_h - kh + 1, ox0 = ix + pad_w - kw + 1;
    oy0 = oy0 <= 0 ? 0 : (oy0 + stride_h - 1) / stride_h;
    ox0 = ox0 <= 0 ? 0 : (ox0 + stride_w - 1) / stride_w;
    int oy1 = (iy + pad_h) / stride_h, ox1 = (ix + pad_w) / stride_w;
    if (oy1 > p - 1) oy1 = p - 1;
    if (ox1 > q - 1) ox1 = q - 1;
    (void)w;
    float s = 0.0f;
    for (int oy = oy0; oy <= oy1; oy++)
        for (int ox = ox0; ox <= ox1; ox++) {
            int me = (iy - (oy * stride_h - pad_h)) * kw + (ix - (ox * stride_w - pad_w));
            if (idx[(size_t)oy * q + ox] == me) s += dy[(size_t)oy * q + ox];
        }
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
