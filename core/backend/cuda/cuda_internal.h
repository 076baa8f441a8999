/* Shared between the CUDA backend's host glue (backend_cuda.cu) and its
 * kernels (kernels_cuda.cu): the backend's private state, the error-check
 * macros and the kernel-backed ops. C++ (nvcc) only. */
#ifndef AMP_CUDA_INTERNAL_H
#define AMP_CUDA_INTERNAL_H

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "backend/backend.h"

/* cuBLASLt's block-scaled GEMM (the VEC32_UE8M0 and VEC16_UE4M3 scale
 * modes and the A/B_SCALE_MODE attributes) came with cuBLAS 12.8; older
 * headers build the emulated MX32 and NVFP4 paths only. */
#ifdef CUBLAS_VERSION
#if CUBLAS_VERSION >= 120800
#define AMP_LT_BLOCK_SCALED 1
#endif
#endif
#ifndef AMP_LT_BLOCK_SCALED
#define AMP_LT_BLOCK_SCALED 0
#endif

typedef struct amp_lt_cache amp_lt_cache;

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
    int cc;                       /* compute capability, major * 10 + minor */
    cublasLtHandle_t lt;          /* the scaled GEMMs' cuBLASLt (lt_matmul_cuda.cu); made on first use */
    amp_lt_cache *lt_cache;       /* its descriptors and heuristic results by key (lt_matmul_cuda.cu) */
    unsigned fp8_gemm_said;       /* scaled GEMM paths already named in the log (bits) */
    int fp8_gemm_last;            /* the path of the latest fp8_gemm call (fp8_gemm_cuda.cu) */
    unsigned nvfp4_gemm_said;     /* nvfp4_gemm's paths already named in the log (bits) */
    int nvfp4_gemm_last;          /* the path of the latest nvfp4_gemm call (fp8_gemm_cuda.cu) */
} amp_cuda_impl;

/* amp_cuda_impl.fp8_gemm_said: bits 0..15 fp8_gemm's paths (fp8_gemm_cuda.cu),
 * then the MX32 path (scaled_cuda.cu) and the NVFP4 path (nvfp4_cuda.cu). */
#define AMP_CUDA_SAID_MX (1u << 16)
#define AMP_CUDA_SAID_NVFP4 (1u << 17)

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

/* A radix sort of n int32 (key, value) pairs on the stream (sort_cuda.cu):
 * *bytes = the temporary storage it needs; then the sort into keys_out and
 * vals_out. 0, or 1 with be->err. */
int amp_cuda_sort_pairs_bytes(amp_backend *be, int n, size_t *bytes);
int amp_cuda_sort_pairs(amp_backend *be, void *tmp, size_t bytes, const int32_t *keys,
                        int32_t *keys_out, const int32_t *vals, int32_t *vals_out, int n);

/* 0 when this build holds kernel code the current device can run; 1 with
 * be->err otherwise (kernels_cuda.cu). */
int amp_cuda_check_kernel_image(amp_backend *be);

/* The epilogue of one batch matrix of d over its FP32 result acc; out_off
 * is the byte offset of that matrix in out/act_out (kernels_cuda.cu). */
int amp_cuda_gemm_epilogue(amp_backend *be, const amp_gemm_desc *d, float *acc, size_t out_off);

/* The op tables; the signatures are backend.h's. kernels_cuda.cu fills
 * the core's kernel-backed ops (roundings, activations, reductions, the
 * optimizer step) into o and has the fused multi-tensor step. */
void amp_cuda_kernel_ops(amp_backend_ops *o);
extern const amp_fused_ops amp_cuda_fused_ops;
extern const amp_transformer_ops amp_cuda_transformer_ops; /* transformer_cuda.cu */
/* The "scaled" family (scaled_cuda.cu) and its dequantize, which fp8_gemm's
 * emulated path calls; the fused fp8_gemm and nvfp4_gemm (fp8_gemm_cuda.cu). */
extern const amp_scaled_ops amp_cuda_scaled_ops;
int amp_cuda_fp8_dequantize(amp_backend *be, float *x, const uint8_t *q, size_t n, float scale,
                            int fmt);
/* Fills the family's nvfp4_quantize, nvfp4_dequantize and nvfp4_qdq
 * (nvfp4_cuda.cu). */
void amp_cuda_nvfp4_ops(amp_scaled_ops *o);
int amp_cuda_fp8_gemm(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q);
int amp_cuda_nvfp4_gemm(amp_backend *be, const amp_gemm_desc *d,
                        const amp_nvfp4_gemm_operands *q);
/* A cuBLASLt FP8 (or FP4) GEMM into d->acc (no epilogue; lt_matmul_cuda.cu):
 * alpha times the product of cuBLASLt's A (type_a) and B (type_b), with the
 * scales scale_a / scale_b (dev) of cuBLASLt's A and B read in scale mode
 * `mode` (0: one FP32 per tensor; else a cublasLtMatmulMatrixScale_t for
 * both); d->beta as given. Row-major C = A . B^T is column-major C^T = B .
 * A^T: cuBLASLt's A is d->b (transposed), its B is d->a, as in gemm_ex.
 * ws: ws_bytes of workspace. *declined = the heuristic's status name (and
 * nothing run) when it offers no algorithm for the call. The descriptors
 * and the heuristic's answer are cached per type, mode, shape, leading
 * dimensions and alignment. 0, or 1 with be->err. */
int amp_cuda_lt_matmul(amp_backend *be, const amp_gemm_desc *d, cudaDataType_t type_a,
                       cudaDataType_t type_b, float alpha, const void *scale_a,
                       const void *scale_b, int32_t mode, void *ws, size_t ws_bytes,
                       const char **declined);
void amp_cuda_lt_destroy(amp_backend *be); /* frees im->lt and its cache; safe when never made */

/* The "conv" family (cnn_cuda.cu), built only with cuDNN (AMP_HAVE_CUDNN). */
typedef struct amp_cudnn_state amp_cudnn_state;
void amp_cuda_cnn_destroy(amp_backend *be); /* frees im->dnn; safe when never made */
#if AMP_HAVE_CUDNN
extern const amp_conv_ops amp_cuda_conv_ops;
#endif

#endif
