/* The CUDA backend's "scaled" family (backend.h): per-tensor FP8 quantize,
 * dequantize and quantize-dequantize, the amax, and the MX32 block ops.
 * Every element is the CPU's function (backend/kernels/fp8.h, mx.h, compiled
 * __host__ __device__), so the codes, the decoded values and the scale
 * bytes are the CPU backend's bit for bit. The amax is an atomicMax of the
 * magnitudes' bits (non-negative floats order as their bits do) and the
 * counts are integer atomics, so no result depends on the launch shape or
 * the order of the blocks. Stats records are device memory; every op runs
 * on the backend's stream. The NVFP4 ops are nvfp4_cuda.cu's. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/scaled_cuda.cuh"
#include "backend/kernels/fp8.h"
#include "backend/kernels/mx.h"

extern "C" {
#include "util/log.h"
}

/* q (may be NULL) = codes, y (may be NULL) = decoded codes * inv. */
__global__ void amp_k_fp8_pass(uint8_t *q, float *y, const float *x, size_t n, float scale,
                               float inv, int fmt, amp_fp8_stats *st) {
    amp_fp8_counts c = {0, 0, 0, 0};
    AMP_FP8_LOOP(i, n) {
        unsigned f;
        float v = x[i];
        uint8_t b = amp_fp8_quantize_element(v, scale, fmt, &f);
        if (q) q[i] = b;
        if (y) y[i] = amp_fp8_to_float(b, fmt) * inv;
        c.add(v, f);
    }
    c.flush(st, 1);
}

__global__ void amp_k_fp8_dequantize(float *x, const uint8_t *q, size_t n, float inv, int fmt) {
    AMP_FP8_LOOP(i, n) x[i] = amp_fp8_to_float(q[i], fmt) * inv;
}

/* MX32: one warp per block of 32, lane i on element i (the block's amax a
 * warp max of the magnitudes' bits: a NaN's bits exceed every other's, so
 * the max is a NaN exactly when amp_mx_amax_bits says so). */
__global__ void amp_k_mx_pass(uint8_t *elem, uint8_t *scales, float *y, const float *x,
                              amp_mx_desc d, amp_fp8_stats *st) {
    size_t rows = (size_t)d.rows, cols = (size_t)d.cols;
    size_t nb = amp_mx_block_count(rows, cols, d.along_cols);
    size_t warps = (size_t)gridDim.x * (blockDim.x / 32);
    int lane = threadIdx.x & 31;
    amp_fp8_counts c = {0, 0, 0, 0};
    for (size_t b = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; b < nb; b += warps) {
        size_t first, stride;
        int n;
        amp_mx_block_at(rows, cols, d.along_cols, b, &first, &n, &stride);
        size_t j = first + (size_t)lane * stride;
        float v = lane < n ? x[j] : 0.0f;
        unsigned m = amp_f32_bits(v) & 0x7fffffffu;
        for (int o = 16; o > 0; o >>= 1) {
            unsigned mo = __shfl_xor_sync(0xffffffffu, m, o);
            m = mo > m ? mo : m;
        }
        uint8_t s = amp_mx_scale_e8m0(m, d.fmt);
        if (lane == 0 && scales) scales[b] = s;
        if (lane < n) {
            unsigned f;
            uint8_t q = amp_fp8_quantize_element(v, amp_mx_element_factor(s), d.fmt, &f);
            c.add_flags(f);
            if (elem) elem[j] = q;
            if (y) y[j] = amp_mx_dequantize_element(q, s, d.fmt);
        }
    }
    c.flush(st, 0);
}

__global__ void amp_k_mx_dequantize(float *x, const uint8_t *elem, const uint8_t *scales,
                                    amp_mx_desc d) {
    size_t rows = (size_t)d.rows, cols = (size_t)d.cols;
    size_t nb = amp_mx_block_count(rows, cols, d.along_cols);
    size_t warps = (size_t)gridDim.x * (blockDim.x / 32);
    int lane = threadIdx.x & 31;
    for (size_t b = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32; b < nb; b += warps) {
        size_t first, stride;
        int n;
        amp_mx_block_at(rows, cols, d.along_cols, b, &first, &n, &stride);
        size_t j = first + (size_t)lane * stride;
        if (lane < n) x[j] = amp_mx_dequantize_element(elem[j], scales[b], d.fmt);
    }
}

static cudaStream_t fp8_stream(amp_backend *be) { return amp_cuda_im(be)->stream; }

static int fp8_check_format(amp_backend *be, int fmt, const char *op) {
    if (fmt == AMP_FP8_E4M3 || fmt == AMP_FP8_E5M2) return 0;
    snprintf(be->err, sizeof be->err, "cuda %s: unknown FP8 format %d", op, fmt);
    return 1;
}

static int fp8_pass(amp_backend *be, uint8_t *q, float *y, const float *x, size_t n, float scale,
                    int fmt, amp_fp8_stats *st, const char *op) {
    if (fp8_check_format(be, fmt, op)) return 1;
    if (n == 0) return 0;
    amp_k_fp8_pass<<<fp8_grid(be, n, AMP_FP8_THREADS), AMP_FP8_THREADS, 0, fp8_stream(be)>>>(
        q, y, x, n, scale, amp_fp8_inv_scale(scale), fmt, st);
    AMP_CHECK_LAUNCH(amp_k_fp8_pass);
    return 0;
}

static int cuda_fp8_quantize(amp_backend *be, uint8_t *q, const float *x, size_t n, float scale,
                             int fmt, amp_fp8_stats *st) {
    return fp8_pass(be, q, NULL, x, n, scale, fmt, st, "fp8_quantize");
}

static int cuda_fp8_qdq(amp_backend *be, float *y, const float *x, size_t n, float scale, int fmt,
                        amp_fp8_stats *st) {
    /* element i reads x[i] before it writes y[i]: y may be x */
    return fp8_pass(be, NULL, y, x, n, scale, fmt, st, "fp8_qdq");
}

int amp_cuda_fp8_dequantize(amp_backend *be, float *x, const uint8_t *q, size_t n, float scale,
                            int fmt) {
    if (fp8_check_format(be, fmt, "fp8_dequantize")) return 1;
    if (n == 0) return 0;
    amp_k_fp8_dequantize<<<fp8_grid(be, n, AMP_FP8_THREADS), AMP_FP8_THREADS, 0,
                           fp8_stream(be)>>>(x, q, n, amp_fp8_inv_scale(scale), fmt);
    AMP_CHECK_LAUNCH(amp_k_fp8_dequantize);
    return 0;
}

/* The amax as the CPU's: the quantize pass's own (its counts discarded),
 * into a scratch record, then downloaded (synchronises). */
static int cuda_fp8_amax(amp_backend *be, float *amax_host, const float *x, size_t n) {
    void *p;
    if (amp_cuda_scratch(be, sizeof(amp_fp8_stats), &p)) return 1;
    amp_fp8_stats *st = (amp_fp8_stats *)p;
    AMP_CHECK_CUDA(cudaMemsetAsync(st, 0, sizeof *st, fp8_stream(be)));
    AMP_CHECK_LAUNCH(cudaMemsetAsync);
    if (fp8_pass(be, NULL, NULL, x, n, 1.0f, AMP_FP8_E4M3, st, "fp8_amax")) return 1;
    amp_fp8_stats h;
    if (be->ops->download(be, &h, st, sizeof h)) return 1;
    *amax_host = h.amax;
    return 0;
}

static int mx_launch(amp_backend *be, uint8_t *elem, uint8_t *scales, float *y, const float *x,
                     const amp_mx_desc *d, amp_fp8_stats *st, const char *op) {
    if (fp8_check_format(be, d->fmt, op)) return 1;
    if (d->rows < 0 || d->cols < 0) {
        snprintf(be->err, sizeof be->err, "cuda %s: shape [%d, %d]", op, d->rows, d->cols);
        return 1;
    }
    size_t nb = amp_mx_block_count((size_t)d->rows, (size_t)d->cols, d->along_cols);
    if (nb == 0) return 0;
    amp_cuda_impl *im = amp_cuda_im(be);
    if (!(im->fp8_gemm_said & AMP_CUDA_SAID_MX)) { /* the path MX32 GEMMs take, said once */
        im->fp8_gemm_said |= AMP_CUDA_SAID_MX;
        amp_log(AMP_LOG_INFO, "cuda: MX32 operands: block quantize-dequantize kernels and FP32 "
                "cuBLAS GEMMs for every GEMM but a Linear's forward, which fp8_gemm runs and "
                "names (sm_%d)", im->cc);
    }
    amp_k_mx_pass<<<fp8_grid(be, nb, AMP_FP8_THREADS / 32), AMP_FP8_THREADS, 0, fp8_stream(be)>>>(
        elem, scales, y, x, *d, st);
    AMP_CHECK_LAUNCH(amp_k_mx_pass);
    return 0;
}

static int cuda_mx_quantize(amp_backend *be, uint8_t *elem, uint8_t *scales, const float *x,
                            const amp_mx_desc *d, amp_fp8_stats *st) {
    return mx_launch(be, elem, scales, NULL, x, d, st, "mx_quantize");
}

static int cuda_mx_qdq(amp_backend *be, float *y, const float *x, const amp_mx_desc *d,
                       amp_fp8_stats *st) {
    /* a warp reads its whole block before any lane writes: y may be x */
    return mx_launch(be, NULL, NULL, y, x, d, st, "mx_qdq");
}

static int cuda_mx_dequantize(amp_backend *be, float *x, const uint8_t *elem,
                              const uint8_t *scales, const amp_mx_desc *d) {
    if (fp8_check_format(be, d->fmt, "mx_dequantize")) return 1;
    size_t nb = amp_mx_block_count((size_t)d->rows, (size_t)d->cols, d->along_cols);
    if (d->rows <= 0 || d->cols <= 0 || nb == 0) return 0;
    amp_k_mx_dequantize<<<fp8_grid(be, nb, AMP_FP8_THREADS / 32), AMP_FP8_THREADS, 0,
                          fp8_stream(be)>>>(x, elem, scales, *d);
    AMP_CHECK_LAUNCH(amp_k_mx_dequantize);
    return 0;
}

static amp_scaled_ops cuda_make_scaled_ops(void) {
    amp_scaled_ops o;
    memset(&o, 0, sizeof o);
    o.fp8_amax = cuda_fp8_amax;
    o.fp8_quantize = cuda_fp8_quantize;
    o.fp8_dequantize = amp_cuda_fp8_dequantize;
    o.fp8_qdq = cuda_fp8_qdq;
    o.mx_quantize = cuda_mx_quantize;
    o.mx_dequantize = cuda_mx_dequantize;
    o.mx_qdq = cuda_mx_qdq;
    amp_cuda_nvfp4_ops(&o);
    return o;
}

const amp_scaled_ops amp_cuda_scaled_ops = cuda_make_scaled_ops();
