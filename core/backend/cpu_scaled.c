/* The CPU backend's "scaled" family: per-tensor FP8 quantize, dequantize
 * and quantize-dequantize on the ISA path's kernels (cpu_fp8.h), so every
 * result has the scalar functions' bits (backend/kernels/fp8.h); NVFP4's
 * ops are in cpu_nvfp4.c. The stats record is host memory here. */
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "backend/cpu_fp8.h"
#include "backend/cpu_internal.h"
#include "backend/kernels/mx.h"

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

/* ---- MX32: scalar loops over the blocks of either orientation, on mx.h's
 * element functions (amp_mx_quantize_block's bits, with the flags of
 * amp_fp8_quantize_element, whose codes are the same). ---- */

/* Block b of d: its first element, length and stride. */
static void mx_block(const amp_mx_desc *d, size_t b, size_t *first, int *n, size_t *stride) {
    size_t R = (size_t)d->rows, C = (size_t)d->cols;
    if (!d->along_cols) {
        size_t nb = (C + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK, k = b % nb * AMP_MX_BLOCK;
        *first = b / nb * C + k;
        *n = (int)(C - k < AMP_MX_BLOCK ? C - k : AMP_MX_BLOCK);
        *stride = 1;
    } else {
        size_t k = b / C * AMP_MX_BLOCK;
        *first = k * C + b % C;
        *n = (int)(R - k < AMP_MX_BLOCK ? R - k : AMP_MX_BLOCK);
        *stride = C;
    }
}

static size_t mx_blocks(const amp_mx_desc *d) {
    size_t R = (size_t)d->rows, C = (size_t)d->cols;
    return d->along_cols ? (R + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK * C
                         : (C + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK * R;
}

/* One pass: codes into elem and/or decoded values into y (either NULL). */
static void mx_pass(uint8_t *elem, uint8_t *scales, float *y, const float *x, const amp_mx_desc *d,
                    amp_fp8_stats *st) {
    size_t nb = mx_blocks(d);
    for (size_t b = 0; b < nb; b++) {
        size_t first, stride;
        int n;
        mx_block(d, b, &first, &n, &stride);
        uint32_t m = 0;
        for (int i = 0; i < n; i++) {
            uint32_t a = amp_f32_bits(x[first + (size_t)i * stride]) & 0x7fffffffu;
            if (a > 0x7f800000u) {
                m = 0x7fc00000u;
                break;
            }
            if (a > m) m = a;
        }
        uint8_t s = amp_mx_scale_e8m0(m, d->fmt);
        float f = amp_mx_element_factor(s);
        if (scales) scales[b] = s;
        for (int i = 0; i < n; i++) {
            size_t j = first + (size_t)i * stride;
            unsigned fl;
            uint8_t q = amp_fp8_quantize_element(x[j], f, d->fmt, &fl);
            if (st) {
                st->saturated += (fl & AMP_F8_SATURATED) != 0;
                st->flushed += (fl & AMP_F8_FLUSHED) != 0;
                st->nan += (fl & AMP_F8_NAN) != 0;
            }
            if (elem) elem[j] = q;
            if (y) y[j] = amp_mx_dequantize_element(q, s, d->fmt);
        }
    }
}

static int cpu_mx_quantize(amp_backend *be, uint8_t *elem, uint8_t *scales, const float *x,
                           const amp_mx_desc *d, amp_fp8_stats *st) {
    (void)be;
    mx_pass(elem, scales, NULL, x, d, st);
    return 0;
}

static int cpu_mx_dequantize(amp_backend *be, float *x, const uint8_t *elem, const uint8_t *scales,
                             const amp_mx_desc *d) {
    (void)be;
    size_t nb = mx_blocks(d);
    for (size_t b = 0; b < nb; b++) {
        size_t first, stride;
        int n;
        mx_block(d, b, &first, &n, &stride);
        for (int i = 0; i < n; i++) {
            size_t j = first + (size_t)i * stride;
            x[j] = amp_mx_dequantize_element(elem[j], scales[b], d->fmt);
        }
    }
    return 0;
}

static int cpu_mx_qdq(amp_backend *be, float *y, const float *x, const amp_mx_desc *d,
                      amp_fp8_stats *st) {
    (void)be;
    mx_pass(NULL, NULL, y, x, d, st); /* a block is read whole before it is written */
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
    .nvfp4_quantize = amp_cpu_nvfp4_quantize,
    .nvfp4_dequantize = amp_cpu_nvfp4_dequantize,
    .nvfp4_qdq = amp_cpu_nvfp4_qdq,
};
