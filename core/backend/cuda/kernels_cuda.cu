/* CUDA kernels for the element-wise and reduction ops. The per-element math
 * is the shared AMP_HD code in core/backend/kernels/ headers, so each kernel is only
 * indexing glue around the same function the CPU loop calls.
 *
 * Bitwise parity with the CPU twin for the element-wise ops needs
 * `--fmad=false` (gcc in ISO C mode does not contract a*b+c; nvcc does by
 * default); with it, everything except GELU (erff/expf) and the xent
 * (expf/logf) matches exactly, and reductions differ only in summation order.
 *
 * Counters: each thread counts privately over a grid-stride loop, the block
 * reduces with warp shuffles, and one thread per block does the atomics.
 * Only integer atomics (exact in any order) and atomicMax on non-negative
 * floats (a max does not depend on order) are used. Floating-point sums
 * (loss, sum of squares) are never added with atomics: each block writes its
 * partial to a buffer and amp_k_add_partials adds them in the fixed order of
 * core/backend/kernels/reduce.h, so two runs give the same bits. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_testing.h"
#include "backend/kernels/act.h"
#include "backend/kernels/convert.h"
#include "backend/kernels/epilogue.h"
#include "backend/kernels/optim.h"
#include "backend/kernels/reduce.h"
#include "backend/kernels/unscale.h"
#include "backend/kernels/xent.h"

#define AMP_BLOCK 256

struct amp_sum_op {
    template <typename T> __device__ T operator()(T a, T b) const { return a + b; }
};
struct amp_max_op { /* operands are finite and >= 0 */
    __device__ float operator()(float a, float b) const { return a > b ? a : b; }
};

/* Reduces v over the block; the result is valid in thread 0. Every thread of
 * the block must call it (blockDim.x is a multiple of 32, at most 1024). */
template <typename T, typename Op> __device__ T amp_block_reduce(T v, T identity, Op op) {
    __shared__ T sh[32];
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); /* a previous call in the same kernel may still read sh */
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? sh[lane] : identity;
        for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_down_sync(0xffffffffu, v, o));
    }
    return v;
}

#define AMP_GRID_LOOP(i, n)                                                        \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);        \
         i += (size_t)gridDim.x * blockDim.x)

/* Enough blocks to cover n (capped at 8 per SM; grid-stride loops do the
 * rest, and the cap bounds the number of per-block atomics). n > 0. */
static unsigned amp_grid(amp_backend *be, size_t n) {
    size_t want = (n + AMP_BLOCK - 1) / AMP_BLOCK;
    size_t cap = (size_t)amp_cuda_im(be)->sm_count * 8;
    if (cap < 1) cap = 1;
    return (unsigned)(want < cap ? want : cap);
}

static cudaStream_t amp_stream(amp_backend *be) { return amp_cuda_im(be)->stream; }

/* Per-thread round counters, reduced and added to *cnt once per block. */
struct amp_counts {
    unsigned long long nz, uf, of;
    __device__ void add(unsigned f) {
        nz += f & AMP_RF_NONZERO;
        uf += (f & AMP_RF_UNDERFLOW) != 0;
        of += (f & AMP_RF_OVERFLOW) != 0;
    }
    __device__ void flush(amp_round_count *cnt) {
        amp_sum_op s;
        unsigned long long bnz = amp_block_reduce(nz, 0ULL, s);
        unsigned long long buf = amp_block_reduce(uf, 0ULL, s);
        unsigned long long bof = amp_block_reduce(of, 0ULL, s);
        if (threadIdx.x == 0) {
            if (bnz) atomicAdd(&cnt->nonzero, bnz);
            if (buf) atomicAdd(&cnt->underflow, buf);
            if (bof) atomicAdd(&cnt->overflow, bof);
        }
    }
};

/* ---- round / quantize / widen -------------------------------------------- */

__global__ void amp_k_round16(uint16_t *dst, const float *src, size_t n, int dt,
                              amp_round_count *cnt) {
    amp_counts c = {0, 0, 0};
    AMP_GRID_LOOP(i, n) {
        unsigned f = 0;
        dst[i] = amp_round16(src[i], dt, &f);
        c.add(f);
    }
    if (cnt) c.flush(cnt); /* uniform branch: the whole grid agrees */
}

/* Plain copy with partial-overlap detection: the CPU twin uses memmove, but
 * cudaMemcpy on overlapping ranges is undefined, and no caller needs it. */
static int amp_copy_f32(amp_backend *be, void *dst, const void *src, size_t n, const char *op) {
    if (dst == src || n == 0) return 0;
    const char *d = (const char *)dst, *s = (const char *)src;
    size_t bytes = n * sizeof(float);
    if (d < s + bytes && s < d + bytes) {
        snprintf(be->err, sizeof be->err,
                 "cuda %s: F32 source and destination partially overlap (not supported)", op);
        return 1;
    }
    AMP_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, amp_stream(be)));
    /* like a kernel launch: synchronised and checked under AMPTRAIN_CUDA_SYNC=1 */
    if (amp_cuda_after_launch(be, "cudaMemcpyAsync (f32 copy)", __FILE__, __LINE__)) return 1;
    return 0;
}

static int cuda_round(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                      amp_round_count *cnt) {
    if (dt == AMP_DTYPE_F32) return amp_copy_f32(be, dst, src, n, "round");
    if (n == 0) return 0;
    amp_k_round16<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>((uint16_t *)dst, src, n,
                                                                     (int)dt, cnt);
    AMP_CHECK_LAUNCH(amp_k_round16);
    return 0;
}

__global__ void amp_k_quantize(float *dst, const float *src, size_t n, int dt,
                               amp_round_count *cnt, int accumulate) {
    amp_counts c = {0, 0, 0};
    AMP_GRID_LOOP(i, n) {
        unsigned f = 0;
        float q = amp_quantize(src[i], dt, &f);
        dst[i] = accumulate ? dst[i] + q : q;
        c.add(f);
    }
    if (cnt) c.flush(cnt);
}

static int cuda_quantize(amp_backend *be, float *dst, const float *src, size_t n, amp_dtype dt,
                         amp_round_count *cnt, int accumulate) {
    if (n == 0) return 0;
    amp_k_quantize<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>(dst, src, n, (int)dt, cnt,
                                                                      accumulate);
    AMP_CHECK_LAUNCH(amp_k_quantize);
    return 0;
}

__global__ void amp_k_widen16(float *dst, const uint16_t *src, size_t n, int dt) {
    AMP_GRID_LOOP(i, n) dst[i] = amp_widen16(src[i], dt);
}

static int cuda_widen(amp_backend *be, float *dst, const void *src, amp_dtype dt, size_t n) {
    if (dt == AMP_DTYPE_F32) return amp_copy_f32(be, dst, src, n, "widen");
    if (n == 0) return 0;
    amp_k_widen16<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>(dst, (const uint16_t *)src,
                                                                     n, (int)dt);
    AMP_CHECK_LAUNCH(amp_k_widen16);
    return 0;
}

/* ---- the GEMM epilogue (amp_gemm_desc) ------------------------------------ */

__global__ void amp_k_gemm_epilogue(float *acc, const void *bias, int bias_dt, void *out,
                                    void *act_out, int out_dt, int act, size_t total, int cols,
                                    amp_round_count *cnt) {
    amp_counts c = {0, 0, 0};
    AMP_GRID_LOOP(i, total) {
        float v = acc[i];
        if (bias) v += amp_epilogue_bias(bias, (int)(i % (size_t)cols), bias_dt);
        if (!out) {
            acc[i] = v;
            continue;
        }
        unsigned f = 0;
        float z = amp_epilogue_store(out, i, v, out_dt, &f);
        c.add(f);
        if (act != 0) {
            amp_epilogue_store(act_out, i, amp_act_apply(z, act), out_dt, &f);
            c.add(f);
        }
    }
    if (cnt) c.flush(cnt);
}

int amp_cuda_gemm_epilogue(amp_backend *be, const amp_gemm_desc *d, float *acc, size_t out_off) {
    size_t total = (size_t)d->m * (size_t)d->n;
    if (total == 0) return 0;
    char *out = d->out ? (char *)d->out + out_off : NULL;
    char *act_out = d->act != AMP_ACT_NONE ? (char *)d->act_out + out_off : NULL;
    amp_k_gemm_epilogue<<<amp_grid(be, total), AMP_BLOCK, 0, amp_stream(be)>>>(
        acc, d->bias, (int)d->bias_dtype, out, act_out, (int)d->out_dtype, (int)d->act, total, d->n,
        d->out_dtype == AMP_DTYPE_F32 ? NULL : d->cnt);
    AMP_CHECK_LAUNCH(amp_k_gemm_epilogue);
    return 0;
}

/* ---- bias, activations, column sums ----------------------------------------- */

__global__ void amp_k_act_forward(float *out, const float *in, size_t n, int act) {
    AMP_GRID_LOOP(i, n) out[i] = amp_act_apply(in[i], act);
}

static int cuda_act_forward(amp_backend *be, float *out, const float *in, size_t n, amp_act act) {
    if (n == 0) return 0;
    amp_k_act_forward<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>(out, in, n, (int)act);
    AMP_CHECK_LAUNCH(amp_k_act_forward);
    return 0;
}

__global__ void amp_k_act_backward(float *dz, const float *da, const float *z, size_t n, int act) {
    AMP_GRID_LOOP(i, n) dz[i] = da[i] * amp_act_grad(z[i], act);
}

static int cuda_act_backward(amp_backend *be, float *dz, const float *da, const float *z, size_t n,
                             amp_act act) {
    if (n == 0) return 0;
    amp_k_act_backward<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>(dz, da, z, n, (int)act);
    AMP_CHECK_LAUNCH(amp_k_act_backward);
    return 0;
}

/* One thread per column, rows in order: the same summation order as the CPU
 * loop (so the result is bitwise equal); reads are coalesced across threads. */
__global__ void amp_k_col_sum(float *out, const float *in, int rows, int cols) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= cols) return;
    float s = 0.0f;
    for (int r = 0; r < rows; r++) s += in[(size_t)r * cols + j];
    out[j] = s;
}

static int cuda_col_sum(amp_backend *be, float *out, const float *in, int rows, int cols) {
    if (cols <= 0) return 0;
    unsigned blocks = (unsigned)((cols + AMP_BLOCK - 1) / AMP_BLOCK);
    amp_k_col_sum<<<blocks, AMP_BLOCK, 0, amp_stream(be)>>>(out, in, rows > 0 ? rows : 0, cols);
    AMP_CHECK_LAUNCH(amp_k_col_sum);
    return 0;
}

/* ---- softmax cross-entropy ---------------------------------------------------- */

/* One thread per row through amp_xent_row (the CPU's very function); rows are
 * the batch and cols the classes, so rows >> cols in practice. Each block
 * writes its loss partial to partials[blockIdx.x]. */
__global__ void amp_k_softmax_xent(float *dlogits, amp_step_stats *stats, double *partials,
                                   const float *logits, const int32_t *labels, int rows, int cols,
                                   float grad_scale) {
    double loss = 0.0;
    unsigned long long correct = 0;
    for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < rows; r += gridDim.x * blockDim.x) {
        int hit = 0;
        loss += amp_xent_row(dlogits ? dlogits + (size_t)r * cols : NULL, &hit,
                             logits + (size_t)r * cols, labels[r], cols, grad_scale);
        correct += (unsigned long long)hit;
    }
    amp_sum_op s;
    loss = amp_block_reduce(loss, 0.0, s);
    correct = amp_block_reduce(correct, 0ULL, s);
    if (threadIdx.x == 0) {
        partials[blockIdx.x] = loss;
        if (correct) atomicAdd(&stats->correct, correct);
    }
}

/* *dst += the n partials, in reduce.h's fixed order. One thread: n is at
 * most AMP_REDUCE_MAX_BLOCKS, and it runs the very function the CPU tests. */
__global__ void amp_k_add_partials(double *dst, const double *partials, unsigned n) {
    if (blockIdx.x == 0 && threadIdx.x == 0) *dst += amp_sum_partials(partials, n);
}

static int amp_add_partials(amp_backend *be, double *dst, unsigned n) {
    amp_k_add_partials<<<1, 1, 0, amp_stream(be)>>>(dst, amp_cuda_im(be)->partials, n);
    AMP_CHECK_LAUNCH(amp_k_add_partials);
    return 0;
}

static int cuda_softmax_xent(amp_backend *be, float *dlogits, amp_step_stats *stats,
                             const float *logits, const int32_t *labels, int rows, int cols,
                             float grad_scale) {
    if (rows <= 0) return 0;
    unsigned blocks = amp_reduce_blocks((unsigned long long)rows, AMP_BLOCK);
    amp_k_softmax_xent<<<blocks, AMP_BLOCK, 0, amp_stream(be)>>>(
        dlogits, stats, amp_cuda_im(be)->partials, logits, labels, rows, cols, grad_scale);
    AMP_CHECK_LAUNCH(amp_k_softmax_xent);
    return amp_add_partials(be, &stats->loss_sum, blocks);
}

/* ---- unscale + check, scale --------------------------------------------------- */

__global__ void amp_k_unscale_check(float *g, amp_step_stats *stats, double *partials, size_t n,
                                    float inv_scale) {
    unsigned long long bad = 0;
    double sumsq = 0.0;
    float mx = 0.0f;
    AMP_GRID_LOOP(i, n) { bad += !amp_unscale_element(&g[i], inv_scale, &sumsq, &mx); }
    amp_sum_op s;
    bad = amp_block_reduce(bad, 0ULL, s);
    sumsq = amp_block_reduce(sumsq, 0.0, s);
    mx = amp_block_reduce(mx, 0.0f, amp_max_op());
    if (threadIdx.x == 0) {
        if (blockIdx.x == 0) atomicAdd(&stats->checked, (unsigned long long)n);
        if (bad) atomicAdd(&stats->nonfinite, bad);
        partials[blockIdx.x] = sumsq;
        /* Non-negative floats order like their bit patterns as ints. */
        if (mx > 0.0f) atomicMax((int *)&stats->maxabs, __float_as_int(mx));
    }
}

static int cuda_unscale_check(amp_backend *be, float *g, amp_step_stats *stats, size_t n,
                              float inv_scale) {
    if (n == 0) return 0;
    unsigned blocks = amp_reduce_blocks((unsigned long long)n, AMP_BLOCK);
    amp_k_unscale_check<<<blocks, AMP_BLOCK, 0, amp_stream(be)>>>(
        g, stats, amp_cuda_im(be)->partials, n, inv_scale);
    AMP_CHECK_LAUNCH(amp_k_unscale_check);
    return amp_add_partials(be, &stats->sumsq, blocks);
}

__global__ void amp_k_scale(float *x, size_t n, float s) {
    AMP_GRID_LOOP(i, n) x[i] *= s;
}

static int cuda_scale(amp_backend *be, float *x, size_t n, float s) {
    if (n == 0) return 0;
    amp_k_scale<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>(x, n, s);
    AMP_CHECK_LAUNCH(amp_k_scale);
    return 0;
}

/* ---- optimizers ----------------------------------------------------------------- */

__global__ void amp_k_sgd(float *w, float *mom, const float *g, size_t n, float lr,
                          float momentum, float wd) {
    AMP_GRID_LOOP(i, n) amp_sgd_element(&w[i], &mom[i], g[i], lr, momentum, wd);
}

static int cuda_sgd_step(amp_backend *be, float *w, float *mom, const float *g, size_t n, float lr,
                         float momentum, float weight_decay) {
    if (n == 0) return 0;
    amp_k_sgd<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>(w, mom, g, n, lr, momentum,
                                                                 weight_decay);
    AMP_CHECK_LAUNCH(amp_k_sgd);
    return 0;
}

__global__ void amp_k_adamw(float *w, float *m, float *v, const float *g, size_t n, float lr,
                            float beta1, float beta2, float eps, float wd, float bc1,
                            float bc2_sqrt) {
    AMP_GRID_LOOP(i, n)
    amp_adamw_element(&w[i], &m[i], &v[i], g[i], lr, beta1, beta2, eps, wd, bc1, bc2_sqrt);
}

static int cuda_adamw_step(amp_backend *be, float *w, float *m, float *v, const float *g, size_t n,
                           const amp_optim_step *o) {
    float lr = o->lr, beta1 = o->beta1, beta2 = o->beta2, eps = o->eps;
    float weight_decay = o->weight_decay;
    int64_t t = o->t;
    if (n == 0) return 0;
    /* Bias corrections on the host in double, exactly as the CPU twin. */
    float bc1 = (float)(1.0 - pow((double)beta1, (double)t));
    float bc2_sqrt = (float)sqrt(1.0 - pow((double)beta2, (double)t));
    amp_k_adamw<<<amp_grid(be, n), AMP_BLOCK, 0, amp_stream(be)>>>(
        w, m, v, g, n, lr, beta1, beta2, eps, weight_decay, bc1, bc2_sqrt);
    AMP_CHECK_LAUNCH(amp_k_adamw);
    return 0;
}

/* One tensor's step: the SGD or the AdamW kernel. */
static int cuda_optim_step(amp_backend *be, const amp_optim_step *o, float *w, float *s0, float *s1,
                           const float *g, size_t n) {
    if (o->adamw) return cuda_adamw_step(be, w, s0, s1, g, n, o);
    return cuda_sgd_step(be, w, s0, g, n, o->lr, o->momentum, o->weight_decay);
}

/* The multi-tensor step: the spans cut into chunks of at most
 * AMP_OPTIM_CHUNK elements, one block per chunk (the chunk table lives in
 * the backend's scratch), each element with the per-tensor kernels' math. */
#define AMP_OPTIM_CHUNK 16384

typedef struct amp_optim_chunk {
    size_t off;
    unsigned n;
    float weight_decay;
} amp_optim_chunk;

__global__ void amp_k_optim_multi(const amp_optim_chunk *chunks, float *w, float *s0, float *s1,
                                  const float *g, int adamw, float lr, float momentum,
                                  float beta1, float beta2, float eps, float bc1,
                                  float bc2_sqrt) {
    amp_optim_chunk c = chunks[blockIdx.x];
    for (unsigned k = threadIdx.x; k < c.n; k += blockDim.x) {
        size_t i = c.off + k;
        if (adamw)
            amp_adamw_element(&w[i], &s0[i], &s1[i], g[i], lr, beta1, beta2, eps,
                              c.weight_decay, bc1, bc2_sqrt);
        else
            amp_sgd_element(&w[i], &s0[i], g[i], lr, momentum, c.weight_decay);
    }
}

static int cuda_optim_multi_step(amp_backend *be, const amp_optim_step *o, float *w, float *s0,
                                 float *s1, const float *g, const amp_optim_span *spans,
                                 int nspans) {
    size_t nchunks = 0;
    for (int i = 0; i < nspans; i++) nchunks += (spans[i].n + AMP_OPTIM_CHUNK - 1) / AMP_OPTIM_CHUNK;
    if (nchunks == 0) return 0;
    if (nchunks > INT32_MAX) {
        snprintf(be->err, sizeof be->err, "optim_multi_step: %zu chunks exceed the grid", nchunks);
        return 1;
    }
    void *dtab;
    if (amp_cuda_scratch(be, nchunks * sizeof(amp_optim_chunk), &dtab)) return 1;
    amp_optim_chunk *tab = (amp_optim_chunk *)malloc(nchunks * sizeof *tab);
    if (!tab) {
        snprintf(be->err, sizeof be->err, "optim_multi_step: out of memory for %zu chunks",
                 nchunks);
        return 1;
    }
    size_t k = 0;
    for (int i = 0; i < nspans; i++)
        for (size_t c = 0; c < spans[i].n; c += AMP_OPTIM_CHUNK) {
            size_t left = spans[i].n - c;
            tab[k++] = {spans[i].off + c, (unsigned)(left < AMP_OPTIM_CHUNK ? left : AMP_OPTIM_CHUNK),
                        spans[i].weight_decay};
        }
    /* From pageable memory the copy is staged before it returns, so tab can
     * be freed at once. */
    be->host_round_trips++;
    cudaError_t e = cudaMemcpyAsync(dtab, tab, nchunks * sizeof *tab, cudaMemcpyHostToDevice,
                                    amp_stream(be));
    free(tab);
    AMP_CHECK_CUDA_WHAT(e, "copying the optimizer's chunk table");
    AMP_CHECK_LAUNCH(cudaMemcpyAsync);
    /* Bias corrections on the host in double, exactly as adamw_step. */
    float bc1 = 1.0f, bc2_sqrt = 1.0f;
    if (o->adamw) {
        bc1 = (float)(1.0 - pow((double)o->beta1, (double)o->t));
        bc2_sqrt = (float)sqrt(1.0 - pow((double)o->beta2, (double)o->t));
    }
    amp_k_optim_multi<<<(unsigned)nchunks, AMP_BLOCK, 0, amp_stream(be)>>>(
        (const amp_optim_chunk *)dtab, w, s0, s1, g, o->adamw, o->lr, o->momentum, o->beta1,
        o->beta2, o->eps, bc1, bc2_sqrt);
    AMP_CHECK_LAUNCH(amp_k_optim_multi);
    return 0;
}

/* ---- checks ---------------------------------------------------------------------- */

int amp_cuda_check_kernel_image(amp_backend *be) {
    cudaFuncAttributes attr;
    AMP_CHECK_CUDA_WHAT(cudaFuncGetAttributes(&attr, amp_k_add_partials),
                        "looking up this build's kernels for the device");
    return 0;
}

/* Test hook (cuda_testing.h): the device's fixed-order sum of host partials. */
extern "C" int amp_cuda_test_sum_partials(amp_backend *be, double *out, const double *partials,
                                          unsigned n) {
    if (n > AMP_REDUCE_MAX_BLOCKS) {
        snprintf(be->err, sizeof be->err, "amp_cuda_test_sum_partials: n %u > %d", n,
                 AMP_REDUCE_MAX_BLOCKS);
        return 1;
    }
    amp_cuda_impl *im = amp_cuda_im(be);
    double *dst = NULL;
    AMP_CHECK_CUDA(cudaMalloc(&dst, sizeof *dst));
    int rc = 1;
    cudaError_t e;
    if ((e = cudaMemsetAsync(dst, 0, sizeof *dst, im->stream)) != cudaSuccess ||
        (n && (e = cudaMemcpyAsync(im->partials, partials, n * sizeof(double),
                                   cudaMemcpyHostToDevice, im->stream)) != cudaSuccess))
        amp_cuda_fail(be, "staging the partials", __FILE__, __LINE__, cudaGetErrorName(e),
                      cudaGetErrorString(e));
    else if (amp_cuda_after_launch(be, "staging the partials", __FILE__, __LINE__) == 0 &&
             amp_add_partials(be, dst, n) == 0 &&
             be->ops->download(be, out, dst, sizeof *dst) == 0)
        rc = 0;
    e = cudaFree(dst);
    if (rc == 0 && e != cudaSuccess)
        rc = amp_cuda_fail(be, "cudaFree", __FILE__, __LINE__, cudaGetErrorName(e),
                           cudaGetErrorString(e));
    return rc;
}

void amp_cuda_kernel_ops(amp_backend_ops *o) {
    o->round = cuda_round;
    o->quantize = cuda_quantize;
    o->widen = cuda_widen;
    o->act_forward = cuda_act_forward;
    o->act_backward = cuda_act_backward;
    o->col_sum = cuda_col_sum;
    o->softmax_xent = cuda_softmax_xent;
    o->unscale_check = cuda_unscale_check;
    o->scale = cuda_scale;
    o->optim_step = cuda_optim_step;
}

static amp_fused_ops cuda_make_fused_ops(void) {
    amp_fused_ops f;
    memset(&f, 0, sizeof f);
    f.optim_multi_step = cuda_optim_multi_step;
    f.fp8_gemm = amp_cuda_fp8_gemm;
    f.nvfp4_gemm = amp_cuda_nvfp4_gemm;
    return f;
}

const amp_fused_ops amp_cuda_fused_ops = cuda_make_fused_ops();
