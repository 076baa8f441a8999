/* The CPU backend's one-pass forms of the 16-bit CNN steps against the ops
 * they replace, bit for bit and count for count, on every instruction-set
 * path this CPU has, for FP16 and BF16, on inputs with signed zeros, NaN,
 * infinities and values that underflow or overflow the dtype:
 *   - batch_norm_forward/backward reading a 16-bit x (x16) against the same
 *     ops on its FP32 widening (planes longer than a widening tile, and the
 *     synchronised path);
 *   - round_act against quantize + act_forward + round;
 *   - conv2d_forward_round against conv2d_forward + round;
 *   - conv2d_backward_round against round + conv2d_backward_filter +
 *     conv2d_backward_data (more channels than the bias sums keep on the
 *     stack, and fewer);
 *   - act_backward_round without its 16-bit output against with it, and
 *     with `exact` (da already in the dtype, ReLU) against without. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/convert.h"
#include "expect.h"
#include "util/rng.h"

static amp_rng rng;

static void *xmalloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

static void ok(amp_backend *be, int rc, const char *what) {
    if (rc != 0) {
        fprintf(stderr, "FAIL: %s: %s\n", what, be->err);
        exit(1);
    }
}

/* n values ~ N(0, scale^2) with every 97th a special one: +-0, NaN, +-inf,
 * 1e6 (past FP16's range), 1e-30 (below both dtypes' subnormals). */
static float *values(size_t n, float scale, int specials) {
    static const float sp[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e6f, -1e-30f};
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        p[i] = (float)amp_rng_normal(&rng) * scale;
        if (specials && i % 97 == 13) p[i] = sp[(i / 97) % (sizeof sp / sizeof sp[0])];
    }
    return p;
}

static uint16_t *to16(const float *src, size_t n, amp_dtype dt) {
    uint16_t *p = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) p[i] = amp_round16(src[i], (int)dt, NULL);
    return p;
}

static float *widened(amp_backend *be, const uint16_t *src, size_t n, amp_dtype dt) {
    float *p = xmalloc(n * 4);
    ok(be, be->ops->widen(be, p, src, dt, n), "widen");
    return p;
}

static int same(const void *a, const void *b, size_t bytes) { return memcmp(a, b, bytes) == 0; }

static int same_count(const amp_round_count *a, const amp_round_count *b) {
    return a->nonzero == b->nonzero && a->underflow == b->underflow && a->overflow == b->overflow;
}

static int one_rank(void *ctx, double *v, size_t n) { return 0; }

static void test_bn_x16(amp_backend *be, const char *isa, amp_dtype dt, int sync) {
    const int n = 3, c = 2, hw = 37 * 31; /* planes longer than a widening tile */
    size_t xn = (size_t)n * c * hw;
    float *x32 = values(xn, 2.0f, 0), *g = values(xn, 1.0f, 0);
    uint16_t *x16 = to16(x32, xn, dt);
    float *xw = widened(be, x16, xn, dt);
    amp_allsum all = {one_rank, NULL};
    const amp_allsum *sy = sync ? &all : NULL;
    float gamma[2] = {1.25f, 0.75f}, beta[2] = {0.5f, -0.25f};
    float *y[2], *dx[2], sm[2][2], si[2][2], rm[2][2] = {{0}}, rv[2][2] = {{1, 1}, {1, 1}};
    float dg[2][2], db[2][2];
    for (int v = 0; v < 2; v++) { /* 0: FP32 widening, 1: x16 */
        y[v] = xmalloc(xn * 4);
        dx[v] = xmalloc(xn * 4);
        memcpy(dx[v], g, xn * 4);
        ok(be, AMP_CONV(be, batch_norm_forward,
                        &(amp_batch_norm_fwd){y[v], sm[v], si[v], rm[v], rv[v], v ? NULL : xw, gamma,
                                              beta, n, c, hw, 1, 0.1f, 1e-5f, sy, v ? x16 : NULL,
                                              dt}),
           "batch_norm_forward");
        ok(be, AMP_CONV(be, batch_norm_backward,
                        &(amp_batch_norm_bwd){dx[v], dg[v], db[v], dx[v], v ? NULL : xw, gamma, sm[v],
                                              si[v], n, c, hw, 1, sy, v ? x16 : NULL, dt}),
           "batch_norm_backward");
    }
    EXPECT(same(y[0], y[1], xn * 4) && same(sm[0], sm[1], sizeof sm[0]) &&
               same(si[0], si[1], sizeof si[0]) && same(rm[0], rm[1], sizeof rm[0]) &&
               same(rv[0], rv[1], sizeof rv[0]),
           "%s dt %d sync %d: batch_norm_forward on x16 differs from its widening", isa, dt, sync);
    EXPECT(same(dx[0], dx[1], xn * 4) && same(dg[0], dg[1], sizeof dg[0]) &&
               same(db[0], db[1], sizeof db[0]),
           "%s dt %d sync %d: batch_norm_backward on x16 differs from its widening", isa, dt, sync);
    for (int v = 0; v < 2; v++) free(y[v]), free(dx[v]);
    free(x32), free(g), free(x16), free(xw);
}

static void test_round_act(amp_backend *be, const char *isa, amp_dtype dt, amp_act act) {
    const size_t n = 5003; /* not a multiple of a tile */
    float *src = values(n, 3.0f, 1), *q = xmalloc(n * 4), *wide = xmalloc(n * 4);
    uint16_t *ref = xmalloc(n * 2), *got = xmalloc(n * 2);
    amp_round_count cr = {0, 0, 0}, cg = {0, 0, 0};
    ok(be, be->ops->quantize(be, q, src, n, dt, &cr, 0), "quantize");
    ok(be, be->ops->act_forward(be, q, q, n, act), "act_forward");
    ok(be, be->ops->round(be, ref, dt, q, n, NULL), "round");
    ok(be, AMP_FUSED(be, round_act, &(amp_round_act_args){got, wide, src, dt, n, act, &cg}),
       "round_act");
    EXPECT(same(ref, got, n * 2) && same(q, wide, n * 4) && same_count(&cr, &cg),
           "%s dt %d act %d: round_act differs from quantize + act + round", isa, dt, act);
    /* in place: wide == src */
    amp_round_count ci = {0, 0, 0};
    ok(be, AMP_FUSED(be, round_act, &(amp_round_act_args){got, src, src, dt, n, act, &ci}),
       "round_act in place");
    EXPECT(same(ref, got, n * 2) && same(q, src, n * 4) && same_count(&cr, &ci),
           "%s dt %d act %d: round_act in place differs", isa, dt, act);
    free(src), free(q), free(wide), free(ref), free(got);
}

static void *workspace(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes) {
    ok(be, AMP_CONV(be, conv2d_workspace, d, bytes), "conv2d_workspace");
    return xmalloc(*bytes);
}

static void test_conv_round(amp_backend *be, const char *isa, amp_dtype dt, amp_dtype out_dt,
                            int c_out) {
    amp_conv2d_desc d = {2, 3, 9, 7, c_out, 3, 3, 1, 1, 1, 1, dt};
    size_t xn = (size_t)d.n * d.c_in * d.h * d.w, wn = (size_t)c_out * d.c_in * 9;
    size_t yn = (size_t)d.n * c_out * d.h * d.w, wsb;
    float *x32 = values(xn, 1.0f, 0), *w32 = values(wn, 0.5f, 0), *bias = values((size_t)c_out, 1.0f, 0);
    uint16_t *x = to16(x32, xn, dt), *w = to16(w32, wn, dt);
    void *ws = workspace(be, &d, &wsb);
    /* forward */
    float *y = xmalloc(yn * 4);
    uint16_t *ref = xmalloc(yn * 2), *got = xmalloc(yn * 2);
    amp_round_count cr = {0, 0, 0}, cg = {0, 0, 0};
    ok(be, AMP_CONV(be, conv2d_forward, y, x, w, bias, &d, ws, wsb), "conv2d_forward");
    ok(be, be->ops->round(be, ref, out_dt, y, yn, &cr), "round");
    ok(be, AMP_CONV(be, conv2d_forward_round, &(amp_round_out){got, out_dt, &cg}, x, w, bias, &d, ws,
                    wsb),
       "conv2d_forward_round");
    EXPECT(same(ref, got, yn * 2) && same_count(&cr, &cg),
           "%s dt %d out %d c_out %d: conv2d_forward_round differs from conv2d_forward + round",
           isa, dt, out_dt, c_out);
    /* backward, dy with specials and values dt cannot hold */
    float *dy = values(yn, 1e3f, 1);
    uint16_t *dy16 = xmalloc(yn * 2);
    float *dw[2], *dbias[2], *dx[2];
    amp_round_count dc[2] = {{0, 0, 0}, {0, 0, 0}};
    for (int v = 0; v < 2; v++) {
        dw[v] = xmalloc(wn * 4);
        dbias[v] = xmalloc((size_t)c_out * 4);
        dx[v] = xmalloc(xn * 4);
    }
    ok(be, be->ops->round(be, dy16, dt, dy, yn, &dc[0]), "round dy");
    ok(be, AMP_CONV(be, conv2d_backward_filter, dw[0], dbias[0], x, dy16, &d, ws, wsb),
       "conv2d_backward_filter");
    ok(be, AMP_CONV(be, conv2d_backward_data, dx[0], dy16, w, &d, ws, wsb), "conv2d_backward_data");
    /* dx rounded to out_dt after, as the gradient of an input stored there */
    amp_round_count xc[2] = {{0, 0, 0}, {0, 0, 0}};
    ok(be, be->ops->quantize(be, dx[0], dx[0], xn, out_dt, &xc[0], 0), "quantize dx");
    ok(be, AMP_CONV(be, conv2d_backward_round,
                    &(amp_conv2d_grads){dw[1], dbias[1], dx[1], &dc[1], out_dt, &xc[1]}, x, dy, w,
                    &d, ws, wsb),
       "conv2d_backward_round");
    EXPECT(same(dw[0], dw[1], wn * 4) && same(dbias[0], dbias[1], (size_t)c_out * 4) &&
               same(dx[0], dx[1], xn * 4) && same_count(&dc[0], &dc[1]) &&
               same_count(&xc[0], &xc[1]),
           "%s dt %d c_out %d: conv2d_backward_round differs from round + the two ops + quantize",
           isa, dt, c_out);
    for (int v = 0; v < 2; v++) free(dw[v]), free(dbias[v]), free(dx[v]);
    free(x32), free(w32), free(bias), free(x), free(w), free(ws), free(y), free(ref), free(got);
    free(dy), free(dy16);
}

static void test_act_backward_f32_only(amp_backend *be, const char *isa, amp_dtype dt) {
    const size_t n = 3001;
    float *da = values(n, 2.0f, 1), *z32 = values(n, 1.0f, 1);
    uint16_t *z = to16(z32, n, dt), *dz = xmalloc(n * 2);
    float *f[2] = {xmalloc(n * 4), xmalloc(n * 4)};
    amp_round_count c[2] = {{0, 0, 0}, {0, 0, 0}};
    ok(be, AMP_FUSED(be, act_backward_round,
                     &(amp_act_round_args){dz, f[0], da, z, dt, n, AMP_ACT_RELU, &c[0], 0}),
       "act_backward_round");
    ok(be, AMP_FUSED(be, act_backward_round,
                     &(amp_act_round_args){NULL, f[1], da, z, dt, n, AMP_ACT_RELU, &c[1], 0}),
       "act_backward_round without dz");
    EXPECT(same(f[0], f[1], n * 4) && same_count(&c[0], &c[1]),
           "%s dt %d: act_backward_round without its 16-bit output differs", isa, dt);
    /* exact: da already in dt (a stored activation's gradient), ReLU */
    uint16_t *da16 = to16(da, n, dt);
    float *dae = widened(be, da16, n, dt);
    ok(be, AMP_FUSED(be, act_backward_round,
                     &(amp_act_round_args){NULL, f[0], dae, z, dt, n, AMP_ACT_RELU, NULL, 0}),
       "act_backward_round");
    ok(be, AMP_FUSED(be, act_backward_round,
                     &(amp_act_round_args){NULL, f[1], dae, z, dt, n, AMP_ACT_RELU, NULL, 1}),
       "act_backward_round exact");
    EXPECT(same(f[0], f[1], n * 4), "%s dt %d: act_backward_round exact differs", isa, dt);
    EXPECT(AMP_FUSED(be, act_backward_round,
                     &(amp_act_round_args){NULL, f[1], dae, z, dt, n, AMP_ACT_GELU, NULL, 1}) != 0,
           "%s: exact with GELU must be refused", isa);
    free(da), free(z32), free(z), free(dz), free(f[0]), free(f[1]), free(da16), free(dae);
}

int main(void) {
    static const char *const paths[] = {"generic", "avx2", "avx512"};
    static const amp_dtype dts[] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    const char *keep = getenv("AMPTRAIN_ISA");
    char saved[64] = "";
    if (keep) snprintf(saved, sizeof saved, "%s", keep);
    int ran = 0;
    for (int p = 0; p < 3; p++) {
        char err[512];
        setenv("AMPTRAIN_ISA", paths[p], 1);
        amp_backend *be = amp_backend_cpu_create(err, sizeof err);
        if (!be) { /* a path this CPU (or build) lacks */
            printf("isa path %s: not available here (%s)\n", paths[p], err);
            continue;
        }
        EXPECT(amp_backend_supports(be, "batch_norm_x16") && amp_backend_supports(be, "round_act") &&
                   amp_backend_supports(be, "conv2d_forward_round") &&
                   amp_backend_supports(be, "conv2d_backward_round"),
               "the CPU backend offers the one-pass ops");
        amp_rng_seed(&rng, 31);
        for (int i = 0; i < 2; i++) {
            amp_dtype dt = dts[i], other = dts[1 - i];
            test_bn_x16(be, paths[p], dt, 0);
            test_bn_x16(be, paths[p], dt, 1);
            test_round_act(be, paths[p], dt, AMP_ACT_RELU);
            test_round_act(be, paths[p], dt, AMP_ACT_NONE);
            test_conv_round(be, paths[p], dt, dt, 5);
            test_conv_round(be, paths[p], dt, other, 300);
            test_act_backward_f32_only(be, paths[p], dt);
        }
        printf("isa path %s: one-pass ops equal their compositions\n", paths[p]);
        be->ops->destroy(be);
        ran++;
    }
    if (keep)
        setenv("AMPTRAIN_ISA", saved, 1);
    else
        unsetenv("AMPTRAIN_ISA");
    EXPECT(ran > 0, "no instruction-set path could be made");
    if (amp_test_failures) {
        fprintf(stderr, "%d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("all one-pass CNN op checks passed\n");
    return 0;
}
