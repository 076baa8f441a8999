/* The CPU FP8 quantizers (core/backend/cpu_fp8.h) of every instruction-set
 * path this CPU has, against the scalar reference of kernels/fp8.h (itself
 * checked against PyTorch by test_fp8_torch): the codes bit for bit, and
 * the amax and the saturated / flushed / NaN counts against a plain
 * float-compare recount of the same pass; the dequantize against
 * decode(q) * inv_scale, and on every one of the 256 codes of both formats
 * (NaN payloads included) at two scales.
 *   test_fp8_kernels          a random sample: random FP32 patterns and
 *                             normal values, several scales, lengths with
 *                             every vector tail (seconds); and MX32
 *                             (mx_pass, mx_decode) in both orientations
 *                             against mx.h's blocks: codes, scales, value
 *                             bits and counts, over shapes with every kind
 *                             of tail, zero, subnormal, NaN / inf and
 *                             saturating blocks
 *   test_fp8_kernels --all    every one of the 2^32 FP32 bit patterns at
 *                             scale 1, both formats (label long; OpenMP
 *                             threads over chunks; minutes on 2 cores) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_fp8.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/mx.h"

#define SHOW_MAX 8
#define CHUNK ((size_t)1 << 20)

static const amp_cpu_fp8 *paths[AMP_ISA_COUNT];
static int npaths;

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* The reference: per element, stats recounted with float compares. */
static void reference(uint8_t *q, amp_fp8_stats *st, const float *x, size_t n, float scale,
                      int fmt) {
    float max = fmt == AMP_FP8_E5M2 ? AMP_FP8_E5M2_MAX : AMP_FP8_E4M3_MAX;
    memset(st, 0, sizeof *st);
    for (size_t i = 0; i < n; i++) {
        q[i] = amp_float_to_fp8(x[i] * scale, fmt);
        float v = x[i] * scale;
        if (!isnan(x[i]) && fabsf(x[i]) > st->amax) st->amax = fabsf(x[i]);
        st->saturated += !isnan(v) && fabsf(v) > max;
        st->flushed += x[i] != 0.0f && !isnan(x[i]) && (q[i] & 0x7f) == 0;
        st->nan += isnan(v) != 0;
    }
}

/* Every path on x[n] against the reference; returns the mismatches. */
static unsigned long long check_all(const float *x, size_t n, float scale, int fmt, uint8_t *want,
                                    uint8_t *got, float *deq) {
    unsigned long long nbad = 0;
    amp_fp8_stats ref;
    reference(want, &ref, x, n, scale, fmt);
    for (int p = 0; p < npaths; p++) {
        const amp_cpu_fp8 *k = paths[p];
        amp_fp8_stats st = {0, 0, 0, 0};
        k->quantize(got, x, n, scale, fmt, &st);
        const char *name = amp_isa_name(k->isa);
        if (memcmp(got, want, n)) {
            for (size_t i = 0; i < n; i++)
                if (got[i] != want[i] && nbad++ < SHOW_MAX)
                    fprintf(stderr, "MISMATCH %s %s: x 0x%08x * scale %.9g: 0x%02x, scalar 0x%02x\n",
                            name, fmt ? "e5m2" : "e4m3", amp_f32_bits(x[i]), (double)scale, got[i],
                            want[i]);
        }
        if (amp_f32_bits(st.amax) != amp_f32_bits(ref.amax) || st.saturated != ref.saturated ||
            st.flushed != ref.flushed || st.nan != ref.nan) {
            if (nbad++ < SHOW_MAX)
                fprintf(stderr,
                        "MISMATCH %s %s stats (n %zu, x[0] 0x%08x, scale %.9g): amax %.9g sat %llu "
                        "flush %llu nan %llu; reference %.9g %llu %llu %llu\n",
                        name, fmt ? "e5m2" : "e4m3", n, amp_f32_bits(x[0]), (double)scale,
                        (double)st.amax, st.saturated, st.flushed, st.nan, (double)ref.amax,
                        ref.saturated, ref.flushed, ref.nan);
        }
        if (deq) {
            float inv = amp_fp8_inv_scale(scale);
            k->dequantize(deq, want, n, inv, fmt);
            for (size_t i = 0; i < n; i++) {
                float w = amp_fp8_to_float(want[i], fmt) * inv;
                if (amp_f32_bits(deq[i]) != amp_f32_bits(w) && nbad++ < SHOW_MAX)
                    fprintf(stderr, "MISMATCH %s dequantize 0x%02x / %.9g: %.9g, want %.9g\n", name,
                            want[i], (double)scale, (double)deq[i], (double)w);
            }
        }
    }
    return nbad;
}

/* Every path's mx_quantize of x as [rows, 100] (three full blocks and a
 * short one per row) against amp_mx_quantize_block, also on blocks scaled
 * into every E8M0 range; returns the mismatches. */
static unsigned long long check_mx(float *x, size_t n, uint8_t *want, uint8_t *got) {
    enum { COLS = 100, NB = 4 };
    size_t rows = n / COLS;
    static uint8_t ws[(1 << 18) / COLS * NB], gs[(1 << 18) / COLS * NB];
    unsigned long long nbad = 0;
    for (size_t r = 0; r < rows; r++) /* spread the block amaxes over 2^-150..2^127 */
        for (int j = 0; j < COLS; j++) x[r * COLS + j] *= ldexpf(1.0f, (int)(r % 278) - 150 + (j >= 64));
    for (int fmt = 0; fmt < 2; fmt++) {
        for (size_t r = 0; r < rows; r++)
            for (int b = 0; b < NB; b++) {
                int len = b < 3 ? 32 : COLS - 96;
                amp_mx_quantize_block(want + r * COLS + 32 * b, ws + r * NB + b, x + r * COLS + 32 * b,
                                      len, fmt);
            }
        for (int p = 0; p < npaths; p++) {
            paths[p]->mx_quantize(got, gs, x, rows, COLS, fmt);
            for (size_t i = 0; i < rows * COLS; i++)
                if (got[i] != want[i] && nbad++ < SHOW_MAX)
                    fprintf(stderr, "MISMATCH %s mx %s element %zu (x 0x%08x): 0x%02x, scalar 0x%02x\n",
                            amp_isa_name(paths[p]->isa), fmt ? "e5m2" : "e4m3", i, amp_f32_bits(x[i]),
                            got[i], want[i]);
            for (size_t i = 0; i < rows * NB; i++)
                if (gs[i] != ws[i] && nbad++ < SHOW_MAX)
                    fprintf(stderr, "MISMATCH %s mx %s scale %zu: 0x%02x, scalar 0x%02x\n",
                            amp_isa_name(paths[p]->isa), fmt ? "e5m2" : "e4m3", i, gs[i], ws[i]);
        }
    }
    return nbad;
}

/* ---- MX32 in both orientations (mx_pass, mx_decode) ---- */

/* The reference, from mx.h's block functions: block by block along rows or
 * down columns, codes, scales, values and counts. */
static void mx_reference(uint8_t *elem, uint8_t *scales, float *y, unsigned long long cnt[3],
                         const float *x, size_t rows, size_t cols, int along_cols, int fmt) {
    size_t lines = along_cols ? cols : rows, len = along_cols ? rows : cols;
    size_t nb = (len + AMP_MX_BLOCK - 1) / AMP_MX_BLOCK;
    cnt[0] = cnt[1] = cnt[2] = 0;
    for (size_t l = 0; l < lines; l++)
        for (size_t b = 0; b < nb; b++) {
            int n = (int)(len - b * AMP_MX_BLOCK < AMP_MX_BLOCK ? len - b * AMP_MX_BLOCK : AMP_MX_BLOCK);
            float v[AMP_MX_BLOCK];
            size_t idx[AMP_MX_BLOCK];
            for (int i = 0; i < n; i++) {
                size_t e = b * AMP_MX_BLOCK + (size_t)i;
                idx[i] = along_cols ? e * cols + l : l * cols + e;
                v[i] = x[idx[i]];
            }
            uint8_t q[AMP_MX_BLOCK], sc;
            amp_mx_quantize_block(q, &sc, v, n, fmt);
            scales[along_cols ? b * cols + l : l * nb + b] = sc;
            for (int i = 0; i < n; i++) {
                unsigned fl = 0;
                amp_fp8_quantize_element(v[i], amp_mx_element_factor(sc), fmt, &fl);
                cnt[0] += (fl & AMP_F8_SATURATED) != 0;
                cnt[1] += (fl & AMP_F8_FLUSHED) != 0;
                cnt[2] += (fl & AMP_F8_NAN) != 0;
                elem[idx[i]] = q[i];
                y[idx[i]] = amp_mx_dequantize_element(q[i], sc, fmt);
            }
        }
}

static int same_bits(const float *a, const float *b, size_t n, size_t *at) {
    for (size_t i = 0; i < n; i++)
        if (amp_f32_bits(a[i]) != amp_f32_bits(b[i])) {
            *at = i;
            return 0;
        }
    return 1;
}

/* x [rows, cols] of kind k: 0 random FP32 patterns (NaN, inf, subnormals
 * among them), 1 normal values over 2^-140..2^120 with all-zero blocks,
 * blocks of FP32 subnormals only and blocks with one NaN or inf, 2 values
 * just below each binade's top (1.75..2 x 2^e: E4M3 elements up to 512,
 * saturated at 448) and their negatives. */
static void mx_fill(float *x, size_t rows, size_t cols, int kind, uint64_t *s) {
    size_t n = rows * cols;
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(s);
        if (kind == 0)
            x[i] = amp_f32_from_bits((uint32_t)r);
        else if (kind == 1)
            x[i] = ldexpf((float)((r >> 40) & 0xffffff) / 0x1p24f, (int)(r % 261) - 140) *
                   ((r >> 39) & 1 ? -1.0f : 1.0f);
        else
            x[i] = ldexpf(1.75f + (float)((r >> 40) & 0xffff) / 0x1p18f, (int)(r % 41) - 20) *
                   ((r >> 39) & 1 ? -1.0f : 1.0f);
    }
    if (kind != 1) return;
    for (size_t i = 0; i + 32 <= n; i += 96) { /* a run of 32 zeros: a zero block either way in 1-wide shapes */
        for (size_t j = 0; j < 32; j++) x[i + j] = 0.0f;
        if (i + 64 <= n)
            for (size_t j = 32; j < 64; j++) x[i + j] = amp_f32_from_bits((uint32_t)(j * 977) & 0x7fffffu);
    }
    for (size_t i = 17; i < n; i += 211) x[i] = (i / 211) % 2 ? NAN : -INFINITY;
    if (cols >= 32) /* whole column blocks of zeros and of subnormals */
        for (size_t r = 0; r < rows && r < 32; r++) {
            x[r * cols + 3] = 0.0f;
            x[r * cols + 5] = amp_f32_from_bits(0x800000u - 1u - (uint32_t)r);
        }
}

static unsigned long long check_mx_pass(void) {
    static const size_t shapes[][2] = {{1, 32},  {3, 100}, {37, 45}, {64, 17}, {33, 64},
                                       {5, 1},   {70, 19}, {32, 16}, {96, 130}, {2, 7}};
    enum { MAXN = 96 * 130 };
    static float x[MAXN], y_ref[MAXN], y[MAXN], xd[MAXN];
    static uint8_t e_ref[MAXN], e[MAXN], s_ref[MAXN], sc[MAXN];
    uint64_t s = 777;
    unsigned long long bad = 0, blocks = 0;
    for (size_t sh = 0; sh < sizeof shapes / sizeof *shapes; sh++)
        for (int kind = 0; kind < 3; kind++)
            for (int along = 0; along < 2; along++)
                for (int fmt = 0; fmt < 2; fmt++) {
                    size_t R = shapes[sh][0], C = shapes[sh][1], n = R * C;
                    size_t nsc = along ? (R + 31) / 32 * C : R * ((C + 31) / 32);
                    mx_fill(x, R, C, kind, &s);
                    unsigned long long cref[3];
                    mx_reference(e_ref, s_ref, y_ref, cref, x, R, C, along, fmt);
                    blocks += nsc;
                    for (int p = 0; p < npaths; p++) {
                        const char *name = amp_isa_name(paths[p]->isa);
                        amp_fp8_stats st = {0, 0, 0, 0};
                        memset(e, 0xaa, n);
                        memset(sc, 0xaa, nsc);
                        paths[p]->mx_pass(e, sc, y, x, R, C, along, fmt, &st);
                        size_t at = 0;
                        int ok = memcmp(e, e_ref, n) == 0 && memcmp(sc, s_ref, nsc) == 0 &&
                                 same_bits(y, y_ref, n, &at) && st.saturated == cref[0] &&
                                 st.flushed == cref[1] && st.nan == cref[2] && st.amax == 0.0f;
                        /* in place (y = x), values only, no counts */
                        memcpy(xd, x, n * sizeof *x);
                        paths[p]->mx_pass(NULL, NULL, xd, xd, R, C, along, fmt, NULL);
                        ok = ok && same_bits(xd, y_ref, n, &at);
                        paths[p]->mx_decode(xd, e_ref, s_ref, R, C, along, fmt);
                        ok = ok && same_bits(xd, y_ref, n, &at);
                        if (!ok && bad++ < SHOW_MAX)
                            fprintf(stderr,
                                    "MISMATCH %s mx_pass/mx_decode [%zu x %zu] kind %d %s fmt %d: "
                                    "counts %llu/%llu/%llu vs %llu/%llu/%llu, first value at %zu: "
                                    "%08x vs %08x\n",
                                    name, R, C, kind, along ? "down columns" : "along rows", fmt,
                                    st.saturated, st.flushed, st.nan, cref[0], cref[1], cref[2], at,
                                    amp_f32_bits(y[at]), amp_f32_bits(y_ref[at]));
                    }
                }
    /* mx_decode of every code under every scale byte (0 and 0xff included) */
    for (int along = 0; along < 2; along++)
        for (int fmt = 0; fmt < 2; fmt++) {
            size_t R = 256, C = along ? 40 : 32;
            for (size_t i = 0; i < R * C; i++) e_ref[i] = (uint8_t)(i * 7 + i / C);
            size_t nsc = along ? (R + 31) / 32 * C : R * ((C + 31) / 32);
            for (size_t i = 0; i < nsc; i++) s_ref[i] = (uint8_t)(i * 13);
            s_ref[0] = 0, s_ref[1 % nsc] = 0xff;
            for (size_t r = 0; r < R; r++)
                for (size_t c = 0; c < C; c++) {
                    size_t b = along ? r / 32 * C + c : r * ((C + 31) / 32) + c / 32;
                    y_ref[r * C + c] = amp_mx_dequantize_element(e_ref[r * C + c], s_ref[b], fmt);
                }
            for (int p = 0; p < npaths; p++) {
                size_t at = 0;
                paths[p]->mx_decode(xd, e_ref, s_ref, R, C, along, fmt);
                if (!same_bits(xd, y_ref, R * C, &at) && bad++ < SHOW_MAX)
                    fprintf(stderr, "MISMATCH %s mx_decode of every code, fmt %d %s: at %zu %08x vs %08x\n",
                            amp_isa_name(paths[p]->isa), fmt, along ? "down columns" : "along rows",
                            at, amp_f32_bits(xd[at]), amp_f32_bits(y_ref[at]));
            }
        }
    printf("mx_pass / mx_decode: %llu blocks per path, both orientations and formats, %d paths: "
           "%llu mismatches\n",
           blocks, npaths, bad);
    return bad;
}

static int run_all(void) {
    unsigned long long nbad = 0;
    long long chunks = (long long)(((uint64_t)1 << 32) / CHUNK);
#pragma omp parallel reduction(+ : nbad)
    {
        float *x = malloc(CHUNK * sizeof *x);
        uint8_t *want = malloc(CHUNK), *got = malloc(CHUNK);
#pragma omp for schedule(dynamic)
        for (long long c = 0; c < chunks; c++) {
            for (size_t i = 0; i < CHUNK; i++)
                x[i] = amp_f32_from_bits((uint32_t)((uint64_t)c * CHUNK + i));
            for (int fmt = 0; fmt < 2; fmt++) nbad += check_all(x, CHUNK, 1.0f, fmt, want, got, NULL);
        }
        free(x);
        free(want);
        free(got);
    }
    printf("all 2^32 FP32 patterns, both formats, %d paths: %llu mismatches\n", npaths, nbad);
    return nbad ? 1 : 0;
}

static int run_sample(void) {
    enum { N = 1 << 18 };
    static float x[N], deq[N];
    static uint8_t want[N], got[N];
    const float scales[] = {1.0f, 0.5f, 3.7f, 0x1p-20f, 0x1p20f, 448.0f / 3.0f, 0.0f, 1e-30f, 1e30f};
    uint64_t s = 12345;
    unsigned long long nbad = 0, elems = 0;
    for (int kind = 0; kind < 3; kind++) {
        for (size_t i = 0; i < N; i++) {
            uint64_t r = rng_next(&s);
            /* random patterns, or normal-ish values over 2^-30..2^30 */
            if (kind == 0) /* random patterns */
                x[i] = amp_f32_from_bits((uint32_t)r);
            else if (kind == 1) /* normal-ish values over 2^-30..2^30 */
                x[i] = ldexpf((float)((r >> 40) & 0xffffff) / 0x1p24f, (int)(r % 61) - 30) *
                       ((r >> 39) & 1 ? -1.0f : 1.0f);
            else /* on and next to the rounding ties of both formats (and the max) */
                x[i] = amp_f32_from_bits(((uint32_t)(r >> 32) & 0xfff00000u) |
                                         ((r & 1) ? 0x80000u : 0x100000u)) *
                       (r & 2 ? 1.0f : 1.0000001f);
        }
        for (size_t si = 0; si < sizeof scales / sizeof *scales; si++)
            for (int fmt = 0; fmt < 2; fmt++) {
                nbad += check_all(x, N, scales[si], fmt, want, got, deq);
                elems += N;
                for (size_t n = 0; n < 70; n++) /* every tail length, unaligned starts */
                    nbad += check_all(x + 3 + n, n, scales[si], fmt, want, got, deq);
            }
        nbad += check_mx(x, N, want, got);
    }
    nbad += check_mx_pass();
    printf("random sample: %llu elements, %d paths (quantize, dequantize, mx_quantize): %llu "
           "mismatches\n",
           elems, npaths, nbad);
    return nbad ? 1 : 0;
}

/* Every path's dequantize of all 256 codes of both formats, bit for bit
 * against amp_fp8_to_float(q) * inv_scale; 1 on a mismatch. */
static int dequantize_every_code(void) {
    uint8_t q[256];
    float y[256];
    int nbad = 0;
    for (int i = 0; i < 256; i++) q[i] = (uint8_t)i;
    for (int p = 0; p < npaths; p++)
        for (int fmt = 0; fmt < 2; fmt++)
            for (int s = 0; s < 2; s++) {
                float inv = s ? 1.0f / 3.0f : 1.0f;
                paths[p]->dequantize(y, q, 256, inv, fmt);
                for (int i = 0; i < 256; i++) {
                    float w = amp_fp8_to_float(q[i], fmt) * inv;
                    if (amp_f32_bits(y[i]) != amp_f32_bits(w) && nbad++ < SHOW_MAX)
                        fprintf(stderr, "MISMATCH %s %s dequantize of code 0x%02x: 0x%08x, want "
                                "0x%08x\n", amp_isa_name(paths[p]->isa), fmt ? "e5m2" : "e4m3", i,
                                amp_f32_bits(y[i]), amp_f32_bits(w));
                }
            }
    printf("dequantize: every code of both formats, %d path(s): %d mismatches\n", npaths, nbad);
    return nbad != 0;
}

int main(int argc, char **argv) {
    int all = argc > 1 && strcmp(argv[1], "--all") == 0;
    if (argc > 1 && !all) {
        fprintf(stderr, "usage: %s [--all]\n", argv[0]);
        return 2;
    }
    amp_isa best = amp_isa_detect();
    for (int isa = AMP_ISA_GENERIC; isa <= AMP_ISA_AVX512; isa++) {
        const amp_cpu_fp8 *k = amp_cpu_fp8_for((amp_isa)isa);
        if (k && isa <= (int)best)
            paths[npaths++] = k;
        else
            printf("path %s: not on this CPU or build, not checked\n", amp_isa_name((amp_isa)isa));
    }
    int rc = all ? run_all() : run_sample();
    return dequantize_every_code() || rc;
}
