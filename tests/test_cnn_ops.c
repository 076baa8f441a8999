/* The CPU backend's convolutional-network ops against references that do not
 * share their code:
 *   - conv2d forward against a direct convolution summed in FP64, in FP32
 *     and in FP16/BF16 (where the result is rounded through the dtype);
 *   - every backward (conv2d data, filter and bias; max_pool2d; batch_norm
 *     in training and evaluation mode) against central finite differences of
 *     the forward, element by element, on odd shapes: stride 2, padding,
 *     non-square kernels, channel counts that are not multiples of 8;
 *   - batch_norm's running statistics against the closed form of PyTorch's
 *     update (momentum 0.1, unbiased variance).
 * Each finite-difference check is also run once against a gradient with one
 * element changed, and must reject it: the checker can fail.
 *   - max pooling without padding (the vectorised 2x2 path among them)
 *     against amp_maxpool_value bit for bit, with ties, NaNs, infinities and
 *     signed zeros;
 *   - the loops the backend compiles once per instruction-set path (batch
 *     norm, pooling, the conv bias gradient): bit for bit equal on every path
 *     this CPU has. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/conv.h"
#include "backend/kernels/convert.h"
#include "expect.h"
#include "util/rng.h"

static amp_backend *be;
static amp_rng rng;

static void *xmalloc(size_t bytes) {
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

static float *randn(size_t n, float scale) {
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = (float)amp_rng_normal(&rng) * scale;
    return p;
}

static double dot(const float *a, const float *b, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

static void ok(int rc, const char *what) {
    if (rc != 0) {
        fprintf(stderr, "FAIL: %s: %s\n", what, be->err);
        exit(1);
    }
}

/* Counts elements with |a - f| > atol + rtol * |f| (a: analytic, f: finite
 * differences); prints the first few when `report`. */
static int mismatches(const char *what, const float *a, const double *f, size_t n, double atol,
                      double rtol, int report) {
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - f[i]);
        if (d > worst) worst = d;
        if (d > atol + rtol * fabs(f[i])) {
            if (report && bad < 5)
                fprintf(stderr, "  %s[%zu]: analytic %.7g, finite differences %.7g\n", what, i,
                        a[i], f[i]);
            bad++;
        }
    }
    if (report) printf("%-44s n=%-5zu max|analytic-fd| %.2e%s\n", what, n, worst, bad ? "  BAD" : "");
    return bad;
}

/* The check, then the same check against the gradient with its largest
 * element changed by 10%, which must be rejected. */
static void check_grad(const char *what, const float *a, const double *f, size_t n, double atol,
                       double rtol) {
    EXPECT(mismatches(what, a, f, n, atol, rtol, 1) == 0, "%s: analytic gradient disagrees", what);
    float *m = xmalloc(n * sizeof(float));
    memcpy(m, a, n * sizeof(float));
    size_t big = 0;
    for (size_t i = 1; i < n; i++)
        if (fabsf(m[i]) > fabsf(m[big])) big = i;
    m[big] = m[big] * 1.1f + (m[big] == 0.0f ? 1.0f : 0.0f);
    EXPECT(mismatches(what, m, f, n, atol, rtol, 0) > 0,
           "%s: the checker accepted a gradient with element %zu changed", what, big);
    free(m);
}

/* ---- conv2d --------------------------------------------------------------- */

static size_t conv_x_n(const amp_conv2d_desc *d) { return (size_t)d->n * d->c_in * d->h * d->w; }
static size_t conv_w_n(const amp_conv2d_desc *d) {
    return (size_t)d->c_out * d->c_in * d->kh * d->kw;
}
static size_t conv_y_n(const amp_conv2d_desc *d) {
    return (size_t)d->n * d->c_out * amp_conv2d_out_h(d) * amp_conv2d_out_w(d);
}

/* Direct convolution in FP64 (plus bias), FP32 inputs. */
static void conv_direct(double *y, const float *x, const float *w, const float *bias,
                        const amp_conv2d_desc *d) {
    int p = amp_conv2d_out_h(d), q = amp_conv2d_out_w(d);
    for (int i = 0; i < d->n; i++)
        for (int co = 0; co < d->c_out; co++)
            for (int oy = 0; oy < p; oy++)
                for (int ox = 0; ox < q; ox++) {
                    double s = bias ? bias[co] : 0.0;
                    for (int ci = 0; ci < d->c_in; ci++)
                        for (int ky = 0; ky < d->kh; ky++)
                            for (int kx = 0; kx < d->kw; kx++) {
                                int iy = oy * d->stride_h - d->pad_h + ky;
                                int ix = ox * d->stride_w - d->pad_w + kx;
                                if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w) continue;
                                s += (double)x[(((size_t)i * d->c_in + ci) * d->h + iy) * d->w + ix] *
                                     w[(((size_t)co * d->c_in + ci) * d->kh + ky) * d->kw + kx];
                            }
                    y[(((size_t)i * d->c_out + co) * p + oy) * q + ox] = s;
                }
}

static void *ws_for(const amp_conv2d_desc *d, size_t *bytes) {
    ok(AMP_CONV(be, conv2d_workspace, d, bytes), "conv2d_workspace");
    return xmalloc(*bytes);
}

/* Stores src (FP32) in dt: 16-bit values or the floats themselves. */
static void *as_dt(const float *src, size_t n, amp_dtype dt) {
    if (dt == AMP_DTYPE_F32) {
        float *p = xmalloc(n * 4);
        memcpy(p, src, n * 4);
        return p;
    }
    uint16_t *p = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) p[i] = amp_round16(src[i], (int)dt, NULL);
    return p;
}

static void widen_into(float *dst, const void *src, size_t n, amp_dtype dt) {
    for (size_t i = 0; i < n; i++)
        dst[i] = dt == AMP_DTYPE_F32 ? ((const float *)src)[i]
                                      : amp_widen16(((const uint16_t *)src)[i], (int)dt);
}

static void test_conv_forward(const char *name, amp_conv2d_desc d) {
    static const amp_dtype dts[] = {AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16};
    static const char *const dtn[] = {"f32", "f16", "bf16"};
    size_t xn = conv_x_n(&d), wn = conv_w_n(&d), yn = conv_y_n(&d);
    float *x = randn(xn, 1.0f), *w = randn(wn, 0.3f), *b = randn((size_t)d.c_out, 0.5f);
    for (int t = 0; t < 3; t++) {
        d.dt = dts[t];
        void *xd = as_dt(x, xn, d.dt), *wd = as_dt(w, wn, d.dt);
        float *xw = xmalloc(xn * 4), *ww = xmalloc(wn * 4), *y = xmalloc(yn * 4);
        double *ref = xmalloc(yn * 8);
        widen_into(xw, xd, xn, d.dt);
        widen_into(ww, wd, wn, d.dt);
        conv_direct(ref, xw, ww, NULL, &d); /* reference on the dtype's values */
        size_t wsb;
        void *ws = ws_for(&d, &wsb);
        ok(AMP_CONV(be, conv2d_forward, y, xd, wd, b, &d, ws, wsb), "conv2d_forward");
        /* FP32: accumulation-order differences only. 16-bit: the result is
         * rounded through dt before the bias, so one unit in the last place
         * of dt (2^-11 / 2^-8 relative) on top. */
        double rtol = d.dt == AMP_DTYPE_F32 ? 1e-5 : d.dt == AMP_DTYPE_F16 ? 1.0 / 1024 : 1.0 / 128;
        int bad = 0;
        double worst = 0.0;
        for (size_t i = 0; i < yn; i++) {
            int co = (int)((i / ((size_t)amp_conv2d_out_h(&d) * amp_conv2d_out_w(&d))) % d.c_out);
            double conv = ref[i], got = (double)y[i] - b[co];
            double e = fabs(got - conv);
            if (e > worst) worst = e;
            if (e > 1e-5 + rtol * fabs(conv) + 1e-6 * fabs(b[co])) {
                if (bad++ < 5)
                    fprintf(stderr, "  %s %s y[%zu]: got %.7g want %.7g\n", name, dtn[t], i, got,
                            conv);
            }
        }
        EXPECT(bad == 0, "%s %s: conv2d_forward disagrees with the direct convolution in %d of %zu",
               name, dtn[t], bad, yn);
        printf("%-44s n=%-5zu max|conv-direct| %.2e\n", "conv2d_forward", yn, worst);
        free(xd), free(wd), free(xw), free(ww), free(y), free(ref), free(ws);
    }
    free(x), free(w), free(b);
}

/* FD of L = sum(g * conv(x, w) + bias) over x, w and bias; conv is linear in
 * each, so a large step is exact up to rounding. */
static void test_conv_backward(const char *name, amp_conv2d_desc d) {
    d.dt = AMP_DTYPE_F32;
    size_t xn = conv_x_n(&d), wn = conv_w_n(&d), yn = conv_y_n(&d), bn = (size_t)d.c_out;
    float *x = randn(xn, 1.0f), *w = randn(wn, 0.3f), *b = randn(bn, 0.5f), *g = randn(yn, 1.0f);
    float *y = xmalloc(yn * 4), *dx = xmalloc(xn * 4), *dw = xmalloc(wn * 4), *db = xmalloc(bn * 4);
    size_t wsb;
    void *ws = ws_for(&d, &wsb);
    ok(AMP_CONV(be, conv2d_backward_data, dx, g, w, &d, ws, wsb), "conv2d_backward_data");
    ok(AMP_CONV(be, conv2d_backward_filter, dw, db, x, g, &d, ws, wsb), "conv2d_backward_filter");
    const float h = 0.5f;
    struct {
        const char *what;
        float *v, *grad;
        size_t n;
    } t[3] = {{"dx", x, dx, xn}, {"dw", w, dw, wn}, {"dbias", b, db, bn}};
    for (int k = 0; k < 3; k++) {
        double *fd = xmalloc(t[k].n * 8);
        for (size_t i = 0; i < t[k].n; i++) {
            float keep = t[k].v[i];
            t[k].v[i] = keep + h;
            ok(AMP_CONV(be, conv2d_forward, y, x, w, b, &d, ws, wsb), "conv2d_forward");
            double lp = dot(g, y, yn);
            t[k].v[i] = keep - h;
            ok(AMP_CONV(be, conv2d_forward, y, x, w, b, &d, ws, wsb), "conv2d_forward");
            double lm = dot(g, y, yn);
            t[k].v[i] = keep;
            fd[i] = (lp - lm) / (2.0 * h);
        }
        char what[96];
        snprintf(what, sizeof what, "conv2d %s %s", name, t[k].what);
        check_grad(what, t[k].grad, fd, t[k].n, 1e-3, 1e-4);
        free(fd);
    }
    free(x), free(w), free(b), free(g), free(y), free(dx), free(dw), free(db), free(ws);
}

static void test_conv_workspace_checks(void) {
    amp_conv2d_desc d = {2, 3, 9, 7, 5, 3, 3, 2, 2, 1, 1, AMP_DTYPE_F32};
    size_t wsb;
    void *ws = ws_for(&d, &wsb);
    float *x = xmalloc(conv_x_n(&d) * 4), *w = xmalloc(conv_w_n(&d) * 4), *y = xmalloc(conv_y_n(&d) * 4);
    EXPECT(AMP_CONV(be, conv2d_forward, y, x, w, NULL, &d, ws, wsb - 4) != 0 &&
               strstr(be->err, "workspace"),
           "a short workspace must be refused, got '%s'", be->err);
    amp_conv2d_desc bad = d;
    bad.kh = 12;
    EXPECT(AMP_CONV(be, conv2d_workspace, &bad, &wsb) != 0 && strstr(be->err, "kernel"),
           "a kernel larger than the padded input must be refused, got '%s'", be->err);
    bad = d;
    bad.stride_w = 0;
    EXPECT(AMP_CONV(be, conv2d_workspace, &bad, &wsb) != 0 && strstr(be->err, "stride_w"),
           "stride 0 must be refused naming the field, got '%s'", be->err);
    free(ws), free(x), free(w), free(y);
}

/* ---- max pooling ------------------------------------------------------------ */

static void test_pool(const char *name, amp_pool2d_desc d) {
    int p = amp_pool2d_out_h(&d), q = amp_pool2d_out_w(&d);
    size_t xn = (size_t)d.n * d.c * d.h * d.w, yn = (size_t)d.n * d.c * p * q;
    /* distinct values 0.05 apart, so a 1e-3 step never changes a window's
     * winner and finite differences are exact */
    float *x = xmalloc(xn * 4);
    for (size_t i = 0; i < xn; i++) x[i] = (float)i * 0.05f;
    for (size_t i = xn - 1; i > 0; i--) {
        size_t j = (size_t)amp_rng_below(&rng, i + 1);
        float t = x[i];
        x[i] = x[j];
        x[j] = t;
    }
    float *g = randn(yn, 1.0f), *y = xmalloc(yn * 4), *dx = xmalloc(xn * 4);
    uint16_t *idx = xmalloc(yn * 2);
    ok(AMP_CONV(be, max_pool2d_forward, y, idx, x, &d), "max_pool2d_forward");
    /* forward against a brute-force maximum over the clipped window */
    int bad = 0;
    for (int pl = 0; pl < d.n * d.c; pl++)
        for (int oy = 0; oy < p; oy++)
            for (int ox = 0; ox < q; ox++) {
                float best = -INFINITY;
                int bi = -1;
                for (int ky = 0; ky < d.kh; ky++)
                    for (int kx = 0; kx < d.kw; kx++) {
                        int iy = oy * d.stride_h - d.pad_h + ky, ix = ox * d.stride_w - d.pad_w + kx;
                        if (iy < 0 || iy >= d.h || ix < 0 || ix >= d.w) continue;
                        float v = x[(size_t)pl * d.h * d.w + (size_t)iy * d.w + ix];
                        if (v > best) best = v, bi = iy * d.w + ix;
                    }
                size_t o = (size_t)pl * p * q + (size_t)oy * q + ox;
                /* the window offset, as PyTorch's flat index */
                int at = amp_maxpool_arg_index(idx[o], d.w, d.kw, oy, ox, d.stride_h, d.stride_w,
                                               d.pad_h, d.pad_w);
                if (y[o] != best || at != bi || idx[o] >= d.kh * d.kw) bad++;
            }
    EXPECT(bad == 0, "max_pool2d %s forward: %d windows wrong", name, bad);
    ok(AMP_CONV(be, max_pool2d_backward, dx, g, idx, &d), "max_pool2d_backward");
    double *fd = xmalloc(xn * 8);
    const float h = 1e-3f;
    for (size_t i = 0; i < xn; i++) {
        float keep = x[i];
        x[i] = keep + h;
        ok(AMP_CONV(be, max_pool2d_forward, y, NULL, x, &d), "max_pool2d_forward");
        double lp = dot(g, y, yn);
        x[i] = keep - h;
        ok(AMP_CONV(be, max_pool2d_forward, y, NULL, x, &d), "max_pool2d_forward");
        double lm = dot(g, y, yn);
        x[i] = keep;
        /* the step is not exact in FP32 around x; divide by what it was */
        fd[i] = (lp - lm) / ((double)(keep + h) - (double)(keep - h));
    }
    char what[96];
    snprintf(what, sizeof what, "max_pool2d %s dx", name);
    check_grad(what, dx, fd, xn, 1e-4, 1e-3);
    free(x), free(g), free(y), free(dx), free(idx), free(fd);
}

static void test_pool_nan_and_checks(void) {
    /* A NaN wins its window and stays, as in PyTorch. */
    amp_pool2d_desc d = {1, 1, 2, 2, 2, 2, 2, 2, 0, 0};
    float x[4] = {1.0f, NAN, 5.0f, 2.0f}, y[1];
    uint16_t idx[1];
    ok(AMP_CONV(be, max_pool2d_forward, y, idx, x, &d), "max_pool2d_forward");
    EXPECT(isnan(y[0]) && idx[0] == 1, "NaN must win the window: y %g idx %d", y[0], idx[0]);
    amp_pool2d_desc bad = d;
    bad.pad_h = 2;
    EXPECT(AMP_CONV(be, max_pool2d_forward, y, idx, x, &bad) != 0 && strstr(be->err, "half"),
           "padding over half the window must be refused, got '%s'", be->err);
    /* the argmax is a 2-byte offset in its window: a window over 65536 is refused */
    amp_pool2d_desc huge = {1, 1, 300, 300, 257, 257, 257, 257, 0, 0};
    EXPECT(AMP_CONV(be, max_pool2d_forward, y, idx, x, &huge) != 0 && strstr(be->err, "65536"),
           "a 257x257 window must be refused, got '%s'", be->err);
}

/* ---- batch norm -------------------------------------------------------------- */

static void bn_forward(float *y, float *sm, float *si, float *rm, float *rv, const float *x,
                       const float *gamma, const float *beta, int n, int c, int hw, int training) {
    ok(AMP_CONV(be, batch_norm_forward,
                &(amp_batch_norm_fwd){y, sm, si, rm, rv, x, gamma, beta, n, c, hw, training, 0.1f,
                                      1e-5f, NULL, NULL, AMP_DTYPE_F32}),
       "batch_norm_forward");
}

static void test_bn(int training) {
    const int n = 3, c = 5, hw = 7 * 5;
    size_t xn = (size_t)n * c * hw;
    float *x = randn(xn, 2.0f), *gamma = randn((size_t)c, 1.0f), *beta = randn((size_t)c, 1.0f);
    float *g = randn(xn, 1.0f), *y = xmalloc(xn * 4), *dx = xmalloc(xn * 4);
    float sm[5], si[5], rm[5], rv[5], dgamma[5], dbeta[5];
    for (int i = 0; i < c; i++) x[i * hw] += 3.0f * (float)i; /* channels with different means */
    for (int i = 0; i < c; i++) rm[i] = 0.1f * (float)i, rv[i] = 0.5f + 0.25f * (float)i;
    float rm0[5], rv0[5];
    memcpy(rm0, rm, sizeof rm);
    memcpy(rv0, rv, sizeof rv);
    bn_forward(y, sm, si, rm, rv, x, gamma, beta, n, c, hw, training);
    /* forward and running statistics against the closed form in FP64 */
    int bad = 0;
    for (int ch = 0; ch < c; ch++) {
        double s = 0, sq = 0, m, var;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) s += x[((size_t)i * c + ch) * hw + j];
        m = s / (n * hw);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                double t = x[((size_t)i * c + ch) * hw + j] - m;
                sq += t * t;
            }
        var = sq / (n * hw);
        double um = training ? m : rm0[ch], uv = training ? var : rv0[ch];
        for (int i = 0; i < n; i++)
            for (int j = 0; j < hw; j++) {
                size_t e = ((size_t)i * c + ch) * hw + j;
                double want = (x[e] - um) / sqrt(uv + 1e-5) * gamma[ch] + beta[ch];
                if (fabs(y[e] - want) > 1e-5 + 1e-5 * fabs(want)) bad++;
            }
        double erm = training ? 0.9 * rm0[ch] + 0.1 * m : rm0[ch];
        double erv = training ? 0.9 * rv0[ch] + 0.1 * var * (n * hw) / (n * hw - 1.0) : rv0[ch];
        EXPECT(fabs(rm[ch] - erm) <= 1e-6 * (1 + fabs(erm)) && fabs(rv[ch] - erv) <= 1e-6 * (1 + fabs(erv)),
               "bn %s channel %d running stats: mean %.8g var %.8g, want %.8g %.8g",
               training ? "train" : "eval", ch, rm[ch], rv[ch], erm, erv);
    }
    EXPECT(bad == 0, "bn %s forward: %d values off the closed form", training ? "train" : "eval", bad);
    ok(AMP_CONV(be, batch_norm_backward,
                &(amp_batch_norm_bwd){dx, dgamma, dbeta, g, x, gamma, sm, si, n, c, hw, training, NULL, NULL, AMP_DTYPE_F32}),
       "batch_norm_backward");
    /* finite differences; in training mode the batch statistics move with
     * x, in evaluation mode the running ones are constants (restored each
     * time, since the training forward updates them) */
    const float h = 1e-2f;
    struct {
        const char *what;
        float *v, *grad;
        size_t n;
    } t[3] = {{"dx", x, dx, xn}, {"dgamma", gamma, dgamma, (size_t)c}, {"dbeta", beta, dbeta, (size_t)c}};
    for (int k = 0; k < 3; k++) {
        double *fd = xmalloc(t[k].n * 8);
        for (size_t i = 0; i < t[k].n; i++) {
            float keep = t[k].v[i];
            memcpy(rm, rm0, sizeof rm), memcpy(rv, rv0, sizeof rv);
            t[k].v[i] = keep + h;
            bn_forward(y, sm, si, rm, rv, x, gamma, beta, n, c, hw, training);
            double lp = dot(g, y, xn);
            memcpy(rm, rm0, sizeof rm), memcpy(rv, rv0, sizeof rv);
            t[k].v[i] = keep - h;
            bn_forward(y, sm, si, rm, rv, x, gamma, beta, n, c, hw, training);
            double lm = dot(g, y, xn);
            t[k].v[i] = keep;
            fd[i] = (lp - lm) / ((double)(keep + h) - (double)(keep - h));
        }
        char what[96];
        snprintf(what, sizeof what, "batch_norm %s %s", training ? "train" : "eval", t[k].what);
        check_grad(what, t[k].grad, fd, t[k].n, 2e-3, 1e-2);
        free(fd);
    }
    EXPECT(AMP_CONV(be, batch_norm_forward,
                    &(amp_batch_norm_fwd){y, sm, si, rm, rv, x, gamma, beta, 1, c, 1, 1, 0.1f,
                                          1e-5f, NULL, NULL, AMP_DTYPE_F32}) != 0 &&
               strstr(be->err, "more than 1 value"),
           "training on one value per channel must be refused, got '%s'", be->err);
    free(x), free(gamma), free(beta), free(g), free(y), free(dx);
}

/* Pooling without padding (2x2 stride 2 runs four outputs per vector; the
 * others the scalar select) against the shared per-element function: the
 * same values, bit for bit, and the same indices. Values from a small set
 * with NaN, +-inf and +-0, so windows tie, hold NaNs and hold only -inf. */
static void test_pool_exact(const char *name, amp_pool2d_desc d) {
    static const float vals[] = {0.0f, -0.0f, 1.0f, 1.0f, -2.0f, INFINITY, -INFINITY, NAN, 3.5f};
    int p = amp_pool2d_out_h(&d), q = amp_pool2d_out_w(&d);
    size_t xn = (size_t)d.n * d.c * d.h * d.w, yn = (size_t)d.n * d.c * p * q;
    float *x = xmalloc(xn * 4), *y = xmalloc(yn * 4);
    uint16_t *idx = xmalloc(yn * 2);
    for (size_t i = 0; i < xn; i++)
        x[i] = i < xn / 4 ? -INFINITY : vals[amp_rng_below(&rng, sizeof vals / sizeof vals[0])];
    ok(AMP_CONV(be, max_pool2d_forward, y, idx, x, &d), "max_pool2d_forward");
    int bad = 0;
    for (int pl = 0; pl < d.n * d.c; pl++)
        for (int oy = 0; oy < p; oy++)
            for (int ox = 0; ox < q; ox++) {
                uint16_t a;
                float v = amp_maxpool_value(&a, x + (size_t)pl * d.h * d.w, d.h, d.w, d.kh, d.kw, oy,
                                            ox, d.stride_h, d.stride_w, d.pad_h, d.pad_w);
                size_t o = (size_t)pl * p * q + (size_t)oy * q + ox;
                if (memcmp(&v, &y[o], 4) != 0 || a != idx[o]) bad++;
            }
    EXPECT(bad == 0, "max_pool2d %s: %d of %zu windows differ from amp_maxpool_value", name, bad,
           yn);
    free(x), free(y), free(idx);
}

/* Runs batch norm (training, both directions), max pooling and the conv
 * bias gradient on backend b into out (concatenated); returns the length. */
static size_t isa_outputs(amp_backend *b, float *out) {
    amp_rng r;
    amp_rng_seed(&r, 99);
    const int n = 4, c = 3, hw = 13 * 11;
    size_t xn = (size_t)n * c * hw, k = 0;
    float *x = xmalloc(xn * 4), *g = xmalloc(xn * 4), gamma[3], beta[3], rm[3] = {0}, rv[3] = {1, 1, 1};
    for (size_t i = 0; i < xn; i++) x[i] = (float)amp_rng_normal(&r) * 3.0f + 1.0f;
    for (size_t i = 0; i < xn; i++) g[i] = (float)amp_rng_normal(&r);
    for (int i = 0; i < c; i++) gamma[i] = 1.0f + 0.1f * (float)i, beta[i] = 0.2f * (float)i;
    float *y = out, *sm = y + xn, *si = sm + c, *dx = si + c, *dg = dx + xn, *db = dg + c;
    ok(AMP_CONV(b, batch_norm_forward,
                &(amp_batch_norm_fwd){y, sm, si, rm, rv, x, gamma, beta, n, c, hw, 1, 0.1f, 1e-5f, NULL, NULL, AMP_DTYPE_F32}),
       "batch_norm_forward");
    ok(AMP_CONV(b, batch_norm_backward,
                &(amp_batch_norm_bwd){dx, dg, db, g, x, gamma, sm, si, n, c, hw, 1, NULL, NULL, AMP_DTYPE_F32}),
       "batch_norm_backward");
    k = 2 * xn + 4 * (size_t)c;
    memcpy(out + k, rm, sizeof rm), memcpy(out + k + c, rv, sizeof rv);
    k += 2 * (size_t)c;
    amp_pool2d_desc pd = {n, c, 13, 11, 2, 2, 2, 2, 0, 0};
    uint16_t *idx = xmalloc(xn * 2);
    ok(AMP_CONV(b, max_pool2d_forward, out + k, idx, x, &pd), "max_pool2d_forward");
    k += (size_t)n * c * 6 * 5;
    amp_conv2d_desc cd = {n, 2, 13, 11, c, 3, 3, 1, 1, 1, 1, AMP_DTYPE_F32};
    size_t wsb;
    ok(AMP_CONV(b, conv2d_workspace, &cd, &wsb), "conv2d_workspace");
    void *ws = xmalloc(wsb);
    float *dw = xmalloc((size_t)c * 2 * 9 * 4);
    /* dy = g (n, c, 13, 11), x = the first 2 channels' worth of x */
    ok(AMP_CONV(b, conv2d_backward_filter, dw, out + k, x, g, &cd, ws, wsb),
       "conv2d_backward_filter");
    k += (size_t)c;
    free(x), free(g), free(idx), free(ws), free(dw);
    return k;
}

static void test_isa_paths(void) {
    static const char *const paths[] = {"generic", "avx2", "avx512"};
    const size_t cap = 1 << 16;
    float *ref = xmalloc(cap * 4), *got = xmalloc(cap * 4);
    size_t n = isa_outputs(be, ref);
    const char *keep = getenv("AMPTRAIN_ISA");
    char saved[64] = "";
    if (keep) snprintf(saved, sizeof saved, "%s", keep);
    for (int i = 0; i < 3; i++) {
        char err[512];
        setenv("AMPTRAIN_ISA", paths[i], 1);
        amp_backend *b = amp_backend_cpu_create(err, sizeof err);
        if (!b) { /* a path this CPU (or build) lacks */
            printf("isa path %s: not available here (%s)\n", paths[i], err);
            continue;
        }
        size_t m = isa_outputs(b, got);
        EXPECT(m == n && memcmp(ref, got, n * 4) == 0,
               "batch norm / pooling / conv bias gradient: path %s differs from the default path",
               paths[i]);
        printf("isa path %s: batch norm, pooling, conv bias gradient bit for bit equal\n",
               paths[i]);
        b->ops->destroy(b);
    }
    if (keep)
        setenv("AMPTRAIN_ISA", saved, 1);
    else
        unsetenv("AMPTRAIN_ISA");
    free(ref), free(got);
}

int main(void) {
    char err[512];
    be = amp_backend_cpu_create(err, sizeof err);
    if (!be && getenv("AMPTRAIN_ISA")) { /* test_cnn_ops_avx2 on a CPU without AVX2 */
        printf("skipped: %s\n", err);
        return 77;
    }
    if (!be) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    amp_rng_seed(&rng, 12);
    /* n, c_in, h, w, c_out, kh, kw, stride_h, stride_w, pad_h, pad_w */
    amp_conv2d_desc s2 = {2, 3, 9, 7, 5, 3, 3, 2, 2, 1, 1, AMP_DTYPE_F32};
    amp_conv2d_desc odd = {2, 10, 8, 11, 6, 2, 3, 2, 1, 0, 2, AMP_DTYPE_F32};
    amp_conv2d_desc one = {3, 5, 4, 4, 7, 1, 1, 1, 1, 0, 0, AMP_DTYPE_F32};
    test_conv_forward("stride2 pad1 3x3", s2);
    test_conv_forward("stride(2,1) pad(0,2) 2x3 c10", odd);
    test_conv_forward("1x1", one);
    test_conv_backward("stride2 pad1 3x3", s2);
    test_conv_backward("stride(2,1) pad(0,2) 2x3 c10", odd);
    test_conv_backward("1x1", one);
    test_conv_workspace_checks();
    /* n, c, h, w, kh, kw, stride_h, stride_w, pad_h, pad_w */
    test_pool("3x3 stride2 pad1", (amp_pool2d_desc){2, 3, 9, 7, 3, 3, 2, 2, 1, 1});
    test_pool("2x2 stride2 odd h", (amp_pool2d_desc){2, 5, 7, 6, 2, 2, 2, 2, 0, 0});
    test_pool("3x2 stride(1,2)", (amp_pool2d_desc){1, 3, 6, 7, 3, 2, 1, 2, 1, 0});
    test_pool_nan_and_checks();
    test_pool_exact("2x2 stride2 w19", (amp_pool2d_desc){2, 3, 10, 19, 2, 2, 2, 2, 0, 0});
    test_pool_exact("2x2 stride2 w8", (amp_pool2d_desc){1, 2, 4, 8, 2, 2, 2, 2, 0, 0});
    test_pool_exact("3x2 stride(2,1) no pad", (amp_pool2d_desc){2, 2, 9, 10, 3, 2, 2, 1, 0, 0});
    test_isa_paths();
    test_bn(1);
    test_bn(0);
    be->ops->destroy(be);
    if (amp_test_failures) {
        fprintf(stderr, "%d check(s) failed\n", amp_test_failures);
        return 1;
    }
    printf("all CNN op checks passed\n");
    return 0;
}
