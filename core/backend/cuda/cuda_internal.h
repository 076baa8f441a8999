/* Shared between the CUDA backend's host glue (backend_cuda.cu) and its
 * kernels (kernels_cuda.cu): the backend's private state, the error-check
 * macros and the kernel-backed ops. C++ (nvcc) only. */
#ifndef AMP_CUDA_INTERNAL_H
#define AMP_CUDA_INTERNAL_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/backend.h"

typedef struct amp_cuda_impl {
    int device;
    int sm_count;        /* caps grid sizes: one wave of 8 blocks per SM */
    cudaStream_t stream; /* every op is ordered on this one stream */
    cublasHandle_t blas; /* bound to stream */
    /* [AMP_REDUCE_MAX_BLOCKS] per-block partials of the reductions; one
     * buffer is enough since every op is ordered on `stream`. */
    double *partials;
    /* Grow-only device scratch of the ops that need more than `partials`
     * (sort buffers, pointer tables, per-block column partials): see
     * amp_cuda_scratch. One buffer, as every op is ordered on `stream`. */
    void *scratch;
    size_t scratch_bytes;
    int sync_each; /* AMPTRAIN_CUDA_SYNC=1: synchronise after every launch */
    struct amp_cudnn_state *dnn; /* cuDNN handle and conv plans (cnn_cuda.cu); made on first use */
} amp_cuda_impl;

static inline amp_cuda_impl *amp_cuda_im(amp_backend *be) { return (amp_cuda_impl *)be->impl; }

/* Writes "<what> failed at file:line: name (msg)" into be->err; returns 1. */
int amp_cuda_fail(amp_backend *be, const char *what, const char *file, int line, const char *name,
                  const char *msg);

/* Both expect `be` in scope and return 1 from the enclosing function. */
#define AMP_CHECK_CUDA_WHAT(expr, what)                                                  \
    do {                                                                                 \
        cudaError_t amp_e_ = (expr);                                                     \
        if (amp_e_ != cudaSuccess)                                                       \
            return amp_cuda_fail(be, what, __FILE__, __LINE__, cudaGetErrorName(amp_e_),   \
                                 cudaGetErrorString(amp_e_));                            \
    } while (0)
#define AMP_CHECK_CUDA(expr) AMP_CHECK_CUDA_WHAT(expr, #expr)
#define AMP_CHECK_CUBLAS(expr)                                                            \
    do {                                                                                  \
        cublasStatus_t amp_s_ = (expr);                                                   \
        if (amp_s_ != CUBLAS_STATUS_SUCCESS)                                              \
            return amp_cuda_fail(be, #expr, __FILE__, __LINE__, cublasGetStatusName(amp_s_),  \
                                 cublasGetStatusString(amp_s_));                          \
    } while (0)
/* After every launch (kernel, cuBLAS call, async copy): checks the launch
 * (bad configurations, and earlier asynchronous faults that are sticky);
 * with AMPTRAIN_CUDA_SYNC=1 also synchronises, so a fault is reported with
 * the name of the kernel that caused it. 0, or 1 with be->err set. */
int amp_cuda_after_launch(amp_backend *be, const char *what, const char *file, int line);
#define AMP_CHECK_LAUNCH(kernel)                                                         \
    do {                                                                                 \
        if (amp_cuda_after_launch(be, #kernel, __FILE__, __LINE__)) return 1;            \
    } while (0)

/* *p = at least `bytes` of device scratch, valid until the next call (an op
 * takes all it needs in one call and carves it up). Growing waits for the
 * stream first, since queued work may still read the old buffer. 0, or 1
 * with be->err. */
int amp_cuda_scratch(amp_backend *be, size_t bytes, void **p);

/* 0 when this build holds kernel code the current device can run; 1 with
 * be->err otherwise (kernels_cuda.cu). */
int amp_cuda_check_kernel_image(amp_backend *be);

/* Kernel-backed ops (kernels_cuda.cu); signatures as in amp_backend_ops. */
int amp_cuda_round(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                   amp_round_count *cnt);
int amp_cuda_quantize(amp_backend *be, float *dst, const float *src, size_t n, amp_dtype dt,
                      amp_round_count *cnt, int accumulate);
int amp_cuda_widen(amp_backend *be, float *dst, const void *src, amp_dtype dt, size_t n);
/* The epilogue of one batch matrix of d over its FP32 result acc; out_off
 * is the byte offset of that matrix in out/act_out. */
int amp_cuda_gemm_epilogue(amp_backend *be, const amp_gemm_desc *d, float *acc, size_t out_off);
int amp_cuda_add_bias(amp_backend *be, float *y, const float *bias, int rows, int cols);
int amp_cuda_act_forward(amp_backend *be, float *out, const float *in, size_t n, amp_act act);
int amp_cuda_act_backward(amp_backend *be, float *dz, const float *da, const float *z, size_t n,
                          amp_act act);
int amp_cuda_col_sum(amp_backend *be, float *out, const float *in, int rows, int cols);
int amp_cuda_softmax_xent(amp_backend *be, float *dlogits, amp_step_stats *stats,
                          const float *logits, const int32_t *labels, int rows, int cols,
                          float grad_scale);
int amp_cuda_unscale_check(amp_backend *be, float *g, amp_step_stats *stats, size_t n,
                           float inv_scale);
int amp_cuda_scale(amp_backend *be, float *x, size_t n, float s);
int amp_cuda_sgd_step(amp_backend *be, float *w, float *mom, const float *g, size_t n, float lr,
                      float momentum, float weight_decay);
int amp_cuda_adamw_step(amp_backend *be, float *w, float *m, float *v, const float *g, size_t n,
                        float lr, float beta1, float beta2, float eps, float weight_decay,
                        int64_t t);
int amp_cuda_optim_multi_step(amp_backend *be, const amp_optim_step *o, float *w, float *s0,
                              float *s1, const float *g, const amp_optim_span *spans,
                              int nspans);

/* The transformer ops (transformer_cuda.cu). */
int amp_cuda_embed_forward(amp_backend *be, float *out, const float *wte, const float *wpe,
                           const int32_t *tokens, int B, int T, int C);
int amp_cuda_embed_backward(amp_backend *be, float *dwte, float *dwpe, const float *dout,
                            const int32_t *tokens, int B, int T, int C);
int amp_cuda_layernorm_forward(amp_backend *be, void *out, amp_dtype out_dt, float *mean,
                               float *rstd, const float *x, const float *w, const float *b,
                               int rows, int C, float eps, amp_round_count *cnt);
int amp_cuda_layernorm_backward(amp_backend *be, float *dx, float *dw, float *db,
                                const float *dout, const float *x, const float *w,
                                const float *mean, const float *rstd, int rows, int C);
int amp_cuda_attention_forward(amp_backend *be, void *out, void *att, float *ws, const void *qkv,
                               amp_dtype dt, int B, int T, int C, int nh, amp_round_count *cnt);
int amp_cuda_attention_backward(amp_backend *be, void *dqkv, float *ws, const void *dout,
                                const void *qkv, const void *att, amp_dtype dt, int B, int T,
                                int C, int nh, amp_round_count *cnt);
int amp_cuda_residual_add(amp_backend *be, float *out, const float *x, const void *d, amp_dtype dt,
                          size_t n);

/* Convolutional-network ops (cnn_cuda.cu); the conv2d ones exist only when
 * built with cuDNN (AMP_HAVE_CUDNN). */
typedef struct amp_cudnn_state amp_cudnn_state;
void amp_cuda_cnn_destroy(amp_backend *be); /* frees im->dnn; safe when never made */
int amp_cuda_conv2d_workspace(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes);
int amp_cuda_conv2d_forward(amp_backend *be, float *y, const void *x, const void *w,
                            const float *bias, const amp_conv2d_desc *d, void *ws,
                            size_t ws_bytes);
int amp_cuda_conv2d_backward_data(amp_backend *be, float *dx, const void *dy, const void *w,
                                  const amp_conv2d_desc *d, void *ws, size_t ws_bytes);
int amp_cuda_conv2d_backward_filter(amp_backend *be, float *dw, float *dbias, const void *x,
                                    const void *dy, const amp_conv2d_desc *d, void *ws,
                                    size_t ws_bytes);
int amp_cuda_max_pool2d_forward(amp_backend *be, float *y, uint16_t *idx, const float *x,
                                const amp_pool2d_desc *d);
int amp_cuda_max_pool2d_backward(amp_backend *be, float *dx, const float *dy, const uint16_t *idx,
                                 const amp_pool2d_desc *d);
int amp_cuda_batch_norm_forward(amp_backend *be, float *y, float *save_mean, float *save_invstd,
                                float *running_mean, float *running_var, const float *x,
                                const float *gamma, const float *beta, int n, int c, int hw,
                                int training, float momentum, float eps);
int amp_cuda_batch_norm_backward(amp_backend *be, float *dx, float *dgamma, float *dbeta,
                                 const float *dy, const float *x, const float *gamma,
                                 const float *save_mean, const float *save_invstd, int n, int c,
                                 int hw, int training);

#endif
