/* The reference GEMM (AMPTRAIN_GEMM=reference): every output element is one
 * sum of the exact FP32 x FP32 products in FP64, k ascending, rounded once to
 * FP32. Its bits are amptrain's own (no library kernel chosen by CPU model,
 * no split by thread count), so runs on it can be pinned bit for bit on any
 * x86 CPU; the library GEMMs are checked against it within a tolerance
 * (tests/pin/mlp_pin.sh). Slow: for tests. */
#ifndef AMP_CPU_GEMM_REF_H
#define AMP_CPU_GEMM_REF_H

#include "backend/backend.h"

/* c = alpha * op(a) op(b) + beta * c for one matrix of g (its transposes,
 * sizes, leading dimensions, alpha and beta), row-major FP32 (beta 0: c is
 * not read). 0, or -1 when out of host memory. */
int amp_gemm_ref(const amp_gemm_desc *g, float *c, const float *a, const float *b);

#endif
