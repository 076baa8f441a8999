/* CUDA backend, convolutional-network ops.
 *
 * conv2d runs on cuDNN (the legacy convolution API: deprecated in cuDNN 9
 * but shipped and supported): x, w and dy in FP32, FP16 or BF16 with FP32
 * compute (PSEUDO_HALF / PSEUDO_BFLOAT16 configurations, tensor-core math
 * for the 16-bit types; FP32 uses FMA math unless the policy allows TF32).
 * cuDNN stores 16-bit outputs in the 16-bit type, so those land in a staging
 * area at the front of the caller's workspace and a kernel widens them
 * (adding the bias) into the FP32 result, exactly as the CPU backend rounds
 * its FP32 results through the dtype.
 *
 * Algorithms are chosen once per shape (cudnnGet*Algorithm_v7, cuDNN's own
 * heuristics; no timing runs, so the choice does not depend on the
 * machine's load) and cached in a plan; with be->deterministic only
 * algorithms cuDNN reports as deterministic are taken. The workspace is the
 * caller's (the model's `workspace` memory category): conv2d_workspace says
 * how much a shape needs.
 *
 * Pooling, batch norm, the conv bias and its gradient are our own kernels
 * over kernels/conv.h, the per-element functions the CPU loops call. Their
 * reductions run in a fixed order (FP64 sums; batch norm over several
 * blocks per channel, their partials added in slice order), so they are
 * deterministic too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/kernels/conv.h"

/* Without cuDNN there is no conv2d, so the backend offers no "conv" family
 * and none of this file but amp_cuda_cnn_destroy is built. */
#if AMP_HAVE_CUDNN
#include <cudnn.h>

#define AMP_CNN_BLOCK 256

static cudaStream_t cnn_stream(amp_backend *be) { return amp_cuda_im(be)->stream; }

/* Enough blocks for n elements, capped at 8 per SM (grid-stride loops do the rest). */
static unsigned cnn_grid(amp_backend *be, size_t n) {
    size_t want = (n + AMP_CNN_BLOCK - 1) / AMP_CNN_BLOCK;
    size_t cap = (size_t)amp_cuda_im(be)->sm_count * 8;
    if (cap < 1) cap = 1;
    if (want < 1) want = 1;
    return (unsigned)(want < cap ? want : cap);
}

#define CNN_GRID_LOOP(i, n)                                                        \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);        \
         i += (size_t)gridDim.x * blockDim.x)

/* Sum of v over the block, returned to EVERY thread (blockDim.x a multiple
 * of 32, at most 1024). The order is fixed by the block size alone. */
__device__ double cnn_block_sum(double v) {
    __shared__ double sh[32];
    __shared__ double total;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads(); /* an earlier call may still be reading sh / total */
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? sh[lane] : 0.0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
        if (lane == 0) total = v;
    }
    __syncthreads();
    return total;
}

/* ---- max pooling --------------------------------------------------------- */

__global__ void amp_k_maxpool_fwd(float *y, uint16_t *idx, const float *x, size_t total, int h,
                                  int w, int p, int q, int kh, int kw, int sh, int sw, int ph,
                                  int pw) {
    CNN_GRID_LOOP(o, total) {
        size_t plane = o / ((size_t)p * q);
        int r = (int)(o % ((size_t)p * q));
        uint16_t a;
        y[o] = amp_maxpool_value(&a, x + plane * h * w, h, w, kh, kw, r / q, r % q, sh, sw, ph, pw);
        if (idx) idx[o] = a;
    }
}

__global__ void amp_k_maxpool_bwd(float *dx, const float *dy, const uint16_t *idx, size_t total,
                                  int h, int w, int p, int q, int kh, int kw, int sh, int sw,
                                  int ph, int pw) {
    CNN_GRID_LOOP(i, total) {
        size_t plane = i / ((size_t)h * w);
        int r = (int)(i % ((size_t)h * w));
        size_t po = plane * p * q;
        dx[i] = amp_maxpool_grad(dy + po, idx + po, w, p, q, kh, kw, r / w, r % w, sh, sw, ph, pw);
    }
}

static int cuda_max_pool2d_forward(amp_backend *be, float *y, uint16_t *idx, const float *x,
                                   const amp_pool2d_desc *d) {
    if (amp_pool2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    int p = amp_pool2d_out_h(d), q = amp_pool2d_out_w(d);
    size_t total = (size_t)d->n * d->c * p * q;
    amp_k_maxpool_fwd<<<cnn_grid(be, total), AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(
        y, idx, x, total, d->h, d->w, p, q, d->kh, d->kw, d->stride_h, d->stride_w, d->pad_h,
        d->pad_w);
    AMP_CHECK_LAUNCH(amp_k_maxpool_fwd);
    return 0;
}

static int cuda_max_pool2d_backward(amp_backend *be, float *dx, const float *dy,
                                    const uint16_t *idx, const amp_pool2d_desc *d) {
    if (amp_pool2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    int p = amp_pool2d_out_h(d), q = amp_pool2d_out_w(d);
    size_t total = (size_t)d->n * d->c * d->h * d->w;
    amp_k_maxpool_bwd<<<cnn_grid(be, total), AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(
        dx, dy, idx, total, d->h, d->w, p, q, d->kh, d->kw, d->stride_h, d->stride_w, d->pad_h,
        d->pad_w);
    AMP_CHECK_LAUNCH(amp_k_maxpool_bwd);
    return 0;
}

/* ---- batch norm: FP64 sums, several blocks per channel ------------------ */

/* Channel ch's n*hw values, numbered t = image*hw + pixel, are cut into
 * `splits` slices; block (ch, s) reduces slice s in a fixed tree
 * (cnn_block_sum) into a per-block partial, and every consumer adds a
 * channel's partials in slice order. The slicing depends on the shape
 * alone, so the bits do not depend on the GPU or on timing. */
#define AMP_BN_SLICE_MIN 4096 /* values per slice before the cap */
#define AMP_BN_MAX_SPLITS 128

static int bn_splits(int n, int hw) {
    long long total = (long long)n * hw, s = (total + AMP_BN_SLICE_MIN - 1) / AMP_BN_SLICE_MIN;
    return (int)(s < 1 ? 1 : s > AMP_BN_MAX_SPLITS ? AMP_BN_MAX_SPLITS : s);
}

/* For each element e (its flat NCHW index) of channel ch, the block's
 * threads striding over the channel's n*hw values (one block per channel:
 * the conv bias gradient); the inner `for` runs once and only declares e. */
#define BN_LOOP(e, n, c, hw, ch)                                                      \
    for (size_t t_ = threadIdx.x; t_ < (size_t)(n) * (hw); t_ += blockDim.x)         \
        for (size_t e = ((t_ / (hw)) * (c) + (ch)) * (hw) + t_ % (hw), once_ = 0; !once_; once_ = 1)

/* For each element e (its flat NCHW index) of the block's slice of channel
 * ch = blockIdx.x, the block's threads striding over the slice; the inner
 * `for` runs once and only declares e. */
#define BN_SLICE_LOOP(e, n, c, hw)                                                        \
    for (size_t per_ = ((size_t)(n) * (hw) + gridDim.y - 1) / gridDim.y,                 \
                t_ = (size_t)blockIdx.y * per_ + threadIdx.x,                            \
                end_ = (size_t)blockIdx.y * per_ + per_ < (size_t)(n) * (hw)             \
                           ? (size_t)blockIdx.y * per_ + per_                            \
                           : (size_t)(n) * (hw);                                          \
         t_ < end_; t_ += blockDim.x)                                                     \
        for (size_t e = ((t_ / (hw)) * (c) + blockIdx.x) * (hw) + t_ % (hw), once_ = 0; !once_; \
             once_ = 1)

/* Channel ch's partials p[ch*splits ..], added in slice order. */
__device__ static double bn_combine(const double *p, int ch, int splits) {
    double s = 0.0;
    for (int i = 0; i < splits; i++) s += p[(size_t)ch * splits + i];
    return s;
}

/* Training, pass 1: the slice sums of x. */
__global__ void amp_k_bn_sum(double *psum, const float *x, int n, int c, int hw) {
    double s = 0.0;
    BN_SLICE_LOOP(e, n, c, hw) s += x[e];
    s = cnn_block_sum(s);
    if (threadIdx.x == 0) psum[(size_t)blockIdx.x * gridDim.y + blockIdx.y] = s;
}

/* The row count of the statistics: *cnt where the sums are over all ranks
 * (sync), else these n * hw. */
__device__ static double bn_count(const double *cnt, int n, int hw) {
    return cnt ? *cnt : (double)n * hw;
}

/* Training, pass 2: the slice sums of (x - mean)^2 (two-pass variance); the
 * mean from psum's msplits partials per channel over bn_count rows. */
__global__ void amp_k_bn_sqsum(double *psq, const double *psum, int msplits, const double *cnt,
                               const float *x, int n, int c, int hw) {
    double m = bn_combine(psum, blockIdx.x, msplits) / bn_count(cnt, n, hw), sq = 0.0;
    BN_SLICE_LOOP(e, n, c, hw) {
        double t = (double)x[e] - m;
        sq += t * t;
    }
    sq = cnn_block_sum(sq);
    if (threadIdx.x == 0) psq[(size_t)blockIdx.x * gridDim.y + blockIdx.y] = sq;
}

/* The statistics (from the partials in training, from the running ones in
 * evaluation), saved and the running ones updated by block 0 of the
 * channel, then y over the block's slice. */
__global__ void amp_k_bn_apply(float *y, float *save_mean, float *save_invstd,
                               float *running_mean, float *running_var, const double *psum,
                               const double *psq, int splits, const double *cnt,
                               const float *x, const float *gamma, const float *beta, int n,
                               int c, int hw, int training, float momentum, float eps) {
    int ch = blockIdx.x;
    float mean, invstd;
    if (training) {
        double count = bn_count(cnt, n, hw);
        double m = bn_combine(psum, ch, splits) / count;
        double var = bn_combine(psq, ch, splits) / count;
        mean = (float)m;
        invstd = amp_bn_invstd(var, eps);
        if (blockIdx.y == 0 && threadIdx.x == 0 && running_mean && running_var)
            amp_bn_running_update(&running_mean[ch], &running_var[ch], m, var, count, momentum);
    } else {
        mean = running_mean[ch];
        invstd = amp_bn_invstd((double)running_var[ch], eps);
    }
    if (blockIdx.y == 0 && threadIdx.x == 0) {
        save_mean[ch] = mean;
        save_invstd[ch] = invstd;
    }
    float g = gamma[ch], b = beta[ch];
    BN_SLICE_LOOP(e, n, c, hw) y[e] = amp_bn_apply(x[e], mean, invstd, g, b);
}

/* Backward, pass 1: the slice sums of dy and dy * xhat. */
__global__ void amp_k_bn_grad_sums(double *pdy, double *pdyx, const float *dy, const float *x,
                                   const float *save_mean, const float *save_invstd, int n,
                                   int c, int hw) {
    int ch = blockIdx.x;
    float mean = save_mean[ch], invstd = save_invstd[ch];
    double sdy = 0.0, sdyx = 0.0;
    BN_SLICE_LOOP(e, n, c, hw) {
        sdy += dy[e];
        sdyx += (double)dy[e] * amp_bn_xhat(x[e], mean, invstd);
    }
    sdy = cnn_block_sum(sdy);
    sdyx = cnn_block_sum(sdyx);
    if (threadIdx.x == 0) {
        pdy[(size_t)ch * gridDim.y + blockIdx.y] = sdy;
        pdyx[(size_t)ch * gridDim.y + blockIdx.y] = sdyx;
    }
}

/* Backward, pass 2: dgamma/dbeta from block 0 of the channel, dx over the
 * block's slice. */
__global__ void amp_k_bn_bwd(float *dx, float *dgamma, float *dbeta, const double *pdy,
                             const double *pdyx, int splits, const double *cnt, const float *dy,
                             const float *x, const float *gamma, const float *save_mean,
                             const float *save_invstd, int n, int c, int hw, int training) {
    int ch = blockIdx.x;
    float mean = save_mean[ch], invstd = save_invstd[ch], g = gamma[ch];
    double sdy = bn_combine(pdy, ch, splits), sdyx = bn_combine(pdyx, ch, splits);
    double count = bn_count(cnt, n, hw);
    if (dgamma && blockIdx.y == 0 && threadIdx.x == 0) {
        dgamma[ch] = (float)sdyx;
        dbeta[ch] = (float)sdy;
    }
    float mdy = (float)(sdy / count), mdyx = (float)(sdyx / count);
    BN_SLICE_LOOP(e, n, c, hw) dx[e] = amp_bn_grad(dy[e], x[e], mean, invstd, g, mdy, mdyx, training);
}

/* Sync batch norm: each channel's partials combined into out[c] (and, when
 * outf, also as FP32: this rank's dgamma / dbeta), and the row count into
 * *cnt_out when given, ready to be summed over the ranks. */
__global__ void amp_k_bn_totals(double *out, float *outf, const double *p, int c, int splits,
                                double *cnt_out, double count) {
    int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch < c) {
        double t = bn_combine(p, ch, splits);
        out[ch] = t;
        if (outf) outf[ch] = (float)t;
    }
    if (cnt_out && ch == 0) *cnt_out = count;
}

static int bn_shape_ok(amp_backend *be, int n, int c, int hw, int training) {
    if (n <= 0 || c <= 0 || hw <= 0 || (double)n * c * hw > 1e15) {
        snprintf(be->err, sizeof be->err, "batch_norm: bad shape n=%d c=%d hw=%d", n, c, hw);
        return 0;
    }
    if (training && (double)n * hw < 2) {
        snprintf(be->err, sizeof be->err,
                 "batch_norm: training needs more than 1 value per channel (n=%d, hw=%d), as "
                 "PyTorch does",
                 n, hw);
        return 0;
    }
    return 1;
}

/* Two FP64 partial arrays of c * splits in the backend's scratch, and after
 * them, when tot is given, 2 * c + 2 doubles for the sync totals. */
static int bn_partials(amp_backend *be, int c, int splits, double **a, double **b, double **tot) {
    void *p;
    size_t extra = tot ? 2 * (size_t)c + 2 : 0;
    if (amp_cuda_scratch(be, (2 * (size_t)c * splits + extra) * sizeof(double), &p)) return 1;
    *a = (double *)p;
    *b = *a + (size_t)c * splits;
    if (tot) *tot = *b + (size_t)c * splits;
    return 0;
}

static int bn_sync_sum(amp_backend *be, const amp_allsum *sync, double *v, size_t n) {
    if (sync->sum(sync->ctx, v, n) != 0) {
        if (!be->err[0]) snprintf(be->err, sizeof be->err, "batch_norm: the sum over the ranks failed");
        return 1;
    }
    return 0;
}

#define BN_TOTALS_GRID(c) (unsigned)(((c) + 255) / 256), 256

/* Training forward with a->sync: the channel sums and the row count summed
 * over the ranks, the squared deviations from that global mean likewise,
 * then the apply kernel on the totals (one "split"). */
static int bn_forward_sync(amp_backend *be, const amp_batch_norm_fwd *a, int splits) {
    int n = a->n, c = a->c, hw = a->hw;
    dim3 grid((unsigned)c, (unsigned)splits);
    double *psum, *psq, *tot;
    if (bn_partials(be, c, splits, &psum, &psq, &tot)) return 1;
    double *cnt = tot + c, *tsq = tot + c + 1;
    amp_k_bn_sum<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(psum, a->x, n, c, hw);
    AMP_CHECK_LAUNCH(amp_k_bn_sum);
    amp_k_bn_totals<<<BN_TOTALS_GRID(c), 0, cnn_stream(be)>>>(tot, NULL, psum, c, splits, cnt,
                                                              (double)n * hw);
    AMP_CHECK_LAUNCH(amp_k_bn_totals);
    if (bn_sync_sum(be, a->sync, tot, (size_t)c + 1)) return 1;
    amp_k_bn_sqsum<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(psq, tot, 1, cnt, a->x, n, c, hw);
    AMP_CHECK_LAUNCH(amp_k_bn_sqsum);
    amp_k_bn_totals<<<BN_TOTALS_GRID(c), 0, cnn_stream(be)>>>(tsq, NULL, psq, c, splits, NULL,
                                                              0.0);
    AMP_CHECK_LAUNCH(amp_k_bn_totals);
    if (bn_sync_sum(be, a->sync, tsq, (size_t)c)) return 1;
    amp_k_bn_apply<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(
        a->y, a->save_mean, a->save_invstd, a->running_mean, a->running_var, tot, tsq, 1, cnt,
        a->x, a->gamma, a->beta, n, c, hw, 1, a->momentum, a->eps);
    AMP_CHECK_LAUNCH(amp_k_bn_apply);
    return 0;
}

/* Training backward with a->sync: this rank's sums give dgamma / dbeta;
 * their sums over the ranks (with the row count) give dx. */
static int bn_backward_sync(amp_backend *be, const amp_batch_norm_bwd *a, int splits) {
    int n = a->n, c = a->c, hw = a->hw;
    dim3 grid((unsigned)c, (unsigned)splits);
    double *pdy, *pdyx, *tot;
    if (bn_partials(be, c, splits, &pdy, &pdyx, &tot)) return 1;
    amp_k_bn_grad_sums<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(pdy, pdyx, a->dy, a->x,
                                                                  a->save_mean, a->save_invstd,
                                                                  n, c, hw);
    AMP_CHECK_LAUNCH(amp_k_bn_grad_sums);
    amp_k_bn_totals<<<BN_TOTALS_GRID(c), 0, cnn_stream(be)>>>(tot, a->dbeta, pdy, c, splits,
                                                              tot + 2 * c, (double)n * hw);
    AMP_CHECK_LAUNCH(amp_k_bn_totals);
    amp_k_bn_totals<<<BN_TOTALS_GRID(c), 0, cnn_stream(be)>>>(tot + c, a->dgamma, pdyx, c, splits,
                                                              NULL, 0.0);
    AMP_CHECK_LAUNCH(amp_k_bn_totals);
    if (bn_sync_sum(be, a->sync, tot, 2 * (size_t)c + 1)) return 1;
    amp_k_bn_bwd<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(a->dx, NULL, NULL, tot, tot + c, 1,
                                                            tot + 2 * c, a->dy, a->x, a->gamma,
                                                            a->save_mean, a->save_invstd, n, c,
                                                            hw, 1);
    AMP_CHECK_LAUNCH(amp_k_bn_bwd);
    return 0;
}

static int cuda_batch_norm_forward(amp_backend *be, const amp_batch_norm_fwd *a) {
    float *y = a->y, *save_mean = a->save_mean, *save_invstd = a->save_invstd;
    float *running_mean = a->running_mean, *running_var = a->running_var;
    const float *x = a->x, *gamma = a->gamma, *beta = a->beta;
    int n = a->n, c = a->c, hw = a->hw, training = a->training;
    float momentum = a->momentum, eps = a->eps;
    if (!bn_shape_ok(be, n, c, hw, training)) return 1;
    int splits = bn_splits(n, hw);
    if (training && a->sync) return bn_forward_sync(be, a, splits);
    dim3 grid((unsigned)c, (unsigned)splits);
    double *psum = NULL, *psq = NULL;
    if (training) {
        if (bn_partials(be, c, splits, &psum, &psq, NULL)) return 1;
        amp_k_bn_sum<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(psum, x, n, c, hw);
        AMP_CHECK_LAUNCH(amp_k_bn_sum);
        amp_k_bn_sqsum<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(psq, psum, splits, NULL, x, n,
                                                                   c, hw);
        AMP_CHECK_LAUNCH(amp_k_bn_sqsum);
    }
    amp_k_bn_apply<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(
        y, save_mean, save_invstd, running_mean, running_var, psum, psq, splits, NULL, x, gamma,
        beta, n, c, hw, training, momentum, eps);
    AMP_CHECK_LAUNCH(amp_k_bn_apply);
    return 0;
}

static int cuda_batch_norm_backward(amp_backend *be, const amp_batch_norm_bwd *a) {
    float *dx = a->dx, *dgamma = a->dgamma, *dbeta = a->dbeta;
    const float *dy = a->dy, *x = a->x, *gamma = a->gamma;
    const float *save_mean = a->save_mean, *save_invstd = a->save_invstd;
    int n = a->n, c = a->c, hw = a->hw, training = a->training;
    if (!bn_shape_ok(be, n, c, hw, training)) return 1;
    int splits = bn_splits(n, hw);
    if (training && a->sync) return bn_backward_sync(be, a, splits);
    dim3 grid((unsigned)c, (unsigned)splits);
    double *pdy, *pdyx;
    if (bn_partials(be, c, splits, &pdy, &pdyx, NULL)) return 1;
    amp_k_bn_grad_sums<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(pdy, pdyx, dy, x, save_mean,
                                                                  save_invstd, n, c, hw);
    AMP_CHECK_LAUNCH(amp_k_bn_grad_sums);
    amp_k_bn_bwd<<<grid, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(dx, dgamma, dbeta, pdy, pdyx, splits,
                                                            NULL, dy, x, gamma, save_mean,
                                                            save_invstd, n, c, hw, training);
    AMP_CHECK_LAUNCH(amp_k_bn_bwd);
    return 0;
}

/* ---- conv2d on cuDNN ------------------------------------------------------- */

#define AMP_CHECK_CUDNN(expr)                                                             \
    do {                                                                                  \
        cudnnStatus_t amp_d_ = (expr);                                                    \
        if (amp_d_ != CUDNN_STATUS_SUCCESS)                                               \
            return amp_cuda_fail(be, #expr, __FILE__, __LINE__, cudnnGetErrorString(amp_d_), \
                                 "cuDNN");                                                \
    } while (0)

enum { DIR_FWD = 0, DIR_DATA = 1, DIR_FILTER = 2 };

/* One shape's descriptors and chosen algorithms. */
typedef struct amp_conv_plan {
    amp_conv2d_desc d;
    int deterministic, tf32;
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv[3]; /* per direction: each has its own math type */
    cudnnConvolutionFwdAlgo_t fwd;
    cudnnConvolutionBwdDataAlgo_t data;
    cudnnConvolutionBwdFilterAlgo_t filter;
    size_t stage;    /* bytes at the workspace's front for 16-bit outputs */
    size_t ws[3];    /* cuDNN's workspace per direction, after the stage */
    struct amp_conv_plan *next;
} amp_conv_plan;

struct amp_cudnn_state {
    cudnnHandle_t h;
    amp_conv_plan *plans;
};

static void plan_free(amp_conv_plan *p) {
    if (!p) return;
    if (p->x) cudnnDestroyTensorDescriptor(p->x);
    if (p->y) cudnnDestroyTensorDescriptor(p->y);
    if (p->w) cudnnDestroyFilterDescriptor(p->w);
    for (int i = 0; i < 3; i++)
        if (p->conv[i]) cudnnDestroyConvolutionDescriptor(p->conv[i]);
    free(p);
}

void amp_cuda_cnn_destroy(amp_backend *be) {
    amp_cudnn_state *st = amp_cuda_im(be)->dnn;
    if (!st) return;
    for (amp_conv_plan *p = st->plans, *nx; p; p = nx) {
        nx = p->next;
        plan_free(p);
    }
    if (st->h) cudnnDestroy(st->h);
    free(st);
    amp_cuda_im(be)->dnn = NULL;
}

static int dnn_state(amp_backend *be, amp_cudnn_state **out) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (!im->dnn) {
        amp_cudnn_state *st = (amp_cudnn_state *)calloc(1, sizeof *st);
        if (!st) {
            snprintf(be->err, sizeof be->err, "out of host memory for the cuDNN state");
            return 1;
        }
        cudnnStatus_t s = cudnnCreate(&st->h);
        if (s == CUDNN_STATUS_SUCCESS) s = cudnnSetStream(st->h, im->stream);
        if (s != CUDNN_STATUS_SUCCESS) {
            if (st->h) cudnnDestroy(st->h);
            free(st);
            return amp_cuda_fail(be, "cudnnCreate/cudnnSetStream", __FILE__, __LINE__,
                                 cudnnGetErrorString(s),
                                 "is libcudnn installed for this CUDA version?");
        }
        im->dnn = st;
    }
    *out = im->dnn;
    return 0;
}

static cudnnDataType_t dnn_type(amp_dtype dt) {
    return dt == AMP_DTYPE_F16 ? CUDNN_DATA_HALF
           : dt == AMP_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16
                                  : CUDNN_DATA_FLOAT;
}

static size_t align256(size_t b) { return (b + 255) & ~(size_t)255; }

/* Whether a candidate's math is allowed: FP32 stays FP32 (no TF32 tensor
 * cores) unless the policy allows TF32. */
static int math_ok(const amp_conv_plan *p, cudnnMathType_t m) {
    if (p->d.dt != AMP_DTYPE_F32 || p->tf32) return 1;
    return m == CUDNN_DEFAULT_MATH || m == CUDNN_FMA_MATH;
}

static cudnnMathType_t math_for(const amp_conv_plan *p, cudnnMathType_t m) {
    return p->d.dt == AMP_DTYPE_F32 && !p->tf32 ? CUDNN_FMA_MATH : m;
}

static const char *no_algo(amp_backend *be, const amp_conv_plan *p, const char *dir,
                           size_t limit) {
    snprintf(be->err, sizeof be->err,
             "conv2d: cuDNN offers no %s%s algorithm for [%d,%d,%d,%d] x [%d,%d,%d,%d] (stride "
             "%d,%d pad %d,%d) within a %zu-byte workspace",
             p->deterministic ? "deterministic " : "", dir, p->d.n, p->d.c_in, p->d.h, p->d.w,
             p->d.c_out, p->d.c_in, p->d.kh, p->d.kw, p->d.stride_h, p->d.stride_w, p->d.pad_h,
             p->d.pad_w, limit);
    return be->err;
}

/* One direction's algorithm: the first of cuDNN's heuristic ranking
 * (query: the cudnnGet*Algorithm_v7 call) that succeeded, is deterministic
 * when asked, has allowed math and whose workspace (ws_size: the
 * cudnnGet*WorkspaceSize call) fits `limit`. Sets the direction's math type
 * and workspace in p and *algo; 0, or 1 with be->err. */
template <typename Perf, int N, typename Query, typename WsSize, typename Algo>
static int choose_algo(amp_backend *be, amp_conv_plan *p, int dir, size_t limit, Query query,
                       WsSize ws_size, Algo *algo) {
    static const char *const names[3] = {"forward", "backward-data", "backward-filter"};
    Perf perf[N];
    int got = 0;
    AMP_CHECK_CUDNN(query(N, &got, perf));
    for (int i = 0; i < got; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || !math_ok(p, perf[i].mathType)) continue;
        if (p->deterministic && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
        AMP_CHECK_CUDNN(cudnnSetConvolutionMathType(p->conv[dir], math_for(p, perf[i].mathType)));
        size_t sz = 0;
        if (ws_size(perf[i].algo, &sz) != CUDNN_STATUS_SUCCESS || sz > limit) continue;
        *algo = perf[i].algo;
        p->ws[dir] = sz;
        return 0;
    }
    return no_algo(be, p, names[dir], limit), 1;
}

/* Builds the descriptors and picks each direction's algorithm: the first of
 * cuDNN's heuristic ranking that succeeds, is deterministic when asked, has
 * allowed math and whose workspace fits `limit` (bytes after the stage). */
static int plan_init(amp_backend *be, cudnnHandle_t h, amp_conv_plan *p, size_t limit) {
    const amp_conv2d_desc *d = &p->d;
    cudnnDataType_t t = dnn_type(d->dt);
    int pp = amp_conv2d_out_h(d), qq = amp_conv2d_out_w(d);
    AMP_CHECK_CUDNN(cudnnCreateTensorDescriptor(&p->x));
    AMP_CHECK_CUDNN(cudnnCreateTensorDescriptor(&p->y));
    AMP_CHECK_CUDNN(cudnnCreateFilterDescriptor(&p->w));
    AMP_CHECK_CUDNN(cudnnSetTensor4dDescriptor(p->x, CUDNN_TENSOR_NCHW, t, d->n, d->c_in, d->h, d->w));
    AMP_CHECK_CUDNN(cudnnSetTensor4dDescriptor(p->y, CUDNN_TENSOR_NCHW, t, d->n, d->c_out, pp, qq));
    AMP_CHECK_CUDNN(
        cudnnSetFilter4dDescriptor(p->w, t, CUDNN_TENSOR_NCHW, d->c_out, d->c_in, d->kh, d->kw));
    cudnnMathType_t start = d->dt != AMP_DTYPE_F32 ? CUDNN_TENSOR_OP_MATH
                            : p->tf32              ? CUDNN_DEFAULT_MATH
                                                   : CUDNN_FMA_MATH;
    for (int i = 0; i < 3; i++) {
        AMP_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&p->conv[i]));
        AMP_CHECK_CUDNN(cudnnSetConvolution2dDescriptor(p->conv[i], d->pad_h, d->pad_w,
                                                        d->stride_h, d->stride_w, 1, 1,
                                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        AMP_CHECK_CUDNN(cudnnSetConvolutionMathType(p->conv[i], start));
    }
    int on, oc, oh, ow;
    AMP_CHECK_CUDNN(cudnnGetConvolution2dForwardOutputDim(p->conv[0], p->x, p->w, &on, &oc, &oh, &ow));
    if (on != d->n || oc != d->c_out || oh != pp || ow != qq) {
        snprintf(be->err, sizeof be->err,
                 "conv2d: cuDNN computes output [%d,%d,%d,%d], amptrain [%d,%d,%d,%d]", on, oc, oh,
                 ow, d->n, d->c_out, pp, qq);
        return 1;
    }
    if (d->dt != AMP_DTYPE_F32) {
        size_t xs = (size_t)d->n * d->c_in * d->h * d->w, ys = (size_t)d->n * d->c_out * pp * qq;
        size_t ws = (size_t)d->c_out * d->c_in * d->kh * d->kw, m = xs > ys ? xs : ys;
        p->stage = align256((m > ws ? m : ws) * 2);
    }
    /* row-major tensors as cuDNN names them: x, w, y (forward); the
     * backward directions read y's gradient and write x's or w's */
    if (choose_algo<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
            be, p, DIR_FWD, limit,
            [&](int n, int *got, cudnnConvolutionFwdAlgoPerf_t *perf) {
                return cudnnGetConvolutionForwardAlgorithm_v7(h, p->x, p->w, p->conv[DIR_FWD],
                                                              p->y, n, got, perf);
            },
            [&](cudnnConvolutionFwdAlgo_t algo, size_t *sz) {
                return cudnnGetConvolutionForwardWorkspaceSize(h, p->x, p->w, p->conv[DIR_FWD],
                                                               p->y, algo, sz);
            },
            &p->fwd))
        return 1;
    if (choose_algo<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
            be, p, DIR_DATA, limit,
            [&](int n, int *got, cudnnConvolutionBwdDataAlgoPerf_t *perf) {
                return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p->w, p->y, p->conv[DIR_DATA],
                                                                   p->x, n, got, perf);
            },
            [&](cudnnConvolutionBwdDataAlgo_t algo, size_t *sz) {
                return cudnnGetConvolutionBackwardDataWorkspaceSize(h, p->w, p->y,
                                                                    p->conv[DIR_DATA], p->x, algo,
                                                                    sz);
            },
            &p->data))
        return 1;
    return choose_algo<cudnnConvolutionBwdFilterAlgoPerf_t,
                       CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
        be, p, DIR_FILTER, limit,
        [&](int n, int *got, cudnnConvolutionBwdFilterAlgoPerf_t *perf) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p->x, p->y,
                                                                 p->conv[DIR_FILTER], p->w, n, got,
                                                                 perf);
        },
        [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t *sz) {
            return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, p->x, p->y,
                                                                  p->conv[DIR_FILTER], p->w, algo,
                                                                  sz);
        },
        &p->filter);
}

static size_t plan_bytes(const amp_conv_plan *p) {
    size_t m = p->ws[0];
    if (p->ws[1] > m) m = p->ws[1];
    if (p->ws[2] > m) m = p->ws[2];
    return p->stage + m;
}

static int same_desc(const amp_conv2d_desc *a, const amp_conv2d_desc *b) {
    return a->n == b->n && a->c_in == b->c_in && a->h == b->h && a->w == b->w &&
           a->c_out == b->c_out && a->kh == b->kh && a->kw == b->kw &&
           a->stride_h == b->stride_h && a->stride_w == b->stride_w && a->pad_h == b->pad_h &&
           a->pad_w == b->pad_w && a->dt == b->dt;
}

/* The cached plan of d, or a new one chosen to fit ws_limit bytes in all
 * (SIZE_MAX: cuDNN's first choice). */
static int plan_get(amp_backend *be, const amp_conv2d_desc *d, size_t ws_limit,
                    amp_conv_plan **out) {
    if (amp_conv2d_desc_check(d, be->err, sizeof be->err) != 0) return 1;
    amp_cudnn_state *st;
    if (dnn_state(be, &st) != 0) return 1;
    int det = be->deterministic != 0, tf32 = be->allow_tf32 != 0;
    for (amp_conv_plan *p = st->plans; p; p = p->next)
        if (same_desc(&p->d, d) && p->deterministic == det && p->tf32 == tf32) {
            *out = p;
            return 0;
        }
    amp_conv_plan *p = (amp_conv_plan *)calloc(1, sizeof *p);
    if (!p) {
        snprintf(be->err, sizeof be->err, "out of host memory for a cuDNN plan");
        return 1;
    }
    p->d = *d;
    p->deterministic = det;
    p->tf32 = tf32;
    size_t stage = 0;
    if (d->dt != AMP_DTYPE_F32) { /* plan_init sets it; needed here for the limit */
        int pp = amp_conv2d_out_h(d), qq = amp_conv2d_out_w(d);
        size_t xs = (size_t)d->n * d->c_in * d->h * d->w, ys = (size_t)d->n * d->c_out * pp * qq;
        size_t ws = (size_t)d->c_out * d->c_in * d->kh * d->kw, m = xs > ys ? xs : ys;
        stage = align256((m > ws ? m : ws) * 2);
    }
    size_t limit = ws_limit == (size_t)-1 ? (size_t)-1 : ws_limit > stage ? ws_limit - stage : 0;
    if (ws_limit != (size_t)-1 && ws_limit < stage) {
        snprintf(be->err, sizeof be->err,
                 "conv2d: workspace of %zu bytes cannot hold the %zu-byte 16-bit staging area",
                 ws_limit, stage);
        plan_free(p);
        return 1;
    }
    if (plan_init(be, st->h, p, limit) != 0) {
        plan_free(p);
        return 1;
    }
    p->next = st->plans;
    st->plans = p;
    *out = p;
    return 0;
}

/* The plan for an op call: cached, or chosen to fit the given workspace (a
 * batch smaller than the one the workspace was sized for). */
static int plan_for_call(amp_backend *be, const amp_conv2d_desc *d, void *ws, size_t ws_bytes,
                         amp_conv_plan **out) {
    if (plan_get(be, d, ws_bytes, out) != 0) return 1;
    size_t need = plan_bytes(*out);
    if (ws_bytes < need || (need && !ws)) {
        snprintf(be->err, sizeof be->err,
                 "conv2d: workspace of %zu bytes is smaller than the %zu bytes conv2d_workspace "
                 "asked for",
                 ws_bytes, need);
        return 1;
    }
    return 0;
}

static int cuda_conv2d_workspace(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes) {
    amp_conv_plan *p;
    if (plan_get(be, d, (size_t)-1, &p) != 0) return 1;
    *bytes = plan_bytes(p);
    return 0;
}

/* y[i] (FP32) = widen(stage[i]) + bias[channel], or y[i] += bias[channel]
 * when stage is NULL (FP32 output written by cuDNN in place). */
__global__ void amp_k_conv_out(float *y, const uint16_t *stage, int dt, const float *bias,
                               size_t total, size_t plane, int c) {
    CNN_GRID_LOOP(i, total) {
        float v = stage ? amp_widen16(stage[i], dt) : y[i];
        if (bias) v += bias[(i / plane) % (size_t)c];
        y[i] = v;
    }
}

static int conv_out(amp_backend *be, float *y, const void *stage, amp_dtype dt, const float *bias,
                    size_t total, size_t plane, int c) {
    if (!stage && !bias) return 0;
    amp_k_conv_out<<<cnn_grid(be, total), AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(
        y, (const uint16_t *)stage, (int)dt, bias, total, plane, c);
    AMP_CHECK_LAUNCH(amp_k_conv_out);
    return 0;
}

static int cuda_conv2d_forward(amp_backend *be, float *y, const void *x, const void *w,
                               const float *bias, const amp_conv2d_desc *d, void *ws,
                               size_t ws_bytes) {
    amp_conv_plan *p;
    if (plan_for_call(be, d, ws, ws_bytes, &p) != 0) return 1;
    cudnnHandle_t h = amp_cuda_im(be)->dnn->h;
    float one = 1.0f, zero = 0.0f;
    int f16 = d->dt != AMP_DTYPE_F32;
    void *out = f16 ? ws : (void *)y;
    AMP_CHECK_CUDNN(cudnnConvolutionForward(h, &one, p->x, x, p->w, w, p->conv[DIR_FWD], p->fwd,
                                            (char *)ws + p->stage, p->ws[DIR_FWD], &zero, p->y,
                                            out));
    AMP_CHECK_LAUNCH(cudnnConvolutionForward);
    size_t plane = (size_t)amp_conv2d_out_h(d) * amp_conv2d_out_w(d);
    return conv_out(be, y, f16 ? ws : NULL, d->dt, bias, (size_t)d->n * d->c_out * plane, plane,
                    d->c_out);
}

static int cuda_conv2d_backward_data(amp_backend *be, float *dx, const void *dy, const void *w,
                                     const amp_conv2d_desc *d, void *ws, size_t ws_bytes) {
    amp_conv_plan *p;
    if (plan_for_call(be, d, ws, ws_bytes, &p) != 0) return 1;
    cudnnHandle_t h = amp_cuda_im(be)->dnn->h;
    float one = 1.0f, zero = 0.0f;
    int f16 = d->dt != AMP_DTYPE_F32;
    AMP_CHECK_CUDNN(cudnnConvolutionBackwardData(h, &one, p->w, w, p->y, dy, p->conv[DIR_DATA],
                                                 p->data, (char *)ws + p->stage, p->ws[DIR_DATA],
                                                 &zero, p->x, f16 ? ws : (void *)dx));
    AMP_CHECK_LAUNCH(cudnnConvolutionBackwardData);
    size_t plane = (size_t)d->h * d->w;
    return conv_out(be, dx, f16 ? ws : NULL, d->dt, NULL, (size_t)d->n * d->c_in * plane, plane,
                    d->c_in);
}

/* dbias[c] = sum of dy over n and the plane, FP64, one block per channel. */
__global__ void amp_k_conv_dbias(float *dbias, const void *dy, int dt, int n, int c, int plane) {
    int ch = blockIdx.x;
    double s = 0.0;
    BN_LOOP(e, n, c, plane, ch) s += amp_load_dt(dy, e, dt);
    s = cnn_block_sum(s);
    if (threadIdx.x == 0) dbias[ch] = (float)s;
}

static int cuda_conv2d_backward_filter(amp_backend *be, float *dw, float *dbias, const void *x,
                                       const void *dy, const amp_conv2d_desc *d, void *ws,
                                       size_t ws_bytes) {
    amp_conv_plan *p;
    if (plan_for_call(be, d, ws, ws_bytes, &p) != 0) return 1;
    cudnnHandle_t h = amp_cuda_im(be)->dnn->h;
    float one = 1.0f, zero = 0.0f;
    int f16 = d->dt != AMP_DTYPE_F32;
    AMP_CHECK_CUDNN(cudnnConvolutionBackwardFilter(h, &one, p->x, x, p->y, dy, p->conv[DIR_FILTER],
                                                   p->filter, (char *)ws + p->stage,
                                                   p->ws[DIR_FILTER], &zero, p->w,
                                                   f16 ? ws : (void *)dw));
    AMP_CHECK_LAUNCH(cudnnConvolutionBackwardFilter);
    size_t wn = (size_t)d->c_out * d->c_in * d->kh * d->kw;
    if (conv_out(be, dw, f16 ? ws : NULL, d->dt, NULL, wn, wn, 1) != 0) return 1;
    if (dbias) {
        int plane = amp_conv2d_out_h(d) * amp_conv2d_out_w(d);
        amp_k_conv_dbias<<<(unsigned)d->c_out, AMP_CNN_BLOCK, 0, cnn_stream(be)>>>(
            dbias, dy, (int)d->dt, d->n, d->c_out, plane);
        AMP_CHECK_LAUNCH(amp_k_conv_dbias);
    }
    return 0;
}

static amp_conv_ops cuda_make_conv_ops(void) {
    amp_conv_ops c;
    memset(&c, 0, sizeof c);
    c.conv2d_workspace = cuda_conv2d_workspace;
    c.conv2d_forward = cuda_conv2d_forward;
    c.conv2d_backward_data = cuda_conv2d_backward_data;
    c.conv2d_backward_filter = cuda_conv2d_backward_filter;
    c.max_pool2d_forward = cuda_max_pool2d_forward;
    c.max_pool2d_backward = cuda_max_pool2d_backward;
    c.batch_norm_forward = cuda_batch_norm_forward;
    c.batch_norm_backward = cuda_batch_norm_backward;
    return c;
}

const amp_conv_ops amp_cuda_conv_ops = cuda_make_conv_ops();

#else /* !AMP_HAVE_CUDNN: no conv2d, so the backend offers no "conv" family */

void amp_cuda_cnn_destroy(amp_backend *be) { (void)be; }

#endif
