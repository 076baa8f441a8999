/* Test hooks into the CUDA backend, for tests/test_gpu_kernels.c. Defined
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

#ifdef __cplusplus
}
#endif
#endif
