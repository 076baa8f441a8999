/* The fused fp8_gemm (backend.h) on the CUDA backend: a GEMM on FP8 codes
 * with per-tensor scales, or on MX32 operands (E8M0 block scales, blocks of
 * 32 along k). The paths, chosen per call and each named once in the log:
 *
 *   cuBLASLt FP8 (per tensor; sm_89 and later): the codes go to the tensor
 *   cores as CUDA_R_8F_E4M3 / CUDA_R_8F_E5M2 with the inverse scales as
 *   CUBLASLT_MATMUL_DESC_{A,B}_SCALE_POINTER, FP32 accumulation and an
 *   FP32 result; then the descriptor's epilogue. It needs cuBLASLt's FP8
 *   layout rules: the TN form (row-major A . B^T, what a Linear's forward
 *   is), dimensions and leading dimensions multiples of 16, 16-byte
 *   aligned operands, not E5M2 x E5M2, and an algorithm the heuristic finds.
 *
 *   cuBLASLt block-scaled MXFP8 (MX32; sm_100 and later, built against
 *   cuBLAS 12.8 or later): the same, with the scale modes
 *   CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0 and the block scales
 *   rearranged first into cuBLASLt's tiled layout (backend/kernels/
 *   mx_tiled.h, amp_k_mx_tile); m and n multiples of 16, k of 32 (whole
 *   blocks), the same alignment, and an algorithm the heuristic finds.
 *
 *   emulated (everywhere else): both operands dequantized into FP32
 *   (fp8_dequantize or mx_dequantize: the CPU's bits) and the FP32 gemm_ex:
 *   the composition the CPU's Linear runs, so it differs from the CPU only
 *   by the FP32 GEMM's summation order.
 *
 * nvfp4_gemm (NVFP4 operands, a Linear's forward) is here too, on the same
 * cuBLASLt call:
 *
 *   cuBLASLt block-scaled FP4 (sm_100 and later, cuBLAS 12.8 or later): the
 *   packed E2M1 codes as CUDA_R_4F_E2M1 (two per byte, the first element in
 *   the low nibble, as the nvfp4 ops pack them), the E4M3 block scales with
 *   CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3 in the tiled layout (a
 *   weight's 16x16 tiles expanded to its rows: nvfp4.h's
 *   amp_nvfp4_tiled_value), the two tensors' decode scales multiplied into
 *   alpha, FP32 accumulation and result; m and n multiples of 16, k of 32,
 *   leading dimensions k (16-byte rows of codes), 16-byte aligned operands,
 *   a product of the decode scales that is a normal FP32 number, and an
 *   algorithm the heuristic finds.
 *
 *   emulated (everywhere else): both operands nvfp4_dequantize'd into FP32
 *   and the FP32 gemm_ex, the composition the CPU's Linear runs.
 *
 * An E2M1 value times an E4M3 scale has at most 6 significant bits, so the
 * block-scaled GEMM's products are exact, as are the emulated path's
 * before its values are multiplied by the decode scale (rounded there,
 * once per element); the tensor scales enter the block-scaled sum once,
 * through alpha. The two paths differ by those roundings and by the
 * accumulation's order and rounding.
 *
 * The products of two FP8 values are exact in FP32 on every path, and so
 * are the power-of-two block scales; the tensor cores order their sums
 * their own way (on Hopper with fewer than FP32's bits between promotions
 * of the partial sums) and apply per-tensor scales after the sum, so a
 * cuBLASLt result equals the emulated one to the rounding of that
 * accumulation, not bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/cuda_testing.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/mx.h"
#include "backend/kernels/mx_tiled.h"
#include "backend/kernels/nvfp4.h"

extern "C" {
#include "util/log.h"
}

#define FP8_LT_WORKSPACE ((size_t)32 << 20)
#define FP8_SCALES_BYTES 256 /* the two device inverse scales, ahead of the workspace */

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
    /* MX32 operands */
    MX_NATIVE,
    MX_OLD_GPU,
    MX_OLD_CUBLAS,
    MX_DIMS,
    MX_LEADING,
    MX_NO_ALGO,
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
    "cuBLASLt block-scaled MXFP8 tensor cores (VEC32_UE8M0 scales in the tiled layout)",
    "the GPU is older than sm_100 (no block-scaled tensor cores)",
    "this build's cuBLAS headers predate the block-scaled GEMM (cuBLAS 12.8)",
    "m or n not a multiple of 16, or k not a positive multiple of 32 (whole blocks)",
    "a leading dimension not a multiple of 16 bytes, or an operand not 16-byte aligned",
    "cuBLASLt's heuristic found no block-scaled algorithm for it",
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

/* The same for MX32 operands (the caller checked the TN form, batch 1). */
static int mx_refusal(const amp_cuda_impl *im, const amp_gemm_desc *d) {
    if (im->cc < 100) return MX_OLD_GPU;
    if (!AMP_LT_BLOCK_SCALED) return MX_OLD_CUBLAS;
    if (d->m % 16 || d->n % 16 || d->k <= 0 || d->k % AMP_MX_BLOCK) return MX_DIMS;
    if (d->lda % 16 || d->ldb % 16 || d->ldc % 4) return MX_LEADING;
    if (((uintptr_t)d->a | (uintptr_t)d->b | (uintptr_t)d->acc) % 16) return MX_LEADING;
    return MX_NATIVE;
}

static void fp8_say(amp_backend *be, int why, const amp_gemm_desc *d, const char *detail) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (im->fp8_gemm_said & (1u << why)) return;
    im->fp8_gemm_said |= 1u << why;
    if (why == FP8_NATIVE || why == MX_NATIVE)
        amp_log(AMP_LOG_INFO,
                "cuda: fp8_gemm %sruns on %s (sm_%d; first shape m=%d n=%d k=%d); a Linear's dW "
                "and dX GEMMs stay emulated (FP32 cuBLAS on the dequantized operands)",
                why == MX_NATIVE ? "MX32 " : "", fp8_reason_text[why], im->cc, d->m, d->n, d->k);
    else if (why > FP8_NO_ALGO)
        amp_log(AMP_LOG_INFO,
                "cuda: fp8_gemm MX32 emulated (blocks dequantized to FP32, FP32 cuBLAS GEMM) "
                "where %s%s (sm_%d; first shape m=%d n=%d k=%d); said once",
                fp8_reason_text[why], detail, im->cc, d->m, d->n, d->k);
    else
        amp_log(AMP_LOG_INFO,
                "cuda: fp8_gemm emulated (codes dequantized to FP32, FP32 cuBLAS GEMM) where %s%s "
                "(sm_%d; first shape m=%d n=%d k=%d); said once",
                fp8_reason_text[why], detail, im->cc, d->m, d->n, d->k);
}

static cudaDataType_t fp8_type(int fmt) {
    return fmt == AMP_FP8_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

/* The scaled GEMMs' cuBLASLt call, its workspace the FP8_LT_WORKSPACE
 * bytes at ws (lt_matmul_cuda.cu). */
static int lt_matmul(amp_backend *be, const amp_gemm_desc *d, cudaDataType_t type_a,
                     cudaDataType_t type_b, float alpha, const void *scale_a, const void *scale_b,
                     int32_t mode, void *ws, const char **declined) {
    return amp_cuda_lt_matmul(be, d, type_a, type_b, alpha, scale_a, scale_b, mode, ws,
                              FP8_LT_WORKSPACE, declined);
}

/* The two inverse scales cuBLASLt multiplies by (cuBLASLt's A first: B's
 * scale), computed on the device from the launch's arguments: no host copy
 * and nothing to synchronise. amp_fp8_inv_scale is the CPU's float(1 /
 * scale), an IEEE division on both sides. */
__global__ void amp_k_fp8_inv_scales(float *inv, float scale_lt_a, float scale_lt_b) {
    inv[0] = amp_fp8_inv_scale(scale_lt_a);
    inv[1] = amp_fp8_inv_scale(scale_lt_b);
}

/* The per-tensor FP8 GEMM: cuBLASLt multiplies by the inverses of the
 * quantize scales, written by amp_k_fp8_inv_scales ahead of the workspace
 * and passed as device scale pointers. */
static int fp8_native(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q,
                      const char **declined) {
    amp_cuda_impl *im = amp_cuda_im(be);
    void *p;
    if (amp_cuda_scratch(be, FP8_SCALES_BYTES + FP8_LT_WORKSPACE, &p)) return 1;
    float *inv = (float *)p;
    amp_k_fp8_inv_scales<<<1, 1, 0, im->stream>>>(inv, q->b_scale, q->a_scale);
    AMP_CHECK_LAUNCH(amp_k_fp8_inv_scales);
    return lt_matmul(be, d, fp8_type(q->b_fmt), fp8_type(q->a_fmt), d->alpha, inv, inv + 1, 0,
                     (char *)p + FP8_SCALES_BYTES, declined);
}

#if AMP_LT_BLOCK_SCALED
/* MX32 scales [rows][kb] into cuBLASLt's tiled layout, every padded
 * position written (the padding 0): one thread per position, the index
 * and value of backend/kernels/mx_tiled.h. */
__global__ void amp_k_mx_tile(uint8_t *tiled, const uint8_t *scales, size_t rows, size_t kb,
                              size_t positions) {
    size_t pc = amp_mx_tiled_cols(kb);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < positions;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / pc, c = i % pc;
        tiled[amp_mx_tiled_index(row, c, kb)] = amp_mx_tiled_value(scales, rows, kb, row, c);
    }
}

static int mx_tile(amp_backend *be, uint8_t *tiled, const uint8_t *scales, size_t rows,
                   size_t kb) {
    amp_cuda_impl *im = amp_cuda_im(be);
    size_t positions = amp_mx_tiled_bytes(rows, kb), want = (positions + 255) / 256;
    if (positions == 0) return 0;
    size_t cap = (size_t)(im->sm_count > 0 ? im->sm_count : 1) * 8;
    amp_k_mx_tile<<<(unsigned)(want < cap ? want : cap), 256, 0, im->stream>>>(tiled, scales, rows,
                                                                             kb, positions);
    AMP_CHECK_LAUNCH(amp_k_mx_tile);
    return 0;
}

/* cuBLASLt's block-scaled MXFP8 GEMM into d->acc (no epilogue), declined as
 * fp8_native is. The scales are tiled into scratch after the workspace
 * (each a whole number of 512-byte tiles, so both stay 16-byte aligned).
 * cuBLASLt's A is d->b (W [n, k]: its scales have n rows), its B is d->a
 * (X [m, k]: m rows); each operand's scales go with it. */
static int mx_native(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q,
                     const char **declined) {
    size_t kb = (size_t)d->k / AMP_MX_BLOCK;
    size_t ta = amp_mx_tiled_bytes((size_t)d->m, kb), tb = amp_mx_tiled_bytes((size_t)d->n, kb);
    void *p;
    if (amp_cuda_scratch(be, FP8_LT_WORKSPACE + ta + tb, &p)) return 1;
    uint8_t *tiled_a = (uint8_t *)p + FP8_LT_WORKSPACE, *tiled_b = tiled_a + ta;
    if (mx_tile(be, tiled_a, q->a_mx, (size_t)d->m, kb) ||
        mx_tile(be, tiled_b, q->b_mx, (size_t)d->n, kb))
        return 1;
    int32_t mode = (int32_t)CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0;
    return lt_matmul(be, d, fp8_type(q->b_fmt), fp8_type(q->a_fmt), d->alpha, tiled_b, tiled_a,
                     mode, p, declined);
}
#else
static int mx_native(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q,
                     const char **declined) {
    (void)be, (void)d, (void)q; /* mx_refusal answers MX_OLD_CUBLAS first */
    *declined = "this build's cuBLAS headers lack the block-scaled GEMM";
    return 0;
}
#endif

/* The descriptor's GEMM (and epilogue) with FP32 operands a and b in place
 * of its codes: the emulated paths' last step. */
static int gemm_f32(amp_backend *be, const amp_gemm_desc *d, const float *a, const float *b) {
    amp_gemm_desc g = *d;
    g.a = a;
    g.b = b;
    g.in_dtype = AMP_DTYPE_F32;
    return be->ops->gemm_ex(be, &g);
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
    if (q->a_mx) { /* MX32: A [m, k] and B [n, k], blocks along k */
        amp_mx_desc ma = {d->m, d->k, q->a_fmt, 0}, mb = {d->n, d->k, q->b_fmt, 0};
        if (amp_cuda_scaled_ops.mx_dequantize(be, a, (const uint8_t *)d->a, q->a_mx, &ma) ||
            amp_cuda_scaled_ops.mx_dequantize(be, b, (const uint8_t *)d->b, q->b_mx, &mb))
            return 1;
    } else if (amp_cuda_fp8_dequantize(be, a, (const uint8_t *)d->a, na, q->a_scale, q->a_fmt) ||
               amp_cuda_fp8_dequantize(be, b, (const uint8_t *)d->b, nb, q->b_scale, q->b_fmt))
        return 1;
    return gemm_f32(be, d, a, b);
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
    int mx = q->a_mx != NULL;
    if (mx != (q->b_mx != NULL)) {
        snprintf(be->err, sizeof be->err,
                 "cuda fp8_gemm: MX32 scales for %s only (both operands MX32, or neither)",
                 mx ? "A" : "B");
        return 1;
    }
    if (mx && (d->batch != 1 || d->trans_a || !d->trans_b)) {
        snprintf(be->err, sizeof be->err,
                 "cuda fp8_gemm: MX32 operands take one GEMM of the TN form (A [m, k], B [n, k], "
                 "blocks along k); got batch %d, trans_a %d, trans_b %d",
                 d->batch, d->trans_a, d->trans_b);
        return 1;
    }
    if (d->m <= 0 || d->n <= 0) return 0;
    amp_cuda_impl *im = amp_cuda_im(be);
    int why = mx ? mx_refusal(im, d) : fp8_refusal(im, d, q);
    char detail[96] = "";
    if (why == FP8_NATIVE || why == MX_NATIVE) {
        const char *declined;
        if ((mx ? mx_native(be, d, q, &declined) : fp8_native(be, d, q, &declined)) != 0)
            return 1;
        if (!declined) {
            im->fp8_gemm_last = why;
            fp8_say(be, why, d, "");
            return d->bias || d->out ? amp_cuda_gemm_epilogue(be, d, d->acc, 0) : 0;
        }
        why = mx ? MX_NO_ALGO : FP8_NO_ALGO;
        snprintf(detail, sizeof detail, " (%s)", declined);
    }
    im->fp8_gemm_last = why;
    fp8_say(be, why, d, detail);
    return fp8_emulated(be, d, q);
}

/* ---- nvfp4_gemm ---- */

/* Why an nvfp4_gemm call cannot take the block-scaled path: each named
 * once in the log (bit i of im->nvfp4_gemm_said). */
enum { NV_NATIVE = 0, NV_OLD_GPU, NV_OLD_CUBLAS, NV_DIMS, NV_LEADING, NV_SCALES, NV_NO_ALGO,
       NV_REASONS };

static const char *const nv_reason_text[NV_REASONS] = {
    "cuBLASLt block-scaled FP4 tensor cores (E2M1 codes, VEC16_UE4M3 scales in the tiled layout)",
    "the GPU is older than sm_100 (no block-scaled tensor cores)",
    "this build's cuBLAS headers predate the block-scaled GEMM (cuBLAS 12.8)",
    "m or n not a multiple of 16, or k not a positive multiple of 32",
    "a leading dimension other than k (16-byte rows of codes) or ldc not a multiple of 4, or an "
    "operand not 16-byte aligned",
    "the product of the tensors' decode scales is not a normal FP32 number",
    "cuBLASLt's heuristic found no block-scaled FP4 algorithm for it",
};

static int nv_refusal(const amp_cuda_impl *im, const amp_gemm_desc *d, float alpha) {
    if (im->cc < 100) return NV_OLD_GPU;
    if (!AMP_LT_BLOCK_SCALED) return NV_OLD_CUBLAS;
    if (d->m % 16 || d->n % 16 || d->k <= 0 || d->k % 32) return NV_DIMS;
    if (d->lda != d->k || d->ldb != d->k || d->ldc % 4) return NV_LEADING;
    if (((uintptr_t)d->a | (uintptr_t)d->b | (uintptr_t)d->acc) % 16) return NV_LEADING;
    if (!isnormal(alpha) && alpha != 0.0f) return NV_SCALES;
    if (alpha == 0.0f && d->alpha != 0.0f) return NV_SCALES;
    return NV_NATIVE;
}

static void nv_say(amp_backend *be, int why, const amp_gemm_desc *d, const char *detail) {
    amp_cuda_impl *im = amp_cuda_im(be);
    if (im->nvfp4_gemm_said & (1u << why)) return;
    im->nvfp4_gemm_said |= 1u << why;
    if (why == NV_NATIVE)
        amp_log(AMP_LOG_INFO,
                "cuda: nvfp4_gemm runs on %s (sm_%d; first shape m=%d n=%d k=%d); a Linear's dW "
                "and dX GEMMs stay emulated (FP32 cuBLAS on the dequantized operands)",
                nv_reason_text[why], im->cc, d->m, d->n, d->k);
    else
        amp_log(AMP_LOG_INFO,
                "cuda: nvfp4_gemm emulated (codes dequantized to FP32, FP32 cuBLAS GEMM) where "
                "%s%s (sm_%d; first shape m=%d n=%d k=%d); said once",
                nv_reason_text[why], detail, im->cc, d->m, d->n, d->k);
}

#if AMP_LT_BLOCK_SCALED
/* An NVFP4 operand's E4M3 scales (layout `blocks`) into cuBLASLt's tiled
 * layout, every padded position written (the padding 0): one thread per
 * position, the index of mx_tiled.h and the value of nvfp4.h. */
__global__ void amp_k_nv_tile(uint8_t *tiled, const uint8_t *scales, size_t rows, size_t cols,
                              int blocks, size_t positions) {
    size_t kb = (cols + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK, pc = amp_mx_tiled_cols(kb);
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < positions;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t row = i / pc, c = i % pc;
        tiled[amp_mx_tiled_index(row, c, kb)] =
            amp_nvfp4_tiled_value(scales, rows, cols, blocks, row, c);
    }
}

static int nv_tile(amp_backend *be, uint8_t *tiled, const uint8_t *scales, size_t rows,
                   size_t cols, int blocks) {
    amp_cuda_impl *im = amp_cuda_im(be);
    size_t kb = (cols + AMP_NVFP4_BLOCK - 1) / AMP_NVFP4_BLOCK;
    size_t positions = amp_mx_tiled_bytes(rows, kb), want = (positions + 255) / 256;
    if (positions == 0) return 0;
    size_t cap = (size_t)(im->sm_count > 0 ? im->sm_count : 1) * 8;
    amp_k_nv_tile<<<(unsigned)(want < cap ? want : cap), 256, 0, im->stream>>>(
        tiled, scales, rows, cols, blocks, positions);
    AMP_CHECK_LAUNCH(amp_k_nv_tile);
    return 0;
}

/* cuBLASLt's block-scaled FP4 GEMM into d->acc (no epilogue), declined as
 * fp8_native is; alpha = d->alpha times both decode scales. The scales are
 * tiled into scratch after the workspace (whole 512-byte tiles, so both
 * stay 16-byte aligned). cuBLASLt's A is d->b (W [n, k]), its B is d->a
 * (X [m, k]); each operand's scales go with it. */
static int nv_native(amp_backend *be, const amp_gemm_desc *d, const amp_nvfp4_gemm_operands *q,
                     float alpha, const char **declined) {
    size_t kb = (size_t)d->k / AMP_NVFP4_BLOCK;
    size_t ta = amp_mx_tiled_bytes((size_t)d->m, kb), tb = amp_mx_tiled_bytes((size_t)d->n, kb);
    void *p;
    if (amp_cuda_scratch(be, FP8_LT_WORKSPACE + ta + tb, &p)) return 1;
    uint8_t *tiled_a = (uint8_t *)p + FP8_LT_WORKSPACE, *tiled_b = tiled_a + ta;
    if (nv_tile(be, tiled_a, q->a_scales, (size_t)d->m, (size_t)d->k, AMP_NVFP4_ROWS) ||
        nv_tile(be, tiled_b, q->b_scales, (size_t)d->n, (size_t)d->k, q->b_blocks))
        return 1;
    int32_t mode = (int32_t)CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3;
    return lt_matmul(be, d, CUDA_R_4F_E2M1, CUDA_R_4F_E2M1, alpha, tiled_b, tiled_a, mode, p,
                     declined);
}
#else
static int nv_native(amp_backend *be, const amp_gemm_desc *d, const amp_nvfp4_gemm_operands *q,
                     float alpha, const char **declined) {
    (void)be, (void)d, (void)q, (void)alpha; /* nv_refusal answers NV_OLD_CUBLAS first */
    *declined = "this build's cuBLAS headers lack the block-scaled GEMM";
    return 0;
}
#endif

/* Both operands nvfp4_dequantize'd into scratch, then the FP32 gemm_ex
 * with the descriptor's epilogue: the CPU's composition. */
static int nv_emulated(amp_backend *be, const amp_gemm_desc *d, const amp_nvfp4_gemm_operands *q) {
    if (d->lda != d->k || d->ldb != d->k) {
        snprintf(be->err, sizeof be->err,
                 "cuda nvfp4_gemm: the emulated path takes densely stored operands (lda %d, ldb "
                 "%d for k=%d)",
                 d->lda, d->ldb, d->k);
        return 1;
    }
    size_t na = (size_t)d->m * (size_t)d->k, nb = (size_t)d->n * (size_t)d->k;
    void *p;
    if (amp_cuda_scratch(be, (na + nb) * sizeof(float), &p)) return 1;
    float *a = (float *)p, *b = a + na;
    amp_nvfp4_desc da = {d->m, d->k, AMP_NVFP4_ROWS, 0, 0, 0, 0};
    amp_nvfp4_desc db = {d->n, d->k, q->b_blocks, 0, 0, 0, 0};
    if (amp_cuda_scaled_ops.nvfp4_dequantize(be, a, (const uint8_t *)d->a, q->a_scales, q->a_s_dec,
                                             &da) ||
        amp_cuda_scaled_ops.nvfp4_dequantize(be, b, (const uint8_t *)d->b, q->b_scales, q->b_s_dec,
                                             &db))
        return 1;
    return gemm_f32(be, d, a, b);
}

int amp_cuda_nvfp4_gemm(amp_backend *be, const amp_gemm_desc *d,
                        const amp_nvfp4_gemm_operands *q) {
    if (amp_gemm_desc_check(be, d) != 0) return 1;
    if (d->batch != 1 || d->trans_a || !d->trans_b ||
        (q->b_blocks != AMP_NVFP4_ROWS && q->b_blocks != AMP_NVFP4_TILES)) {
        snprintf(be->err, sizeof be->err,
                 "cuda nvfp4_gemm: takes one GEMM of the TN form (A [m, k], B [n, k], blocks of "
                 "16 along k or B's 16x16 tiles); got batch %d, trans_a %d, trans_b %d, B's "
                 "blocks %d",
                 d->batch, d->trans_a, d->trans_b, q->b_blocks);
        return 1;
    }
    amp_cuda_impl *im = amp_cuda_im(be);
    im->nvfp4_gemm_last = -1; /* no path yet */
    if (d->m <= 0 || d->n <= 0) return 0;
    float alpha = d->alpha * q->a_s_dec * q->b_s_dec;
    int why = nv_refusal(im, d, alpha);
    char detail[96] = "";
    if (why == NV_NATIVE) {
        const char *declined;
        if (nv_native(be, d, q, alpha, &declined) != 0) return 1;
        if (!declined) {
            im->nvfp4_gemm_last = why;
            nv_say(be, why, d, "");
            return d->bias || d->out ? amp_cuda_gemm_epilogue(be, d, d->acc, 0) : 0;
        }
        why = NV_NO_ALGO;
        snprintf(detail, sizeof detail, " (%s)", declined);
    }
    im->nvfp4_gemm_last = why;
    nv_say(be, why, d, detail);
    return nv_emulated(be, d, q);
}

extern "C" int amp_cuda_test_nvfp4_gemm_block_scaled(amp_backend *be) {
    return amp_cuda_im(be)->nvfp4_gemm_last == NV_NATIVE;
}

extern "C" int amp_cuda_test_compute_capability(amp_backend *be) { return amp_cuda_im(be)->cc; }

extern "C" int amp_cuda_test_fp8_gemm_block_scaled(amp_backend *be) {
    return amp_cuda_im(be)->fp8_gemm_last == MX_NATIVE;
}

extern "C" int amp_cuda_test_fp8_gemm_native(amp_backend *be) {
    return amp_cuda_im(be)->fp8_gemm_last == FP8_NATIVE;
}
