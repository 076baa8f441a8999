/* The CPU backend's "scaled" family: per-tensor FP8 quantize, dequantize
 * and quantize-dequantize on the ISA path's kernels (cpu_fp8.h), so every
 * result has the scalar functions' bits (backend/kernels/fp8.h); NVFP4's
 * ops are in cpu_nvfp4.c (kernels: cpu_nvfp4_body.h). The stats record is
 * host memory here. */
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/backend_cpu_cnn.h"
#include "backend/cpu_fp8.h"
#include "backend/cpu_internal.h"

/* Codes of one chunk live on the stack: no allocation per call. */
#define QDQ_CHUNK 4096

static int cpu_fp8_amax(amp_backend *be, float *amax_host, const float *x, size_t n) {
    const amp_cpu_fp8 *k = amp_cpu_fp8_of(be);
    uint8_t q[QDQ_CHUNK];
    amp_fp8_stats st = {0};
    /* the quantize kernel's own amax, so a CURRENT scale sees what the stats see */
    for (size_t i = 0; i < n; i += QDQ_CHUNK)
        k->quantize(q, x + i, n - i < QDQ_CHUNK ? n - i : QDQ_CHUNK, 1.0f, AMP_FP8_E4M3, &st);
    *amax_host = st.amax;
    be->host_round_trips++; /* a device would download it */
    return 0;
}

static int cpu_fp8_quantize(amp_backend *be, uint8_t *q, const float *x, size_t n, float scale,
                            int fmt, amp_fp8_stats *st) {
    amp_fp8_stats none = {0};
    amp_cpu_fp8_of(be)->quantize(q, x, n, scale, fmt, st ? st : &none);
    return 0;
}

static int cpu_fp8_dequantize(amp_backend *be, float *x, const uint8_t *q, size_t n, float scale,
                              int fmt) {
    amp_cpu_fp8_of(be)->dequantize(x, q, n, amp_fp8_inv_scale(scale), fmt);
    return 0;
}

static int cpu_fp8_qdq(amp_backend *be, float *y, const float *x, size_t n, float scale, int fmt,
                       amp_fp8_stats *st) {
    const amp_cpu_fp8 *k = amp_cpu_fp8_of(be);
    uint8_t q[QDQ_CHUNK];
    amp_fp8_stats none = {0};
    float inv = amp_fp8_inv_scale(scale);
    for (size_t i = 0; i < n; i += QDQ_CHUNK) {
        size_t c = n - i < QDQ_CHUNK ? n - i : QDQ_CHUNK;
        k->quantize(q, x + i, c, scale, fmt, st ? st : &none);
        k->dequantize(y + i, q, c, inv, fmt);
    }
    return 0;
}

/* ---- MX32: the ISA path's kernels (cpu_fp8.h: mx.h's bits, vector code
 * for both orientations) ---- */

static int cpu_mx_quantize(amp_backend *be, uint8_t *elem, uint8_t *scales, const float *x,
                           const amp_mx_desc *d, amp_fp8_stats *st) {
    amp_cpu_fp8_of(be)->mx_pass(elem, scales, NULL, x, (size_t)d->rows, (size_t)d->cols,
                                d->along_cols, d->fmt, st);
    return 0;
}

static int cpu_mx_dequantize(amp_backend *be, float *x, const uint8_t *elem, const uint8_t *scales,
                             const amp_mx_desc *d) {
    amp_cpu_fp8_of(be)->mx_decode(x, elem, scales, (size_t)d->rows, (size_t)d->cols, d->along_cols,
                                  d->fmt);
    return 0;
}

static int cpu_mx_qdq(amp_backend *be, float *y, const float *x, const amp_mx_desc *d,
                      amp_fp8_stats *st) {
    /* a block is read whole before it is written: y may be x */
    amp_cpu_fp8_of(be)->mx_pass(NULL, NULL, y, x, (size_t)d->rows, (size_t)d->cols,
                                d->along_cols, d->fmt, st);
    return 0;
}

const amp_scaled_ops amp_cpu_scaled_ops = {
    .fp8_amax = cpu_fp8_amax,
    .fp8_quantize = cpu_fp8_quantize,
    .fp8_dequantize = cpu_fp8_dequantize,
    .fp8_qdq = cpu_fp8_qdq,
    .mx_quantize = cpu_mx_quantize,
    .mx_dequantize = cpu_mx_dequantize,
    .mx_qdq = cpu_mx_qdq,
    .conv2d_im2col = amp_cpu_conv2d_im2col,
    .conv2d_col2im = amp_cpu_conv2d_col2im,
    .nvfp4_quantize = amp_cpu_nvfp4_quantize,
    .nvfp4_dequantize = amp_cpu_nvfp4_dequantize,
    .nvfp4_qdq = amp_cpu_nvfp4_qdq,
};
