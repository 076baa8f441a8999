/* Test hooks into the CUDA backend, for the gpu tests that need them. Defined
 * only in builds with CUDA (AMP_HAVE_CUDA). */
#ifndef AMP_CUDA_TESTING_H
#define AMP_CUDA_TESTING_H

#include "backend/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* *out = the fixed-order sum (core/backend/kernels/reduce.h) of the n host
 * partials, computed by the device's reduction kernel. n is at most
 * AMP_REDUCE_MAX_BLOCKS. 0, or 1 with be->err. */
int amp_cuda_test_sum_partials(amp_backend *be, double *out, const double *partials, unsigned n);

/* The device's compute capability, major * 10 + minor (tests/test_gpu_mx_gemm.c). */
int amp_cuda_test_compute_capability(amp_backend *be);

/* 1 when the latest fp8_gemm call ran on cuBLASLt's block-scaled MXFP8
 * GEMM, 0 when it took another path (tests/mx_gemm_rows.h). */
int amp_cuda_test_fp8_gemm_block_scaled(amp_backend *be);

/* 1 when the latest fp8_gemm call on per-tensor FP8 operands ran on
 * cuBLASLt's FP8 GEMM, 0 when it was emulated (tests/test_gpu_fp8.c). */
int amp_cuda_test_fp8_gemm_native(amp_backend *be);

/* 1 when the latest nvfp4_gemm call ran on cuBLASLt's block-scaled FP4
 * GEMM, 0 when it took the emulated path (tests/nvfp4_gemm_rows.h). */
int amp_cuda_test_nvfp4_gemm_block_scaled(amp_backend *be);

/* cublasLtMatmulAlgoGetHeuristic calls so far: a shape met before is
 * answered from the backend's cache (tests/test_gpu_fp8.c). */
unsigned long long amp_cuda_test_lt_heuristic_calls(amp_backend *be);

#ifdef __cplusplus
}
#endif
#endif
