/* NVFP4's recipe pieces (core/backend/kernels/nvfp4.h) and the CPU
 * backend's nvfp4 ops (core/backend/cpu_nvfp4.c, kernels in cpu_nvfp4_body.h):
 *  - stochastic rounding is unbiased: for inputs inside every E2M1 code
 *    interval (both signs), the mean of 10^6 rounded draws lies within its
 *    99.9% interval of the exact value; the same key gives the same bits,
 *    another step other bits;
 *  - the Hadamard matrix: H H^T = 16 I exactly; amp_hadamard16 is
 *    0.25 H S v (exact on small integers);
 *  - the weight-gradient GEMM dY^T X with both operands transformed down
 *    their columns equals the GEMM without, to FP32 rounding;
 *  - 16x16 tiles: W and W^T quantize to the same values;
 *  - the backend's nvfp4_qdq / quantize / dequantize against a scalar
 *    reference written on the header's functions, bit for bit, with its
 *    counts (every layout, RNE and stochastic, with and without the
 *    transform, short last blocks, zeros, +-inf, NaN, -0), on every
 *    instruction-set path this CPU has (AMPTRAIN_ISA per backend: each
 *    path has its own NVFP4 kernels), and the paths named.
 * `--break-sr` makes the rounding always round down (its test must fail). */
#define _POSIX_C_SOURCE 200112L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "isa_backend.h"
#include "backend/kernels/nvfp4.h"

static int failures;
static int break_sr;

#define CHECK(cond, ...)                                  \
    do {                                                  \
        if (!(cond)) {                                    \
            failures++;                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                 \
            fputc('\n', stderr);                          \
        }                                                 \
    } while (0)

static uint8_t sr_cast(float v, uint32_t r) {
    return amp_float_to_e2m1_sr(v, break_sr ? 0xffffffffu : r);
}

/* ---- stochastic rounding ---- */
static void test_sr_unbiased(void) {
    static const float lo[7] = {0, 0.5f, 1, 1.5f, 2, 3, 4}, hi[7] = {0.5f, 1, 1.5f, 2, 3, 4, 6};
    static const float at[3] = {0.1f, 0.5f, 0.77f};
    const int N = 1000000;
    const double z = 3.2905; /* two-sided 99.9% */
    uint64_t key = amp_nvfp4_tensor_key(7, 3, 11);
    for (int k = 0; k < 7; k++)
        for (int a = 0; a < 3; a++)
            for (int sgn = 0; sgn < 2; sgn++) {
                float x = lo[k] + at[a] * (hi[k] - lo[k]);
                if (sgn) x = -x;
                double sum = 0.0;
                int outside = 0;
                for (int i = 0; i < N; i++) {
                    uint8_t q = sr_cast(x, amp_nvfp4_random(key, (uint64_t)i + (uint64_t)k * 10000000u));
                    float v = amp_e2m1_to_float(q);
                    outside += fabsf(v) != lo[k] && fabsf(v) != hi[k];
                    sum += v;
                }
                double p = (fabs(x) - lo[k]) / (hi[k] - lo[k]), gap = hi[k] - lo[k];
                double sd = gap * sqrt(p * (1 - p) / N), mean = sum / N;
                CHECK(outside == 0, "SR of %g: %d draws off the interval [%g, %g]", x, outside,
                      lo[k], hi[k]);
                CHECK(fabs(mean - x) <= z * sd, "SR of %g: mean %.7f of %d draws, outside the "
                      "99.9%% interval +-%.2g", x, mean, N, z * sd);
            }
    /* codes already on the grid never move */
    for (int q = 0; q < 16; q++) {
        float v = amp_e2m1_to_float((uint8_t)q);
        CHECK(amp_e2m1_to_float(sr_cast(v, 0x12345678u)) == v, "SR moved the code value %g", v);
    }
}

static void test_sr_key(void) {
    uint64_t a = amp_nvfp4_tensor_key(1337, 5, 9), b = amp_nvfp4_tensor_key(1337, 5, 9);
    uint64_t c = amp_nvfp4_tensor_key(1337, 6, 9), d = amp_nvfp4_tensor_key(1337, 5, 10);
    CHECK(a == b, "same (seed, step, tensor), another key");
    int same_step = 0, same_tensor = 0;
    for (uint64_t i = 0; i < 4096; i++) {
        CHECK(amp_nvfp4_random(a, i) == amp_nvfp4_random(b, i), "same key, other bits at %llu",
              (unsigned long long)i);
        same_step += amp_nvfp4_random(a, i) == amp_nvfp4_random(c, i);
        same_tensor += amp_nvfp4_random(a, i) == amp_nvfp4_random(d, i);
    }
    CHECK(same_step < 4 && same_tensor < 4, "another step/tensor repeats the bits (%d, %d of 4096)",
          same_step, same_tensor);
}

/* ---- the Hadamard transform ---- */
static void test_hadamard_matrix(void) {
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            long dot = 0;
            for (int k = 0; k < 16; k++) dot += amp_hadamard16_entry(i, k) * amp_hadamard16_entry(j, k);
            CHECK(dot == (i == j ? 16 : 0), "(H H^T)[%d][%d] = %ld", i, j, dot);
        }
    uint32_t signs = amp_hadamard16_signs(42, 3);
    float v[16], want[16];
    for (int k = 0; k < 16; k++) v[k] = (float)((k * 7) % 11) - 5.0f;
    for (int i = 0; i < 16; i++) {
        double s = 0;
        for (int j = 0; j < 16; j++) s += amp_hadamard16_entry(i, j) * (((signs >> j) & 1) ? -v[j] : v[j]);
        want[i] = (float)(0.25 * s);
    }
    amp_hadamard16(v, 1, signs);
    for (int i = 0; i < 16; i++) CHECK(v[i] == want[i], "transform[%d] = %g, 0.25 H S v = %g", i, v[i], want[i]);
    CHECK(amp_hadamard16_signs(42, 3) != amp_hadamard16_signs(42, 4) ||
              amp_hadamard16_signs(42, 4) != amp_hadamard16_signs(42, 5),
          "the signs do not change with the step");
}

static uint32_t lcg = 12345;
static float urand(void) {
    lcg = lcg * 1664525u + 1013904223u;
    return (float)((lcg >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* dW = dY^T X (rows 80: five groups of 16) with and without the transform
 * of both down their columns: equal to FP32 rounding of the sums. */
static void test_wgrad_transform(void) {
    enum { R = 80, O = 24, I = 20 };
    static float dy[R * O], x[R * I], dyt[R * O], xt[R * I];
    for (int i = 0; i < R * O; i++) dy[i] = urand();
    for (int i = 0; i < R * I; i++) x[i] = urand() * 3.0f;
    memcpy(dyt, dy, sizeof dy);
    memcpy(xt, x, sizeof x);
    uint32_t signs = amp_hadamard16_signs(1337, 0);
    for (int g = 0; g < R; g += 16) {
        for (int c = 0; c < O; c++) amp_hadamard16(dyt + g * O + c, O, signs);
        for (int c = 0; c < I; c++) amp_hadamard16(xt + g * I + c, I, signs);
    }
    double worst = 0;
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) {
            double a = 0, b = 0, mag = 0;
            for (int r = 0; r < R; r++) {
                a += (double)dy[r * O + o] * x[r * I + i];
                b += (double)dyt[r * O + o] * xt[r * I + i];
                mag += fabs((double)dy[r * O + o] * x[r * I + i]);
            }
            /* the transform's 4 butterfly stages round each value (relative
             * 2^-24 of its terms): the bound is 4 ulps of sum |dY X| */
            double tol = 4 * 0x1p-24 * mag;
            double e = fabs(a - b) / (tol > 0 ? tol : 1);
            if (e > worst) worst = e;
            CHECK(fabs(a - b) <= tol, "dW[%d][%d]: %.9g with the transform, %.9g without", o, i, b, a);
        }
    printf("wgrad with the transform: worst |diff| %.3g of the FP32 bound\n", worst);
}

/* ---- the backend's ops against a scalar reference ---- */

/* The block index of element (r, c) of a rows x cols array. */
static size_t block_of(const amp_nvfp4_desc *d, size_t r, size_t c) {
    size_t C = (size_t)d->cols, c16 = (C + 15) / 16;
    if (d->blocks == AMP_NVFP4_ROWS) return r * c16 + c / 16;
    if (d->blocks == AMP_NVFP4_COLS) return r / 16 * C + c;
    return r / 16 * c16 + c / 16;
}

static size_t nblocks(const amp_nvfp4_desc *d) {
    size_t R = (size_t)d->rows, C = (size_t)d->cols;
    return d->blocks == AMP_NVFP4_ROWS   ? R * ((C + 15) / 16)
           : d->blocks == AMP_NVFP4_COLS ? (R + 15) / 16 * C
                                         : (R + 15) / 16 * ((C + 15) / 16);
}

typedef struct ref_out {
    float *y;
    uint8_t *q, *s;
    float s_enc;
    amp_fp8_stats st;
    double *t_err, *t_abs; /* the bias terms of the stochastic elements (NaN: left out) */
} ref_out;

/* nvfp4.h's rule written out element by element. */
static void reference(const float *x0, const amp_nvfp4_desc *d, ref_out *o) {
    size_t R = (size_t)d->rows, C = (size_t)d->cols, n = R * C, nb = nblocks(d);
    float *x = malloc(n * sizeof *x), *bmax = calloc(nb, sizeof *bmax);
    memcpy(x, x0, n * sizeof *x);
    if (d->hadamard)
        for (size_t g = 0; g + 16 <= R; g += 16)
            for (size_t c = 0; c < C; c++) amp_hadamard16(x + g * C + c, C, d->signs);
    float amax = 0;
    for (size_t i = 0; i < n; i++) amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
    o->s_enc = amp_nvfp4_tensor_scale(amax);
    float s_dec = 1.0f / o->s_enc;
    memset(&o->st, 0, sizeof o->st);
    o->st.amax = amax;
    for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < C; c++) {
            size_t b = block_of(d, r, c);
            float a = fabsf(x[r * C + c]);
            bmax[b] = a > bmax[b] ? a : bmax[b];
        }
    for (size_t b = 0; b < nb; b++) o->s[b] = amp_nvfp4_block_scale(bmax[b], o->s_enc);
    for (size_t r = 0; r < R; r++)
        for (size_t c = 0; c < C; c++) {
            size_t j = r * C + c, b = block_of(d, r, c);
            float v = x[j] * amp_nvfp4_element_factor(o->s[b], s_dec);
            uint8_t q = d->stochastic ? amp_float_to_e2m1_sr(v, amp_nvfp4_random(d->sr_key, j))
                                      : amp_float_to_e2m1(v);
            o->q[j] = q;
            o->y[j] = amp_nvfp4_decode(q, o->s[b], s_dec);
            o->st.nan += isnan(x[j]);
            o->st.saturated += !isnan(x[j]) && o->s[b] != 0 && fabsf(v) > 6.0f;
            o->st.flushed += !isnan(x[j]) && x[j] != 0.0f && o->y[j] == 0.0f;
            int counted = d->stochastic && isfinite(x[j]);
            o->t_err[j] = counted ? (double)o->y[j] - (double)x[j] : NAN;
            o->t_abs[j] = counted ? fabs((double)x[j]) : NAN;
        }
    free(x);
    free(bmax);
}

/* The CUDA kernels' per-thread work replayed here (nvfp4_cuda.cu: the
 * transform per column of each 16-row group, the amax, amp_nvfp4_block_pass
 * per block in any order, the bias sums' runs and their sum), against the
 * CPU op's results y, nv and st and the reference's codes and scales. */
static void replay_kernels(const float *x, const amp_nvfp4_desc *d, const ref_out *o,
                           const float *y, const amp_nvfp4_stats *nv, const amp_fp8_stats *st,
                           const char *what) {
    size_t R = (size_t)d->rows, C = (size_t)d->cols, n = R * C, nb = nblocks(d);
    float *v = malloc(n * sizeof *v);
    uint8_t *q = malloc(n), *sc = malloc(nb);
    double *te = malloc(n * sizeof *te), *ta = malloc(n * sizeof *ta);
    memcpy(v, x, n * sizeof *v);
    if (d->hadamard)
        for (size_t g = 0; g + 16 <= R; g += 16)
            for (size_t c = 0; c < C; c++) amp_hadamard16(v + g * C + c, C, d->signs);
    uint32_t m = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t a = amp_f32_bits(v[i]) & 0x7fffffffu;
        m = a <= 0x7f800000u && a > m ? a : m;
    }
    float s_enc = amp_nvfp4_tensor_scale(amp_f32_from_bits(m));
    amp_nvfp4_block_out k = {q, v, te, ta, 0, 0, 0, 0, 0.0f}; /* in place, as the kit calls it */
    amp_nvfp4_stats got = {0.0f, 0.0f, 0, 0.25, 10.0, 0};
    for (size_t b = nb; b-- > 0;) { /* the blocks in another order than the CPU's */
        sc[b] = amp_nvfp4_block_pass(&k, v, d, s_enc, b);
        float sv = amp_e4m3_to_float(sc[b]);
        if (k.bmax > 0.0f) {
            if (!got.blocks || sv < got.scale_min) got.scale_min = sv;
            if (!got.blocks || sv > got.scale_max) got.scale_max = sv;
            got.blocks++;
        }
    }
    if (d->stochastic) {
        size_t runs = amp_nvfp4_sum_runs(R, C, d->blocks);
        double *pe = malloc((runs + 1) * sizeof *pe), *pa = malloc((runs + 1) * sizeof *pa);
        for (size_t i = runs; i-- > 0;) amp_nvfp4_sum_run(&pe[i], &pa[i], te, ta, R, C, d->blocks, i);
        amp_nvfp4_add_sums(&got.sr_err, &got.sr_abs, pe, pa, te, ta, R, C, d->blocks);
        free(pe);
        free(pa);
    }
    size_t bad = 0;
    for (size_t j = 0; j < n; j++) bad += memcmp(&v[j], &y[j], 4) != 0 || q[j] != o->q[j];
    for (size_t b = 0; b < nb; b++) bad += sc[b] != o->s[b];
    CHECK(bad == 0, "%s: the kernels' replay: %zu values, codes or scales differ", what, bad);
    CHECK(k.saturated == st->saturated && k.flushed == st->flushed && k.nan == st->nan &&
              k.sr_count == nv->sr_count && got.blocks == nv->blocks &&
              (!got.blocks || (got.scale_min == nv->scale_min && got.scale_max == nv->scale_max)),
          "%s: the kernels' replay: counts differ", what);
    if (d->stochastic)
        CHECK(memcmp(&got.sr_err, &nv->sr_err, 8) == 0 && memcmp(&got.sr_abs, &nv->sr_abs, 8) == 0,
              "%s: the kernels' replay: bias sums %.17g %.17g, cpu %.17g %.17g", what, got.sr_err,
              got.sr_abs, nv->sr_err, nv->sr_abs);
    free(v), free(q), free(sc), free(te), free(ta);
}

static void compare_one(amp_backend *be, const float *x, const amp_nvfp4_desc *d, const char *what) {
    size_t n = (size_t)d->rows * (size_t)d->cols, nb = nblocks(d);
    ref_out o;
    memset(&o, 0, sizeof o);
    o.y = malloc(n * 4);
    o.q = malloc(n);
    o.s = malloc(nb);
    o.t_err = malloc(n * sizeof(double));
    o.t_abs = malloc(n * sizeof(double));
    reference(x, d, &o);
    float *y = malloc(n * 4), s_enc = 0;
    amp_fp8_stats st = {0};
    amp_nvfp4_stats nv = {0.0f, 0.0f, 0, 0.25, 10.0, 0}; /* sums a record already holds */
    CHECK(be->ops->scaled->nvfp4_qdq(be, y, x, d, &s_enc, &st, &nv) == 0, "%s: qdq failed", what);
    size_t bad = 0;
    for (size_t j = 0; j < n; j++)
        if (memcmp(&y[j], &o.y[j], 4) != 0 && bad++ < 4)
            fprintf(stderr, "%s: element %zu: %a, reference %a (x %a)\n", what, j, (double)y[j],
                    (double)o.y[j], (double)x[j]);
    CHECK(bad == 0, "%s: %zu of %zu values differ from the reference", what, bad, n);
    CHECK(s_enc == o.s_enc && st.amax == o.st.amax, "%s: scale %g amax %g, reference %g %g", what,
          s_enc, st.amax, o.s_enc, o.st.amax);
    CHECK(st.saturated == o.st.saturated && st.flushed == o.st.flushed && st.nan == o.st.nan,
          "%s: saturated/flushed/nan %llu %llu %llu, reference %llu %llu %llu", what, st.saturated,
          st.flushed, st.nan, o.st.saturated, o.st.flushed, o.st.nan);
    replay_kernels(x, d, &o, y, &nv, &st, what);
    if (d->stochastic) { /* the bias sums in nvfp4.h's order, as the CUDA kernels add them */
        size_t R = (size_t)d->rows, C = (size_t)d->cols, runs = amp_nvfp4_sum_runs(R, C, d->blocks);
        double *pe = malloc((runs + 1) * sizeof *pe), *pa = malloc((runs + 1) * sizeof *pa);
        for (size_t i = 0; i < runs; i++)
            amp_nvfp4_sum_run(&pe[i], &pa[i], o.t_err, o.t_abs, R, C, d->blocks, i);
        double e = 0.25, a = 10.0;
        amp_nvfp4_add_sums(&e, &a, pe, pa, o.t_err, o.t_abs, R, C, d->blocks);
        CHECK(memcmp(&e, &nv.sr_err, sizeof e) == 0 && memcmp(&a, &nv.sr_abs, sizeof a) == 0,
              "%s: bias sums %.17g %.17g, in nvfp4.h's order %.17g %.17g", what, nv.sr_err,
              nv.sr_abs, e, a);
        free(pe);
        free(pa);
    }
    if (!d->hadamard) { /* the codes at 4 bits and the scales, back to the same values */
        uint8_t *codes = calloc((n + 1) / 2, 1), *sc = malloc(nb);
        float s_dec = 0, *z = malloc(n * 4);
        CHECK(be->ops->scaled->nvfp4_quantize(be, codes, sc, &s_dec, x, d, NULL, NULL) == 0,
              "%s: quantize failed", what);
        CHECK(be->ops->scaled->nvfp4_dequantize(be, z, codes, sc, s_dec, d) == 0,
              "%s: dequantize failed", what);
        size_t badq = 0;
        for (size_t j = 0; j < n; j++)
            badq += ((codes[j / 2] >> (4 * (j & 1))) & 15u) != o.q[j] || memcmp(&z[j], &o.y[j], 4);
        for (size_t b = 0; b < nb; b++) badq += sc[b] != o.s[b];
        CHECK(badq == 0, "%s: %zu codes/scales/values of quantize + dequantize differ", what, badq);
        free(codes);
        free(sc);
        free(z);
    }
    free(o.y);
    free(o.q);
    free(o.s);
    free(o.t_err);
    free(o.t_abs);
    free(y);
}

static void test_backend(amp_backend *be) {
    static const int shapes[][2] = {{48, 64}, {37, 29}, {16, 16}, {1, 5}, {80, 300}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int R = shapes[s][0], C = shapes[s][1];
        size_t n = (size_t)R * C;
        float *x = malloc(n * 4);
        for (size_t j = 0; j < n; j++) {
            float v = urand();
            x[j] = v * v * v * 40.0f; /* a wide range: flushes and saturations */
        }
        if (n > 40) {
            x[3] = NAN;
            x[5] = -0.0f;
            x[7] = INFINITY;
            x[n - 2] = -INFINITY;
            for (int k = 0; k < 16 && (size_t)(16 + k) < n; k++) x[16 + k] = 0.0f; /* a zero row block */
        }
        for (int blocks = 0; blocks < 3; blocks++)
            for (int sr = 0; sr < 2; sr++)
                for (int h = 0; h < 2; h++) {
                    if (h && blocks != AMP_NVFP4_COLS) continue;
                    amp_nvfp4_desc d = {R, C, blocks, sr, amp_nvfp4_tensor_key(3, 1, (uint64_t)s), h,
                                        amp_hadamard16_signs(3, (uint64_t)s)};
                    char what[96];
                    snprintf(what, sizeof what, "%dx%d %s%s%s", R, C,
                             blocks == 0 ? "rows" : blocks == 1 ? "cols" : "tiles", sr ? " sr" : "",
                             h ? " hadamard" : "");
                    compare_one(be, x, &d, what);
                    /* and with finite inputs only (inf makes the tensor scale 1) */
                    float *f = malloc(n * 4);
                    for (size_t j = 0; j < n; j++) f[j] = isfinite(x[j]) ? x[j] : 0.5f;
                    strncat(what, " finite", sizeof what - strlen(what) - 1);
                    compare_one(be, f, &d, what);
                    free(f);
                }
        free(x);
    }
}

/* The RNE ties: a tensor amax of 448 * 6 makes the tensor scale 1, and a
 * block amax of 6 its block scale 1, so the block's elements reach the
 * cast as they are: every midpoint between two codes, both signs. */
static void test_ties(amp_backend *be) {
    static const float ties[16] = {6, 0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5,
                                   -0.25f, -0.75f, -1.25f, -1.75f, -2.5f, -3.5f, -5, -6};
    static const float want[16] = {6, 0, 1, 1, 2, 2, 4, 4, -0.0f, -1, -1, -2, -2, -4, -4, -6};
    float x[32], y[32];
    memcpy(x, ties, sizeof ties);
    for (int i = 16; i < 32; i++) x[i] = i == 16 ? 2688.0f : 1.0f;
    amp_nvfp4_desc d = {2, 16, AMP_NVFP4_ROWS, 0, 0, 0, 0};
    compare_one(be, x, &d, "ties");
    be->ops->scaled->nvfp4_qdq(be, y, x, &d, NULL, NULL, NULL);
    for (int i = 0; i < 16; i++)
        CHECK(memcmp(&y[i], &want[i], 4) == 0, "tie %g went to %g, not %g", ties[i], y[i], want[i]);
}

/* W [out, in] and W^T [in, out] in 16x16 tiles: the same values. */
static void test_tiles_transpose(amp_backend *be) {
    enum { O = 40, I = 70 };
    static float w[O * I], wt[I * O], a[O * I], b[I * O];
    for (int i = 0; i < O * I; i++) w[i] = urand() * urand() * 0.1f;
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) wt[i * O + o] = w[o * I + i];
    amp_nvfp4_desc dw = {O, I, AMP_NVFP4_TILES, 0, 0, 0, 0}, dt = {I, O, AMP_NVFP4_TILES, 0, 0, 0, 0};
    be->ops->scaled->nvfp4_qdq(be, a, w, &dw, NULL, NULL, NULL);
    be->ops->scaled->nvfp4_qdq(be, b, wt, &dt, NULL, NULL, NULL);
    int bad = 0, rows_differ = 0;
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) bad += memcmp(&a[o * I + i], &b[i * O + o], 4) != 0;
    CHECK(bad == 0, "16x16 tiles: %d values of W and W^T differ", bad);
    /* 1x16 blocks do not have that property (so the test can tell) */
    amp_nvfp4_desc rw = {O, I, AMP_NVFP4_ROWS, 0, 0, 0, 0}, rt = {I, O, AMP_NVFP4_ROWS, 0, 0, 0, 0};
    be->ops->scaled->nvfp4_qdq(be, a, w, &rw, NULL, NULL, NULL);
    be->ops->scaled->nvfp4_qdq(be, b, wt, &rt, NULL, NULL, NULL);
    for (int o = 0; o < O; o++)
        for (int i = 0; i < I; i++) rows_differ += memcmp(&a[o * I + i], &b[i * O + o], 4) != 0;
    CHECK(rows_differ > 0, "1x16 blocks gave W and W^T the same values");
}

int main(int argc, char **argv) {
    break_sr = argc > 1 && strcmp(argv[1], "--break-sr") == 0;
    test_sr_unbiased();
    test_sr_key();
    if (!break_sr) {
        test_hadamard_matrix();
        test_wgrad_transform();
        for (int isa = AMP_ISA_GENERIC; isa <= (int)amp_isa_detect(); isa++) {
            amp_backend *be = amp_test_backend_on(isa);
            if (!be) return 1;
            int before = failures;
            test_ties(be);
            test_backend(be);
            test_tiles_transpose(be);
            be->ops->destroy(be);
            printf("path %s: %s\n", amp_isa_name((amp_isa)isa),
                   failures == before ? "the backend's nvfp4 ops match" : "FAILED");
        }
    }
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("nvfp4 kernels: all checks passed\n");
    return 0;
}
