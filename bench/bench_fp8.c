/* bench_fp8: the CPU FP8 kernels' throughput (core/backend/cpu_fp8.h), per
 * instruction-set path this CPU has, on one thread:
 *   quantize      FP32 -> FP8 with a per-tensor scale, amax and counts in
 *                 the same pass (GB/s of FP32 input read)
 *   dequantize    FP8 -> FP32 (GB/s of FP32 output written)
 *   mx_quantize   FP32 -> MXFP8, blocks of 32 (GB/s of FP32 input read)
 * on normal random values (scale 448 / amax, a few saturating); then the CPU
 * backend's "scaled" family as the layer kit calls it (its ISA path, one
 * thread, counts on):
 *   mx_qdq rows   MXFP8 quantize-dequantize of [n/1024, 1024], blocks along rows
 *   mx_qdq cols   the same array in blocks down its columns
 *   mx_deq rows   MXFP8 codes + scales -> FP32, blocks along rows
 *   fp8_qdq       per-tensor quantize-dequantize
 * (GB/s of FP32 input read).
 *
 *   bench_fp8 [--n N] [--reps R]   (default N = 2^24 elements, R = 20; median of R)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "backend/cpu_fp8.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t n = (size_t)1 << 24;
    int reps = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--n N] [--reps R]\n", argv[0]);
            return 2;
        }
    }
    if (n < 32 || reps < 1 || reps > 1000) {
        fprintf(stderr, "%s: --n must be >= 32 and --reps in 1..1000\n", argv[0]);
        return 2;
    }
    n -= n % 32;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    uint8_t *q = malloc(n), *sc = malloc(n / 32);
    double *t = malloc((size_t)reps * sizeof *t);
    if (!x || !y || !q || !sc || !t) {
        fprintf(stderr, "%s: out of memory for n = %zu\n", argv[0], n);
        return 1;
    }
    uint32_t s = 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 8.0f;
    }
    printf("n = %zu elements, median of %d, one thread\n", n, reps);
    for (int isa = AMP_ISA_GENERIC; isa <= AMP_ISA_AVX512; isa++) {
        const amp_cpu_fp8 *k = amp_cpu_fp8_for((amp_isa)isa);
        if (!k || isa > (int)amp_isa_detect()) continue;
        for (int op = 0; op < 3; op++) {
            for (int r = 0; r < reps; r++) {
                amp_fp8_stats st = {0, 0, 0, 0};
                double t0 = now_s();
                if (op == 0)
                    k->quantize(q, x, n, 448.0f / 4.2f, AMP_FP8_E4M3, &st);
                else if (op == 1)
                    k->dequantize(y, q, n, 4.2f / 448.0f, AMP_FP8_E4M3);
                else
                    k->mx_quantize(q, sc, x, n / 1024, 1024, AMP_FP8_E4M3);
                t[r] = now_s() - t0;
            }
            qsort(t, (size_t)reps, sizeof *t, cmp_double);
            static const char *names[] = {"quantize", "dequantize", "mx_quantize"};
            printf("%-8s %-12s %7.2f GB/s  (%.3f ms)\n", amp_isa_name((amp_isa)isa), names[op],
                   (double)n * 4 / t[reps / 2] / 1e9, t[reps / 2] * 1e3);
        }
    }
    char err[512];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be || !be->ops->scaled) {
        fprintf(stderr, "%s: no CPU backend with the scaled family: %s\n", argv[0], be ? "" : err);
        return 1;
    }
    for (int op = 0; op < 4; op++) {
        amp_mx_desc d = {(int)(n / 1024), 1024, AMP_FP8_E4M3, op == 1};
        if (op == 2) be->ops->scaled->mx_quantize(be, q, sc, x, &d, NULL);
        for (int r = 0; r < reps; r++) {
            amp_fp8_stats st = {0, 0, 0, 0};
            double t0 = now_s();
            if (op <= 1)
                be->ops->scaled->mx_qdq(be, y, x, &d, &st);
            else if (op == 2)
                be->ops->scaled->mx_dequantize(be, y, q, sc, &d);
            else
                be->ops->scaled->fp8_qdq(be, y, x, n, 448.0f / 4.2f, AMP_FP8_E4M3, &st);
            t[r] = now_s() - t0;
        }
        qsort(t, (size_t)reps, sizeof *t, cmp_double);
        static const char *names[] = {"mx_qdq rows", "mx_qdq cols", "mx_deq rows", "fp8_qdq"};
        printf("backend  %-12s %7.2f GB/s  (%.3f ms)\n", names[op],
               (double)n * 4 / t[reps / 2] / 1e9, t[reps / 2] * 1e3);
    }
    be->ops->destroy(be);
    free(x);
    free(y);
    free(q);
    free(sc);
    free(t);
    return 0;
}
