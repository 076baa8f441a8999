/* bench_convert: the CPU's 16-bit conversion kernels (core/backend/cpu_kern.h),
 * per instruction-set path this CPU has, on one thread, in nanoseconds per
 * element (lower is better):
 *   round16         FP32 -> fp16/bf16 with the rounding tallies (what every
 *                   counted rounding of a 16-bit policy runs)
 *   round16 uncnt   the same without tallies
 *   round16_wide    the 16-bit values and their FP32 widening, tallied
 *   quantize16      FP32 -> FP32 values of the 16-bit format, in place, tallied
 *   widen16         fp16/bf16 -> FP32
 * at several lengths: short rows (a causal softmax row, an attention head's
 * slice) pay the call and the tail; long ones the loop. Values: normal
 * random ones, a few zeros. The operations of a length run interleaved, in
 * --rounds rounds; each cell is the median.
 *
 *   bench_convert [--lengths N,N,...] [--total T] [--rounds R]
 *     lengths: default 37,64,256,4096,1048576; total: elements per timing
 *     (default 2^24, as repeated calls); rounds: default 7
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amptrain/plugin.h"
#include "backend/cpu_isa.h"
#include "backend/cpu_kern.h"
#include "util/clock.h"

enum { OPS = 5, MAX_LENGTHS = 16, MAX_ROUNDS = 101 };
static const char *const op_names[OPS] = {"round16", "round16 uncnt", "round16_wide", "quantize16",
                                          "widen16"};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per element of op over calls of length n covering `total` elements. */
static double time_op(const amp_cpu_kern *k, int op, int dt, size_t n, size_t total, float *src,
                      float *wide, uint16_t *h) {
    size_t calls = total / n ? total / n : 1;
    amp_tally t = {0, 0, 0};
    double t0 = amp_clock_s();
    for (size_t c = 0; c < calls; c++) {
        switch (op) {
        case 0: k->round16(h, src, n, dt, &t); break;
        case 1: k->round16(h, src, n, dt, NULL); break;
        case 2: k->round16_wide(h, wide, src, n, dt, &t); break;
        case 3: k->quantize16(wide, wide, n, dt, &t); break;
        default: k->widen16(wide, h, n, dt); break;
        }
    }
    return (amp_clock_s() - t0) * 1e9 / (double)(calls * n);
}

static int parse_lengths(const char *s, size_t *len, int *count) {
    *count = 0;
    while (*s && *count < MAX_LENGTHS) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s || v == 0 || v > ((size_t)1 << 28)) return -1;
        len[(*count)++] = (size_t)v;
        if (*end == ',') end++;
        else if (*end) return -1;
        s = end;
    }
    return *count > 0 && !*s ? 0 : -1;
}

int main(int argc, char **argv) {
    size_t len[MAX_LENGTHS] = {37, 64, 256, 4096, (size_t)1 << 20}, total = (size_t)1 << 24;
    int nlen = 5, rounds = 7;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--lengths") && i + 1 < argc) {
            if (parse_lengths(argv[++i], len, &nlen) != 0) {
                fprintf(stderr, "%s: --lengths wants up to %d numbers 1..2^28, comma-separated\n",
                        argv[0], MAX_LENGTHS);
                return 2;
            }
        } else if (!strcmp(argv[i], "--total") && i + 1 < argc) {
            total = strtoull(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
            rounds = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: %s [--lengths N,N,...] [--total T] [--rounds R]\n", argv[0]);
            return 2;
        }
    }
    if (total < 1 || total > ((size_t)1 << 32) || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "%s: --total must be 1..2^32 and --rounds 1..%d\n", argv[0], MAX_ROUNDS);
        return 2;
    }
    size_t most = 0;
    for (int l = 0; l < nlen; l++)
        if (len[l] > most) most = len[l];
    float *src = malloc(most * sizeof *src), *wide = malloc(most * sizeof *wide);
    uint16_t *h = malloc(most * sizeof *h);
    if (!src || !wide || !h) {
        fprintf(stderr, "%s: out of memory for %zu elements\n", argv[0], most);
        return 1;
    }
    uint32_t s = 1;
    for (size_t i = 0; i < most; i++) {
        s = s * 1664525u + 1013904223u;
        src[i] = s % 61 == 0 ? 0.0f : ((float)(s >> 8) / 16777216.0f - 0.5f) * 8.0f;
    }
    printf("ns per element, median of %d interleaved rounds, %zu elements a timing, one thread\n\n",
           rounds, total);
    printf("| path | dtype | op |");
    for (int l = 0; l < nlen; l++) printf(" n=%zu |", len[l]);
    printf("\n|---|---|---|");
    for (int l = 0; l < nlen; l++) printf("---:|");
    printf("\n");
    static const int dts[2] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    double cell[MAX_LENGTHS][OPS][MAX_ROUNDS];
    for (int isa = AMP_ISA_GENERIC; isa <= AMP_ISA_AVX512; isa++) {
        const amp_cpu_kern *k = amp_cpu_kern_for((amp_isa)isa);
        if (!k || isa > (int)amp_isa_detect()) continue;
        for (int d = 0; d < 2; d++) {
            for (int l = 0; l < nlen; l++) {
                k->round16(h, src, len[l], dts[d], NULL); /* widen16's input */
                for (int r = 0; r < rounds; r++)
                    for (int j = 0; j < OPS; j++) {
                        int op = (j + r) % OPS; /* the order rotating per round */
                        if (op == 3) memcpy(wide, src, len[l] * sizeof *wide);
                        cell[l][op][r] = time_op(k, op, dts[d], len[l], total, src, wide, h);
                    }
            }
            for (int op = 0; op < OPS; op++) {
                printf("| %s | %s | %s |", amp_isa_name((amp_isa)isa), d ? "bf16" : "fp16",
                       op_names[op]);
                for (int l = 0; l < nlen; l++) {
                    qsort(cell[l][op], (size_t)rounds, sizeof(double), cmp_double);
                    printf(" %.3f |", cell[l][op][rounds / 2]);
                }
                printf("\n");
            }
        }
    }
    free(src);
    free(wide);
    free(h);
    return 0;
}
