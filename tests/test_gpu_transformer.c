/* CPU-vs-CUDA parity of the transformer ops (embedding, layernorm and
 * rmsnorm, SwiGLU, qkv_pack/unpack, causal attention, residual add) on the
 * same random inputs, in FP32, FP16 and BF16. Output buffers are poisoned
 * with NaN first, so an element the GPU never writes is caught. Exact where
 * both backends run the same additions in the same order (embedding forward
 * and backward, residual add); stated tolerances where they do not:
 * layernorm (NOT the same order: the CPU adds a row left to right, the GPU
 * kernel per lane with a stride of 32 and then by a butterfly across the
 * warp; the tolerance is the worst-case bound of that reordering, below),
 * attention (cuBLAS and OpenBLAS accumulate in different
 * orders, expf differs by an ulp, and a 16-bit rounding can then land one
 * ulp apart). Skips (77) without a visible device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/attention.h"
#include "gpu_rows.h"

/* The reordering bound of a sum of at most 128 FP32 terms (LN_TOL below). */
#define LN_GAMMA (128 * 0x1p-24)

/* The transformer rows compare in the op's dtype; atol = rtol = 0 is exact. */
static void cmp(const char *what, const void *g, const void *c, size_t n, amp_dtype dt,
                double atol, double rtol) {
    rows_cmp(what, g, c, n, dt,
             atol == 0 && rtol == 0 ? (rows_tol){ROWS_NAN_EQ, 0, 0} : ROWS_WITHIN(atol, rtol));
}

static void cmp_counts(const char *what, const amp_round_count *g, const amp_round_count *c,
                       double rel) {
    double d = fabs((double)g->nonzero - (double)c->nonzero);
    EXPECT(d <= rel * (double)c->nonzero && (g->overflow > 0) == (c->overflow > 0),
           "%s counts: gpu nz=%llu uf=%llu of=%llu, cpu nz=%llu uf=%llu of=%llu", what, g->nonzero,
           g->underflow, g->overflow, c->nonzero, c->underflow, c->overflow);
}

static void test_embed(const amp_gpu_row *r) {
    int B = r->shape[0], T = r->shape[1], C = r->shape[2], V = r->shape[3];
    size_t n = (size_t)B * T * C;
    int32_t *tok = rows_alloc((size_t)B * T * 4);
    for (int i = 0; i < B * T; i++) tok[i] = (int32_t)amp_rng_below(&rows_rng, (uint64_t)V);
    float *wte = rows_random((size_t)V * C, -1, 1), *wpe = rows_random((size_t)T * C, -1, 1),
          *dout = rows_random(n, -1, 1);
    float *co = rows_poisoned(n * 4);
    void *go = rows_to_dev(co, n * 4), *gte = rows_to_dev(wte, (size_t)V * C * 4),
         *gpe = rows_to_dev(wpe, (size_t)T * C * 4), *gtok = rows_to_dev(tok, (size_t)B * T * 4),
         *gdout = rows_to_dev(dout, n * 4);
    rows_ok(AMP_TRANSFORMER(rows_cpu, embed_forward, co, wte, wpe, tok, B, T, C), rows_cpu,
            "embed_forward");
    rows_ok(AMP_TRANSFORMER(rows_dev, embed_forward, go, gte, gpe, gtok, B, T, C), rows_dev,
            "embed_forward");
    float *gh = rows_take_dev(go, n * 4);
    cmp("embed_forward", gh, co, n, AMP_DTYPE_F32, 0, 0);
    /* backward adds into nonzero gradients; same row order: exact */
    float *dte = rows_random((size_t)V * C, -1, 1), *dpe = rows_random((size_t)T * C, -1, 1);
    void *gdte = rows_to_dev(dte, (size_t)V * C * 4), *gdpe = rows_to_dev(dpe, (size_t)T * C * 4);
    rows_ok(AMP_TRANSFORMER(rows_cpu, embed_backward, dte, dpe, dout, tok, B, T, C), rows_cpu,
          "embed_backward");
    rows_ok(AMP_TRANSFORMER(rows_dev, embed_backward, gdte, gdpe, gdout, gtok, B, T, C), rows_dev,
          "embed_backward");
    float *hte = rows_take_dev(gdte, (size_t)V * C * 4),
          *hpe = rows_take_dev(gdpe, (size_t)T * C * 4);
    cmp("embed_backward dwte", hte, dte, (size_t)V * C, AMP_DTYPE_F32, 0, 0);
    cmp("embed_backward dwpe", hpe, dpe, (size_t)T * C, AMP_DTYPE_F32, 0, 0);
    rows_release(gte), rows_release(gpe), rows_release(gtok);
    rows_release(gdout);
    free(tok), free(wte), free(wpe), free(dout), free(co), free(gh), free(dte), free(dpe);
    free(hte), free(hpe);
}

static void test_layernorm(const amp_gpu_row *r) {
    int rows = r->shape[0], C = r->shape[1], with_bias = r->shape[2], rms = r->shape[3];
    amp_dtype dt = r->dt;
    size_t n = (size_t)rows * C;
    float *x = rows_random(n, -3, 4), *w = rows_random((size_t)C, 0.5f, 1.5f),
          *b = rows_random((size_t)C, -1, 1);
    float *dout = rows_random(n, -1, 1);
    void *co = rows_poisoned(n * rows_esize(dt));
    float *cm = rows_poisoned((size_t)rows * 4), *cr = rows_poisoned((size_t)rows * 4);
    void *go = rows_to_dev(co, n * rows_esize(dt)), *gm = rows_to_dev(cm, (size_t)rows * 4),
         *gr = rows_to_dev(cr, (size_t)rows * 4), *gx = rows_to_dev(x, n * 4),
         *gw = rows_to_dev(w, (size_t)C * 4), *gb = rows_to_dev(b, (size_t)C * 4),
         *gdout = rows_to_dev(dout, n * 4);
    amp_round_count c0 = {0, 0, 0}, cc = c0;
    amp_round_count *gc = rows_to_dev(&c0, sizeof c0);
    const float *bb = with_bias ? b : NULL;
    rows_ok(AMP_TRANSFORMER(rows_cpu, layernorm_forward,
                          &(amp_layernorm_fwd){co, dt, cm, cr, x, w, bb, rows, C, 1e-5f, &cc, rms}),
          rows_cpu, "layernorm_forward");
    rows_ok(AMP_TRANSFORMER(rows_dev, layernorm_forward,
                          &(amp_layernorm_fwd){go, dt, gm, gr, gx, gw, with_bias ? gb : NULL, rows,
                                               C, 1e-5f, gc, rms}),
          rows_dev, "layernorm_forward");
    void *gh = rows_take_dev(go, n * rows_esize(dt));
    float *ghm = rows_take_dev(gm, (size_t)rows * 4), *ghr = rows_take_dev(gr, (size_t)rows * 4);
    amp_round_count *ghc = rows_take_dev(gc, sizeof c0);
    char what[96];
    snprintf(what, sizeof what, "layernorm_forward dt=%d bias=%d rms=%d", (int)dt, with_bias, rms);
    cmp(what, gh, co, n, dt, r->tol.atol, r->tol.rtol);
    /* the reordering bounds of LN_TOL (C <= 128, |x| <= 4) */
    cmp("layernorm mean", ghm, cm, (size_t)rows, AMP_DTYPE_F32, 4 * LN_GAMMA, 1e-6);
    cmp("layernorm rstd", ghr, cr, (size_t)rows, AMP_DTYPE_F32, 1e-6, 2 * LN_GAMMA + 1e-6);
    cmp_counts(what, ghc, &cc, 1e-3);
    /* backward from the CPU's statistics, adding into nonzero buffers */
    gm = rows_to_dev(cm, (size_t)rows * 4), gr = rows_to_dev(cr, (size_t)rows * 4);
    float *dx = rows_random(n, -1, 1), *dw = rows_random((size_t)C, -1, 1),
          *db = rows_random((size_t)C, -1, 1);
    void *gdx = rows_to_dev(dx, n * 4), *gdw = rows_to_dev(dw, (size_t)C * 4),
         *gdb = rows_to_dev(db, (size_t)C * 4);
    rows_ok(AMP_TRANSFORMER(
              rows_cpu, layernorm_backward,
              &(amp_layernorm_bwd){dx, dw, with_bias ? db : NULL, dout, x, w, cm, cr, rows, C, rms}),
          rows_cpu, "layernorm_backward");
    rows_ok(AMP_TRANSFORMER(rows_dev, layernorm_backward,
                          &(amp_layernorm_bwd){gdx, gdw, with_bias ? gdb : NULL, gdout, gx, gw, gm,
                                               gr, rows, C, rms}),
          rows_dev, "layernorm_backward");
    float *hdx = rows_take_dev(gdx, n * 4), *hdw = rows_take_dev(gdw, (size_t)C * 4),
          *hdb = rows_take_dev(gdb, (size_t)C * 4);
    cmp("layernorm_backward dx", hdx, dx, n, AMP_DTYPE_F32, 1e-5, 1e-5);
    cmp("layernorm_backward dw", hdw, dw, (size_t)C, AMP_DTYPE_F32, 1e-5, 1e-5);
    cmp("layernorm_backward db", hdb, db, (size_t)C, AMP_DTYPE_F32, 1e-5, 1e-5);
    rows_release(gm), rows_release(gr), rows_release(gx);
    rows_release(gw), rows_release(gb), rows_release(gdout);
    free(x), free(w), free(b), free(dout), free(co), free(cm), free(cr), free(gh), free(ghm);
    free(ghr), free(ghc), free(dx), free(dw), free(db), free(hdx), free(hdw), free(hdb);
}

static void test_attention(const amp_gpu_row *r) {
    int B = r->shape[0], T = r->shape[1], C = r->shape[2], nh = r->shape[3];
    amp_dtype dt = r->dt;
    float spread = r->arg[0];
    size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, na = (size_t)B * nh * T * T;
    size_t es = rows_esize(dt), nws = amp_attention_workspace_floats(B, T, C, nh);
    float *qf = rows_random(nq, -spread, spread), *gf = rows_random(ny, -1, 1);
    void *q = rows_as_dt(qf, nq, dt), *g = rows_as_dt(gf, ny, dt);
    void *co = rows_poisoned(ny * es), *ca = rows_poisoned(na * es), *cd = rows_poisoned(nq * es);
    float *cws = rows_poisoned(nws * 4);
    void *go = rows_to_dev(co, ny * es), *ga = rows_to_dev(ca, na * es),
         *gd = rows_to_dev(cd, nq * es), *gws = rows_to_dev(cws, nws * 4),
         *gq = rows_to_dev(q, nq * es), *gg = rows_to_dev(g, ny * es);
    amp_round_count z = {0, 0, 0}, cf = z, cb = z;
    amp_round_count *gcf = rows_to_dev(&z, sizeof z), *gcb = rows_to_dev(&z, sizeof z);
    rows_ok(AMP_TRANSFORMER(rows_cpu, attention_forward, co, ca, cws, q,
                          &(amp_attention_desc){B, T, C, nh, dt}, &cf),
          rows_cpu, "attention_forward");
    rows_ok(AMP_TRANSFORMER(rows_dev, attention_forward, go, ga, gws, gq,
                          &(amp_attention_desc){B, T, C, nh, dt}, gcf),
          rows_dev, "attention_forward");
    /* backward of each backend from its own forward */
    rows_ok(AMP_TRANSFORMER(rows_cpu, attention_backward, cd, cws, g, q, ca,
                          &(amp_attention_desc){B, T, C, nh, dt}, &cb),
          rows_cpu, "attention_backward");
    rows_ok(AMP_TRANSFORMER(rows_dev, attention_backward, gd, gws, gg, gq, ga,
                          &(amp_attention_desc){B, T, C, nh, dt}, gcb),
          rows_dev, "attention_backward");
    void *ho = rows_take_dev(go, ny * es), *ha = rows_take_dev(ga, na * es),
         *hd = rows_take_dev(gd, nq * es);
    amp_round_count *hcf = rows_take_dev(gcf, sizeof z), *hcb = rows_take_dev(gcb, sizeof z);
    double rtol = r->tol.rtol, atol = r->tol.atol;
    char what[96];
    snprintf(what, sizeof what, "attention_forward out dt=%d B%d T%d C%d nh%d", (int)dt, B, T, C,
             nh);
    cmp(what, ho, co, ny, dt, atol, rtol);
    snprintf(what, sizeof what, "attention_forward att dt=%d", (int)dt);
    cmp(what, ha, ca, na, dt, atol, rtol);
    snprintf(what, sizeof what, "attention_backward dqkv dt=%d", (int)dt);
    cmp(what, hd, cd, nq, dt, 10 * atol, 10 * rtol);
    cmp_counts("attention_forward", hcf, &cf, 0.01);
    cmp_counts("attention_backward", hcb, &cb, 0.01);
    rows_release(gws), rows_release(gq), rows_release(gg);
    free(qf), free(gf), free(q), free(g), free(co), free(ca), free(cd), free(cws), free(ho);
    free(ha), free(hd), free(hcf), free(hcb);
}

static void test_residual(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    amp_dtype dt = r->dt;
    float *x = rows_random(n, -3, 3), *df = rows_random(n, -3, 3);
    void *d = rows_as_dt(df, n, dt);
    float *co = rows_poisoned(n * 4);
    void *go = rows_to_dev(co, n * 4), *gx = rows_to_dev(x, n * 4),
         *gd = rows_to_dev(d, n * rows_esize(dt));
    rows_ok(AMP_TRANSFORMER(rows_cpu, residual_add, co, x, d, dt, n), rows_cpu, "residual_add");
    rows_ok(AMP_TRANSFORMER(rows_dev, residual_add, go, gx, gd, dt, n), rows_dev, "residual_add");
    float *h = rows_take_dev(go, n * 4);
    char what[64];
    snprintf(what, sizeof what, "residual_add dt=%d", (int)dt);
    cmp(what, h, co, n, AMP_DTYPE_F32, 0, 0);
    rows_release(gx), rows_release(gd);
    free(x), free(df), free(d), free(co), free(h);
}

/* SwiGLU's middle, forward (h and its two rounding points' counts) and
 * backward (dgate, dup); expf may differ in the last bit. */
static void test_swiglu(const amp_gpu_row *r) {
    size_t n = (size_t)r->shape[0];
    amp_dtype dt = r->dt;
    float *gf = rows_random(n, -8, 8), *uf = rows_random(n, -2, 2), *dh = rows_random(n, -1, 1);
    void *g = rows_as_dt(gf, n, dt), *u = rows_as_dt(uf, n, dt), *ch = rows_poisoned(n * 4);
    float *cdg = rows_poisoned(n * 4), *cdu = rows_poisoned(n * 4);
    void *gg = rows_to_dev(g, n * rows_esize(dt)), *gu = rows_to_dev(u, n * rows_esize(dt)),
         *gh = rows_to_dev(ch, n * 4), *gdh = rows_to_dev(dh, n * 4), *gdg = rows_to_dev(cdg, n * 4),
         *gdu = rows_to_dev(cdu, n * 4);
    amp_round_count c0 = {0, 0, 0}, cc = c0;
    amp_round_count *gc = rows_to_dev(&c0, sizeof c0);
    amp_swiglu_args ca = {ch, dt, cdg, cdu, dh, g, u, dt, dt, n, &cc};
    amp_swiglu_args ga = {gh, dt, gdg, gdu, gdh, gg, gu, dt, dt, n, gc};
    rows_ok(AMP_TRANSFORMER(rows_cpu, swiglu_forward, &ca), rows_cpu, "swiglu_forward");
    rows_ok(AMP_TRANSFORMER(rows_dev, swiglu_forward, &ga), rows_dev, "swiglu_forward");
    rows_ok(AMP_TRANSFORMER(rows_cpu, swiglu_backward, &ca), rows_cpu, "swiglu_backward");
    rows_ok(AMP_TRANSFORMER(rows_dev, swiglu_backward, &ga), rows_dev, "swiglu_backward");
    void *hh = rows_take_dev(gh, n * rows_esize(dt));
    float *hdg = rows_take_dev(gdg, n * 4), *hdu = rows_take_dev(gdu, n * 4);
    amp_round_count *hc = rows_take_dev(gc, sizeof c0);
    char what[64];
    snprintf(what, sizeof what, "swiglu_forward dt=%d", (int)dt);
    cmp(what, hh, ch, n, dt, r->tol.atol, r->tol.rtol);
    cmp_counts(what, hc, &cc, 1e-3);
    cmp("swiglu_backward dgate", hdg, cdg, n, AMP_DTYPE_F32, r->tol.atol, r->tol.rtol);
    cmp("swiglu_backward dup", hdu, cdu, n, AMP_DTYPE_F32, r->tol.atol, r->tol.rtol);
    rows_release(gg), rows_release(gu), rows_release(gdh);
    free(gf), free(uf), free(dh), free(g), free(u), free(ch), free(cdg), free(cdu), free(hh);
    free(hdg), free(hdu), free(hc);
}

/* Llama's attention input: qkv_pack (RoPE, grouped heads; counted) and
 * qkv_unpack; powf/cosf/sinf may differ in the last bits. */
static void test_qkv(const amp_gpu_row *r) {
    int B = r->shape[0], T = r->shape[1], nh = r->shape[2], nkv = r->shape[3], hs = r->shape[4];
    amp_dtype dt = r->dt;
    size_t N = (size_t)B * T, C = (size_t)nh * hs, Ckv = (size_t)nkv * hs, es = rows_esize(dt);
    float *qf = rows_random(N * C, -2, 2), *kf = rows_random(N * Ckv, -2, 2),
          *vf = rows_random(N * Ckv, -2, 2), *df = rows_random(N * 3 * C, -1, 1);
    void *q = rows_as_dt(qf, N * C, dt), *k = rows_as_dt(kf, N * Ckv, dt),
         *v = rows_as_dt(vf, N * Ckv, dt), *d = rows_as_dt(df, N * 3 * C, dt);
    void *cqkv = rows_poisoned(N * 3 * C * es);
    float *cdq = rows_poisoned(N * C * 4), *cdk = rows_poisoned(N * Ckv * 4),
          *cdv = rows_poisoned(N * Ckv * 4);
    void *gq = rows_to_dev(q, N * C * es), *gk = rows_to_dev(k, N * Ckv * es),
         *gv = rows_to_dev(v, N * Ckv * es), *gd = rows_to_dev(d, N * 3 * C * es),
         *gqkv = rows_to_dev(cqkv, N * 3 * C * es), *gdq = rows_to_dev(cdq, N * C * 4),
         *gdk = rows_to_dev(cdk, N * Ckv * 4), *gdv = rows_to_dev(cdv, N * Ckv * 4);
    amp_round_count c0 = {0, 0, 0}, cc = c0;
    amp_round_count *gc = rows_to_dev(&c0, sizeof c0);
    amp_qkv_args ca = {cqkv, dt, q, k, v, dt, dt, dt, cdq, cdk, cdv, B, T, nh, nkv, hs, 1, 10000.0f, &cc};
    amp_qkv_args ga = {gqkv, dt, gq, gk, gv, dt, dt, dt, gdq, gdk, gdv, B, T, nh, nkv, hs, 1,
                       10000.0f, gc};
    rows_ok(AMP_TRANSFORMER(rows_cpu, qkv_pack, &ca), rows_cpu, "qkv_pack");
    rows_ok(AMP_TRANSFORMER(rows_dev, qkv_pack, &ga), rows_dev, "qkv_pack");
    ca.qkv = d, ga.qkv = gd; /* the backward reads a gradient */
    rows_ok(AMP_TRANSFORMER(rows_cpu, qkv_unpack, &ca), rows_cpu, "qkv_unpack");
    rows_ok(AMP_TRANSFORMER(rows_dev, qkv_unpack, &ga), rows_dev, "qkv_unpack");
    void *hq = rows_take_dev(gqkv, N * 3 * C * es);
    float *hdq = rows_take_dev(gdq, N * C * 4), *hdk = rows_take_dev(gdk, N * Ckv * 4),
          *hdv = rows_take_dev(gdv, N * Ckv * 4);
    amp_round_count *hc = rows_take_dev(gc, sizeof c0);
    char what[64];
    snprintf(what, sizeof what, "qkv_pack dt=%d", (int)dt);
    cmp(what, hq, cqkv, N * 3 * C, dt, r->tol.atol, r->tol.rtol);
    cmp_counts(what, hc, &cc, 1e-3);
    cmp("qkv_unpack dq", hdq, cdq, N * C, AMP_DTYPE_F32, r->tol.atol, r->tol.rtol);
    cmp("qkv_unpack dk", hdk, cdk, N * Ckv, AMP_DTYPE_F32, r->tol.atol, r->tol.rtol);
    cmp("qkv_unpack dv", hdv, cdv, N * Ckv, AMP_DTYPE_F32, r->tol.atol, r->tol.rtol);
    rows_release(gq), rows_release(gk), rows_release(gv), rows_release(gd);
    free(qf), free(kf), free(vf), free(df), free(q), free(k), free(v), free(d), free(cqkv);
    free(cdq), free(cdk), free(cdv), free(hq), free(hdq), free(hdk), free(hdv), free(hc);
}

#define F32 AMP_DTYPE_F32
#define F16 AMP_DTYPE_F16
#define BF16 AMP_DTYPE_BF16
/* layernorm: the row's mean and variance are sums of C terms added in
 * another order on each side (see the top), so each may differ by the
 * reordering bound gamma = C u (u = 2^-24) times the sum of the terms'
 * magnitudes: with |x| <= 4 and C <= 128 (the rows below), the mean by up to
 * 4 gamma absolute, the rstd by about 2 gamma relative (E[x^2] / var is near
 * 1 for these inputs), plus an ulp each for sqrtf and the division. The
 * output (x - mean) rstd w + b, |w| <= 1.5, rstd <= 1: 4 gamma * 1.5 absolute
 * and 2 gamma relative, or about an ulp of dt for 16-bit outputs. A wrong
 * normalisation errs by order 1. */
#define LN_TOL(dt) ROWS_WITHIN(dt == F32 ? 6 * LN_GAMMA : 1e-6, \
                               dt == F32 ? 2 * LN_GAMMA + 1e-6 : dt == F16 ? 1e-3 : 8e-3)
/* attention: FP32 summation order and expf; 16-bit about two ulps of dt
 * (the backward, through two more GEMMs, gets ten times as much) */
#define ATT_TOL(dt) ROWS_WITHIN(dt == F32 ? 1e-5 : dt == F16 ? 2e-3 : 2e-2, \
                                dt == F32 ? 1e-4 : dt == F16 ? 4e-3 : 3e-2)
/* embedding forward/backward and the residual add: the same additions in the same order */
#define PER_DTYPE(T, name)                                                                    \
    {"layernorm 768x128 bias " name, test_layernorm, {768, 128, 1}, .dt = T, .tol = LN_TOL(T)}, \
    {"layernorm 5x3 no bias " name, test_layernorm, {5, 3, 0}, .dt = T, .tol = LN_TOL(T)},      \
    {"rmsnorm 300x96 " name, test_layernorm, {300, 96, 0, 1}, .dt = T, .tol = LN_TOL(T)},       \
    {"attention B12 T64 C128 h4 " name, test_attention, {12, 64, 128, 4}, .dt = T,              \
     .tol = ATT_TOL(T), .arg = {1.0f}},                                                         \
    {"attention B2 T5 C8 h2 " name, test_attention, {2, 5, 8, 2}, .dt = T, .tol = ATT_TOL(T),  \
     .arg = {2.0f}},                                                                             \
    {"residual n100003 " name, test_residual, {100003}, .dt = T, .tol = ROWS_EXACT},          \
    {"swiglu n70001 " name, test_swiglu, {70001}, .dt = T, .tol = LN_TOL(T)},                   \
    {"qkv rope B2 T37 h4 kv2 hs16 " name, test_qkv, {2, 37, 4, 2, 16}, .dt = T, .tol = LN_TOL(T)}

static const amp_gpu_row rows[] = {
    {"embedding B12 T64 C128 V65", test_embed, {12, 64, 128, 65}, .dt = F32, .tol = ROWS_EXACT},
    {"embedding B2 T3 C5 V7", test_embed, {2, 3, 5, 7}, .dt = F32, .tol = ROWS_EXACT},
    PER_DTYPE(F32, "f32"),
    PER_DTYPE(F16, "f16"),
    PER_DTYPE(BF16, "bf16"),
    /* FP16 logits past 65504: both backends count the overflow */
    {"attention f16 logits past 65504", test_attention, {2, 8, 16, 2}, .dt = F16,
     .tol = ATT_TOL(F16), .arg = {300.0f}},
};

int main(int argc, char **argv) {
    return amp_gpu_rows_main("test_gpu_transformer", argc, argv, rows, sizeof rows / sizeof rows[0],
                             17);
}
