/* The GEMM tests' call: a plain descriptor (amp_gemm_plain) with explicit
 * leading dimensions, alpha and beta, through gemm_ex. */
#ifndef AMP_TEST_GEMM_HELPERS_H
#define AMP_TEST_GEMM_HELPERS_H

#include "backend/backend.h"

static inline int gemm_ex_ld(amp_backend *be, amp_gemm_desc d, int lda, int ldb, int ldc,
                             float alpha, float beta) {
    d.lda = lda;
    d.ldb = ldb;
    d.ldc = ldc;
    d.alpha = alpha;
    d.beta = beta;
    return be->ops->gemm_ex(be, &d);
}

#endif
