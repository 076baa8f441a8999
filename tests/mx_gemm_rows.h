/* The MX32 fp8_gemm rows of tests/test_gpu_fp8.c (any GPU, whichever path
 * the backend takes) and tests/test_gpu_mx_gemm.c (sm_100 and later, where
 * the cuBLASLt-shaped rows must take the block-scaled path): the device's
 * fp8_gemm on MX32 codes and block scales against the CPU's composition
 * (mx_dequantize both operands, FP32 GEMM, the same bias + GELU epilogue).
 *
 * The inputs are in [-1, 1] with each block of 32 along k scaled by its own
 * power of two (2^0 to 2^-12, by row and block), so the block scales differ
 * from block to block and from row to row: a scale read from the wrong
 * place in the tiled layout moves a product by a factor of 2 or more. The
 * products of dequantized values are exact in FP32 on both sides (FP8
 * values times powers of two) and at most ~1.3 in magnitude; the sums
 * differ in order and in how the tensor cores round between their partial
 * sums, so the stated tolerance is 2e-5 * k absolute (+ 1e-6 relative),
 * as for the per-tensor rows; a wrong scale or layout errs by order 0.1
 * to 1. Header only; include after gpu_rows.h. */
#ifndef AMP_TESTS_MX_GEMM_ROWS_H
#define AMP_TESTS_MX_GEMM_ROWS_H

#include "backend/kernels/mx.h"
#include "gpu_rows.h"

#if AMP_HAVE_CUDA
#include "backend/cuda/cuda_testing.h"
#endif

/* 1: a row whose shape fits cuBLASLt's block-scaled GEMM must have run on
 * it and every other row must not (test_gpu_mx_gemm, sm_100 and later). */
static int mx_gemm_require_path;
/* whether the last GEMM ran block-scaled (the CUDA backend's test hook) */
#if AMP_HAVE_CUDA
static int (*const mx_gemm_blocked)(amp_backend *) = amp_cuda_test_fp8_gemm_block_scaled;
#else
static int (*const mx_gemm_blocked)(amp_backend *) = NULL;
#endif

/* [rows, k] in [-1, 1), block b of row i scaled by 2^-((i * a + b * c) % 13). */
static float *mx_gemm_inputs(int rows, int k, int a, int c) {
    float *v = rows_random((size_t)rows * (size_t)k, -1.0f, 1.0f);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < k; j++)
            v[(size_t)i * k + j] *= ldexpf(1.0f, -((i * a + j / AMP_MX_BLOCK * c) % 13));
    return v;
}

/* shape: m, n, k, A's format, B's format, 1 when cuBLASLt-shaped (m, n
 * multiples of 16, k of 32). Y[m, n] = X[m, k] . W[n, k]^T as a Linear's
 * forward, with bias and GELU in the epilogue. */
static void mx_gemm_row(const amp_gpu_row *r) {
    int m = r->shape[0], n = r->shape[1], k = r->shape[2], fa = r->shape[3], fb = r->shape[4];
    size_t na = (size_t)m * k, nb = (size_t)n * k, nc = (size_t)m * n;
    amp_mx_desc xa = {m, k, fa, 0}, xb = {n, k, fb, 0};
    size_t sa_n = amp_mx_block_count((size_t)m, (size_t)k, 0);
    size_t sb_n = amp_mx_block_count((size_t)n, (size_t)k, 0);
    float *x = mx_gemm_inputs(m, k, 5, 3), *w = mx_gemm_inputs(n, k, 3, 7);
    float *bias = rows_random((size_t)n, -1.0f, 1.0f);
    uint8_t *qa = rows_alloc(na), *qb = rows_alloc(nb), *sa = rows_alloc(sa_n),
            *sb = rows_alloc(sb_n);
    rows_ok(AMP_SCALED(rows_cpu, mx_quantize, qa, sa, x, &xa, NULL), rows_cpu, "mx_quantize");
    rows_ok(AMP_SCALED(rows_cpu, mx_quantize, qb, sb, w, &xb, NULL), rows_cpu, "mx_quantize");
    /* the CPU's composition: dequantize, FP32 GEMM, the same epilogue */
    float *da = rows_alloc(na * 4), *db = rows_alloc(nb * 4), *acc = rows_alloc(nc * 4);
    float *want = rows_alloc(nc * 4), *want_act = rows_alloc(nc * 4);
    rows_ok(AMP_SCALED(rows_cpu, mx_dequantize, da, qa, sa, &xa), rows_cpu, "mx_dequantize");
    rows_ok(AMP_SCALED(rows_cpu, mx_dequantize, db, qb, sb, &xb), rows_cpu, "mx_dequantize");
    amp_gemm_desc g = rows_linear_gemm(acc, da, db, m, n, k, bias, want, want_act);
    rows_ok(AMP_CALL(rows_cpu, gemm_ex, &g), rows_cpu, "gemm_ex");
    /* the device's fp8_gemm on the same codes and scales */
    void *dqa = rows_to_dev(qa, na), *dqb = rows_to_dev(qb, nb);
    void *dsa = rows_to_dev(sa, sa_n), *dsb = rows_to_dev(sb, sb_n);
    void *dbias = rows_to_dev(bias, (size_t)n * 4);
    float *dacc = rows_nan_dev(nc * 4), *dpre = rows_nan_dev(nc * 4), *dact = rows_nan_dev(nc * 4);
    amp_gemm_desc h = rows_linear_gemm(dacc, dqa, dqb, m, n, k, dbias, dpre, dact);
    amp_fp8_gemm_operands q = {fa, fb, 0.0f, 0.0f, (const uint8_t *)dsa, (const uint8_t *)dsb};
    rows_ok(AMP_FUSED(rows_dev, fp8_gemm, &h, &q), rows_dev, "fp8_gemm");
    rows_block_scaled_end(r->name, "fp8_gemm", mx_gemm_require_path, mx_gemm_blocked,
                          r->shape[5], dpre, want, nc, k);
    rows_release(dqa), rows_release(dqb), rows_release(dsa), rows_release(dsb),
        rows_release(dbias), rows_release(dacc), rows_release(dact);
    free(x), free(w), free(bias), free(qa), free(qb), free(sa), free(sb), free(da), free(db),
        free(acc), free(want), free(want_act);
}

#define MX_GEMM(name, m, n, k, fa, fb, fits)                                                       \
    {name, mx_gemm_row, {m, n, k, fa, fb, fits}, .dt = AMP_DTYPE_F32, .needs = "fp8_gemm"}

/* cuBLASLt-shaped (one with whole tiles of scales, one with padded tiles)
 * and not (k not a multiple of 32: short last blocks, emulated everywhere). */
#define MX_GEMM_ROWS                                                                               \
    MX_GEMM("fp8_gemm mx32 e4m3 x e4m3 128x256x512", 128, 256, 512, 0, 0, 1),                      \
        MX_GEMM("fp8_gemm mx32 e5m2 x e4m3 64x128x256", 64, 128, 256, 1, 0, 1),                    \
        MX_GEMM("fp8_gemm mx32 e4m3 x e4m3 144x48x96 padded scale tiles", 144, 48, 96, 0, 0, 1),   \
        MX_GEMM("fp8_gemm mx32 e4m3 x e4m3 100x60x70 short blocks", 100, 60, 70, 0, 0, 0)

#endif
