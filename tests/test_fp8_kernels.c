/* The CPU FP8 quantizers (core/backend/cpu_fp8.h) of every instruction-set
 * path this CPU has, against the scalar reference of kernels/fp8.h (itself
 * checked against PyTorch by test_fp8_torch): the codes bit for bit, and
 * the amax and the saturated / flushed / NaN counts against a plain
 * float-compare recount of the same pass; the dequantize against
 * decode(q) * inv_scale.
 *   test_fp8_kernels          a random sample: random FP32 patterns and
 *                             normal values, several scales, lengths with
 *                             every vector tail (seconds)
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
    printf("random sample: %llu elements, %d paths (quantize, dequantize, mx_quantize): %llu "
           "mismatches\n",
           elems, npaths, nbad);
    return nbad ? 1 : 0;
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
    return all ? run_all() : run_sample();
}
