/* The fused unscale + non-finite check (core/backend/kernels/unscale.h, the
 * one the CPU loop and the CUDA kernel share) must count what the multiply
 * produces: a finite gradient times an inv_scale > 1 that overflows is an
 * inf like any other, and the step it belongs to is skipped. Run on the CPU
 * backend; the GPU kernel runs the same element function and is compared
 * with it in test_gpu_kernels. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/unscale.h"

#include "expect.h"

static void check(amp_backend *be, const char *what, const float *in, size_t n, float inv_scale,
                  unsigned long long want_bad, double want_sumsq, float want_max) {
    float *g = malloc(n * sizeof *g);
    memcpy(g, in, n * sizeof *g);
    amp_step_stats st;
    memset(&st, 0, sizeof st);
    EXPECT(be->ops->unscale_check(be, g, &st, n, inv_scale) == 0, "%s: op failed", what);
    EXPECT(st.nonfinite == want_bad, "%s: counted %llu non-finite, expected %llu", what,
           st.nonfinite, want_bad);
    EXPECT(st.checked == n, "%s: checked %llu of %zu", what, st.checked, n);
    EXPECT(isfinite(st.sumsq) && st.sumsq == want_sumsq, "%s: sumsq %.17g, expected %.17g", what,
           st.sumsq, want_sumsq);
    EXPECT(st.maxabs == want_max, "%s: maxabs %g, expected %g", what, (double)st.maxabs,
           (double)want_max);
    /* What was counted is what the buffer holds: no finite-looking leftovers. */
    unsigned long long nf = 0;
    for (size_t i = 0; i < n; i++) nf += !isfinite(g[i]);
    EXPECT(nf == want_bad, "%s: the buffer holds %llu non-finite values, %llu were counted", what,
           nf, st.nonfinite);
    free(g);
}

int main(void) {
    char err[512];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "cpu backend: %s\n", err);
        return 1;
    }
    /* 2^127 * 4 overflows float: counted, and never reaches sumsq/maxabs. */
    const float big[] = {0x1p127f, 1.0f, -0x1p126f, 0.0f};
    check(be, "overflow on unscale", big, 4, 4.0f, 2, 16.0, 4.0f);
    /* The same gradients with inv_scale 1 (no multiply) are all finite. */
    check(be, "no multiply", big, 4, 1.0f, 0,
          (double)0x1p127f * 0x1p127f + 1.0 + (double)0x1p126f * 0x1p126f, 0x1p127f);
    /* inv_scale = inf (a scale whose reciprocal overflowed; the host refuses
     * it, the kernel still must not let it through): 0 * inf = NaN and
     * x * inf = inf are both counted. */
    const float small[] = {0.0f, 1e-30f, -2.0f};
    check(be, "inf inv_scale", small, 3, INFINITY, 3, 0.0, 0.0f);
    /* Inputs that are already inf/NaN are counted and left as they are. */
    const float mixed[] = {INFINITY, NAN, 3.0f};
    check(be, "non-finite input", mixed, 3, 0.5f, 2, 2.25, 1.5f);
    /* The element function itself, as the CUDA kernel calls it. */
    float v = FLT_MAX;
    double ss = 0.0;
    float mx = 0.0f;
    EXPECT(amp_unscale_element(&v, 2.0f, &ss, &mx) == 0 && isinf(v) && ss == 0.0 && mx == 0.0f,
           "FLT_MAX * 2: returned finite, or leaked into the norm (v %g, sumsq %g)", (double)v, ss);
    be->ops->destroy(be);
    if (amp_test_failures) {
        fprintf(stderr, "test_unscale: %d failure(s)\n", amp_test_failures);
        return 1;
    }
    printf("test_unscale: ok\n");
    return 0;
}
