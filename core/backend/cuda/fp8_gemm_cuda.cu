/* The fused fp8_gemm (backend.h) on the CUDA backend: a GEMM on per-tensor
 * FP8 codes. Two paths, chosen per call and each named once in the log:
 *
 *   cuBLASLt FP8 (sm_89 and later): the codes go to the tensor cores as
 *   CUDA_R_8F_E4M3 / CUDA_R_8F_E5M2 with the inverse scales as
 *   CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER, FP32 accumulation and an
 *   FP32 result; then the descriptor's epilogue. It needs cuBLASLt's FP8
 *   layout rules: the TN form (row-major A . B^T, what a Linear's forward
 *   is), dimensions and leading dimensions multiples of 16, 16-byte
 *   aligned operands, not E5M2 x E5M2, and an algorithm the heuristic finds.
 *
 *   emulated (everywhere else): both operands dequantized into FP32
 *   (amp_cuda_fp8_dequantize, the CPU's bits) and the FP32 gemm_ex: the
 *   composition the CPU's Linear runs, so it differs from the CPU only by
 *   the FP32 GEMM's summation order.
 *
 * The products of two FP8 values are exact in FP32 on both paths; the
 * tensor cores order their sums their own way (on Hopper with fewer than
 * FP32's bits between promotions of the partial sums) and apply the scales
 * after the sum, so the cuBLASLt result equals the emulated one to the
 * rounding of that accumulation, not bit for bit. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/kernels/fp8.h"

extern "C" {
#include "log.h"
}

#define FP8_LT_WORKSPACE ((size_t)32 << 20)
#define FP8_SCALES_BYTES 256 /* the two device scales, ahead of the workspace */

/* Why a call cannot take the cuBLASLt path: each named once in the log
 * (bit i of im->fp8_gemm_said), with the first shape that hit it. */
enum {
    FP8_NATIVE = 0,
    FP8_OLD_GPU,
    FP8_BATCHED,
    FP8_LAYOUT,
    FP8_E5M2_PAIR,
    FP8_DIMS,
    FP8_LEADING,
    FP8_ALIGN,
    FP8_NO_ALGO,
    FP8_REASONS
};

static_assert(FP8_REASONS <= 16, "fp8_gemm_said holds 16 path bits (cuda_internal.h)");

static const char *const fp8_reason_text[FP8_REASONS] = {
    "cuBLASLt FP8 tensor cores",
    "the GPU is older than sm_89 (no FP8 tensor cores)",
    "a batched GEMM",
    "not the TN form cuBLASLt's FP8 GEMM takes (row-major A . B^T)",
    "E5M2 x E5M2 (cuBLASLt has no such kernel)",
    "m, n or k not a multiple of 16",
    "a leading dimension not a multiple of 16 bytes",
    "an operand not 16-byte aligned",
    "cuBLASLt's heuristic found no FP8 algorithm for it",
};

static int fp8_refusal(const amp_cuda_impl *im, const amp_gemm_desc *d,
                       const amp_fp8_gemm_operands *q) {
    if (im->cc < 89) return FP8_OLD_GPU;
    if (d->batch != 1) return FP8_BATCHED;
    if (d->trans_a || !d->trans_b) return FP8_LAYOUT;
    if (q->a_fmt == AMP_FP8_E5M2 && q->b_fmt == AMP_FP8_E5M2) return FP8_E5M2_PAIR;
    if (d->m % 16 || d->n % 16 || d->k % 16) return FP8_DIMS;
    if (d->lda % 16 || d->ldb % 16 || d->ldc % 4) return FP8_LEADING;
    if (((uintptr_t)d->a | (uintptr_t)d->b | (uintptr_t)d->acc) % 16) return FP8_ALIGN;
    return FP8_NATIVE;
}

static void fp8_say(amp_backend *be, int why, const amp_gemm_desc *d, const char *detail) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (im->fp8_gemm_said & (1u << why)) return;
    im->fp8_gemm_said |= 1u << why;
    if (why == FP8_NATIVE)
        amp_log(AMP_LOG_INFO,
                "cuda: fp8_gemm runs on %s (sm_%d; first shape m=%d n=%d k=%d); a Linear's dW "
                "and dX GEMMs stay emulated (FP32 cuBLAS on the dequantized operands)",
                fp8_reason_text[why], im->cc, d->m, d->n, d->k);
    else
        amp_log(AMP_LOG_INFO,
                "cuda: fp8_gemm emulated (codes dequantized to FP32, FP32 cuBLAS GEMM) where %s%s "
                "(sm_%d; first shape m=%d n=%d k=%d); said once",
                fp8_reason_text[why], detail, im->cc, d->m, d->n, d->k);
}

static cudaDataType_t fp8_type(int fmt) {
    return fmt == AMP_FP8_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

/* Everything fp8_native creates, freed in one place. */
struct fp8_lt_call {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulPreference_t pref;
};

static void fp8_lt_free(fp8_lt_call *c) {
    if (c->pref) cublasLtMatmulPreferenceDestroy(c->pref);
    if (c->lc) cublasLtMatrixLayoutDestroy(c->lc);
    if (c->lb) cublasLtMatrixLayoutDestroy(c->lb);
    if (c->la) cublasLtMatrixLayoutDestroy(c->la);
    if (c->op) cublasLtMatmulDescDestroy(c->op);
}

#define FP8_LT(expr)                                                                               \
    do {                                                                                           \
        cublasStatus_t s_ = (expr);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fp8_lt_free(&c);                                                                       \
            return amp_cuda_fail(be, #expr, __FILE__, __LINE__, cublasGetStatusName(s_),           \
                                 cublasGetStatusString(s_));                                       \
        }                                                                                          \
    } while (0)

/* The cuBLASLt FP8 GEMM into d->acc (no epilogue); *declined = the
 * heuristic's status name (and nothing run) when it offers no algorithm
 * for the call: an unsupported type or layout combination says so there. Row-major C = A . B^T is
 * column-major C^T = B . A^T: cuBLASLt's A is d->b (transposed), its B is
 * d->a, as in gemm_ex. */
static int fp8_native(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q,
                      const char **declined) {
    amp_cuda_impl *im = amp_cuda_im(be);
    fp8_lt_call c;
    memset(&c, 0, sizeof c);
    *declined = NULL;
    if (!im->lt) FP8_LT(cublasLtCreate(&im->lt));
    void *p;
    if (amp_cuda_scratch(be, FP8_SCALES_BYTES + FP8_LT_WORKSPACE, &p)) return 1;
    float *scales = (float *)p;
    void *ws = (char *)p + FP8_SCALES_BYTES;
    /* cuBLASLt multiplies by these: the inverses of the quantize scales */
    float inv[2] = {amp_fp8_inv_scale(q->b_scale), amp_fp8_inv_scale(q->a_scale)};
    AMP_CHECK_CUDA(cudaMemcpyAsync(scales, inv, sizeof inv, cudaMemcpyHostToDevice, im->stream));
    AMP_CHECK_LAUNCH(cudaMemcpyAsync);
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    const float *sa = scales, *sb = scales + 1;
    FP8_LT(cublasLtMatmulDescCreate(&c.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    FP8_LT(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    FP8_LT(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    FP8_LT(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa,
                                          sizeof sa));
    FP8_LT(cublasLtMatmulDescSetAttribute(c.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb,
                                          sizeof sb));
    FP8_LT(cublasLtMatrixLayoutCreate(&c.la, fp8_type(q->b_fmt), (uint64_t)d->k, (uint64_t)d->n,
                                      d->ldb));
    FP8_LT(cublasLtMatrixLayoutCreate(&c.lb, fp8_type(q->a_fmt), (uint64_t)d->k, (uint64_t)d->m,
                                      d->lda));
    FP8_LT(cublasLtMatrixLayoutCreate(&c.lc, CUDA_R_32F, (uint64_t)d->n, (uint64_t)d->m, d->ldc));
    FP8_LT(cublasLtMatmulPreferenceCreate(&c.pref));
    size_t wsb = FP8_LT_WORKSPACE;
    FP8_LT(cublasLtMatmulPreferenceSetAttribute(c.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &wsb, sizeof wsb));
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(im->lt, c.op, c.la, c.lb, c.lc, c.lc,
                                                       c.pref, 1, &h, &found);
    if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
        fp8_lt_free(&c);
        *declined = hs != CUBLAS_STATUS_SUCCESS ? cublasGetStatusName(hs) : "no result";
        return 0;
    }
    FP8_LT(cublasLtMatmul(im->lt, c.op, &d->alpha, d->b, c.la, d->a, c.lb, &d->beta, d->acc, c.lc,
                          d->acc, c.lc, &h.algo, ws, wsb, im->stream));
    fp8_lt_free(&c);
    AMP_CHECK_LAUNCH(cublasLtMatmul);
    return 0;
}

/* Both operands dequantized into scratch, then the FP32 gemm_ex with the
 * descriptor's epilogue: the CPU's composition. Dense operands only. */
static int fp8_emulated(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q) {
    if (d->batch != 1 || d->lda != (d->trans_a ? d->m : d->k) ||
        d->ldb != (d->trans_b ? d->k : d->n)) {
        snprintf(be->err, sizeof be->err,
                 "cuda fp8_gemm: the emulated path takes one densely stored GEMM (batch %d, lda "
                 "%d, ldb %d for m=%d n=%d k=%d)",
                 d->batch, d->lda, d->ldb, d->m, d->n, d->k);
        return 1;
    }
    size_t na = (size_t)d->m * (size_t)d->k, nb = (size_t)d->k * (size_t)d->n;
    void *p;
    if (amp_cuda_scratch(be, (na + nb) * sizeof(float), &p)) return 1;
    float *a = (float *)p, *b = a + na;
    if (amp_cuda_fp8_dequantize(be, a, (const uint8_t *)d->a, na, q->a_scale, q->a_fmt) ||
        amp_cuda_fp8_dequantize(be, b, (const uint8_t *)d->b, nb, q->b_scale, q->b_fmt))
        return 1;
    amp_gemm_desc g = *d;
    g.a = a;
    g.b = b;
    g.in_dtype = AMP_DTYPE_F32;
    return be->ops->gemm_ex(be, &g);
}

int amp_cuda_fp8_gemm(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q) {
    if (amp_gemm_desc_check(be, d) != 0) return 1;
    for (int f = 0; f < 2; f++) {
        int fmt = f ? q->b_fmt : q->a_fmt;
        if (fmt != AMP_FP8_E4M3 && fmt != AMP_FP8_E5M2) {
            snprintf(be->err, sizeof be->err, "cuda fp8_gemm: unknown FP8 format %d of %s", fmt,
                     f ? "B" : "A");
            return 1;
        }
    }
    if (d->m <= 0 || d->n <= 0) return 0;
    int why = fp8_refusal(amp_cuda_im(be), d, q);
    char detail[96] = "";
    if (why == FP8_NATIVE) {
        const char *declined;
        if (fp8_native(be, d, q, &declined) != 0) return 1;
        if (!declined) {
            fp8_say(be, FP8_NATIVE, d, "");
            return d->bias || d->out ? amp_cuda_gemm_epilogue(be, d, d->acc, 0) : 0;
        }
        why = FP8_NO_ALGO;
        snprintf(detail, sizeof detail, " (%s)", declined);
    }
    fp8_say(be, why, d, detail);
    return fp8_emulated(be, d, q);
}

void amp_cuda_fp8_gemm_destroy(amp_backend *be) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (!im->lt) return;
    cublasStatus_t st = cublasLtDestroy(im->lt);
    if (st != CUBLAS_STATUS_SUCCESS)
        amp_log(AMP_LOG_WARN, "cuda: cublasLtDestroy failed: %s", cublasGetStatusName(st));
    im->lt = NULL;
}
