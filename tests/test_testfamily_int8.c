/* The INT8 test family (tests/testfamily/int8.c, written only against
 * core/formats/family.h) through the family table: unknown until it is
 * registered, then the family of its format; its quantizer against the
 * formula; its GEMM on codes against finite differences. The GEMM is
 * bilinear in the dequantized operands, and operands on the INT8 grid
 * (multiples of amax / 127, the amax element left alone) quantize to
 * themselves, so a step of one grid unit is an exact perturbation: the
 * central differences of sum(R * gemm(A, B)) must give R B and R^T A. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "expect.h"
#include "formats/family.h"
#include "testfamily/int8.h"

enum { M = 5, K = 40, N = 7 };

static amp_backend *be;
static amp_family_env ex, ew;
static amp_family_weight w;
static const amp_format_family *fam;
static float R[M * N], acc[M * N];

/* sum(R * gemm(A, B)): B cast into its codes, A quantized by the GEMM */
static double loss(const float *A, float *B) {
    w.master = B;
    if (fam->cast(&ew, &w) != 0) exit(1);
    amp_gemm_desc g = amp_gemm_plain(acc, NULL, NULL, AMP_DTYPE_F32, AMP_GEMM_NT, M, N, K);
    amp_family_values xv = {A, AMP_DTYPE_F32, NULL};
    int rc = fam->gemm(&ex, &ew, &w, &xv, &g);
    EXPECT(rc == 1, "the family's GEMM did not run (rc %d: %s)", rc, be->err);
    double sum = 0.0;
    for (int i = 0; i < M * N; i++) sum += (double)R[i] * acc[i];
    return sum;
}

/* v[n] on the grid of amax / 127, v[0] = amax the largest */
static void on_grid(float *v, int n, float amax, unsigned seed) {
    v[0] = amax;
    for (int i = 1; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        v[i] = (float)((int)((seed >> 16) % 241u) - 120) * (amax / 127.0f);
    }
}

/* central differences of loss in each element of v but the amax one, h one
 * grid step, against want[i]; the count that differ */
static int check(const char *what, float *v, int n, float amax, const float *A, float *B,
                 const double *want) {
    int bad = 0;
    double h = amax / 127.0, worst = 0.0;
    for (int i = 1; i < n; i++) {
        float keep = v[i];
        v[i] = keep + (float)h;
        double up = loss(A, B);
        v[i] = keep - (float)h;
        double down = loss(A, B);
        v[i] = keep;
        double fd = (up - down) / (2.0 * h), diff = fabs(fd - want[i]);
        if (diff > worst) worst = diff;
        if (diff > 1e-3 + 1e-3 * fabs(want[i]) && bad++ < 5)
            fprintf(stderr, "  d/d%s[%d]: %.7g, finite differences %.7g\n", what, i, want[i], fd);
    }
    printf("    d/d%s: %d values, worst |diff| %.2e\n", what, n - 1, worst);
    return bad;
}

int main(void) {
    char err[512];
    amp_operand_format f = {AMP_TEST_FORMAT_INT8, AMP_SCALING_CURRENT, 0, 0};
    EXPECT(amp_format_family_of(&f) == NULL, "a family serves the test format unregistered");
    if (amp_format_family_register(&amp_test_family_int8) != 0) return 1;
    fam = amp_format_family_of(&f);
    EXPECT(fam == &amp_test_family_int8, "the registered family does not serve its format");
    if (!fam) return 1;
    be = amp_backend_cpu_create(err, sizeof err);
    amp_layer_precision prec = {0};
    for (int r = 0; r < AMP_ROLE_COUNT; r++) prec.operand[r] = f;
    const char *names[] = {"fc"};
    amp_scaled *s;
    if (!be || amp_scaled_create(&s, 1, &prec, names, err, sizeof err) != 0) {
        fprintf(stderr, "test_testfamily_int8: %s\n", err);
        return 1;
    }
    EXPECT(s->slot[0].family == fam, "the slot's family is not the registered one");
    static float scratch0[M * K + N * K], scratch1[M * K + N * K];
    static int8_t codes[N * K];
    float wscale = 0.0f;
    for (int r = 0; r < 2; r++) {
        amp_family_env *e = r == 0 ? &ex : &ew;
        *e = (amp_family_env){be, s, &s->slot[r], &s->slot[r].step, &s->slot[r].nv_step, "test",
                              {scratch0, scratch1}, M * K + N * K, M * K + N * K, NULL, NULL};
    }
    w = (amp_family_weight){codes, &wscale, NULL, N, K};

    /* the quantizer: round(x * 127 / amax) * amax / 127, counted */
    float x[64], q[64];
    for (int i = 0; i < 64; i++) x[i] = (float)sin(0.7 * i + 0.2) * 3.0f;
    x[5] = 0.001f; /* below half a step: flushed */
    float amax = 0.0f;
    for (int i = 0; i < 64; i++) amax = fmaxf(amax, fabsf(x[i]));
    EXPECT(fam->operand(&ex, q, x, 8, 8, 0, 1) == q, "operand: %s", be->err);
    int off = 0;
    for (int i = 0; i < 64; i++) {
        double want = nearbyint(x[i] * (127.0 / amax)) * (amax / 127.0);
        off += fabs(q[i] - want) > 1e-6 * amax;
    }
    EXPECT(off == 0, "%d values quantize away from round(x * 127 / amax) * amax / 127", off);
    EXPECT(s->slot[0].step.amax == amax && s->slot[0].step.flushed == 1,
           "the operand's stats: amax %g (wanted %g), flushed %llu (wanted 1)",
           s->slot[0].step.amax, amax, s->slot[0].step.flushed);
    EXPECT(fabsf(s->slot[0].scale - 127.0f / amax) <= 1e-6f * s->slot[0].scale,
           "the slot's scale %g, wanted 127 / amax", s->slot[0].scale);

    /* the GEMM on codes against finite differences */
    float A[M * K], B[N * K];
    on_grid(A, M * K, 2.0f, 7);
    on_grid(B, N * K, 1.5f, 11);
    for (int i = 0; i < M * N; i++) R[i] = (float)cos(0.9 * i + 0.4);
    double dA[M * K], dB[N * K];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < K; j++) {
            dA[i * K + j] = 0.0;
            for (int n = 0; n < N; n++) dA[i * K + j] += (double)R[i * N + n] * B[n * K + j];
        }
    for (int n = 0; n < N; n++)
        for (int j = 0; j < K; j++) {
            dB[n * K + j] = 0.0;
            for (int i = 0; i < M; i++) dB[n * K + j] += (double)R[i * N + n] * A[i * K + j];
        }
    int bad = check("A", A, M * K, 2.0f, A, B, dA) + check("B", B, N * K, 1.5f, A, B, dB);
    EXPECT(bad == 0, "%d gradients of the INT8 GEMM differ from finite differences", bad);
    if (!amp_test_failures) printf("ok  int8 test family: quantizer, table, GEMM vs finite differences\n");
    amp_scaled_free(s);
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}
