/* The cuBLASLt call of the scaled GEMMs (fp8_gemm_cuda.cu), with its
 * descriptors and heuristic result cached per key: the operand types, the
 * scale mode, the shape, the leading dimensions and the operands'
 * alignment. A repeated shape (every Linear of every step) asks the
 * heuristic once and builds no descriptor; only the scale pointers, a host
 * attribute of the cached matmul descriptor, are set per call. A declined
 * heuristic is remembered too. The table holds AMP_LT_CACHE entries and
 * drops the least recently used one when full; it is freed with the
 * cuBLASLt handle. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_testing.h"

extern "C" {
#include "util/log.h"
}

#define AMP_LT_CACHE 64

typedef struct amp_lt_key {
    int32_t type_a, type_b, mode;
    int m, n, k, lda, ldb, ldc;
    uint32_t align_a, align_b, align_c; /* bytes: cuBLASLt's A, B and C/D */
} amp_lt_key;

typedef struct amp_lt_entry {
    amp_lt_key key;
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulHeuristicResult_t h;
    const char *declined; /* the heuristic's refusal (static text), or NULL */
    uint64_t used;        /* the call count when last used (0: the slot is empty) */
} amp_lt_entry;

struct amp_lt_cache {
    amp_lt_entry e[AMP_LT_CACHE];
    uint64_t calls;      /* lookups so far */
    uint64_t heuristics; /* cublasLtMatmulAlgoGetHeuristic calls so far */
};

static void entry_free(amp_lt_entry *c) {
    if (c->lc) cublasLtMatrixLayoutDestroy(c->lc);
    if (c->lb) cublasLtMatrixLayoutDestroy(c->lb);
    if (c->la) cublasLtMatrixLayoutDestroy(c->la);
    if (c->op) cublasLtMatmulDescDestroy(c->op);
    memset(c, 0, sizeof *c);
}

/* The largest power of two up to 256 dividing the address: the heuristic
 * is told it, so it offers only algorithms that can read the operand
 * (its default assumes 256-byte alignment). */
static uint32_t lt_align(const void *p) {
    uint32_t a = 256;
    while (a > 1 && (uintptr_t)p % a) a /= 2;
    return a;
}

#define LT_TRY(expr)                                                                               \
    do {                                                                                           \
        cublasStatus_t s_ = (expr);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            if (pref) cublasLtMatmulPreferenceDestroy(pref);                                       \
            entry_free(c);                                                                         \
            return amp_cuda_fail(be, #expr, __FILE__, __LINE__, cublasGetStatusName(s_),           \
                                 cublasGetStatusString(s_));                                       \
        }                                                                                          \
    } while (0)

/* Builds entry c for key k: the descriptors, then the heuristic's answer
 * (or its refusal in c->declined). 0, or 1 with be->err (c left empty). */
static int entry_make(amp_backend *be, amp_lt_cache *t, amp_lt_entry *c, const amp_lt_key *k,
                      const void *scale_a, const void *scale_b, size_t ws_bytes) {
    amp_cuda_impl *im = amp_cuda_im(be);
    cublasLtMatmulPreference_t pref = NULL;
    memset(c, 0, sizeof *c);
    c->key = *k;
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    LT_TRY(cublasLtMatmulDescCreate(&c->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_TRY(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    LT_TRY(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
#if AMP_LT_BLOCK_SCALED
    if (k->mode != 0) {
        int32_t mode = k->mode;
        LT_TRY(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode,
                                              sizeof mode));
        LT_TRY(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode,
                                              sizeof mode));
    }
#endif
    /* the heuristic sees scale pointers, as every call sets them */
    LT_TRY(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale_a,
                                          sizeof scale_a));
    LT_TRY(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scale_b,
                                          sizeof scale_b));
    LT_TRY(cublasLtMatrixLayoutCreate(&c->la, (cudaDataType_t)k->type_a, (uint64_t)k->k,
                                      (uint64_t)k->n, k->ldb));
    LT_TRY(cublasLtMatrixLayoutCreate(&c->lb, (cudaDataType_t)k->type_b, (uint64_t)k->k,
                                      (uint64_t)k->m, k->lda));
    LT_TRY(cublasLtMatrixLayoutCreate(&c->lc, CUDA_R_32F, (uint64_t)k->n, (uint64_t)k->m, k->ldc));
    LT_TRY(cublasLtMatmulPreferenceCreate(&pref));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &ws_bytes, sizeof ws_bytes));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                &k->align_a, sizeof k->align_a));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                &k->align_b, sizeof k->align_b));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                &k->align_c, sizeof k->align_c));
    LT_TRY(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                &k->align_c, sizeof k->align_c));
    int found = 0;
    t->heuristics++;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(im->lt, c->op, c->la, c->lb, c->lc, c->lc,
                                                       pref, 1, &c->h, &found);
    cublasLtMatmulPreferenceDestroy(pref);
    /* A result whose state is not SUCCESS is an algorithm the heuristic
     * rejected for this problem: as good as none. */
    if (hs != CUBLAS_STATUS_SUCCESS || found == 0 || c->h.state != CUBLAS_STATUS_SUCCESS)
        c->declined = hs != CUBLAS_STATUS_SUCCESS ? cublasGetStatusName(hs)
                      : found == 0                ? "no result"
                                                  : cublasGetStatusName(c->h.state);
    return 0;
}

/* The entry for key k: a hit, or one made in an empty slot or in place of
 * the least recently used. NULL with be->err. */
static amp_lt_entry *lookup(amp_backend *be, const amp_lt_key *k, const void *scale_a,
                            const void *scale_b, size_t ws_bytes) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (!im->lt_cache) {
        im->lt_cache = (amp_lt_cache *)calloc(1, sizeof *im->lt_cache);
        if (!im->lt_cache) {
            snprintf(be->err, sizeof be->err, "out of host memory for the cuBLASLt cache");
            return NULL;
        }
    }
    amp_lt_cache *t = im->lt_cache;
    uint64_t now = ++t->calls;
    amp_lt_entry *victim = &t->e[0];
    for (int i = 0; i < AMP_LT_CACHE; i++) {
        amp_lt_entry *c = &t->e[i];
        if (c->used && memcmp(&c->key, k, sizeof *k) == 0) {
            c->used = now;
            return c;
        }
        if (c->used < victim->used) victim = c;
    }
    entry_free(victim);
    if (entry_make(be, t, victim, k, scale_a, scale_b, ws_bytes) != 0) return NULL;
    victim->used = now;
    return victim;
}

int amp_cuda_lt_matmul(amp_backend *be, const amp_gemm_desc *d, cudaDataType_t type_a,
                       cudaDataType_t type_b, float alpha, const void *scale_a,
                       const void *scale_b, int32_t mode, void *ws, size_t ws_bytes,
                       const char **declined) {
    amp_cuda_impl *im = amp_cuda_im(be);
    *declined = NULL;
    if (!im->lt) AMP_CHECK_CUBLAS(cublasLtCreate(&im->lt));
#if !AMP_LT_BLOCK_SCALED
    (void)mode; /* only 0 reaches here: the callers keep block scales away */
    mode = 0;
#endif
    amp_lt_key k;
    memset(&k, 0, sizeof k); /* the key is compared bytewise */
    k.type_a = (int32_t)type_a;
    k.type_b = (int32_t)type_b;
    k.mode = mode;
    k.m = d->m;
    k.n = d->n;
    k.k = d->k;
    k.lda = d->lda;
    k.ldb = d->ldb;
    k.ldc = d->ldc;
    k.align_a = lt_align(d->b);
    k.align_b = lt_align(d->a);
    k.align_c = lt_align(d->acc);
    amp_lt_entry *c = lookup(be, &k, scale_a, scale_b, ws_bytes);
    if (!c) return 1;
    if (c->declined) {
        *declined = c->declined;
        return 0;
    }
    AMP_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                    &scale_a, sizeof scale_a));
    AMP_CHECK_CUBLAS(cublasLtMatmulDescSetAttribute(c->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                    &scale_b, sizeof scale_b));
    AMP_CHECK_CUBLAS(cublasLtMatmul(im->lt, c->op, &alpha, d->b, c->la, d->a, c->lb, &d->beta,
                                    d->acc, c->lc, d->acc, c->lc, &c->h.algo, ws, ws_bytes,
                                    im->stream));
    AMP_CHECK_LAUNCH(cublasLtMatmul);
    return 0;
}

void amp_cuda_lt_destroy(amp_backend *be) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (im->lt_cache) {
        for (int i = 0; i < AMP_LT_CACHE; i++) entry_free(&im->lt_cache->e[i]);
        free(im->lt_cache);
        im->lt_cache = NULL;
    }
    if (!im->lt) return;
    cublasStatus_t st = cublasLtDestroy(im->lt);
    if (st != CUBLAS_STATUS_SUCCESS)
        amp_log(AMP_LOG_WARN, "cuda: cublasLtDestroy failed: %s", cublasGetStatusName(st));
    im->lt = NULL;
}

extern "C" unsigned long long amp_cuda_test_lt_heuristic_calls(amp_backend *be) {
    amp_cuda_impl *im = amp_cuda_im(be);
    return im->lt_cache ? (unsigned long long)im->lt_cache->heuristics : 0;
}
