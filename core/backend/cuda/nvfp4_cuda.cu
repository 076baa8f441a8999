/* The CUDA backend's NVFP4 ops (the "scaled" family's nvfp4_quantize,
 * nvfp4_dequantize and nvfp4_qdq) over amp_nvfp4_desc's three layouts: 1x16
 * blocks along the rows, 1x16 blocks down the columns (with the 16-point
 * random Hadamard transform before them) and 16x16 tiles. Every element is
 * nvfp4.h's function, the one cpu_nvfp4_body.h's loops give the bits of
 * (compiled __host__ __device__, --fmad=false): the tensor amax, the
 * transform, the E4M3 block scales, the E2M1 codes (nearest even, or
 * stochastic with amp_nvfp4_random(sr_key, element)), the decoded values
 * and the saturated / flushed / NaN counts are the CPU backend's bit for
 * bit. Amaxes are integer maxima of the magnitudes' bits and the counts
 * integer atomics, so they do not depend on the launch shape; the stochastic
 * rounding's bias sums (doubles) are added in the order nvfp4.h fixes, as
 * the CPU adds them: per-element terms, per-run partial sums in parallel,
 * then one thread adds the runs in order onto the record's sums.
 *
 * One op is a few launches on the backend's stream:
 *   [qdq with the transform: y = x, then amp_hadamard16 down every column of
 *   each full group of 16 rows, in place]; the tensor amax into a scratch
 *   record; one thread per block: amp_nvfp4_block_pass (its amax, its scale,
 *   its elements; test_nvfp4_kernels replays this work on the CPU); [the
 *   codes packed two per byte]; [the bias sums' runs]; the record folded
 *   into st and nv. The tensor scale reaches the host (a download, which
 *   synchronises) only when the caller asks for it. The GEMMs stay the
 *   kit's FP32 ones on the decoded values: cuBLASLt's block-scaled FP4 GEMM
 *   is not used (said once in the log). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/scaled_cuda.cuh"
#include "backend/kernels/nvfp4.h"

extern "C" {
#include "util/log.h"
}

/* One op's device scratch: the tensor amax, then what its blocks saw
 * (zeroed by the op before its first launch). The bias sums are not here:
 * they are added in nvfp4.h's order from per-element terms (t_err, t_abs)
 * and per-run partial sums, in the same scratch. */
typedef struct nv_record {
    unsigned amax;          /* bits of the tensor amax (non-NaN |x|) */
    float s_enc;            /* written last, for the host */
    unsigned scale_min_inv; /* ~bits of the smallest block scale (0: none yet) */
    unsigned scale_max;     /* bits of the largest */
    unsigned long long blocks, sr_count;
} nv_record;

/* |x|'s bits, or 0 for a NaN (amaxes ignore NaN; +-inf counts). */
static __device__ unsigned nv_mag(float x) {
    unsigned a = amp_f32_bits(x) & 0x7fffffffu;
    return a > 0x7f800000u ? 0u : a;
}

/* amp_hadamard16 down every column of each full group of 16 rows, in
 * place: one thread per (group, column), adjacent threads on adjacent
 * columns. */
__global__ void amp_k_nv_hadamard(float *y, size_t groups, size_t cols, uint32_t signs) {
    AMP_FP8_LOOP(i, groups * cols) {
        size_t g = i / cols, c = i % cols;
        amp_hadamard16(y + g * AMP_NVFP4_BLOCK * cols + c, cols, signs);
    }
}

__global__ void amp_k_nv_amax(nv_record *rec, const float *x, size_t n) {
    unsigned m = 0;
    AMP_FP8_LOOP(i, n) {
        unsigned a = nv_mag(x[i]);
        m = a > m ? a : m;
    }
    for (int o = 16; o > 0; o >>= 1) {
        unsigned mo = __shfl_down_sync(0xffffffffu, m, o);
        m = mo > m ? mo : m;
    }
    if ((threadIdx.x & 31) == 0 && m) atomicMax(&rec->amax, m);
}

/* What one thread's blocks saw beyond amp_fp8_counts, reduced over its warp
 * into the record by lane 0. Every lane of the warp must call flush. */
struct nv_counts {
    unsigned min_inv, max;
    unsigned long long blocks, sr_count;
    __device__ void block(float sv) {
        unsigned b = amp_f32_bits(sv);
        min_inv = ~b > min_inv ? ~b : min_inv;
        max = b > max ? b : max;
        blocks++;
    }
    __device__ void flush(nv_record *rec) {
        for (int o = 16; o > 0; o >>= 1) {
            unsigned a = __shfl_down_sync(0xffffffffu, min_inv, o);
            unsigned b = __shfl_down_sync(0xffffffffu, max, o);
            min_inv = a > min_inv ? a : min_inv;
            max = b > max ? b : max;
            blocks += __shfl_down_sync(0xffffffffu, blocks, o);
            sr_count += __shfl_down_sync(0xffffffffu, sr_count, o);
        }
        if ((threadIdx.x & 31) != 0) return;
        if (blocks) {
            atomicMax(&rec->scale_min_inv, min_inv);
            atomicMax(&rec->scale_max, max);
            atomicAdd(&rec->blocks, blocks);
        }
        if (sr_count) atomicAdd(&rec->sr_count, sr_count);
    }
};

/* One thread per block: amp_nvfp4_block_pass (its amax, scale, codes into
 * q, values into y, bias terms into t_err / t_abs; y may be src), the
 * scale into scales (may be NULL), the counts into st (may be NULL) and
 * the record. */
__global__ void amp_k_nv_pass(uint8_t *q, uint8_t *scales, float *y, const float *src,
                              amp_nvfp4_desc d, nv_record *rec, amp_fp8_stats *st, double *t_err,
                              double *t_abs) {
    size_t nb = amp_nvfp4_block_count((size_t)d.rows, (size_t)d.cols, d.blocks);
    float s_enc = amp_nvfp4_tensor_scale(amp_f32_from_bits(rec->amax));
    amp_nvfp4_block_out o = {q, y, t_err, t_abs, 0, 0, 0, 0, 0.0f};
    nv_counts v = {0, 0, 0, 0};
    AMP_FP8_LOOP(b, nb) {
        uint8_t s = amp_nvfp4_block_pass(&o, src, &d, s_enc, b);
        if (scales) scales[b] = s;
        if (o.bmax > 0.0f) v.block(amp_e4m3_to_float(s));
    }
    amp_fp8_counts k = {0, o.saturated, o.flushed, o.nan};
    v.sr_count = o.sr_count;
    k.flush(st, 0);
    v.flush(rec);
}

/* codes[i] = the codes of elements 2i (low nibble) and 2i + 1 (high); the
 * last byte of an odd count keeps its high nibble, as the CPU's store. */
__global__ void amp_k_nv_pack(uint8_t *codes, const uint8_t *q, size_t n) {
    AMP_FP8_LOOP(i, (n + 1) / 2) {
        uint8_t lo = q[2 * i];
        codes[i] = 2 * i + 1 < n ? (uint8_t)(lo | (q[2 * i + 1] << 4))
                                 : (uint8_t)((codes[i] & 0xf0u) | lo);
    }
}

/* The runs' partial sums of the bias terms (ROWS, COLS), one thread per
 * run (nvfp4.h's amp_nvfp4_sum_run). */
__global__ void amp_k_nv_runs(double *p_err, double *p_abs, const double *t_err,
                              const double *t_abs, amp_nvfp4_desc d, size_t runs) {
    AMP_FP8_LOOP(i, runs)
        amp_nvfp4_sum_run(&p_err[i], &p_abs[i], t_err, t_abs, (size_t)d.rows, (size_t)d.cols,
                          d.blocks, i);
}

/* The record into the caller's: the tensor scale for the host, the amax
 * into st, the blocks' range and count merged into nv (amp_nvfp4_stats'
 * own merge) and, with t_err, the bias sums added on. One thread. */
__global__ void amp_k_nv_finish(nv_record *rec, amp_fp8_stats *st, amp_nvfp4_stats *nv,
                                const double *p_err, const double *p_abs, const double *t_err,
                                const double *t_abs, amp_nvfp4_desc d) {
    float amax = amp_f32_from_bits(rec->amax);
    rec->s_enc = amp_nvfp4_tensor_scale(amax);
    if (st && amax > st->amax) st->amax = amax;
    if (!nv) return;
    amp_nvfp4_stats s;
    memset(&s, 0, sizeof s);
    s.scale_min = amp_f32_from_bits(~rec->scale_min_inv);
    s.scale_max = amp_f32_from_bits(rec->scale_max);
    s.blocks = rec->blocks;
    s.sr_count = rec->sr_count;
    double e = nv->sr_err, a = nv->sr_abs; /* the sums as they were, untouched by the merge */
    amp_nvfp4_stats_merge(nv, &s);
    nv->sr_err = e, nv->sr_abs = a;
    if (t_err)
        amp_nvfp4_add_sums(&nv->sr_err, &nv->sr_abs, p_err, p_abs, t_err, t_abs, (size_t)d.rows,
                           (size_t)d.cols, d.blocks);
}

__global__ void amp_k_nv_dequantize(float *x, const uint8_t *codes, const uint8_t *scales,
                                    float s_dec, amp_nvfp4_desc d) {
    size_t C = (size_t)d.cols;
    AMP_FP8_LOOP(j, (size_t)d.rows * C) {
        uint8_t c = (uint8_t)((codes[j / 2] >> ((j & 1) * 4)) & 0x0fu);
        x[j] = amp_nvfp4_decode(c, scales[amp_nvfp4_block_of(C, d.blocks, j / C, j % C)], s_dec);
    }
}

static int nv_check(amp_backend *be, const amp_nvfp4_desc *d, const char *op) {
    if (amp_nvfp4_desc_check(be, d, op)) return 1;
    amp_cuda_impl *im = amp_cuda_im(be);
    if (!(im->fp8_gemm_said & AMP_CUDA_SAID_NVFP4)) { /* the path NVFP4 GEMMs take, said once */
        im->fp8_gemm_said |= AMP_CUDA_SAID_NVFP4;
        amp_log(AMP_LOG_INFO, "cuda: NVFP4 operands: quantize-dequantize kernels; a Linear's dW "
                "and dX GEMMs run emulated (FP32 cuBLAS GEMMs on the decoded values), its "
                "forward GEMM on NVFP4 X and W through nvfp4_gemm (cuBLASLt's block-scaled FP4 GEMM, VEC16_UE4M3 "
                "scales, where the GPU (sm_100 and later, this one sm_%d) and the shape allow; "
                "its path said once)", im->cc);
    }
    return 0;
}

/* codes (may be NULL) at 4 bits, scales (may be NULL), y (may be NULL) from
 * src, which is y after the transform when d->hadamard (the caller has
 * copied x there). *s_enc_host (may be NULL) the tensor scale, downloaded. */
static int nv_run(amp_backend *be, uint8_t *codes, uint8_t *scales, float *y, const float *src,
                  const amp_nvfp4_desc *d, float *s_enc_host, amp_fp8_stats *st,
                  amp_nvfp4_stats *nv) {
    size_t n = (size_t)d->rows * (size_t)d->cols;
    cudaStream_t s = amp_cuda_im(be)->stream;
    if (n == 0) { /* the CPU's: no amax, tensor scale 1 */
        if (s_enc_host) *s_enc_host = 1.0f;
        return 0;
    }
    /* scratch: the record, the codes a byte each, the bias terms and the runs' sums */
    int sums = d->stochastic && nv;
    size_t runs = sums ? amp_nvfp4_sum_runs((size_t)d->rows, (size_t)d->cols, d->blocks) : 0;
    size_t rec_bytes = 256, q_bytes = codes ? (n + 255) / 256 * 256 : 0;
    size_t t_bytes = sums ? 2 * n * sizeof(double) : 0, p_bytes = 2 * runs * sizeof(double);
    void *p;
    if (amp_cuda_scratch(be, rec_bytes + q_bytes + t_bytes + p_bytes, &p)) return 1;
    nv_record *rec = (nv_record *)p;
    uint8_t *q = codes ? (uint8_t *)p + rec_bytes : NULL;
    double *t_err = sums ? (double *)((uint8_t *)p + rec_bytes + q_bytes) : NULL;
    double *t_abs = sums ? t_err + n : NULL;
    double *p_err = runs ? (double *)((uint8_t *)p + rec_bytes + q_bytes + t_bytes) : NULL;
    double *p_abs = runs ? p_err + runs : NULL;
    AMP_CHECK_CUDA(cudaMemsetAsync(rec, 0, sizeof *rec, s));
    AMP_CHECK_LAUNCH(cudaMemsetAsync);
    if (d->hadamard && d->rows >= AMP_NVFP4_BLOCK) {
        size_t groups = (size_t)d->rows / AMP_NVFP4_BLOCK, cols = (size_t)d->cols;
        amp_k_nv_hadamard<<<fp8_grid(be, groups * cols, AMP_FP8_THREADS), AMP_FP8_THREADS, 0,
                            s>>>(y, groups, cols, d->signs);
        AMP_CHECK_LAUNCH(amp_k_nv_hadamard);
    }
    amp_k_nv_amax<<<fp8_grid(be, n, AMP_FP8_THREADS), AMP_FP8_THREADS, 0, s>>>(rec, src, n);
    AMP_CHECK_LAUNCH(amp_k_nv_amax);
    size_t nb = amp_nvfp4_block_count((size_t)d->rows, (size_t)d->cols, d->blocks);
    amp_k_nv_pass<<<fp8_grid(be, nb, AMP_FP8_THREADS), AMP_FP8_THREADS, 0, s>>>(
        q, scales, y, src, *d, rec, st, t_err, t_abs);
    AMP_CHECK_LAUNCH(amp_k_nv_pass);
    if (runs) {
        amp_k_nv_runs<<<fp8_grid(be, runs, AMP_FP8_THREADS), AMP_FP8_THREADS, 0, s>>>(
            p_err, p_abs, t_err, t_abs, *d, runs);
        AMP_CHECK_LAUNCH(amp_k_nv_runs);
    }
    if (codes) {
        amp_k_nv_pack<<<fp8_grid(be, (n + 1) / 2, AMP_FP8_THREADS), AMP_FP8_THREADS, 0, s>>>(
            codes, q, n);
        AMP_CHECK_LAUNCH(amp_k_nv_pack);
    }
    amp_k_nv_finish<<<1, 1, 0, s>>>(rec, st, nv, p_err, p_abs, t_err, t_abs, *d);
    AMP_CHECK_LAUNCH(amp_k_nv_finish);
    if (s_enc_host && be->ops->download(be, s_enc_host, &rec->s_enc, sizeof *s_enc_host)) return 1;
    return 0;
}

static int cuda_nvfp4_quantize(amp_backend *be, uint8_t *codes, uint8_t *scales, float *s_dec,
                               const float *x, const amp_nvfp4_desc *d, amp_fp8_stats *st,
                               amp_nvfp4_stats *nv) {
    if (nv_check(be, d, "nvfp4_quantize")) return 1;
    float s_enc;
    if (nv_run(be, codes, scales, NULL, x, d, &s_enc, st, nv)) return 1;
    *s_dec = 1.0f / s_enc;
    return 0;
}

static int cuda_nvfp4_dequantize(amp_backend *be, float *x, const uint8_t *codes,
                                 const uint8_t *scales, float s_dec, const amp_nvfp4_desc *d) {
    if (nv_check(be, d, "nvfp4_dequantize")) return 1;
    size_t n = (size_t)d->rows * (size_t)d->cols;
    if (n == 0) return 0;
    amp_k_nv_dequantize<<<fp8_grid(be, n, AMP_FP8_THREADS), AMP_FP8_THREADS, 0,
                          amp_cuda_im(be)->stream>>>(x, codes, scales, s_dec, *d);
    AMP_CHECK_LAUNCH(amp_k_nv_dequantize);
    return 0;
}

static int cuda_nvfp4_qdq(amp_backend *be, float *y, const float *x, const amp_nvfp4_desc *d,
                          float *s_enc_host, amp_fp8_stats *st, amp_nvfp4_stats *nv) {
    if (nv_check(be, d, "nvfp4_qdq")) return 1;
    const float *src = x;
    if (d->hadamard) {
        size_t n = (size_t)d->rows * (size_t)d->cols;
        if (y != x && n) {
            AMP_CHECK_CUDA(cudaMemcpyAsync(y, x, n * sizeof *y, cudaMemcpyDeviceToDevice,
                                           amp_cuda_im(be)->stream));
            AMP_CHECK_LAUNCH(cudaMemcpyAsync);
        }
        src = y;
    }
    return nv_run(be, NULL, NULL, y, src, d, s_enc_host, st, nv);
}

void amp_cuda_nvfp4_ops(amp_scaled_ops *o) {
    o->nvfp4_quantize = cuda_nvfp4_quantize;
    o->nvfp4_dequantize = cuda_nvfp4_dequantize;
    o->nvfp4_qdq = cuda_nvfp4_qdq;
}
