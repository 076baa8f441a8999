/* The CUDA backend's NVFP4 ops (the "scaled" family's nvfp4_qdq,
 * nvfp4_quantize and nvfp4_dequantize) against the CPU backend's on the
 * same inputs, one row per op, layout and input (gpu_rows.h), all bit for
 * bit: the decoded values, the 4-bit codes, the E4M3 block scales, the
 * tensor scale, the amax and the saturated / flushed / NaN counts, the
 * blocks' count and scale range, and for stochastic rounding its count and
 * bias sums (doubles, added in nvfp4.h's order on both sides); its bits are
 * keyed by element and the transform comes before the cast, so the codes
 * show both.
 *
 * The inputs are the CPU tests' hard ones (test_nvfp4_kernels): values over
 * five decades with NaN, -0, +-inf, an all-zero block, a block of tiny
 * values beside the large ones (its E4M3 scale flushes to 0), short last
 * blocks in both directions, and every RNE tie between two codes (tensor
 * and block scale 1); each also with its non-finite values replaced.
 * Stats merge into records that already hold a step's values. Also the
 * rows of nvfp4_gemm (tests/nvfp4_gemm_rows.h) on whichever path the GPU
 * takes, within their derived tolerance. Skips (77) without a device;
 * --self-check runs the rows against a second CPU backend (which has no
 * nvfp4_gemm: those rows skip there). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/nvfp4.h"
#include "gpu_rows.h"
#include "nvfp4_gemm_rows.h"

enum { IN_HARD = 0, IN_FINITE = 1, IN_TIES = 2 };
enum { OP_QDQ = 0, OP_QDQ_OUT = 1, OP_QUANTIZE = 2 };

/* kind IN_HARD / IN_FINITE: a wide range (x = 40 u^3, u uniform in
 * [-1, 1)) with the specials; IN_TIES: rows of 16, the first holding every
 * tie, the rest 1 but one 2688 (= 448 * 6: tensor scale 1, block scale 1). */
static float *nv_inputs(int kind, int rows, int cols) {
    size_t n = (size_t)rows * (size_t)cols;
    float *x = rows_alloc(n * sizeof *x);
    if (kind == IN_TIES) {
        static const float ties[16] = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5,
                                       -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5, -6};
        for (size_t i = 0; i < n; i++) x[i] = i < 16 ? ties[i] : i == 16 ? 2688.0f : 1.0f;
        return x;
    }
    for (size_t i = 0; i < n; i++) {
        float u = rows_uniform(-1.0f, 1.0f);
        x[i] = u * u * u * 40.0f;
    }
    if (n > 64) {
        x[3] = NAN;
        x[5] = -0.0f;
        x[7] = INFINITY;
        x[n - 2] = -INFINITY;
        for (size_t k = 16; k < 32; k++) x[k] = 0.0f;   /* an all-zero row block */
        for (size_t k = 32; k < 48; k++) x[k] = 1e-7f;  /* its E4M3 scale flushes to 0 */
        x[40] = -3e-8f;
        x[50] = 2e4f;                                   /* the tensor's amax */
    }
    size_t C = (size_t)cols;
    if (rows >= 32 && cols >= 32) /* a flushed 16x16 tile beside an all-zero one */
        for (size_t r = 16; r < 32; r++)
            for (size_t c = 0; c < 32; c++) x[r * C + c] = c < 16 ? 1e-7f : 0.0f;
    if (rows >= 32) /* an all-zero and a flushed block down the columns */
        for (size_t r = 16; r < 32; r++) x[r * C + 1] = 0.0f, x[r * C + 2] = 1e-7f;
    if (kind == IN_FINITE) /* inf makes the tensor scale 1 */
        for (size_t i = 0; i < n; i++) x[i] = isfinite(x[i]) ? x[i] : 0.5f;
    return x;
}

/* Records as a step's earlier quantizes left them. */
static const amp_fp8_stats st_before = {2.5f, 1, 2, 3};
static const amp_nvfp4_stats nv_before = {0.5f, 100.0f, 3, 0.25, 10.0, 7};

static void expect_stats(const char *what, const amp_fp8_stats *st, const amp_fp8_stats *cst,
                         const amp_nvfp4_stats *nv, const amp_nvfp4_stats *cnv) {
    EXPECT(rows_bits(st->amax) == rows_bits(cst->amax) && st->saturated == cst->saturated &&
               st->flushed == cst->flushed && st->nan == cst->nan,
           "%s: amax %.9g/%.9g saturated %llu/%llu flushed %llu/%llu nan %llu/%llu (device/cpu)",
           what, (double)st->amax, (double)cst->amax, st->saturated, cst->saturated, st->flushed,
           cst->flushed, st->nan, cst->nan);
    EXPECT(nv->blocks == cnv->blocks && nv->sr_count == cnv->sr_count &&
               (nv->blocks == 0 || (rows_bits(nv->scale_min) == rows_bits(cnv->scale_min) &&
                                    rows_bits(nv->scale_max) == rows_bits(cnv->scale_max))),
           "%s: blocks %llu/%llu scales [%g, %g]/[%g, %g] sr_count %llu/%llu (device/cpu)", what,
           nv->blocks, cnv->blocks, (double)nv->scale_min, (double)nv->scale_max,
           (double)cnv->scale_min, (double)cnv->scale_max, nv->sr_count, cnv->sr_count);
    EXPECT(memcmp(&nv->sr_err, &cnv->sr_err, sizeof(double)) == 0 &&
               memcmp(&nv->sr_abs, &cnv->sr_abs, sizeof(double)) == 0,
           "%s: sr_err %.17g/%.17g sr_abs %.17g/%.17g (device/cpu)", what, nv->sr_err,
           cnv->sr_err, nv->sr_abs, cnv->sr_abs);
    printf("ok  %-52s counts and sums exact\n", what);
}

/* shape: rows, cols, layout, stochastic, hadamard, input kind, op */
static void nv_row(const amp_gpu_row *r) {
    amp_nvfp4_desc d = {r->shape[0], r->shape[1], r->shape[2], r->shape[3],
                        amp_nvfp4_tensor_key(1337, 5, (uint64_t)r->shape[0]), r->shape[4],
                        amp_hadamard16_signs(1337, 5)};
    int op = r->shape[6];
    size_t n = (size_t)d.rows * (size_t)d.cols;
    size_t nb = amp_nvfp4_block_count((size_t)d.rows, (size_t)d.cols, d.blocks);
    float *x = nv_inputs(r->shape[5], d.rows, d.cols);
    float *dx = rows_to_dev(x, n * sizeof *x);
    amp_fp8_stats cst = st_before, *dst = rows_to_dev(&st_before, sizeof st_before);
    amp_nvfp4_stats cnv = nv_before, *dnv = rows_to_dev(&nv_before, sizeof nv_before);
    float *want = rows_alloc(n * sizeof *want);
    char what[128];
    if (op == OP_QUANTIZE) {
        uint8_t *wc = calloc((n + 1) / 2, 1), *ws = rows_alloc(nb);
        uint8_t *dc = rows_to_dev(wc, (n + 1) / 2), *ds = rows_nan_dev(nb);
        float wdec, ddec;
        rows_ok(AMP_SCALED(rows_cpu, nvfp4_quantize, wc, ws, &wdec, x, &d, &cst, &cnv), rows_cpu,
                "nvfp4_quantize");
        rows_ok(AMP_SCALED(rows_dev, nvfp4_quantize, dc, ds, &ddec, dx, &d, dst, dnv), rows_dev,
                "nvfp4_quantize");
        uint8_t *gc = rows_from_dev(dc, (n + 1) / 2), *gs = rows_from_dev(ds, nb);
        snprintf(what, sizeof what, "%s codes", r->name);
        rows_cmp_bytes(what, gc, wc, (n + 1) / 2);
        snprintf(what, sizeof what, "%s block scales", r->name);
        rows_cmp_bytes(what, gs, ws, nb);
        EXPECT(rows_bits(ddec) == rows_bits(wdec), "%s: s_dec device %.9g cpu %.9g", r->name,
               (double)ddec, (double)wdec);
        /* and back, from the CPU's codes on both sides */
        float *dy = rows_nan_dev(n * sizeof *want);
        rows_ok(rows_dev->ops->upload(rows_dev, dc, wc, (n + 1) / 2), rows_dev, "upload");
        rows_ok(rows_dev->ops->upload(rows_dev, ds, ws, nb), rows_dev, "upload");
        rows_ok(AMP_SCALED(rows_cpu, nvfp4_dequantize, want, wc, ws, wdec, &d), rows_cpu,
                "nvfp4_dequantize");
        rows_ok(AMP_SCALED(rows_dev, nvfp4_dequantize, dy, dc, ds, wdec, &d), rows_dev,
                "nvfp4_dequantize");
        float *got = rows_take_dev(dy, n * sizeof *got);
        snprintf(what, sizeof what, "%s dequantized", r->name);
        rows_cmp(what, got, want, n, AMP_DTYPE_F32, ROWS_EXACT);
        rows_release(dc), rows_release(ds);
        free(wc), free(ws), free(gc), free(gs), free(got);
    } else {
        /* OP_QDQ in place (y = x, as the layer kit calls it), OP_QDQ_OUT into another buffer */
        float *dy = op == OP_QDQ ? dx : rows_nan_dev(n * sizeof *want);
        float wenc, denc;
        rows_ok(AMP_SCALED(rows_cpu, nvfp4_qdq, want, x, &d, &wenc, &cst, &cnv), rows_cpu,
                "nvfp4_qdq");
        rows_ok(AMP_SCALED(rows_dev, nvfp4_qdq, dy, dx, &d, &denc, dst, dnv), rows_dev,
                "nvfp4_qdq");
        float *got = rows_from_dev(dy, n * sizeof *got);
        snprintf(what, sizeof what, "%s values", r->name);
        rows_cmp(what, got, want, n, AMP_DTYPE_F32, ROWS_EXACT);
        EXPECT(rows_bits(denc) == rows_bits(wenc), "%s: s_enc device %.9g cpu %.9g", r->name,
               (double)denc, (double)wenc);
        if (op == OP_QDQ_OUT) { /* the input is left as it was, transform or not */
            float *gx = rows_from_dev(dx, n * sizeof *gx);
            snprintf(what, sizeof what, "%s input kept", r->name);
            rows_cmp(what, gx, x, n, AMP_DTYPE_F32, ROWS_EXACT);
            free(gx);
            rows_release(dy);
        }
        free(got);
    }
    amp_fp8_stats *st = rows_take_dev(dst, sizeof *st);
    amp_nvfp4_stats *nv = rows_take_dev(dnv, sizeof *nv);
    snprintf(what, sizeof what, "%s stats", r->name);
    expect_stats(what, st, &cst, nv, &cnv);
    rows_release(dx);
    free(st), free(nv), free(x), free(want);
}

#define NV(name, r, c, layout, sr, h, kind, op)                                                    \
    {name, nv_row, {r, c, layout, sr, h, kind, op}, .dt = AMP_DTYPE_F32}

static const amp_gpu_row rows[] = {
    NV("nvfp4_qdq ties 2x16 rows", 2, 16, 0, 0, 0, IN_TIES, OP_QDQ),
    NV("nvfp4_quantize ties 2x16 rows", 2, 16, 0, 0, 0, IN_TIES, OP_QUANTIZE),
    NV("nvfp4_qdq 48x64 rows", 48, 64, 0, 0, 0, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 48x64 rows sr", 48, 64, 0, 1, 0, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 37x29 rows finite", 37, 29, 0, 0, 0, IN_FINITE, OP_QDQ),
    NV("nvfp4_qdq 37x29 cols", 37, 29, 1, 0, 0, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 37x29 cols sr hadamard", 37, 29, 1, 1, 1, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 37x29 cols sr hadamard finite", 37, 29, 1, 1, 1, IN_FINITE, OP_QDQ_OUT),
    NV("nvfp4_qdq 80x300 cols hadamard finite", 80, 300, 1, 0, 1, IN_FINITE, OP_QDQ),
    NV("nvfp4_qdq 80x300 cols sr hadamard", 80, 300, 1, 1, 1, IN_HARD, OP_QDQ_OUT),
    NV("nvfp4_qdq 37x29 tiles", 37, 29, 2, 0, 0, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 37x29 tiles sr finite", 37, 29, 2, 1, 0, IN_FINITE, OP_QDQ),
    NV("nvfp4_qdq 1x5 rows", 1, 5, 0, 0, 0, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 1x5 cols sr hadamard", 1, 5, 1, 1, 1, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 16x16 tiles", 16, 16, 2, 0, 0, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 1000x300 rows sr", 1000, 300, 0, 1, 0, IN_HARD, OP_QDQ),
    NV("nvfp4_qdq 300x1000 cols sr hadamard", 300, 1000, 1, 1, 1, IN_HARD, OP_QDQ),
    NV("nvfp4_quantize 48x64 rows", 48, 64, 0, 0, 0, IN_HARD, OP_QUANTIZE),
    NV("nvfp4_quantize 37x29 rows sr", 37, 29, 0, 1, 0, IN_HARD, OP_QUANTIZE),
    NV("nvfp4_quantize 37x29 cols finite", 37, 29, 1, 0, 0, IN_FINITE, OP_QUANTIZE),
    NV("nvfp4_quantize 37x29 tiles", 37, 29, 2, 0, 0, IN_HARD, OP_QUANTIZE),
    NV("nvfp4_quantize 80x300 tiles sr", 80, 300, 2, 1, 0, IN_HARD, OP_QUANTIZE),
    NV("nvfp4_quantize 1x5 tiles", 1, 5, 2, 0, 0, IN_HARD, OP_QUANTIZE),
    NV("nvfp4_quantize 300x1000 tiles", 300, 1000, 2, 0, 0, IN_FINITE, OP_QUANTIZE),
    NV_GEMM_ROWS,
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_nvfp4", argc, argv, rows, sizeof rows / sizeof rows[0], 3);
}
