/* The transformer ops of the CPU backend (embedding, layernorm, causal
 * attention, GELU tanh, residual add): forwards against double-precision
 * references written out here, every backward against central finite
 * differences of L = sum(G * out) for a random G, the accumulate (+=)
 * contracts, and the 16-bit rounding points with their telemetry (an FP16
 * attention logit overflow is counted and poisons its row, as in PyTorch).
 * A backward with a wrong term fails the finite differences (see the
 * tolerances: the FP32 forward's noise over h is far below them, a missing
 * term is far above). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/attention.h"
#include "backend/kernels/convert.h"
#include "expect.h"
#include "util/rng.h"

static amp_backend *be;
static amp_rng rng;

static float *rnd(size_t n, float lo, float hi) {
    float *p = malloc(n * sizeof(float));
    if (!p) abort();
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)amp_rng_uniform(&rng);
    return p;
}

static float *zeros(size_t n) {
    float *p = calloc(n ? n : 1, sizeof(float));
    if (!p) abort();
    return p;
}

static void ok(int rc, const char *what) {
    if (rc != 0) {
        fprintf(stderr, "FAIL: %s: %s\n", what, be->err);
        exit(1);
    }
}

static double dot(const float *a, const float *g, size_t n) {
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * (double)g[i];
    return s;
}

/* |a - f| <= atol + rtol |f| for every element; prints the worst case. */
static void cmp_grad(const char *what, const float *analytic, const double *fd, size_t n,
                     double atol, double rtol) {
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)analytic[i] - fd[i]);
        if (d > worst) worst = d;
        if (!(d <= atol + rtol * fabs(fd[i])) && bad++ < 5)
            EXPECT(0, "%s[%zu]: backward %.6g, finite differences %.6g", what, i, analytic[i],
                   fd[i]);
    }
    if (bad > 5) EXPECT(0, "%s: %d of %zu gradients differ", what, bad, n);
    if (!bad) printf("ok  %-34s n=%-4zu max|backward - fd| %.2e\n", what, n, worst);
}

/* ---- embedding ------------------------------------------------------------ */

static void test_embed(void) {
    int B = 3, T = 4, C = 5, V = 6;
    int32_t tok[12] = {0, 5, 2, 2, 1, 1, 1, 3, 5, 0, 4, 2};
    float *wte = rnd((size_t)V * C, -1, 1), *wpe = rnd((size_t)T * C, -1, 1);
    float *out = zeros((size_t)B * T * C);
    ok(AMP_TRANSFORMER(be, embed_forward, out, wte, wpe, tok, B, T, C), "embed_forward");
    int exact = 1;
    for (int r = 0; r < B * T; r++)
        for (int c = 0; c < C; c++)
            exact &= out[r * C + c] == wte[tok[r] * C + c] + wpe[(r % T) * C + c];
    EXPECT(exact, "embed_forward differs from wte[tok] + wpe[t]");
    /* Backward: linear, so the gradient is exactly the sum of G over the
     * rows that read each entry; it adds into what is there. */
    float *G = rnd((size_t)B * T * C, -1, 1);
    float *dwte = rnd((size_t)V * C, -1, 1), *dwpe = rnd((size_t)T * C, -1, 1);
    float *dwte0 = malloc((size_t)V * C * 4), *dwpe0 = malloc((size_t)T * C * 4);
    memcpy(dwte0, dwte, (size_t)V * C * 4);
    memcpy(dwpe0, dwpe, (size_t)T * C * 4);
    ok(AMP_TRANSFORMER(be, embed_backward, dwte, dwpe, G, tok, B, T, C), "embed_backward");
    double *fd_te = calloc((size_t)V * C, sizeof(double)), *fd_pe = calloc((size_t)T * C, sizeof(double));
    float *g_te = malloc((size_t)V * C * 4), *g_pe = malloc((size_t)T * C * 4);
    /* finite differences of L = sum G * embed(wte, wpe) */
    float h = 0.5f;
    for (int i = 0; i < V * C + T * C; i++) {
        float *w = i < V * C ? &wte[i] : &wpe[i - V * C];
        float keep = *w;
        *w = keep + h;
        ok(AMP_TRANSFORMER(be, embed_forward, out, wte, wpe, tok, B, T, C), "embed_forward");
        double up = dot(out, G, (size_t)B * T * C);
        *w = keep - h;
        ok(AMP_TRANSFORMER(be, embed_forward, out, wte, wpe, tok, B, T, C), "embed_forward");
        double dn = dot(out, G, (size_t)B * T * C);
        *w = keep;
        *(i < V * C ? &fd_te[i] : &fd_pe[i - V * C]) = (up - dn) / (2.0 * h);
    }
    for (int i = 0; i < V * C; i++) g_te[i] = dwte[i] - dwte0[i];
    for (int i = 0; i < T * C; i++) g_pe[i] = dwpe[i] - dwpe0[i];
    cmp_grad("embed_backward dwte (+=)", g_te, fd_te, (size_t)V * C, 1e-5, 1e-5);
    cmp_grad("embed_backward dwpe (+=)", g_pe, fd_pe, (size_t)T * C, 1e-5, 1e-5);
    free(wte), free(wpe), free(out), free(G), free(dwte), free(dwpe), free(dwte0), free(dwpe0);
    free(fd_te), free(fd_pe), free(g_te), free(g_pe);
}

/* ---- layernorm -------------------------------------------------------------- */

/* rms: RMSNorm, x / sqrt(mean(x^2) + eps) * w (Llama's) */
static void ln_ref(double *out, const float *x, const float *w, const float *b, int rows, int C,
                   double eps, int rms) {
    for (int r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < C; i++) m += x[r * C + i];
        m = rms ? 0.0 : m / C;
        for (int i = 0; i < C; i++) v += (x[r * C + i] - m) * (x[r * C + i] - m);
        v /= C;
        for (int i = 0; i < C; i++)
            out[r * C + i] = (x[r * C + i] - m) / sqrt(v + eps) * w[i] + (b ? b[i] : 0.0);
    }
}

static double ln_loss(const float *x, const float *w, const float *b, const float *G, int rows,
                      int C, float *out, float *mean, float *rstd, int rms) {
    ok(AMP_TRANSFORMER(be, layernorm_forward,
                       &(amp_layernorm_fwd){out, AMP_DTYPE_F32, mean, rstd, x, w, b, rows, C, 1e-5f,
                                            NULL, rms}),
       "layernorm_forward");
    return dot(out, G, (size_t)rows * C);
}

static void test_layernorm(int with_bias, int rms) {
    int rows = 6, C = 16;
    size_t n = (size_t)rows * C;
    float *x = rnd(n, -2, 3), *w = rnd((size_t)C, 0.5f, 1.5f),
          *b = with_bias ? rnd((size_t)C, -0.5f, 0.5f) : NULL;
    float *G = rnd(n, -1, 1), *out = zeros(n), *mean = zeros((size_t)rows), *rstd = zeros((size_t)rows);
    double *ref = malloc(n * sizeof(double));
    ln_ref(ref, x, w, b, rows, C, 1e-5, rms);
    ln_loss(x, w, b, G, rows, C, out, mean, rstd, rms);
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs(out[i] - ref[i]));
    EXPECT(worst < 2e-6, "layernorm_forward: max |out - double reference| %.3g", worst);
    if (worst < 2e-6)
        printf("ok  layernorm_forward bias=%d rms=%d vs double max err %.2e\n", with_bias, rms, worst);

    /* 16-bit output: the FP32 result rounded, and counted. */
    uint16_t *o16 = malloc(n * 2);
    amp_round_count cnt = {0, 0, 0};
    ok(AMP_TRANSFORMER(
           be, layernorm_forward,
           &(amp_layernorm_fwd){o16, AMP_DTYPE_BF16, mean, rstd, x, w, b, rows, C, 1e-5f, &cnt,
                                rms}),
       "layernorm_forward bf16");
    int same = 1;
    unsigned long long nz = 0;
    for (size_t i = 0; i < n; i++) {
        same &= o16[i] == amp_float_to_bf16(out[i]);
        nz += out[i] != 0.0f;
    }
    EXPECT(same, "layernorm_forward bf16 is not the FP32 output rounded");
    EXPECT(cnt.nonzero == nz, "layernorm_forward bf16 counted %llu nonzero, expected %llu",
           cnt.nonzero, nz);

    /* backward, adding into nonzero buffers */
    float *dx = rnd(n, -1, 1), *dw = rnd((size_t)C, -1, 1), *db = rnd((size_t)C, -1, 1);
    float *dx0 = malloc(n * 4), *dw0 = malloc((size_t)C * 4), *db0 = malloc((size_t)C * 4);
    memcpy(dx0, dx, n * 4), memcpy(dw0, dw, (size_t)C * 4), memcpy(db0, db, (size_t)C * 4);
    ln_loss(x, w, b, G, rows, C, out, mean, rstd, rms);
    ok(AMP_TRANSFORMER(
           be, layernorm_backward,
           &(amp_layernorm_bwd){dx, dw, with_bias ? db : NULL, G, x, w, mean, rstd, rows, C, rms}),
       "layernorm_backward");
    for (size_t i = 0; i < n; i++) dx[i] -= dx0[i];
    for (int i = 0; i < C; i++) dw[i] -= dw0[i], db[i] -= db0[i];
    if (!with_bias)
        for (int i = 0; i < C; i++) EXPECT(db[i] == 0.0f, "db written with db == NULL");
    double *fd = malloc(n * sizeof(double));
    float h = 1e-2f;
    float *targets[3] = {x, w, b};
    size_t counts[3] = {n, (size_t)C, (size_t)C};
    const float *grads[3] = {dx, dw, db};
    const char *names[3] = {"layernorm_backward dx (+=)", "layernorm_backward dw (+=)",
                            "layernorm_backward db (+=)"};
    for (int k = 0; k < (with_bias ? 3 : 2); k++) {
        for (size_t i = 0; i < counts[k]; i++) {
            float keep = targets[k][i];
            targets[k][i] = keep + h;
            double up = ln_loss(x, w, b, G, rows, C, out, mean, rstd, rms);
            targets[k][i] = keep - h;
            double dn = ln_loss(x, w, b, G, rows, C, out, mean, rstd, rms);
            targets[k][i] = keep;
            fd[i] = (up - dn) / (2.0 * h);
        }
        cmp_grad(names[k], grads[k], fd, counts[k], 2e-3, 1e-2);
    }
    free(x), free(w), free(b), free(G), free(out), free(mean), free(rstd), free(ref), free(o16);
    free(dx), free(dw), free(db), free(dx0), free(dw0), free(db0), free(fd);
}

/* ---- attention ------------------------------------------------------------------ */

/* nanoGPT's causal attention in double: y = softmax(mask(q k^T / sqrt(hs))) v */
static void attn_ref(double *y, const float *qkv, int B, int T, int C, int nh) {
    int hs = C / nh;
    double *p = malloc((size_t)T * sizeof(double));
    for (int b = 0; b < B; b++)
        for (int h = 0; h < nh; h++)
            for (int t = 0; t < T; t++) {
                const float *q = qkv + ((size_t)b * T + t) * 3 * C + h * hs;
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= t; j++) {
                    const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + h * hs;
                    double s = 0;
                    for (int i = 0; i < hs; i++) s += (double)q[i] * k[i];
                    p[j] = s / sqrt((double)hs);
                    mx = fmax(mx, p[j]);
                }
                for (int j = 0; j <= t; j++) sum += (p[j] = exp(p[j] - mx));
                for (int i = 0; i < hs; i++) {
                    double acc = 0;
                    for (int j = 0; j <= t; j++)
                        acc += p[j] / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + h * hs + i];
                    y[((size_t)b * T + t) * C + h * hs + i] = acc;
                }
            }
    free(p);
}

static double attn_loss(const float *qkv, const float *G, int B, int T, int C, int nh, float *out,
                        float *att, float *ws) {
    ok(AMP_TRANSFORMER(be, attention_forward, out, att, ws, qkv,
                       &(amp_attention_desc){B, T, C, nh, AMP_DTYPE_F32}, NULL),
       "attention_forward");
    return dot(out, G, (size_t)B * T * C);
}

static void test_attention(void) {
    int B = 2, T = 5, C = 8, nh = 2;
    size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, na = (size_t)B * nh * T * T;
    float *qkv = rnd(nq, -1.5f, 1.5f), *G = rnd(ny, -1, 1), *out = zeros(ny), *att = zeros(na);
    float *ws = zeros(amp_attention_workspace_floats(B, T, C, nh));
    double *ref = malloc(ny * sizeof(double));
    attn_ref(ref, qkv, B, T, C, nh);
    attn_loss(qkv, G, B, T, C, nh, out, att, ws);
    double worst = 0;
    for (size_t i = 0; i < ny; i++) worst = fmax(worst, fabs(out[i] - ref[i]));
    EXPECT(worst < 1e-6, "attention_forward: max |out - double reference| %.3g", worst);
    if (worst < 1e-6) printf("ok  attention_forward f32 vs double         max err %.2e\n", worst);
    /* causal: row t's probabilities beyond t are exactly 0, and rows sum to 1 */
    int causal = 1;
    double rowerr = 0;
    for (size_t r = 0; r < na / T; r++) {
        int t = (int)(r % T);
        double s = 0;
        for (int j = 0; j < T; j++) {
            if (j > t) causal &= att[r * T + j] == 0.0f;
            s += att[r * T + j];
        }
        rowerr = fmax(rowerr, fabs(s - 1.0));
    }
    EXPECT(causal, "attention probabilities beyond the query position are not 0");
    EXPECT(rowerr < 1e-6, "attention probabilities do not sum to 1 (err %.3g)", rowerr);

    /* backward vs finite differences over every q, k and v element */
    float *dqkv = zeros(nq);
    attn_loss(qkv, G, B, T, C, nh, out, att, ws);
    ok(AMP_TRANSFORMER(be, attention_backward, dqkv, ws, G, qkv, att,
                       &(amp_attention_desc){B, T, C, nh, AMP_DTYPE_F32}, NULL),
       "attention_backward");
    double *fd = malloc(nq * sizeof(double));
    float h = 1e-2f;
    for (size_t i = 0; i < nq; i++) {
        float keep = qkv[i];
        qkv[i] = keep + h;
        double up = attn_loss(qkv, G, B, T, C, nh, out, att, ws);
        qkv[i] = keep - h;
        double dn = attn_loss(qkv, G, B, T, C, nh, out, att, ws);
        qkv[i] = keep;
        fd[i] = (up - dn) / (2.0 * h);
    }
    cmp_grad("attention_backward dqkv", dqkv, fd, nq, 1e-3, 1e-2);
    /* The mask: with a gradient on the first query of each sequence only,
     * the keys and values of every later position get exactly 0. */
    float *G0 = zeros(ny), *dq0 = zeros(nq);
    for (int b = 0; b < B; b++) memcpy(G0 + (size_t)b * T * C, G + (size_t)b * T * C, (size_t)C * 4);
    ok(AMP_TRANSFORMER(be, attention_backward, dq0, ws, G0, qkv, att,
                       &(amp_attention_desc){B, T, C, nh, AMP_DTYPE_F32}, NULL),
       "attention_backward");
    int zero_future = 1, some = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int c = C; c < 3 * C; c++) {
                float g = dq0[((size_t)b * T + t) * 3 * C + c];
                if (t > 0) zero_future &= g == 0.0f;
                else some |= g != 0.0f;
            }
    EXPECT(zero_future && some, "a later key/value got a gradient from query 0 (mask leak: %d, %d)",
           zero_future, some);
    free(G0), free(dq0);
    attn_loss(qkv, G, B, T, C, nh, out, att, ws); /* the FP32 output at the unperturbed qkv */

    /* 16-bit: the same math with rounding points; close to FP32, counted */
    const amp_dtype dts[2] = {AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int d = 0; d < 2; d++) {
        amp_dtype dt = dts[d];
        uint16_t *q16 = malloc(nq * 2), *o16 = malloc(ny * 2), *a16 = malloc(na * 2),
                 *g16 = malloc(ny * 2), *dq16 = malloc(nq * 2);
        for (size_t i = 0; i < nq; i++) q16[i] = amp_round16(qkv[i], dt, NULL);
        for (size_t i = 0; i < ny; i++) g16[i] = amp_round16(G[i], dt, NULL);
        amp_round_count fc = {0, 0, 0}, bc = {0, 0, 0};
        ok(AMP_TRANSFORMER(be, attention_forward, o16, a16, ws, q16,
                           &(amp_attention_desc){B, T, C, nh, dt}, &fc),
           "attention fwd 16");
        ok(AMP_TRANSFORMER(be, attention_backward, dq16, ws, g16, q16, a16,
                           &(amp_attention_desc){B, T, C, nh, dt}, &bc),
           "attention bwd 16");
        double tol = dt == AMP_DTYPE_F16 ? 4e-3 : 3e-2, eo = 0, eg = 0;
        for (size_t i = 0; i < ny; i++) eo = fmax(eo, fabs(amp_widen16(o16[i], dt) - out[i]));
        for (size_t i = 0; i < nq; i++) eg = fmax(eg, fabs(amp_widen16(dq16[i], dt) - dqkv[i]));
        EXPECT(eo < tol && eg < 2 * tol, "attention %s vs f32: out err %.3g, dqkv err %.3g (tol %.g)",
               dt == AMP_DTYPE_F16 ? "f16" : "bf16", eo, eg, tol);
        /* forward roundings: causal logits, probabilities (nonzero ones) and outputs */
        unsigned long long causal_n = (unsigned long long)B * nh * T * (T + 1) / 2;
        EXPECT(fc.nonzero >= causal_n + ny && fc.nonzero <= 2 * causal_n + ny,
               "attention forward counted %llu roundings, expected about %llu", fc.nonzero,
               2 * causal_n + ny);
        EXPECT(fc.overflow == 0 && bc.overflow == 0, "unexpected overflow in attention");
        EXPECT(bc.nonzero > 0, "attention backward counted no rounding");
        printf("ok  attention %-4s vs f32: out %.2e dqkv %.2e (fwd rounded %llu, bwd %llu)\n",
               dt == AMP_DTYPE_F16 ? "f16" : "bf16", eo, eg, fc.nonzero, bc.nonzero);

        /* logits past FP16's range: counted as overflow, and the row turns
         * NaN (inf - inf in the softmax), as in PyTorch's fp16 attention;
         * BF16 has the range. */
        for (size_t i = 0; i < nq; i++) q16[i] = amp_round16(qkv[i] * 400.0f, dt, NULL);
        amp_round_count oc = {0, 0, 0};
        ok(AMP_TRANSFORMER(be, attention_forward, o16, a16, ws, q16,
                           &(amp_attention_desc){B, T, C, nh, dt}, &oc),
           "attention big");
        int nan_out = 0;
        for (size_t i = 0; i < ny; i++) nan_out |= isnan(amp_widen16(o16[i], dt));
        if (dt == AMP_DTYPE_F16)
            EXPECT(oc.overflow > 0 && nan_out, "f16 logits past 65504: overflow %llu, NaN output %d",
                   oc.overflow, nan_out);
        else
            EXPECT(oc.overflow == 0 && !nan_out, "bf16 logits overflowed (%llu) or NaN (%d)",
                   oc.overflow, nan_out);
        free(q16), free(o16), free(a16), free(g16), free(dq16);
    }
    /* A head count that does not divide C is an error, not a crash. */
    EXPECT(AMP_TRANSFORMER(be, attention_forward, out, att, ws, qkv,
                           &(amp_attention_desc){B, T, C, 3, AMP_DTYPE_F32}, NULL) != 0,
           "attention_forward accepted 8 channels in 3 heads");
    free(qkv), free(G), free(out), free(att), free(ws), free(ref), free(dqkv), free(fd);
}

/* ---- GELU tanh, residual add -------------------------------------------------------- */

static void test_gelu_tanh(void) {
    size_t n = 2001;
    float *x = malloc(n * 4), *y = malloc(n * 4), *one = malloc(n * 4), *dz = malloc(n * 4);
    for (size_t i = 0; i < n; i++) x[i] = -8.0f + 16.0f * (float)i / (float)(n - 1), one[i] = 1.0f;
    ok(be->ops->act_forward(be, y, x, n, AMP_ACT_GELU_TANH), "act_forward gelu_tanh");
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double xd = x[i];
        double ref = 0.5 * xd * (1.0 + tanh(sqrt(2.0 / M_PI) * (xd + 0.044715 * xd * xd * xd)));
        worst = fmax(worst, fabs(y[i] - ref));
    }
    EXPECT(worst < 2e-6, "gelu_tanh forward: max err %.3g vs double", worst);
    ok(be->ops->act_backward(be, dz, one, x, n, AMP_ACT_GELU_TANH), "act_backward gelu_tanh");
    double *fd = malloc(n * sizeof(double));
    float h = 1e-2f;
    for (size_t i = 0; i < n; i++) {
        float xp = x[i] + h, xm = x[i] - h, yp, ym;
        ok(be->ops->act_forward(be, &yp, &xp, 1, AMP_ACT_GELU_TANH), "gelu");
        ok(be->ops->act_forward(be, &ym, &xm, 1, AMP_ACT_GELU_TANH), "gelu");
        fd[i] = ((double)yp - ym) / (2.0 * h);
    }
    cmp_grad("act_backward gelu_tanh", dz, fd, n, 1e-4, 1e-3);
    /* saturated: the derivative is 1 / 0, never 0 * inf = NaN */
    float big[4] = {INFINITY, -INFINITY, 1e20f, -1e20f}, gone[4] = {1, 1, 1, 1}, gb[4];
    ok(be->ops->act_backward(be, gb, gone, big, 4, AMP_ACT_GELU_TANH), "act_backward gelu_tanh");
    EXPECT(gb[0] == 1.0f && gb[1] == 0.0f && gb[2] == 1.0f && gb[3] == 0.0f,
           "gelu_tanh' at +-inf, +-1e20: %g %g %g %g", gb[0], gb[1], gb[2], gb[3]);
    /* it is not the erf form */
    float ge;
    ok(be->ops->act_forward(be, &ge, &x[n / 2 + 100], 1, AMP_ACT_GELU), "gelu");
    EXPECT(ge != y[n / 2 + 100], "gelu_tanh equals the erf form at x=%g", x[n / 2 + 100]);
    free(x), free(y), free(one), free(dz), free(fd);
}

static void test_residual_add(void) {
    size_t n = 1000;
    float *x = rnd(n, -3, 3), *d = rnd(n, -3, 3), *out = zeros(n);
    uint16_t *d16 = malloc(n * 2);
    for (size_t i = 0; i < n; i++) d16[i] = amp_float_to_half(d[i]);
    ok(AMP_TRANSFORMER(be, residual_add, out, x, d16, AMP_DTYPE_F16, n), "residual_add f16");
    int exact = 1;
    for (size_t i = 0; i < n; i++) exact &= out[i] == x[i] + amp_half_to_float(d16[i]);
    float *x0 = malloc(n * 4);
    memcpy(x0, x, n * 4);
    ok(AMP_TRANSFORMER(be, residual_add, x, x, d, AMP_DTYPE_F32, n), "residual_add in place");
    for (size_t i = 0; i < n; i++) exact &= x[i] == x0[i] + d[i];
    free(x0);
    EXPECT(exact, "residual_add is not x + widen(d)");
    printf("ok  residual_add f16 and in-place f32\n");
    free(x), free(d), free(out), free(d16);
}

/* ---- SwiGLU: h = silu(gate) * up ------------------------------------------ */

static double silu_d(double g) { return g / (1.0 + exp(-g)); }

/* FP32: h against silu in double, the gradients of sum(dh * h) against
 * central differences of silu in double (independent of the op's silu');
 * BF16: h is round(round(silu(gate)) * up) and both roundings are counted. */
static void test_swiglu(void) {
    size_t n = 20011; /* above the threading threshold */
    float *g = rnd(n, -8, 8), *u = rnd(n, -2, 2), *dh = rnd(n, -1, 1), *h = zeros(n);
    float *dg = zeros(n), *du = zeros(n);
    amp_round_count cnt = {0, 0, 0};
    amp_swiglu_args a = {h, AMP_DTYPE_F32, dg, du, dh, g, u, AMP_DTYPE_F32, AMP_DTYPE_F32, n, &cnt};
    ok(AMP_TRANSFORMER(be, swiglu_forward, &a), "swiglu_forward f32");
    ok(AMP_TRANSFORMER(be, swiglu_backward, &a), "swiglu_backward f32");
    double *fd_g = malloc(n * sizeof *fd_g), *fd_u = malloc(n * sizeof *fd_u);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double want = silu_d(g[i]) * u[i], e = 1e-4;
        bad += fabs(h[i] - want) > 1e-6 * fabs(want) + 1e-30;
        fd_g[i] = dh[i] * u[i] * (silu_d(g[i] + e) - silu_d(g[i] - e)) / (2 * e);
        fd_u[i] = dh[i] * silu_d(g[i]);
    }
    EXPECT(bad == 0 && cnt.nonzero == 0, "swiglu_forward f32: %d of %zu differ from silu(g) * u "
           "(or F32 counted %llu roundings)", bad, n, cnt.nonzero);
    cmp_grad("swiglu dgate", dg, fd_g, n, 1e-6, 1e-5);
    cmp_grad("swiglu dup", du, fd_u, n, 1e-7, 1e-6);
    /* BF16 operands */
    uint16_t *g16 = malloc(n * 2), *u16 = malloc(n * 2), *h16 = malloc(n * 2);
    for (size_t i = 0; i < n; i++) g16[i] = amp_float_to_bf16(g[i]), u16[i] = amp_float_to_bf16(u[i]);
    amp_round_count c16 = {0, 0, 0};
    amp_swiglu_args b = {h16, AMP_DTYPE_BF16, NULL, NULL, NULL, g16, u16, AMP_DTYPE_BF16,
                         AMP_DTYPE_BF16, n, &c16};
    ok(AMP_TRANSFORMER(be, swiglu_forward, &b), "swiglu_forward bf16");
    bad = 0;
    for (size_t i = 0; i < n; i++) {
        float gw = amp_bf16_to_float(g16[i]), uw = amp_bf16_to_float(u16[i]);
        float s = amp_bf16_to_float(amp_float_to_bf16(gw / (1.0f + expf(-gw))));
        bad += h16[i] != amp_float_to_bf16(s * uw);
    }
    EXPECT(bad == 0 && c16.nonzero > n && c16.nonzero <= 2 * n,
           "swiglu_forward bf16: %d of %zu are not round(round(silu(g)) * u); %llu roundings "
           "counted for %zu elements", bad, n, c16.nonzero, n);
    if (!bad) printf("ok  swiglu bf16: two rounding points, %llu counted\n", c16.nonzero);
    free(g), free(u), free(dh), free(h), free(dg), free(du), free(fd_g), free(fd_u);
    free(g16), free(u16), free(h16);
}

/* ---- Llama's attention input: RoPE and grouped-query heads ------------------- */

enum { QB = 2, QT = 5, QNH = 4, QKV = 2, QHS = 8 };

static double qkv_loss(const float *q, const float *k, const float *v, const float *G, float *qkv,
                       int rope) {
    amp_qkv_args a = {qkv, AMP_DTYPE_F32, q, k, v, AMP_DTYPE_F32, AMP_DTYPE_F32, AMP_DTYPE_F32,
                      NULL, NULL, NULL, QB, QT, QNH, QKV, QHS, rope, 10000.0f, NULL};
    ok(AMP_TRANSFORMER(be, qkv_pack, &a), "qkv_pack");
    return dot(qkv, G, (size_t)QB * QT * 3 * QNH * QHS);
}

/* qkv_pack against Hugging Face Llama's apply_rotary_pos_emb and repeat_kv
 * written in double; qkv_unpack against finite differences of the pack. */
static void test_qkv_rope(int rope) {
    size_t N = (size_t)QB * QT, C = (size_t)QNH * QHS, Ckv = (size_t)QKV * QHS;
    float *q = rnd(N * C, -2, 2), *k = rnd(N * Ckv, -2, 2), *v = rnd(N * Ckv, -2, 2);
    float *G = rnd(N * 3 * C, -1, 1), *qkv = zeros(N * 3 * C);
    qkv_loss(q, k, v, G, qkv, rope);
    double worst = 0;
    int half = QHS / 2;
    for (size_t r = 0; r < N; r++)
        for (int h = 0; h < QNH; h++)
            for (int i = 0; i < QHS; i++) {
                int t = (int)(r % QT), j = i % half, kh = h / (QNH / QKV);
                double ang = t / pow(10000.0, 2.0 * j / QHS), c = rope ? cos(ang) : 1.0,
                       sn = rope ? sin(ang) : 0.0;
                const float *qh = q + r * C + (size_t)h * QHS, *kk = k + r * Ckv + (size_t)kh * QHS;
                /* x * cos + rotate_half(x) * sin, rotate_half(x) = cat(-x2, x1) */
                double rq = i < half ? -qh[i + half] : qh[i - half];
                double rk = i < half ? -kk[i + half] : kk[i - half];
                double want[3] = {qh[i] * c + rq * sn, kk[i] * c + rk * sn,
                                  v[r * Ckv + (size_t)kh * QHS + i]};
                for (int p = 0; p < 3; p++)
                    worst = fmax(worst, fabs(qkv[r * 3 * C + p * C + (size_t)h * QHS + i] - want[p]));
            }
    EXPECT(worst < 1e-5, "qkv_pack rope=%d: max |qkv - HF's rotate-half/repeat_kv| %.3g", rope,
           worst);
    if (worst < 1e-5) printf("ok  qkv_pack rope=%d (4 heads, 2 kv heads) vs double max err %.2e\n", rope, worst);
    float *dq = zeros(N * C), *dk = zeros(N * Ckv), *dv = zeros(N * Ckv);
    amp_qkv_args a = {G, AMP_DTYPE_F32, NULL, NULL, NULL, AMP_DTYPE_F32, AMP_DTYPE_F32,
                      AMP_DTYPE_F32, dq, dk, dv, QB, QT, QNH, QKV, QHS, rope, 10000.0f, NULL};
    ok(AMP_TRANSFORMER(be, qkv_unpack, &a), "qkv_unpack");
    float *targets[3] = {q, k, v}, *grads[3] = {dq, dk, dv};
    size_t counts[3] = {N * C, N * Ckv, N * Ckv};
    const char *names[3] = {"qkv_unpack dq", "qkv_unpack dk", "qkv_unpack dv"};
    double *fd = malloc(N * C * sizeof *fd);
    for (int p = 0; p < 3; p++) {
        for (size_t i = 0; i < counts[p]; i++) {
            float keep = targets[p][i], h = 1e-2f;
            targets[p][i] = keep + h;
            double up = qkv_loss(q, k, v, G, qkv, rope);
            targets[p][i] = keep - h;
            double dn = qkv_loss(q, k, v, G, qkv, rope);
            targets[p][i] = keep;
            fd[i] = (up - dn) / (2.0 * h);
        }
        cmp_grad(names[p], grads[p], fd, counts[p], 1e-4, 1e-3);
    }
    free(q), free(k), free(v), free(G), free(qkv), free(dq), free(dk), free(dv), free(fd);
}

int main(void) {
    char err[512];
    be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    amp_rng_seed(&rng, 11);
    test_embed();
    test_layernorm(1, 0);
    test_layernorm(0, 0);
    test_layernorm(0, 1);
    test_attention();
    test_gelu_tanh();
    test_residual_add();
    test_swiglu();
    test_qkv_rope(1);
    test_qkv_rope(0);
    /* A backend without the family: supports says so, and a call fails
     * with the backend's and the op's names instead of crashing. */
    EXPECT(amp_backend_supports(be, "transformer"), "cpu supports 'transformer'");
    EXPECT(!amp_backend_supports(be, "no-such-family"), "an unknown name is not supported");
    amp_backend_ops ops = *be->ops;
    const amp_backend_ops *keep = be->ops;
    ops.transformer = NULL;
    be->ops = &ops;
    EXPECT(!amp_backend_supports(be, "transformer"), "no 'transformer' once the table lacks it");
    int rc = AMP_TRANSFORMER(be, attention_forward, NULL, NULL, NULL, NULL,
                             &(amp_attention_desc){1, 1, 1, 1, AMP_DTYPE_F32}, NULL);
    EXPECT(rc != 0 && strstr(be->err, "'attention_forward'") && strstr(be->err, "'cpu'") &&
               strstr(be->err, "'transformer'"),
           "a missing family's op: rc %d, '%s'", rc, be->err);
    be->ops = keep;
    be->ops->destroy(be);
    if (amp_test_failures) fprintf(stderr, "%d failure(s)\n", amp_test_failures);
    return amp_test_failures ? 1 : 0;
}
