/* The projection. Each weight GEMM costs 6 x rows x in x out FLOPs a step
 * (forward, and the two GEMMs of its backward), so its share is its weight
 * matrix's size; the rows cancel between arms of one model. A layer runs in
 * the scaled format when the arm's runs logged scaled operands for it (FP4
 * for an nvfp4 policy, MXFP8 for mxfp8, FP8 otherwise; all three GEMMs, as
 * the runs log an input, weight and grad_output operand), else in the
 * policy's GEMM dtype. Rates are the dense
 * (no sparsity) tensor-core peaks of NVIDIA's datasheets, half the "with
 * sparsity" figures they print: H100 SXM and H200 SXM TF32 494.5, FP16/BF16
 * 989.5, FP8 1979 TFLOPS, no FP4 nor MXFP8; HGX B200 (per GPU) TF32 1125,
 * FP16/BF16 2250, FP8 and MXFP8 4500, FP4 9000. FP32 GEMMs are counted at the TF32 rate, the
 * fastest an FP32 GEMM runs there. Attention's score GEMMs (no weight) and
 * all non-GEMM work are left out, so the step would gain less. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ab/ab_project.h"

/* MXFP8 is FP8 with block scales, which the tensor cores take only from
 * Blackwell on: at the FP8 rate there, none before. */
enum { F32, F16, BF16, FP8, MX8, FP4, NFMT };
static const char *const fmt_names[NFMT] = {"FP32", "FP16", "BF16", "FP8", "MXFP8", "FP4"};

static const struct {
    const char *name;
    double tflops[NFMT]; /* 0: no such format */
} gpus[AMP_AB_NGPU] = {
    {"H100 SXM", {494.5, 989.5, 989.5, 1979.0, 0, 0}},
    {"H200 SXM", {494.5, 989.5, 989.5, 1979.0, 0, 0}},
    {"B200", {1125.0, 2250.0, 2250.0, 4500.0, 4500.0, 9000.0}},
};

const char *amp_ab_gpu_name(int gpu) { return gpus[gpu].name; }

/* The format arm a's GEMM g runs in. */
static int gemm_format(const amp_ab_arm *arm, const amp_ab_gemm *g) {
    const amp_ab_fp8 *fp = arm->nruns ? &arm->runs[0].fp8 : NULL;
    for (int i = 0; fp && i < fp->nslots; i++)
        if (strcmp(fp->layer[i], g->layer) == 0)
            return strstr(arm->precision, "fp4") ? FP4 : strstr(arm->precision, "mx") ? MX8 : FP8;
    if (strcmp(g->dtype, "f16") == 0) return F16;
    if (strcmp(g->dtype, "bf16") == 0) return BF16;
    return F32;
}

/* Weight elements per format; 0 when the arm's GEMMs are unknown. */
static double mix(const amp_ab_arm *arm, double w[NFMT]) {
    double total = 0;
    memset(w, 0, NFMT * sizeof *w);
    for (int i = 0; i < arm->ngemm; i++) {
        w[gemm_format(arm, &arm->gemm[i])] += arm->gemm[i].weights;
        total += arm->gemm[i].weights;
    }
    return total;
}

/* Relative GEMM time on the GPU; NAN when it lacks a format used. */
static double gemm_time(const double w[NFMT], int gpu) {
    double t = 0;
    for (int k = 0; k < NFMT; k++) {
        if (w[k] == 0) continue;
        if (gpus[gpu].tflops[k] == 0) return NAN;
        t += w[k] / gpus[gpu].tflops[k];
    }
    return t;
}

double amp_ab_projected(const amp_ab_study *st, int a, int gpu) {
    double wa[NFMT], wb[NFMT];
    if (mix(&st->arms[0], wa) == 0 || mix(&st->arms[a], wb) == 0) return NAN;
    return gemm_time(wa, gpu) / gemm_time(wb, gpu);
}

void amp_ab_flop_mix(char *buf, size_t cap, const amp_ab_study *st, int a) {
    double w[NFMT], total = mix(&st->arms[a], w);
    size_t n = 0;
    buf[0] = 0;
    for (int k = NFMT - 1; k >= 0 && total > 0 && n < cap; k--)
        if (w[k] > 0)
            n += (size_t)snprintf(buf + n, cap - n, "%s%s %.0f%%", n ? ", " : "", fmt_names[k],
                                  100 * w[k] / total);
}
