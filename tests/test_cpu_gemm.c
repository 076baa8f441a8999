/* The CPU backend's GEMMs on the instruction-set path in AMPTRAIN_ISA
 * (ctest runs this once per path; 77 when the CPU lacks it) against an FP64
 * reference, for FP32, FP16 and BF16 inputs, every transpose, alpha/beta,
 * and the MLP's own shapes.
 *
 * The inputs are exact in their dtype, so the reference is the exact dot
 * product; FP32 accumulation of k products, in any order, is within
 *   |c - ref| <= (k + 2) * 2^-24 * (|alpha| sum|a||b| + |beta c0|)
 * (the textbook gamma_k bound, plus the alpha/beta roundings). Every path
 * must meet it: this is the tolerance within which results across paths
 * agree (README, "Determinism"). Under AMPTRAIN_GEMM=reference every value
 * must also be that FP64 sum, k ascending, rounded once to FP32, bit for
 * bit (the GEMM the pinned tests run, cpu_gemm_ref.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu_isa.h"
#include "backend/kernels/convert.h"
#include "expect.h"
#include "gemm_helpers.h"

static uint64_t st = 0x9e3779b97f4a7c15ull;
static double urand(void) {
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return (double)(st >> 11) / 9007199254740992.0;
}

static size_t dsz(int dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }
static double val(const void *p, size_t i, int dt) {
    return dt == AMP_DTYPE_F32 ? (double)((const float *)p)[i]
                               : (double)amp_widen16(((const uint16_t *)p)[i], dt);
}
static void *rand_matrix(size_t n, int dt) {
    void *p = malloc(n * dsz(dt));
    for (size_t i = 0; i < n; i++) {
        float f = (float)((urand() - 0.5) * 4.0);
        if (dt == AMP_DTYPE_F32)
            ((float *)p)[i] = f;
        else
            ((uint16_t *)p)[i] = amp_round16(f, dt, NULL);
    }
    return p;
}

/* One GEMM against the reference; returns the worst error / bound. */
static double check(amp_backend *be, int dt, int ta, int tb, int m, int n, int k, float alpha,
                    float beta) {
    int lda = ta ? m : k, ldb = tb ? k : n, ldc = n;
    void *a = rand_matrix((size_t)m * k, dt), *b = rand_matrix((size_t)k * n, dt);
    float *c = malloc((size_t)m * n * 4), *c0 = malloc((size_t)m * n * 4);
    for (size_t i = 0; i < (size_t)m * n; i++) c[i] = c0[i] = (float)(urand() - 0.5);
    int rc = gemm_ex_ld(be, amp_gemm_plain(c, a, b, (amp_dtype)dt, AMP_GEMM_TRANS(ta, tb), m, n, k),
                        lda, ldb, ldc, alpha, beta);
    EXPECT(rc == 0, "gemm dt %d %dx%dx%d: %s", dt, m, n, k, be->err);
    double worst = 0.0;
    int exact = getenv("AMPTRAIN_GEMM") && strcmp(getenv("AMPTRAIN_GEMM"), "reference") == 0;
    long inexact = 0;
    for (int i = 0; i < m && rc == 0; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0, sa = 0.0;
            for (int p = 0; p < k; p++) {
                double x = val(a, ta ? (size_t)p * lda + i : (size_t)i * lda + p, dt);
                double y = val(b, tb ? (size_t)j * ldb + p : (size_t)p * ldb + j, dt);
                s += x * y;
                sa += fabs(x * y);
            }
            double ref = (double)alpha * s + (double)beta * c0[(size_t)i * n + j];
            double bound = (k + 2) * 0x1p-24 * (fabs(alpha) * sa + fabs(beta * c0[(size_t)i * n + j])) + 1e-30;
            double e = fabs((double)c[(size_t)i * n + j] - ref) / bound;
            if (e > worst) worst = e;
            inexact += exact && c[(size_t)i * n + j] != (float)ref; /* one rounding of this sum */
        }
    EXPECT(inexact == 0, "reference gemm dt %d ta %d tb %d %dx%dx%d alpha %g beta %g: %ld of %d "
           "values are not the FP64 sum (k ascending) rounded once", dt, ta, tb, m, n, k, alpha,
           beta, inexact, m * n);
    EXPECT(worst <= 1.0, "%s gemm dt %d ta %d tb %d %dx%dx%d alpha %g beta %g: error %.3g x the bound",
           be->info.isa, dt, ta, tb, m, n, k, alpha, beta, worst);
    free(a), free(b), free(c), free(c0);
    return worst;
}

int main(void) {
    char err[512];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        if (strstr(err, "supports up to")) {
            printf("skipped: %s\n", err);
            return 77;
        }
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    static const int dts[3] = {AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16};
    static const char *const dn[3] = {"f32", "f16", "bf16"};
    for (int d = 0; d < 3; d++) {
        double worst = 0.0, w;
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                w = check(be, dts[d], ta, tb, 37, 53, 71, 1.0f, 0.0f);
                worst = w > worst ? w : worst;
                w = check(be, dts[d], ta, tb, 5, 300, 1000, 0.5f, 1.0f);
                worst = w > worst ? w : worst;
            }
        /* the MLP's three GEMMs of a layer (batch 64, 784 -> 256) */
        w = check(be, dts[d], 0, 1, 64, 256, 784, 1.0f, 0.0f);
        worst = w > worst ? w : worst;
        w = check(be, dts[d], 1, 0, 256, 784, 64, 1.0f, 0.0f);
        worst = w > worst ? w : worst;
        w = check(be, dts[d], 0, 0, 64, 784, 256, 1.0f, 0.0f);
        worst = w > worst ? w : worst;
        printf("%s %s: worst error %.3f of the bound; kernel %s\n", be->info.isa, dn[d], worst,
               be->info.gemm[dts[d]]);
    }
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}
