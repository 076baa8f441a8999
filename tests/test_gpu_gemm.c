/* CUDA backend GEMM (cublasGemmEx) against an FP64 reference computed on the
 * host from the very same dtype-rounded inputs: every dtype, every transpose
 * combination, padded strides, alpha/beta, and a check that F32 stays true
 * FP32 unless the policy allows TF32. Skips (77) without a visible device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/convert.h"
#include "gemm_helpers.h"
#include "gpu_rows.h"

/* A rows x ld matrix of dtype dt whose first `cols` columns are random values
 * in [-1, 1) (rounded to dt; `wide` gets the exact values), and whose padding
 * columns hold NaN so a read past `cols` poisons the result. */
static void *make_matrix(float *wide, amp_rng *r, amp_dtype dt, int rows, int cols, int ld) {
    size_t n = (size_t)rows * (size_t)ld;
    size_t esz = dt == AMP_DTYPE_F32 ? 4 : 2;
    unsigned char *raw = malloc(n * esz);
    if (!raw) abort();
    for (int i = 0; i < rows; i++) {
        for (int j = 0; j < ld; j++) {
            size_t idx = (size_t)i * ld + j;
            float x = j < cols ? (float)(2.0 * amp_rng_uniform(r) - 1.0) : NAN;
            if (j < cols && x == 0.0f) x = 0.5f; /* never all zeros */
            if (dt == AMP_DTYPE_F32) {
                ((float *)raw)[idx] = x;
                wide[idx] = x;
            } else {
                uint16_t h = dt == AMP_DTYPE_F16 ? amp_float_to_half(x) : amp_float_to_bf16(x);
                ((uint16_t *)raw)[idx] = h;
                wide[idx] = amp_widen16(h, dt);
            }
        }
    }
    return raw;
}

#define PAD_SENTINEL 12345.0f

/* Runs one GEMM on the GPU and checks it. tf32: be->allow_tf32 for F32. */
static void run_case(amp_backend *g, amp_rng *r, amp_dtype dt, int ta, int tb, int m, int n,
                     int k, int pad, float alpha, float beta, int tf32) {
    int a_rows = ta ? k : m, a_cols = ta ? m : k;
    int b_rows = tb ? n : k, b_cols = tb ? k : n;
    int lda = a_cols + pad, ldb = b_cols + pad, ldc = n + pad;
    size_t esz = dt == AMP_DTYPE_F32 ? 4 : 2;
    size_t na = (size_t)a_rows * lda, nb = (size_t)b_rows * ldb, nc = (size_t)m * ldc;
    float *aw = malloc(na * sizeof(float)), *bw = malloc(nb * sizeof(float));
    float *c0 = malloc(nc * sizeof(float)), *c = malloc(nc * sizeof(float));
    if (!aw || !bw || !c0 || !c) abort();
    void *a = make_matrix(aw, r, dt, a_rows, a_cols, lda);
    void *b = make_matrix(bw, r, dt, b_rows, b_cols, ldb);
    /* beta == 0 must ignore C entirely (BLAS semantics), so poison it with
     * NaN; padding columns of C must be left untouched. */
    for (int i = 0; i < m; i++)
        for (int j = 0; j < ldc; j++)
            c0[(size_t)i * ldc + j] = j >= n ? PAD_SENTINEL
                                      : beta == 0.0f ? NAN
                                                     : (float)(2.0 * amp_rng_uniform(r) - 1.0);

    char what[160];
    snprintf(what, sizeof what, "%s%s ta=%d tb=%d m=%d n=%d k=%d pad=%d alpha=%g beta=%g",
             rows_dt_name(dt), tf32 ? "(tf32)" : "", ta, tb, m, n, k, pad, alpha, beta);

    void *da = g->ops->alloc(g, na * esz), *db = g->ops->alloc(g, nb * esz);
    float *dc = g->ops->alloc(g, nc * sizeof(float));
    int rc = !da || !db || !dc;
    if (!rc) rc = g->ops->upload(g, da, a, na * esz) || g->ops->upload(g, db, b, nb * esz) ||
                  g->ops->upload(g, dc, c0, nc * sizeof(float));
    if (!rc) {
        g->allow_tf32 = tf32;
        rc = gemm_ex_ld(g, amp_gemm_plain(dc, da, db, dt, AMP_GEMM_TRANS(ta, tb), m, n, k), lda,
                        ldb, ldc, alpha, beta);
        g->allow_tf32 = 0;
    }
    if (!rc) rc = g->ops->download(g, c, dc, nc * sizeof(float));
    if (rc != 0) amp_op_abort("%s: backend error: %s", what, g->err);

    /* Bound on |c - ref| relative to mag = |alpha| sum|a||b| + |beta||c0|:
     * products of 16-bit (and, with TF32, 10-bit-mantissa) inputs are exact
     * in FP32; an FP32 sum of k terms in any order (split-K, tensor-core
     * blocks that truncate instead of rounding) errs by at most about
     * k * 2^-23 * sum|terms|. TF32 first rounds (or truncates) each F32 input
     * to 11 significant bits: 2 * 2^-10 relative per product, plus the same
     * accumulation term. A transpose or stride bug gives O(1) errors. */
    double gamma = (k + 4) * 0x1p-23;
    if (tf32) gamma = 0x1p-9 + (k + 4) * 0x1p-22;
    double worst = 0.0;
    int bad = 0;
    for (int i = 0; rc == 0 && i < m; i++) {
        for (int j = 0; j < ldc; j++) {
            size_t ci = (size_t)i * ldc + j;
            if (j >= n) {
                if (rows_bits(c[ci]) != rows_bits(PAD_SENTINEL) && bad++ < 5)
                    EXPECT(0, "%s: padding C[%d][%d] overwritten: %g", what, i, j, c[ci]);
                continue;
            }
            double ref = 0.0, mag = 0.0;
            for (int p = 0; p < k; p++) {
                double av = ta ? aw[(size_t)p * lda + i] : aw[(size_t)i * lda + p];
                double bv = tb ? bw[(size_t)j * ldb + p] : bw[(size_t)p * ldb + j];
                ref += av * bv;
                mag += fabs(av * bv);
            }
            ref *= alpha;
            mag *= fabs(alpha);
            if (beta != 0.0f) {
                ref += (double)beta * c0[ci];
                mag += fabs((double)beta * c0[ci]);
            }
            double err = fabs((double)c[ci] - ref);
            double tol = gamma * mag + 1e-30;
            if (!(err <= tol)) { /* also catches NaN */
                if (bad++ < 5)
                    EXPECT(0, "%s: C[%d][%d] = %.9g, ref %.9g, |err| %.3g > tol %.3g", what, i, j,
                          c[ci], ref, err, tol);
            } else if (mag > 0 && err / mag > worst) {
                worst = err / mag;
            }
        }
    }
    if (bad > 5) EXPECT(0, "%s: %d bad elements in all", what, bad);
    if (rc == 0 && bad == 0)
        printf("ok  %-60s max|err|/sum|ab| = %.2e (bound %.2e)\n", what, worst, gamma);
    g->ops->release(g, da);
    g->ops->release(g, db);
    g->ops->release(g, dc);
    free(a);
    free(b);
    free(aw);
    free(bw);
    free(c0);
    free(c);
}

/* F32 must stay true FP32 when TF32 is not allowed: a_p = 1 + r_p 2^-20
 * (r_p small integers), b = 1, k = 8. Every partial sum fits in 24 bits, so
 * FP32 gives the exact answer in any order; TF32 (11 significant bits)
 * would drop the 2^-20 parts. */
static void check_true_fp32(const amp_gpu_row *row) {
    amp_backend *g = rows_dev;
    enum { M = 64, N = 64, K = 8 };
    static float a[M * K], b[K * N], c[M * N];
    for (int i = 0; i < M; i++)
        for (int p = 0; p < K; p++) a[i * K + p] = 1.0f + (float)((i + 3 * p) % 7) * 0x1p-20f;
    for (int i = 0; i < K * N; i++) b[i] = 1.0f;
    float *da = g->ops->alloc(g, sizeof a), *db = g->ops->alloc(g, sizeof b);
    float *dc = g->ops->alloc(g, sizeof c);
    int rc = !da || !db || !dc;
    if (!rc) rc = g->ops->upload(g, da, a, sizeof a) || g->ops->upload(g, db, b, sizeof b);
    g->allow_tf32 = 0;
    if (!rc)
        rc = gemm_ex_ld(g, amp_gemm_plain(dc, da, db, AMP_DTYPE_F32, AMP_GEMM_NN, M, N, K), K, N, N,
                        1.0f, 0.0f);
    if (!rc) rc = g->ops->download(g, c, dc, sizeof c);
    EXPECT(rc == 0, "true-fp32 gemm: backend error: %s", g->err);
    int bad = 0;
    for (int i = 0; rc == 0 && i < M; i++) {
        double ref = 0.0;
        for (int p = 0; p < K; p++) ref += a[i * K + p];
        for (int j = 0; j < N; j++)
            if ((double)c[i * N + j] != ref && bad++ < 3)
                EXPECT(0, "F32 GEMM is not true FP32 (TF32 leak?): C[%d][%d] = %.10g, exact %.10g",
                      i, j, c[i * N + j], ref);
    }
    if (rc == 0 && bad == 0) printf("ok  F32 GEMM without allow_tf32 is exact FP32\n");
    g->ops->release(g, da);
    g->ops->release(g, db);
    g->ops->release(g, dc);
}

/* An input dtype the GEMM does not know is an error naming it, on the plain
 * and the strided-batched path alike (never a silent FP32 GEMM). */
static void check_unknown_dtype(const amp_gpu_row *row) {
    amp_backend *g = rows_dev;
    float *da = g->ops->alloc(g, 2 * 4 * 4 * sizeof(float));
    float *dc = g->ops->alloc(g, 2 * 4 * 4 * sizeof(float));
    EXPECT(da && dc, "alloc failed: %s", g->err);
    if (!da || !dc) return;
    for (int batch = 1; batch <= 2; batch++) {
        amp_gemm_desc d = amp_gemm_plain(dc, da, da, (amp_dtype)99, AMP_GEMM_NN, 4, 4, 4);
        d.batch = batch;
        d.stride_a = d.stride_b = d.stride_c = 16;
        g->err[0] = 0;
        int rc = g->ops->gemm_ex(g, &d);
        EXPECT(rc != 0 && strstr(g->err, "unknown input dtype 99"),
               "gemm_ex batch %d with dtype 99 returned %d, error '%s'", batch, rc, g->err);
    }
    g->ops->release(g, da);
    g->ops->release(g, dc);
}

/* Every transpose combination of one dtype and shape (m, n, k, pad),
 * alternating plain C = AB with C = 0.5 AB + C (gradient accumulation);
 * shape[4] = 1: F32 with allow_tf32, plain C = AB. */
static void gemm_row(const amp_gpu_row *row) {
    const int *v = row->shape;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            int acc = !v[4] && ((v[5] + ta + tb) & 1);
            run_case(rows_dev, &rows_rng, row->dt, ta, tb, v[0], v[1], v[2], v[3],
                     acc ? 0.5f : 1.0f, acc ? 1.0f : 0.0f, v[4]);
        }
}

/* m, n, k, pad, tf32, the shape's index (for the alternation): odd sizes,
 * padded strides, degenerate rows/cols, and one size large enough for
 * cuBLAS's tensor-core kernels. The tolerance is an error bound on the FP64
 * reference (run_case): (k + 4) 2^-23 sum|ab|, with TF32 2^-9 + (k + 4) 2^-22. */
#define SHAPES(T, name)                                                                       \
    {"gemm " name " 37x53x129", gemm_row, {37, 53, 129, 0, 0, 0}, .dt = T},                   \
    {"gemm " name " 37x53x129 pad3", gemm_row, {37, 53, 129, 3, 0, 1}, .dt = T},              \
    {"gemm " name " 1x70x33 pad1", gemm_row, {1, 70, 33, 1, 0, 2}, .dt = T},                  \
    {"gemm " name " 64x1x17 pad2", gemm_row, {64, 1, 17, 2, 0, 3}, .dt = T},                  \
    {"gemm " name " 256x384x512", gemm_row, {256, 384, 512, 0, 0, 4}, .dt = T}

static const amp_gpu_row rows[] = {
    SHAPES(AMP_DTYPE_F32, "f32"),
    SHAPES(AMP_DTYPE_F16, "f16"),
    SHAPES(AMP_DTYPE_BF16, "bf16"),
    {"gemm f32(tf32) 256x384x512", gemm_row, {256, 384, 512, 0, 1, 0}, .dt = AMP_DTYPE_F32},
    {"gemm f32 without allow_tf32 is exact FP32 64x64x8", check_true_fp32, {64, 64, 8},
     .dt = AMP_DTYPE_F32},
    {"gemm unknown input dtype refused", check_unknown_dtype, {4, 4, 4}, .dt = AMP_DTYPE_F32,
     .cuda_only = 1},
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_gemm", argc, argv, rows, sizeof rows / sizeof rows[0],
                             20240611);
}
