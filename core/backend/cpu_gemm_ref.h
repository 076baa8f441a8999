/* The reference GEMM (AMPTRAIN_GEMM=reference): every output element is one
 * sum of the exact FP32 x FP32 products in FP64, k ascending, rounded once to
 * FP32. Its bits are amptrain's own (no library kernel chosen by CPU model,
 * no split by thread count), so runs on it can be pinned bit for bit on any
 * x86 CPU; the library GEMMs are checked against it within a tolerance
 * (tests/pin/mlp_pin.sh). Slow: for tests. */
#ifndef AMP_CPU_GEMM_REF_H
#define AMP_CPU_GEMM_REF_H

/* c[m,n] = alpha * op(a) op(b) + beta * c, row-major FP32 (beta 0: c is not
 * read). 0, or -1 when out of host memory. */
int amp_gemm_ref(float *c, const float *a, const float *b, int trans_a, int trans_b, int m, int n,
                 int k, int lda, int ldb, int ldc, float alpha, float beta);

#endif
