/* The nvfp4_gemm rows of tests/test_gpu_nvfp4.c (any GPU, whichever path
 * the backend takes) and tests/test_gpu_nvfp4_gemm.c (sm_100 and later,
 * where the cuBLASLt-shaped rows must take the block-scaled path): the
 * device's nvfp4_gemm on NVFP4 codes and block scales against the CPU's
 * composition (nvfp4_dequantize both operands, FP32 GEMM, the same bias +
 * GELU epilogue), as a Linear's forward Y[m, n] = X[m, k] . W[n, k]^T: X in
 * 1x16 blocks along k, W in 1x16 blocks along k or in 16x16 tiles.
 *
 * The inputs are in [-1, 1) with each block of 16 along k scaled by its own
 * power of two (2^0 to 2^-8, by row and block), so the E4M3 block scales
 * differ by factors of 2 and more from block to block and row to row (and
 * stay normal E4M3 numbers): a scale read from the wrong place in the tiled
 * layout, a nibble read in the wrong order or a missing tensor scale moves
 * a product by a factor of 2 or more, an error of order 0.1 to 1.
 *
 * The tolerance, derived: a dequantized value is at most ~1.07 in
 * magnitude (a block's largest code is 6 times its E4M3 scale, which RNE
 * can lift by up to 1/16 above the block's amax <= 1), a product at most
 * ~1.15. E2M1 value times E4M3 scale has at most 6 significant bits, so the
 * block-scaled GEMM's products are exact; the composition rounds each
 * dequantized value once by its decode scale (2^-24 relative) and the
 * block-scaled path applies both decode scales once, in alpha (two
 * roundings of 2^-24 relative of the result): together at most ~1.4e-7 *
 * k. The rest is the accumulation, summed in another order and, on the
 * tensor cores, rounded their own way between partial sums; it is given
 * fp8_gemm's bound, 2e-5 * k absolute (+ 1e-6 relative), over 100 times the
 * scale roundings' share and far below a misplaced scale's error. Header
 * only; include after gpu_rows.h. */
#ifndef AMP_TESTS_NVFP4_GEMM_ROWS_H
#define AMP_TESTS_NVFP4_GEMM_ROWS_H

#include "backend/kernels/nvfp4.h"
#include "gpu_rows.h"

#if AMP_HAVE_CUDA
#include "backend/cuda/cuda_testing.h"
#endif

/* 1: a row whose shape fits cuBLASLt's block-scaled FP4 GEMM must have run
 * on it and every other row must not (test_gpu_nvfp4_gemm, sm_100 and
 * later). */
static int nv_gemm_require_path;
/* whether the last GEMM ran block-scaled (the CUDA backend's test hook) */
#if AMP_HAVE_CUDA
static int (*const nv_gemm_blocked)(amp_backend *) = amp_cuda_test_nvfp4_gemm_block_scaled;
#else
static int (*const nv_gemm_blocked)(amp_backend *) = NULL;
#endif

/* [rows, k] in [-1, 1), block b (of 16) of row i scaled by 2^-((i * a + b * c) % 9). */
static float *nv_gemm_inputs(int rows, int k, int a, int c) {
    float *v = rows_random((size_t)rows * (size_t)k, -1.0f, 1.0f);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < k; j++)
            v[(size_t)i * k + j] *= ldexpf(1.0f, -((i * a + j / AMP_NVFP4_BLOCK * c) % 9));
    return v;
}

/* One operand [rows, k] on the CPU: codes, scales (layout `blocks`),
 * decode scale and the dequantized values. */
typedef struct nv_gemm_operand {
    uint8_t *codes, *scales;
    float s_dec, *deq;
    size_t ncodes, nscales;
} nv_gemm_operand;

static nv_gemm_operand nv_gemm_quantize(const float *x, int rows, int k, int blocks) {
    nv_gemm_operand o;
    amp_nvfp4_desc d = {rows, k, blocks, 0, 0, 0, 0};
    size_t n = (size_t)rows * (size_t)k;
    o.ncodes = (n + 1) / 2;
    o.nscales = amp_nvfp4_block_count((size_t)rows, (size_t)k, blocks);
    o.codes = rows_alloc(o.ncodes);
    o.scales = rows_alloc(o.nscales);
    o.deq = rows_alloc(n * 4);
    rows_ok(AMP_SCALED(rows_cpu, nvfp4_quantize, o.codes, o.scales, &o.s_dec, x, &d, NULL, NULL),
            rows_cpu, "nvfp4_quantize");
    rows_ok(AMP_SCALED(rows_cpu, nvfp4_dequantize, o.deq, o.codes, o.scales, o.s_dec, &d),
            rows_cpu, "nvfp4_dequantize");
    return o;
}

/* shape: m, n, k, W's block layout, 1 when cuBLASLt-shaped (m, n
 * multiples of 16, k of 32). */
static void nv_gemm_row(const amp_gpu_row *r) {
    int m = r->shape[0], n = r->shape[1], k = r->shape[2], wb = r->shape[3];
    size_t nc = (size_t)m * n;
    float *x = nv_gemm_inputs(m, k, 5, 3), *w = nv_gemm_inputs(n, k, 3, 7);
    float *bias = rows_random((size_t)n, -1.0f, 1.0f);
    nv_gemm_operand qa = nv_gemm_quantize(x, m, k, AMP_NVFP4_ROWS);
    nv_gemm_operand qb = nv_gemm_quantize(w, n, k, wb);
    /* the CPU's composition: dequantize, FP32 GEMM, the same epilogue */
    float *acc = rows_alloc(nc * 4), *want = rows_alloc(nc * 4), *want_act = rows_alloc(nc * 4);
    amp_gemm_desc g = rows_linear_gemm(acc, qa.deq, qb.deq, m, n, k, bias, want, want_act);
    rows_ok(AMP_CALL(rows_cpu, gemm_ex, &g), rows_cpu, "gemm_ex");
    /* the device's nvfp4_gemm on the same codes and scales */
    void *dca = rows_to_dev(qa.codes, qa.ncodes), *dcb = rows_to_dev(qb.codes, qb.ncodes);
    void *dsa = rows_to_dev(qa.scales, qa.nscales), *dsb = rows_to_dev(qb.scales, qb.nscales);
    void *dbias = rows_to_dev(bias, (size_t)n * 4);
    float *dacc = rows_nan_dev(nc * 4), *dpre = rows_nan_dev(nc * 4), *dact = rows_nan_dev(nc * 4);
    amp_gemm_desc h = rows_linear_gemm(dacc, dca, dcb, m, n, k, dbias, dpre, dact);
    amp_nvfp4_gemm_operands q = {(const uint8_t *)dsa, (const uint8_t *)dsb, wb, qa.s_dec,
                                 qb.s_dec};
    rows_ok(AMP_FUSED(rows_dev, nvfp4_gemm, &h, &q), rows_dev, "nvfp4_gemm");
    rows_block_scaled_end(r->name, "nvfp4_gemm", nv_gemm_require_path, nv_gemm_blocked,
                          r->shape[4], dpre, want, nc, k);
    rows_release(dca), rows_release(dcb), rows_release(dsa), rows_release(dsb),
        rows_release(dbias), rows_release(dacc), rows_release(dact);
    free(x), free(w), free(bias), free(qa.codes), free(qa.scales), free(qa.deq), free(qb.codes),
        free(qb.scales), free(qb.deq), free(acc), free(want), free(want_act);
}

#define NV_GEMM(name, m, n, k, wb, fits)                                                           \
    {name, nv_gemm_row, {m, n, k, wb, fits}, .dt = AMP_DTYPE_F32, .needs = "nvfp4_gemm"}

/* cuBLASLt-shaped (whole tiles of scales, W in rows or 16x16 tiles, padded
 * tiles) and not (k not a multiple of 32; a short last block). */
#define NV_GEMM_ROWS                                                                               \
    NV_GEMM("nvfp4_gemm 128x256x512 w 1x16", 128, 256, 512, AMP_NVFP4_ROWS, 1),                    \
        NV_GEMM("nvfp4_gemm 64x128x256 w 16x16 tiles", 64, 128, 256, AMP_NVFP4_TILES, 1),          \
        NV_GEMM("nvfp4_gemm 144x48x96 padded scale tiles", 144, 48, 96, AMP_NVFP4_TILES, 1),       \
        NV_GEMM("nvfp4_gemm 32x32x48 k not a multiple of 32", 32, 32, 48, AMP_NVFP4_ROWS, 0),      \
        NV_GEMM("nvfp4_gemm 100x60x70 short blocks", 100, 60, 70, AMP_NVFP4_TILES, 0)

#endif
