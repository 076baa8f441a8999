/* The CUDA backend's "scaled" family against the CPU backend's on the same
 * inputs, one row per op, format and shape (gpu_rows.h):
 *   - fp8 quantize / qdq / dequantize / amax: codes, decoded values, amax
 *     and counts bit for bit (random FP32 bit patterns, which cover NaN,
 *     inf, subnormals and saturation, and plain values), several scales;
 *     the stats merge into a record that already holds a step's values;
 *   - MX32 quantize / dequantize / qdq, blocks along rows and down columns,
 *     with short last blocks: elements, scale bytes and counts bit for bit;
 *   - fp8_gemm (the fused FP8 GEMM: cuBLASLt on sm_89+ where the shape
 *     allows, and there required: an emulated row fails; else the emulated
 *     path) against the CPU's composition
 *     (dequantize both operands, FP32 GEMM): the products are exact in FP32
 *     on both sides, only the sums differ (their order; and Hopper's FP8
 *     tensor cores keep fewer than FP32's bits between promotions of the
 *     partial sums), so the stated tolerance is 2e-5 * k absolute with
 *     inputs scaled to |v| <= 1: far below what a wrong scale, format or
 *     layout gives (errors of order 1);
 *   - fp8_gemm on MX32 operands (tests/mx_gemm_rows.h): block-scaled on
 *     sm_100 and later where the shape fits, emulated elsewhere, against
 *     the CPU's mx_dequantize + FP32 GEMM within the same 2e-5 * k.
 * Skips (77) without a device; --self-check runs every row but fp8_gemm
 * (the CPU has none) with a second CPU backend as the device. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/fp8.h"
#include "backend/kernels/mx.h"
#include "gpu_rows.h"
#include "mx_gemm_rows.h"
#if AMP_HAVE_CUDA
#include "backend/cuda/cuda_testing.h"
#endif

#define N ((1 << 20) + 77)

/* Kind 0: random FP32 bit patterns; kind 1: values in [-500, 500). */
static float *fp8_inputs(int kind, size_t n) {
    float *x = rows_alloc(n * sizeof *x);
    uint32_t s = 7 + (uint32_t)kind;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = kind ? ((float)(s >> 8) / 16777216.0f - 0.5f) * 1000.0f : amp_f32_from_bits(s);
    }
    return x;
}

static const float fp8_scales[] = {1.0f, 3.7f, 0x1p-20f, 0x1p20f, 0.0f};
#define NSCALES (sizeof fp8_scales / sizeof *fp8_scales)

/* A step record as a step's earlier quantizes left it. */
static const amp_fp8_stats stats_before = {2.5f, 1, 2, 3};

static void expect_stats(const char *what, const amp_fp8_stats *dev, const amp_fp8_stats *cpu) {
    EXPECT(amp_f32_bits(dev->amax) == amp_f32_bits(cpu->amax) && dev->saturated == cpu->saturated &&
               dev->flushed == cpu->flushed && dev->nan == cpu->nan,
           "%s: amax %.9g/%.9g saturated %llu/%llu flushed %llu/%llu nan %llu/%llu (device/cpu)",
           what, (double)dev->amax, (double)cpu->amax, dev->saturated, cpu->saturated,
           dev->flushed, cpu->flushed, dev->nan, cpu->nan);
}

/* shape: input kind, format (0 e4m3, 1 e5m2), 1 for qdq in place of quantize. */
static void fp8_row(const amp_gpu_row *r) {
    int kind = r->shape[0], fmt = r->shape[1], qdq = r->shape[2];
    float *x = fp8_inputs(kind, N);
    float *dx = rows_to_dev(x, N * sizeof *x);
    for (size_t si = 0; si < NSCALES; si++) {
        float scale = fp8_scales[si];
        char what[96];
        snprintf(what, sizeof what, "%s scale %g", r->name, (double)scale);
        amp_fp8_stats ref = stats_before;
        amp_fp8_stats *dst = rows_to_dev(&stats_before, sizeof stats_before);
        if (qdq) {
            float *want = rows_alloc(N * sizeof *want);
            float *dy = rows_to_dev(x, N * sizeof *x); /* in place: y = x */
            rows_ok(AMP_SCALED(rows_cpu, fp8_qdq, want, x, N, scale, fmt, &ref), rows_cpu,
                    "fp8_qdq");
            rows_ok(AMP_SCALED(rows_dev, fp8_qdq, dy, dy, N, scale, fmt, dst), rows_dev, "fp8_qdq");
            float *got = rows_take_dev(dy, N * sizeof *got);
            rows_cmp(what, got, want, N, AMP_DTYPE_F32, ROWS_EXACT);
            free(want), free(got);
        } else {
            uint8_t *want = rows_alloc(N), *dq = rows_to_dev(x, N); /* any bytes: overwritten */
            rows_ok(AMP_SCALED(rows_cpu, fp8_quantize, want, x, N, scale, fmt, &ref), rows_cpu,
                    "fp8_quantize");
            rows_ok(AMP_SCALED(rows_dev, fp8_quantize, dq, dx, N, scale, fmt, dst), rows_dev,
                    "fp8_quantize");
            uint8_t *got = rows_take_dev(dq, N);
            rows_cmp_bytes(what, got, want, N);
            free(want), free(got);
        }
        amp_fp8_stats *st = rows_take_dev(dst, sizeof *st);
        expect_stats(what, st, &ref);
        free(st);
    }
    rows_release(dx);
    free(x);
}

/* Every code of the format, repeated, decoded with each scale. */
static void fp8_dequantize_row(const amp_gpu_row *r) {
    int fmt = r->shape[1];
    size_t n = 256 * 1031;
    uint8_t *q = rows_alloc(n);
    for (size_t i = 0; i < n; i++) q[i] = (uint8_t)(i * 7 + i / 256);
    uint8_t *dq = rows_to_dev(q, n);
    for (size_t si = 0; si < NSCALES - 1; si++) { /* scale 0 has no inverse to decode with */
        char what[96];
        snprintf(what, sizeof what, "%s scale %g", r->name, (double)fp8_scales[si]);
        float *want = rows_alloc(n * sizeof *want), *dy = rows_nan_dev(n * sizeof *want);
        rows_ok(AMP_SCALED(rows_cpu, fp8_dequantize, want, q, n, fp8_scales[si], fmt), rows_cpu,
                "fp8_dequantize");
        rows_ok(AMP_SCALED(rows_dev, fp8_dequantize, dy, dq, n, fp8_scales[si], fmt), rows_dev,
                "fp8_dequantize");
        float *got = rows_take_dev(dy, n * sizeof *got);
        rows_cmp(what, got, want, n, AMP_DTYPE_F32, ROWS_EXACT);
        free(want), free(got);
    }
    rows_release(dq);
    free(q);
}

static void fp8_amax_row(const amp_gpu_row *r) {
    for (int kind = 0; kind < 2; kind++) {
        float *x = fp8_inputs(kind, N), *dx = rows_to_dev(x, N * sizeof *x);
        float want, got;
        rows_ok(AMP_SCALED(rows_cpu, fp8_amax, &want, x, N), rows_cpu, "fp8_amax");
        rows_ok(AMP_SCALED(rows_dev, fp8_amax, &got, dx, N), rows_dev, "fp8_amax");
        EXPECT(amp_f32_bits(got) == amp_f32_bits(want), "%s kind %d: amax device %.9g cpu %.9g",
               r->name, kind, (double)got, (double)want);
        rows_release(dx);
        free(x);
    }
}

/* MX32 inputs: plain values with a zero block, a NaN block, an inf and
 * tiny values mixed in, so every scale rule is taken. */
static float *mx_inputs(int rows, int cols) {
    size_t n = (size_t)rows * (size_t)cols;
    float *x = rows_randn(n, 3.0f);
    for (size_t i = 0; i < 32 && i < n; i++) x[i] = 0.0f;
    if (n > 200) x[150] = NAN, x[190] = INFINITY;
    for (size_t i = 300; i < n && i < 400; i++) x[i] *= 0x1p-130f;
    for (size_t i = 500; i < n && i < 600; i++) x[i] *= 0x1p60f;
    return x;
}

/* shape: rows, cols, along_cols, format, op (0 quantize + dequantize, 1 qdq) */
static void mx_row(const amp_gpu_row *r) {
    amp_mx_desc d = {r->shape[0], r->shape[1], r->shape[3], r->shape[2]};
    size_t n = (size_t)d.rows * (size_t)d.cols;
    size_t nb = amp_mx_block_count((size_t)d.rows, (size_t)d.cols, d.along_cols);
    float *x = mx_inputs(d.rows, d.cols), *dx = rows_to_dev(x, n * sizeof *x);
    amp_fp8_stats ref = stats_before, *dst = rows_to_dev(&stats_before, sizeof stats_before);
    char what[96];
    if (r->shape[4]) {
        float *want = rows_alloc(n * sizeof *want);
        rows_ok(AMP_SCALED(rows_cpu, mx_qdq, want, x, &d, &ref), rows_cpu, "mx_qdq");
        rows_ok(AMP_SCALED(rows_dev, mx_qdq, dx, dx, &d, dst), rows_dev, "mx_qdq"); /* in place */
        float *got = rows_from_dev(dx, n * sizeof *got);
        snprintf(what, sizeof what, "%s values", r->name);
        rows_cmp(what, got, want, n, AMP_DTYPE_F32, ROWS_EXACT);
        free(want), free(got);
    } else {
        uint8_t *we = rows_alloc(n), *ws = rows_alloc(nb);
        uint8_t *de = rows_to_dev(we, n), *ds = rows_to_dev(ws, nb);
        rows_ok(AMP_SCALED(rows_cpu, mx_quantize, we, ws, x, &d, &ref), rows_cpu, "mx_quantize");
        rows_ok(AMP_SCALED(rows_dev, mx_quantize, de, ds, dx, &d, dst), rows_dev, "mx_quantize");
        uint8_t *ge = rows_from_dev(de, n), *gs = rows_from_dev(ds, nb);
        snprintf(what, sizeof what, "%s elements", r->name);
        rows_cmp_bytes(what, ge, we, n);
        snprintf(what, sizeof what, "%s scales", r->name);
        rows_cmp_bytes(what, gs, ws, nb);
        /* and back, from the CPU's codes on both sides */
        float *want = rows_alloc(n * sizeof *want), *dy = rows_nan_dev(n * sizeof *want);
        rows_ok(rows_dev->ops->upload(rows_dev, de, we, n), rows_dev, "upload");
        rows_ok(rows_dev->ops->upload(rows_dev, ds, ws, nb), rows_dev, "upload");
        rows_ok(AMP_SCALED(rows_cpu, mx_dequantize, want, we, ws, &d), rows_cpu, "mx_dequantize");
        rows_ok(AMP_SCALED(rows_dev, mx_dequantize, dy, de, ds, &d), rows_dev, "mx_dequantize");
        float *got = rows_take_dev(dy, n * sizeof *got);
        snprintf(what, sizeof what, "%s dequantized", r->name);
        rows_cmp(what, got, want, n, AMP_DTYPE_F32, ROWS_EXACT);
        rows_release(de), rows_release(ds);
        free(we), free(ws), free(ge), free(gs), free(want), free(got);
    }
    amp_fp8_stats *st = rows_take_dev(dst, sizeof *st);
    snprintf(what, sizeof what, "%s counts", r->name);
    expect_stats(what, st, &ref);
    rows_release(dx);
    free(st), free(x);
}

/* shape: m, n, k, A's format, B's format. Y[m, n] = X[m, k] . W[n, k]^T
 * as a Linear's forward, with bias and GELU in the epilogue. */
static void fp8_gemm_row(const amp_gpu_row *r) {
    int m = r->shape[0], n = r->shape[1], k = r->shape[2], fa = r->shape[3], fb = r->shape[4];
    float sa = r->arg[0], sb = r->arg[1];
    size_t na = (size_t)m * k, nb = (size_t)n * k, nc = (size_t)m * n;
    float *x = rows_random(na, -1.0f, 1.0f), *w = rows_random(nb, -1.0f, 1.0f);
    float *bias = rows_random((size_t)n, -1.0f, 1.0f);
    uint8_t *qa = rows_alloc(na), *qb = rows_alloc(nb);
    rows_ok(AMP_SCALED(rows_cpu, fp8_quantize, qa, x, na, sa, fa, NULL), rows_cpu, "fp8_quantize");
    rows_ok(AMP_SCALED(rows_cpu, fp8_quantize, qb, w, nb, sb, fb, NULL), rows_cpu, "fp8_quantize");
    /* the CPU's composition: dequantize, FP32 GEMM, the same epilogue */
    float *da = rows_alloc(na * 4), *db = rows_alloc(nb * 4), *acc = rows_alloc(nc * 4);
    float *want = rows_alloc(nc * 4), *want_act = rows_alloc(nc * 4);
    rows_ok(AMP_SCALED(rows_cpu, fp8_dequantize, da, qa, na, sa, fa), rows_cpu, "fp8_dequantize");
    rows_ok(AMP_SCALED(rows_cpu, fp8_dequantize, db, qb, nb, sb, fb), rows_cpu, "fp8_dequantize");
    amp_gemm_desc g = rows_linear_gemm(acc, da, db, m, n, k, bias, want, want_act);
    rows_ok(AMP_CALL(rows_cpu, gemm_ex, &g), rows_cpu, "gemm_ex");
    /* the device's fp8_gemm on the same codes */
    void *dqa = rows_to_dev(qa, na), *dqb = rows_to_dev(qb, nb), *dbias = rows_to_dev(bias, n * 4);
    float *dacc = rows_nan_dev(nc * 4), *dpre = rows_nan_dev(nc * 4), *dact = rows_nan_dev(nc * 4);
    amp_gemm_desc h = rows_linear_gemm(dacc, dqa, dqb, m, n, k, dbias, dpre, dact);
    amp_fp8_gemm_operands q = {fa, fb, sa, sb, NULL, NULL};
    rows_ok(AMP_FUSED(rows_dev, fp8_gemm, &h, &q), rows_dev, "fp8_gemm");
#if AMP_HAVE_CUDA
    /* On sm_89 and later a cuBLASLt-shaped row must run on cuBLASLt's FP8
     * GEMM: an emulated fallback (a declined heuristic, a wrong layout)
     * would pass the values check below and hide it. */
    if (!rows_self_check && amp_cuda_test_compute_capability(rows_dev) >= 89) {
        int fits = m % 16 == 0 && n % 16 == 0 && k % 16 == 0 && !(fa == 1 && fb == 1);
        int native = amp_cuda_test_fp8_gemm_native(rows_dev);
        EXPECT(native == fits, "%s: fp8_gemm %s cuBLASLt's FP8 GEMM, expected %s (the log names why)",
               r->name, native ? "ran on" : "did not run on",
               fits ? "cuBLASLt (sm_89+, the shape fits)" : "the emulated path");
    }
#endif
    float *got = rows_take_dev(dpre, nc * 4);
    /* |v| <= 1 after dequantize: each product's magnitude is at most 1 */
    double tol = 2e-5 * k;
    char what[96];
    snprintf(what, sizeof what, "%s pre-activation", r->name);
    rows_cmp(what, got, want, nc, AMP_DTYPE_F32, ROWS_WITHIN(tol, 1e-6));
#if AMP_HAVE_CUDA
    /* The same shape again with A's scale doubled: cuBLASLt's descriptors
     * and algorithm come from the backend's cache (no second heuristic
     * call), the new scale still reaches the GEMM (every value halved). */
    if (!rows_self_check && amp_cuda_test_fp8_gemm_native(rows_dev)) {
        unsigned long long asked = amp_cuda_test_lt_heuristic_calls(rows_dev);
        amp_fp8_gemm_operands q2 = {fa, fb, 2.0f * sa, sb, NULL, NULL};
        rows_ok(AMP_FUSED(rows_dev, fp8_gemm, &h, &q2), rows_dev, "fp8_gemm");
        EXPECT(amp_cuda_test_lt_heuristic_calls(rows_dev) == asked,
               "%s: a repeated shape asked cuBLASLt's heuristic again (%llu calls, was %llu)",
               r->name, amp_cuda_test_lt_heuristic_calls(rows_dev), asked);
        for (size_t i = 0; i < nc; i++) want[i] = acc[i] * 0.5f + bias[i % (size_t)n];
        float *got2 = rows_take_dev(dpre, nc * 4);
        snprintf(what, sizeof what, "%s again, A's scale doubled", r->name);
        rows_cmp(what, got2, want, nc, AMP_DTYPE_F32, ROWS_WITHIN(tol, 1e-6));
        free(got2);
    }
#endif
    rows_release(dqa), rows_release(dqb), rows_release(dbias), rows_release(dacc),
        rows_release(dact);
    free(x), free(w), free(bias), free(qa), free(qb), free(da), free(db), free(acc), free(want),
        free(want_act), free(got);
}

#define FP8(name, kind, fmt, qdq) {name, fp8_row, {kind, fmt, qdq}, .dt = AMP_DTYPE_F32}
#define MX(name, r, c, cols, fmt, op) {name, mx_row, {r, c, cols, fmt, op}, .dt = AMP_DTYPE_F32}
#define GEMM(name, m, n, k, fa, fb, sa, sb)                                                        \
    {name, fp8_gemm_row, {m, n, k, fa, fb}, .arg = {sa, sb}, .needs = "fp8_gemm"}

static const amp_gpu_row rows[] = {
    FP8("fp8_quantize e4m3 n1048653 random bit patterns", 0, 0, 0),
    FP8("fp8_quantize e5m2 n1048653 random bit patterns", 0, 1, 0),
    FP8("fp8_quantize e4m3 n1048653 values in [-500,500)", 1, 0, 0),
    FP8("fp8_quantize e5m2 n1048653 values in [-500,500)", 1, 1, 0),
    FP8("fp8_qdq e4m3 n1048653 random bit patterns", 0, 0, 1),
    FP8("fp8_qdq e5m2 n1048653 values in [-500,500)", 1, 1, 1),
    {"fp8_dequantize e4m3 every code", fp8_dequantize_row, {0, 0}, .dt = AMP_DTYPE_F32},
    {"fp8_dequantize e5m2 every code", fp8_dequantize_row, {0, 1}, .dt = AMP_DTYPE_F32},
    {"fp8_amax n1048653", fp8_amax_row, {0}, .dt = AMP_DTYPE_F32},
    MX("mx_quantize e4m3 300x1000 along rows", 300, 1000, 0, 0, 0),
    MX("mx_quantize e5m2 300x1000 along rows", 300, 1000, 0, 1, 0),
    MX("mx_quantize e4m3 1000x300 down columns", 1000, 300, 1, 0, 0),
    MX("mx_qdq e4m3 300x1000 along rows", 300, 1000, 0, 0, 1),
    MX("mx_qdq e5m2 1000x300 down columns", 1000, 300, 1, 1, 1),
    /* cuBLASLt-shaped (TN, multiples of 16) and not (emulated everywhere) */
    GEMM("fp8_gemm e4m3 x e4m3 64x128x256", 64, 128, 256, 0, 0, 300.0f, 140.0f),
    GEMM("fp8_gemm e5m2 x e4m3 128x64x512", 128, 64, 512, 1, 0, 0x1p10f, 448.0f),
    GEMM("fp8_gemm e5m2 x e5m2 64x64x64", 64, 64, 64, 1, 1, 1.0f, 1.0f),
    GEMM("fp8_gemm e4m3 x e4m3 100x60x70", 100, 60, 70, 0, 0, 200.0f, 200.0f),
    MX_GEMM_ROWS,
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_fp8", argc, argv, rows, sizeof rows / sizeof rows[0], 1);
}
