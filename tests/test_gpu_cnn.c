/* The CUDA backend's convolutional-network ops (cuDNN convolutions, our own
 * pooling and batch-norm kernels) against the CPU backend on the same
 * inputs, per op and dtype:
 *   conv2d forward (with bias), backward-data, backward-filter (with dbias)
 *   in FP32, FP16 and BF16 on odd shapes and one realistic layer; a smaller
 *   batch run in the workspace sized for the full one; with
 *   [run] deterministic the same backward twice must agree bit for bit;
 *   max_pool2d forward/backward (exact, indices included);
 *   batch_norm forward/backward in training and evaluation mode, running
 *   statistics included.
 * Outputs are poisoned with NaN first, so an element the GPU never writes is
 * caught. Tolerances are written next to each comparison. Each op and
 * shape is a row (op_rows.h): a failure is listed and the next row runs.
 * Skips (77) without a visible device; with one, a CUDA backend without
 * conv2d ops (built without cuDNN) fails every conv row, saying so. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/convert.h"
#include "expect.h"
#include "op_rows.h"
#include "rng.h"

static amp_backend *cpu, *gpu;
static amp_rng rng;

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

/* A failed call ends the current op row (op_rows.h), not the test. */
static void ok(int rc, amp_backend *be, const char *what) {
    if (rc != 0) amp_op_abort("%s on %s: %s", what, be->ops->name, be->err);
}

static void *to_gpu(const void *host, size_t bytes) {
    void *d = gpu->ops->alloc(gpu, bytes);
    if (!d) ok(1, gpu, "alloc");
    ok(gpu->ops->upload(gpu, d, host, bytes), gpu, "upload");
    return d;
}

/* A GPU buffer filled with NaN (0xff bytes: NaN in FP32, FP16 and BF16). */
static void *poisoned_gpu(size_t bytes) {
    void *h = xmalloc(bytes);
    memset(h, 0xff, bytes);
    void *d = to_gpu(h, bytes);
    free(h);
    return d;
}

static void *from_gpu(const void *dev, size_t bytes) {
    void *h = xmalloc(bytes);
    ok(gpu->ops->download(gpu, h, dev, bytes), gpu, "download");
    return h;
}

static float *randn(size_t n, float scale) {
    float *p = xmalloc(n * 4);
    for (size_t i = 0; i < n; i++) p[i] = (float)amp_rng_normal(&rng) * scale;
    return p;
}

/* src stored in dt (16-bit values, or the floats). */
static void *as_dt(const float *src, size_t n, amp_dtype dt) {
    if (dt == AMP_DTYPE_F32) {
        void *p = xmalloc(n * 4);
        memcpy(p, src, n * 4);
        return p;
    }
    uint16_t *p = xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) p[i] = amp_round16(src[i], (int)dt, NULL);
    return p;
}

static size_t dt_bytes(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

/* |g - c| <= atol + rtol |c| everywhere; NaN anywhere fails. */
static void cmp(const char *what, const float *g, const float *c, size_t n, double atol,
                double rtol) {
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)g[i] - c[i]);
        int good = !isnan(g[i]) && !isnan(c[i]) && d <= atol + rtol * fabs((double)c[i]);
        if (!isnan(d) && d > worst) worst = d;
        if (!good && bad++ < 5)
            fprintf(stderr, "  %s[%zu]: gpu %.9g cpu %.9g\n", what, i, g[i], c[i]);
    }
    EXPECT(bad == 0, "%s: %d of %zu elements differ beyond %.1e + %.1e|cpu|", what, bad, n, atol,
           rtol);
    if (!bad) printf("ok  %-52s n=%-7zu max|gpu-cpu| %.2e\n", what, n, worst);
}

static const char *dt_name(amp_dtype dt) {
    return dt == AMP_DTYPE_F32 ? "f32" : dt == AMP_DTYPE_F16 ? "f16" : "bf16";
}

/* ---- conv2d ---------------------------------------------------------------- */

static void test_conv(const char *name, amp_conv2d_desc d) {
    if (!amp_backend_supports(gpu, "conv"))
        amp_op_abort("the CUDA backend has no conv2d ops: built without cuDNN (see the build's "
                     "'amptrain: cuDNN' line)");
    int p = amp_conv2d_out_h(&d), q = amp_conv2d_out_w(&d);
    size_t xn = (size_t)d.n * d.c_in * d.h * d.w, wn = (size_t)d.c_out * d.c_in * d.kh * d.kw;
    size_t yn = (size_t)d.n * d.c_out * p * q, K = (size_t)d.c_in * d.kh * d.kw;
    size_t db = dt_bytes(d.dt);
    float *xf = randn(xn, 1.0f), *wf = randn(wn, 1.0f / sqrtf((float)K)), *bf = randn((size_t)d.c_out, 0.5f);
    float *gf = randn(yn, 1.0f);
    void *x = as_dt(xf, xn, d.dt), *w = as_dt(wf, wn, d.dt), *g = as_dt(gf, yn, d.dt);
    /* CPU reference */
    size_t cws_b, gws_b;
    ok(AMP_CONV(cpu, conv2d_workspace, &d, &cws_b), cpu, "conv2d_workspace");
    ok(AMP_CONV(gpu, conv2d_workspace, &d, &gws_b), gpu, "conv2d_workspace");
    void *cws = xmalloc(cws_b);
    float *cy = xmalloc(yn * 4), *cdx = xmalloc(xn * 4), *cdw = xmalloc(wn * 4), *cdb = xmalloc((size_t)d.c_out * 4);
    ok(AMP_CONV(cpu, conv2d_forward, cy, x, w, bf, &d, cws, cws_b), cpu, "conv2d_forward");
    ok(AMP_CONV(cpu, conv2d_backward_data, cdx, g, w, &d, cws, cws_b), cpu, "conv2d_backward_data");
    ok(AMP_CONV(cpu, conv2d_backward_filter, cdw, cdb, x, g, &d, cws, cws_b), cpu,
       "conv2d_backward_filter");
    /* GPU */
    void *gx = to_gpu(x, xn * db), *gw = to_gpu(w, wn * db), *gg = to_gpu(g, yn * db);
    float *gb = to_gpu(bf, (size_t)d.c_out * 4);
    void *gws = gpu->ops->alloc(gpu, gws_b);
    float *gy = poisoned_gpu(yn * 4), *gdx = poisoned_gpu(xn * 4), *gdw = poisoned_gpu(wn * 4);
    float *gdb = poisoned_gpu((size_t)d.c_out * 4);
    ok(AMP_CONV(gpu, conv2d_forward, gy, gx, gw, gb, &d, gws, gws_b), gpu, "conv2d_forward");
    ok(AMP_CONV(gpu, conv2d_backward_data, gdx, gg, gw, &d, gws, gws_b), gpu,
       "conv2d_backward_data");
    ok(AMP_CONV(gpu, conv2d_backward_filter, gdw, gdb, gx, gg, &d, gws, gws_b), gpu,
       "conv2d_backward_filter");
    float *hy = from_gpu(gy, yn * 4), *hdx = from_gpu(gdx, xn * 4), *hdw = from_gpu(gdw, wn * 4);
    float *hdb = from_gpu(gdb, (size_t)d.c_out * 4);
    /* FP32: both accumulate in FP32 in different orders (cuDNN with FMA
     * math, no TF32), and cuDNN's heuristics may pick a Winograd or FFT
     * algorithm, whose transforms add error of order 1e-5 of the output's
     * scale; outputs are O(1) here (weights ~ 1/sqrt(fan-in)). 16-bit: both
     * round the FP32 result to dt, so an order difference can move a value
     * by one unit in dt's last place (2^-10 / 2^-7 relative), and near zero
     * by the atol. */
    double rtol = d.dt == AMP_DTYPE_F32 ? 1e-4 : d.dt == AMP_DTYPE_F16 ? 1.0 / 1024 : 1.0 / 128;
    double atol = d.dt == AMP_DTYPE_F32 ? 5e-4 : d.dt == AMP_DTYPE_F16 ? 2e-3 : 1.6e-2;
    double red = sqrt((double)d.n * p * q); /* dw sums over n*p*q products */
    char what[160];
    snprintf(what, sizeof what, "conv2d %s %s forward", name, dt_name(d.dt));
    cmp(what, hy, cy, yn, atol, rtol);
    snprintf(what, sizeof what, "conv2d %s %s backward_data", name, dt_name(d.dt));
    cmp(what, hdx, cdx, xn, atol, rtol);
    snprintf(what, sizeof what, "conv2d %s %s backward_filter", name, dt_name(d.dt));
    cmp(what, hdw, cdw, wn, atol * red, rtol);
    /* FP64 sums of the same dt values on both: equal up to the final rounding */
    snprintf(what, sizeof what, "conv2d %s %s dbias", name, dt_name(d.dt));
    cmp(what, hdb, cdb, (size_t)d.c_out, 1e-6, 1e-6);

    /* A smaller batch in the workspace sized for the full one. */
    if (d.n > 1) {
        amp_conv2d_desc s = d;
        s.n = d.n - 1;
        size_t syn = yn / d.n * s.n;
        ok(AMP_CONV(gpu, conv2d_forward, gy, gx, gw, gb, &s, gws, gws_b), gpu,
           "conv2d_forward (smaller batch)");
        float *hs = from_gpu(gy, syn * 4);
        snprintf(what, sizeof what, "conv2d %s %s forward, batch %d in batch %d's workspace", name,
                 dt_name(d.dt), s.n, d.n);
        cmp(what, hs, cy, syn, atol, rtol);
        free(hs);
    }

    /* Deterministic algorithms: the same backward twice, bit for bit. */
    gpu->deterministic = 1;
    size_t dws_b;
    ok(AMP_CONV(gpu, conv2d_workspace, &d, &dws_b), gpu, "conv2d_workspace (deterministic)");
    void *dws = gpu->ops->alloc(gpu, dws_b);
    float *r[2][2];
    for (int k = 0; k < 2; k++) {
        ok(AMP_CONV(gpu, conv2d_backward_filter, gdw, gdb, gx, gg, &d, dws, dws_b), gpu,
           "conv2d_backward_filter (deterministic)");
        ok(AMP_CONV(gpu, conv2d_backward_data, gdx, gg, gw, &d, dws, dws_b), gpu,
           "conv2d_backward_data (deterministic)");
        r[k][0] = from_gpu(gdw, wn * 4);
        r[k][1] = from_gpu(gdx, xn * 4);
    }
    EXPECT(memcmp(r[0][0], r[1][0], wn * 4) == 0 && memcmp(r[0][1], r[1][1], xn * 4) == 0,
           "conv2d %s %s: deterministic backward differs between two runs", name, dt_name(d.dt));
    snprintf(what, sizeof what, "conv2d %s %s deterministic backward_filter", name, dt_name(d.dt));
    cmp(what, r[0][0], cdw, wn, atol * red, rtol);
    gpu->deterministic = 0;
    for (int k = 0; k < 2; k++) free(r[k][0]), free(r[k][1]);
    gpu->ops->release(gpu, dws);

    /* A workspace smaller than asked is refused, not overrun. */
    if (gws_b > 0)
        EXPECT(AMP_CONV(gpu, conv2d_forward, gy, gx, gw, gb, &d, gws, gws_b - 1) != 0,
               "conv2d %s %s: a workspace one byte short was accepted", name, dt_name(d.dt));

    void *gbufs[] = {gx, gw, gg, gb, gws, gy, gdx, gdw, gdb};
    for (size_t i = 0; i < sizeof gbufs / sizeof gbufs[0]; i++) gpu->ops->release(gpu, gbufs[i]);
    free(xf), free(wf), free(bf), free(gf), free(x), free(w), free(g), free(cws);
    free(cy), free(cdx), free(cdw), free(cdb), free(hy), free(hdx), free(hdw), free(hdb);
}

/* ---- max pooling -------------------------------------------------------------- */

static void test_pool(const char *name, amp_pool2d_desc d) {
    int p = amp_pool2d_out_h(&d), q = amp_pool2d_out_w(&d);
    size_t xn = (size_t)d.n * d.c * d.h * d.w, yn = (size_t)d.n * d.c * p * q;
    float *x = randn(xn, 1.0f), *g = randn(yn, 1.0f);
    for (size_t i = 0; i < xn; i += 7) x[i] = x[i > 0 ? i - 1 : 0]; /* ties */
    float *cy = xmalloc(yn * 4), *cdx = xmalloc(xn * 4);
    uint16_t *cidx = xmalloc(yn * 2);
    ok(AMP_CONV(cpu, max_pool2d_forward, cy, cidx, x, &d), cpu, "max_pool2d_forward");
    ok(AMP_CONV(cpu, max_pool2d_backward, cdx, g, cidx, &d), cpu, "max_pool2d_backward");
    float *gx = to_gpu(x, xn * 4), *gg = to_gpu(g, yn * 4);
    float *gy = poisoned_gpu(yn * 4), *gdx = poisoned_gpu(xn * 4);
    uint16_t *gidx = poisoned_gpu(yn * 2);
    ok(AMP_CONV(gpu, max_pool2d_forward, gy, gidx, gx, &d), gpu, "max_pool2d_forward");
    ok(AMP_CONV(gpu, max_pool2d_backward, gdx, gg, gidx, &d), gpu, "max_pool2d_backward");
    float *hy = from_gpu(gy, yn * 4), *hdx = from_gpu(gdx, xn * 4);
    uint16_t *hidx = from_gpu(gidx, yn * 2);
    /* the same function per element, sums in the same order: exact */
    EXPECT(memcmp(hy, cy, yn * 4) == 0 && memcmp(hidx, cidx, yn * 2) == 0,
           "max_pool2d %s forward: values or indices differ", name);
    EXPECT(memcmp(hdx, cdx, xn * 4) == 0, "max_pool2d %s backward differs", name);
    printf("ok  max_pool2d %-41s n=%-7zu exact\n", name, xn);
    void *gbufs[] = {gx, gg, gy, gdx, gidx};
    for (size_t i = 0; i < 5; i++) gpu->ops->release(gpu, gbufs[i]);
    free(x), free(g), free(cy), free(cdx), free(cidx), free(hy), free(hdx), free(hidx);
}

/* ---- batch norm ------------------------------------------------------------------ */

static void test_bn(int n, int c, int hw, int training) {
    size_t xn = (size_t)n * c * hw, cb = (size_t)c * 4;
    float *x = randn(xn, 2.0f), *g = randn(xn, 1.0f), *gamma = randn((size_t)c, 1.0f);
    float *beta = randn((size_t)c, 1.0f), *rm = randn((size_t)c, 0.5f), *rv = xmalloc(cb);
    for (int i = 0; i < c; i++) rv[i] = 0.5f + (float)i / (float)c;
    float *crm = xmalloc(cb), *crv = xmalloc(cb), *csm = xmalloc(cb), *csi = xmalloc(cb);
    float *cy = xmalloc(xn * 4), *cdx = xmalloc(xn * 4), *cdg = xmalloc(cb), *cdb = xmalloc(cb);
    memcpy(crm, rm, cb), memcpy(crv, rv, cb);
    ok(AMP_CONV(cpu, batch_norm_forward,
                &(amp_batch_norm_fwd){cy, csm, csi, crm, crv, x, gamma, beta, n, c, hw, training,
                                      0.1f, 1e-5f}),
       cpu, "batch_norm_forward");
    ok(AMP_CONV(cpu, batch_norm_backward,
                &(amp_batch_norm_bwd){cdx, cdg, cdb, g, x, gamma, csm, csi, n, c, hw, training}),
       cpu, "batch_norm_backward");
    float *gx = to_gpu(x, xn * 4), *gg = to_gpu(g, xn * 4), *ggam = to_gpu(gamma, cb);
    float *gbet = to_gpu(beta, cb), *grm = to_gpu(rm, cb), *grv = to_gpu(rv, cb);
    float *gsm = poisoned_gpu(cb), *gsi = poisoned_gpu(cb), *gy = poisoned_gpu(xn * 4);
    float *gdx = poisoned_gpu(xn * 4), *gdg = poisoned_gpu(cb), *gdb = poisoned_gpu(cb);
    ok(AMP_CONV(gpu, batch_norm_forward,
                &(amp_batch_norm_fwd){gy, gsm, gsi, grm, grv, gx, ggam, gbet, n, c, hw, training,
                                      0.1f, 1e-5f}),
       gpu, "batch_norm_forward");
    ok(AMP_CONV(gpu, batch_norm_backward,
                &(amp_batch_norm_bwd){gdx, gdg, gdb, gg, gx, ggam, gsm, gsi, n, c, hw, training}),
       gpu, "batch_norm_backward");
    const char *mode = training ? "train" : "eval";
    char what[128];
    /* FP64 channel sums in a different order, then the same FP32 math: a few
     * FP32 ulps at most */
    struct {
        const char *name;
        float *dev, *ref;
        size_t n;
    } t[] = {{"y", gy, cy, xn},           {"save_mean", gsm, csm, (size_t)c},
             {"save_invstd", gsi, csi, (size_t)c}, {"running_mean", grm, crm, (size_t)c},
             {"running_var", grv, crv, (size_t)c}, {"dx", gdx, cdx, xn},
             {"dgamma", gdg, cdg, (size_t)c},      {"dbeta", gdb, cdb, (size_t)c}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        float *h = from_gpu(t[i].dev, t[i].n * 4);
        snprintf(what, sizeof what, "batch_norm %s [%d,%d,%d] %s", mode, n, c, hw, t[i].name);
        cmp(what, h, t[i].ref, t[i].n, 1e-6, 1e-6);
        free(h);
        gpu->ops->release(gpu, t[i].dev);
    }
    gpu->ops->release(gpu, gx), gpu->ops->release(gpu, gg), gpu->ops->release(gpu, ggam);
    gpu->ops->release(gpu, gbet);
    free(x), free(g), free(gamma), free(beta), free(rm), free(rv), free(crm), free(crv);
    free(csm), free(csi), free(cy), free(cdx), free(cdg), free(cdb);
}

int main(void) {
    if (!amp_backend_cuda_available()) {
        printf("no CUDA device (or built without CUDA): skipped\n");
        return 77;
    }
    char err[512];
    cpu = amp_backend_cpu_create(err, sizeof err);
    gpu = cpu ? amp_backend_cuda_create(err, sizeof err) : NULL;
    if (!cpu || !gpu) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    amp_rng_seed(&rng, 2024);
    /* n, c_in, h, w, c_out, kh, kw, stride_h, stride_w, pad_h, pad_w */
    static const struct {
        const char *name;
        int n, c_in, h, w, c_out, kh, kw, sh, sw, ph, pw;
    } convs[] = {
        {"s2p1 3x3 c3->5", 2, 3, 9, 7, 5, 3, 3, 2, 2, 1, 1},
        {"s(2,1)p(0,2) 2x3 c10->6", 3, 10, 8, 11, 6, 2, 3, 2, 1, 0, 2},
        {"p1 3x3 c1->32 28x28", 16, 1, 28, 28, 32, 3, 3, 1, 1, 1, 1},
        {"p1 3x3 c32->64 14x14", 16, 32, 14, 14, 64, 3, 3, 1, 1, 1, 1},
    };
    static const amp_dtype dts[] = {AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16};
    static const char *const dt_names[] = {"f32", "f16", "bf16"};
    /* volatile: the rows' setjmp (op_rows.h) must not clobber the loops */
    for (volatile int t = 0; t < 3; t++)
        for (volatile size_t i = 0; i < sizeof convs / sizeof convs[0]; i++) {
            amp_conv2d_desc d = {convs[i].n,  convs[i].c_in, convs[i].h,  convs[i].w,
                                 convs[i].c_out, convs[i].kh, convs[i].kw, convs[i].sh,
                                 convs[i].sw, convs[i].ph,   convs[i].pw, dts[t]};
            AMP_OP_ROW(test_conv(convs[i].name, d), "conv2d %s %s", convs[i].name, dt_names[t]);
        }
    AMP_OP_ROW(test_pool("3x3 s2 p1", (amp_pool2d_desc){2, 3, 9, 7, 3, 3, 2, 2, 1, 1}),
               "max_pool2d 3x3 s2 p1");
    AMP_OP_ROW(test_pool("2x2 s2 28x28", (amp_pool2d_desc){16, 32, 28, 28, 2, 2, 2, 2, 0, 0}),
               "max_pool2d 2x2 s2 28x28");
    AMP_OP_ROW(test_bn(3, 5, 35, 1), "batch_norm [3,5,35] training");
    AMP_OP_ROW(test_bn(3, 5, 35, 0), "batch_norm [3,5,35] evaluation");
    AMP_OP_ROW(test_bn(64, 32, 196, 1), "batch_norm [64,32,196] training");
    gpu->ops->destroy(gpu);
    cpu->ops->destroy(cpu);
    return amp_op_finish("test_gpu_cnn");
}
