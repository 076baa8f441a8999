/* bench_peak: the instruction ceilings that bound the CPU GEMMs of one core.
 *
 * Times long chains of independent multiply-adds, with nothing loaded from
 * memory, for each vector instruction the CPU GEMM paths can use:
 *   - FP32 FMA (vfmadd231ps) on 256-bit (AVX2) and 512-bit (AVX-512) vectors;
 *   - the BF16 dot product (vdpbf16ps, AVX512_BF16): each 32-bit lane adds
 *     two bf16 products, so one instruction is twice an FMA's flops;
 *   - the FP16 FMA (vfmaddph, AVX512_FP16), when the CPU has it.
 * A BF16 GEMM can beat an FP32 one by at most the ratio of these two peaks
 * (less the conversion of its operands). The ">= 1.5x" target for
 * bf16 on AVX512_BF16 machines assumes vdpbf16ps at twice the FP32 rate;
 * this prints what the machine actually gives. One thread; each kernel is
 * compiled for its own instruction set and run only when CPUID has it.
 *
 *   bench_peak [--seconds S]   (default 0.3 per kernel, median of 5 runs)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cpuid.h>
#include <immintrin.h>

#include "util/clock.h"

#define CHAINS 12 /* independent accumulators: covers a 4-cycle latency on 2 ports and more */
#define INNER 1000

/* Each kernel runs `iters` x INNER x CHAINS instructions and returns a value
 * that depends on every accumulator, so nothing is optimised away. */
typedef float (*kernel_fn)(long iters);

__attribute__((target("avx2,fma"))) static float fma256(long iters) {
    __m256 acc[CHAINS], a = _mm256_set1_ps(1.0000001f), b = _mm256_set1_ps(0.9999999f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_set1_ps((float)c);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < INNER; i++)
            for (int c = 0; c < CHAINS; c++) acc[c] = _mm256_fmadd_ps(a, b, acc[c]);
    __m256 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm256_add_ps(s, acc[c]);
    float o[8];
    _mm256_storeu_ps(o, s);
    return o[0] + o[7];
}

__attribute__((target("avx512f"))) static float fma512(long iters) {
    __m512 acc[CHAINS], a = _mm512_set1_ps(1.0000001f), b = _mm512_set1_ps(0.9999999f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < INNER; i++)
            for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ps(a, b, acc[c]);
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}

__attribute__((target("avx512f,avx512bf16"))) static float dpbf16(long iters) {
    __m512 acc[CHAINS];
    __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80), b = (__m512bh)_mm512_set1_epi16(0x3f7f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ps((float)c);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < INNER; i++)
            for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_dpbf16_ps(acc[c], a, b);
    __m512 s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ps(s, acc[c]);
    return _mm512_reduce_add_ps(s);
}

/* AVX512-FP16 from CPUID (leaf 7, EDX bit 23): clang 14's
 * __builtin_cpu_supports does not know "avx512fp16". The OS's AVX-512 state
 * is what the avx512f check covers. */
static int have_avx512fp16(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return __builtin_cpu_supports("avx512f") && ((d >> 23) & 1u);
}

#if defined(__GNUC__) && __GNUC__ >= 12
#define HAVE_FP16_KERNEL 1
__attribute__((target("avx512f,avx512fp16"))) static float fmaph(long iters) {
    __m512h acc[CHAINS], a = _mm512_set1_ph((_Float16)1.0f), b = _mm512_set1_ph((_Float16)0.5f);
    for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_set1_ph((_Float16)0.0f);
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < INNER; i++)
            for (int c = 0; c < CHAINS; c++) acc[c] = _mm512_fmadd_ph(a, b, acc[c]);
    __m512h s = acc[0];
    for (int c = 1; c < CHAINS; c++) s = _mm512_add_ph(s, acc[c]);
    return (float)_mm512_reduce_add_ph(s);
}
#else
#define HAVE_FP16_KERNEL 0
#endif

typedef struct row {
    const char *name, *instr, *feature;
    kernel_fn fn;
    double flops_per_instr;
    double gflops;
} row;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median GFLOP/s of 5 runs of about `seconds` each. */
static double measure(const row *r, double seconds) {
    long iters = 1;
    volatile float sink = 0.0f;
    for (;;) { /* calibrate */
        double t0 = amp_clock_s();
        sink += r->fn(iters);
        if (amp_clock_s() - t0 > seconds / 4 || iters > (1L << 30)) break;
        iters *= 2;
    }
    iters *= 4;
    double g[5];
    for (int k = 0; k < 5; k++) {
        double t0 = amp_clock_s();
        sink += r->fn(iters);
        double dt = amp_clock_s() - t0;
        g[k] = (double)iters * INNER * CHAINS * r->flops_per_instr / dt * 1e-9;
    }
    (void)sink;
    qsort(g, 5, sizeof g[0], cmp_double);
    return g[2];
}

int main(int argc, char **argv) {
    double seconds = 0.3;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            seconds = atof(argv[++i]);
            if (!(seconds > 0.0)) {
                fprintf(stderr, "bench_peak: --seconds wants a positive number\n");
                return 2;
            }
        } else {
            fprintf(stderr, "usage: bench_peak [--seconds S]\n");
            return 2;
        }
    }
    __builtin_cpu_init();
    row rows[] = {
        {"fp32 fma 256-bit", "vfmadd231ps ymm", "avx2", fma256, 16.0, 0.0},
        {"fp32 fma 512-bit", "vfmadd231ps zmm", "avx512f", fma512, 32.0, 0.0},
        {"bf16 dot 512-bit", "vdpbf16ps zmm", "avx512bf16", dpbf16, 64.0, 0.0},
#if HAVE_FP16_KERNEL
        {"fp16 fma 512-bit", "vfmaddph zmm", "avx512fp16", fmaph, 64.0, 0.0},
#endif
    };
    int n = (int)(sizeof rows / sizeof rows[0]);
    printf("bench_peak: one thread, %d independent chains, median of 5 runs of ~%.2f s\n\n", CHAINS,
           seconds);
    printf("| kernel | instruction | flops/instr | GFLOP/s | x fp32 512-bit |\n");
    printf("|---|---|---:|---:|---:|\n");
    double base = 0.0;
    for (int i = 0; i < n; i++) {
        row *r = &rows[i];
        int have = strcmp(r->feature, "avx2") == 0         ? __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
                   : strcmp(r->feature, "avx512f") == 0    ? __builtin_cpu_supports("avx512f")
                   : strcmp(r->feature, "avx512bf16") == 0 ? __builtin_cpu_supports("avx512bf16")
                                                           : have_avx512fp16();
        if (!have) {
            printf("| %s | %s | %.0f | not on this CPU | - |\n", r->name, r->instr, r->flops_per_instr);
            continue;
        }
        r->gflops = measure(r, seconds);
        if (strcmp(r->feature, "avx512f") == 0) base = r->gflops;
        if (base > 0.0)
            printf("| %s | %s | %.0f | %.1f | %.2f |\n", r->name, r->instr, r->flops_per_instr,
                   r->gflops, r->gflops / base);
        else
            printf("| %s | %s | %.0f | %.1f | - |\n", r->name, r->instr, r->flops_per_instr,
                   r->gflops);
    }
    return 0;
}
