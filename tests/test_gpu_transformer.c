/* CPU-vs-CUDA parity of the transformer ops (embedding, layernorm, causal
 * attention, residual add) on the same random inputs, in FP32, FP16 and
 * BF16. Output buffers are poisoned with NaN first, so an element the GPU
 * never writes is caught. Exact where both backends run the same additions
 * in the same order (embedding forward and backward, residual add);
 * stated tolerances where they do not: layernorm (same order, but the
 * libm/CUDA sqrtf and division may differ in the last bit), attention
 * (cuBLAS and OpenBLAS accumulate in different orders, expf differs by an
 * ulp, and a 16-bit rounding can then land one ulp apart). Skips (77)
 * without a visible device. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/attention.h"
#include "backend/kernels/convert.h"
#include "expect.h"
#include "op_rows.h"
#include "rng.h"

static amp_backend *cpu, *gpu;
static amp_rng rng;

#define POISON32 0x7fbadbadu

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) abort();
    return p;
}

static float *rnd(size_t n, float lo, float hi) {
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)amp_rng_uniform(&rng);
    return p;
}

static void *poisoned(size_t bytes) {
    uint32_t *p = xmalloc(bytes + 4);
    for (size_t i = 0; i < bytes / 4 + 1; i++) p[i] = POISON32;
    return p;
}

static void *to_gpu(const void *host, size_t bytes) {
    void *d = gpu->ops->alloc(gpu, bytes);
    if (!d || gpu->ops->upload(gpu, d, host, bytes))
        amp_op_abort("GPU alloc/upload of %zu bytes: %s", bytes, gpu->err);
    return d;
}

static void *from_gpu(void *dev, size_t bytes) {
    void *h = xmalloc(bytes);
    if (gpu->ops->download(gpu, h, dev, bytes)) amp_op_abort("GPU download: %s", gpu->err);
    gpu->ops->release(gpu, dev);
    return h;
}

/* A failed call ends the current op row (op_rows.h), not the test. */
static void op_ok(int rc, amp_backend *be, const char *what) {
    if (rc != 0) amp_op_abort("%s on %s: %s", what, be->ops->name, be->err);
}

static float elem(const void *p, size_t i, amp_dtype dt) {
    return dt == AMP_DTYPE_F32 ? ((const float *)p)[i] : amp_widen16(((const uint16_t *)p)[i], dt);
}

/* |g - c| <= atol + rtol |c| (NaN only matches NaN); rtol = atol = 0 is exact. */
static void cmp(const char *what, const void *g, const void *c, size_t n, amp_dtype dt,
                double atol, double rtol) {
    int bad = 0;
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        float a = elem(g, i, dt), b = elem(c, i, dt);
        int ok;
        if (isnan(a) || isnan(b))
            ok = isnan(a) && isnan(b);
        else {
            double d = fabs((double)a - b);
            worst = fmax(worst, d);
            ok = atol == 0 && rtol == 0 ? memcmp(&a, &b, 4) == 0 : d <= atol + rtol * fabs(b);
        }
        if (!ok && bad++ < 5) EXPECT(0, "%s[%zu]: gpu %.9g cpu %.9g", what, i, a, b);
    }
    if (bad > 5) EXPECT(0, "%s: %d of %zu differ", what, bad, n);
    if (!bad) printf("ok  %-44s n=%-7zu max|gpu-cpu| %.2e\n", what, n, worst);
}

static void cmp_counts(const char *what, const amp_round_count *g, const amp_round_count *c,
                       double rel) {
    double d = fabs((double)g->nonzero - (double)c->nonzero);
    EXPECT(d <= rel * (double)c->nonzero && (g->overflow > 0) == (c->overflow > 0),
           "%s counts: gpu nz=%llu uf=%llu of=%llu, cpu nz=%llu uf=%llu of=%llu", what, g->nonzero,
           g->underflow, g->overflow, c->nonzero, c->underflow, c->overflow);
}

static size_t esize(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

static void to_dt(void *dst, const float *src, size_t n, amp_dtype dt) {
    for (size_t i = 0; i < n; i++) {
        if (dt == AMP_DTYPE_F32)
            ((float *)dst)[i] = src[i];
        else
            ((uint16_t *)dst)[i] = amp_round16(src[i], dt, NULL);
    }
}

static void test_embed(int B, int T, int C, int V) {
    size_t n = (size_t)B * T * C;
    int32_t *tok = xmalloc((size_t)B * T * 4);
    for (int i = 0; i < B * T; i++) tok[i] = (int32_t)amp_rng_below(&rng, (uint64_t)V);
    float *wte = rnd((size_t)V * C, -1, 1), *wpe = rnd((size_t)T * C, -1, 1), *dout = rnd(n, -1, 1);
    float *co = poisoned(n * 4);
    void *go = to_gpu(co, n * 4), *gte = to_gpu(wte, (size_t)V * C * 4),
         *gpe = to_gpu(wpe, (size_t)T * C * 4), *gtok = to_gpu(tok, (size_t)B * T * 4),
         *gdout = to_gpu(dout, n * 4);
    op_ok(AMP_TRANSFORMER(cpu, embed_forward, co, wte, wpe, tok, B, T, C), cpu, "embed_forward");
    op_ok(AMP_TRANSFORMER(gpu, embed_forward, go, gte, gpe, gtok, B, T, C), gpu, "embed_forward");
    float *gh = from_gpu(go, n * 4);
    cmp("embed_forward", gh, co, n, AMP_DTYPE_F32, 0, 0);
    /* backward adds into nonzero gradients; same row order: exact */
    float *dte = rnd((size_t)V * C, -1, 1), *dpe = rnd((size_t)T * C, -1, 1);
    void *gdte = to_gpu(dte, (size_t)V * C * 4), *gdpe = to_gpu(dpe, (size_t)T * C * 4);
    op_ok(AMP_TRANSFORMER(cpu, embed_backward, dte, dpe, dout, tok, B, T, C), cpu,
          "embed_backward");
    op_ok(AMP_TRANSFORMER(gpu, embed_backward, gdte, gdpe, gdout, gtok, B, T, C), gpu,
          "embed_backward");
    float *hte = from_gpu(gdte, (size_t)V * C * 4), *hpe = from_gpu(gdpe, (size_t)T * C * 4);
    cmp("embed_backward dwte", hte, dte, (size_t)V * C, AMP_DTYPE_F32, 0, 0);
    cmp("embed_backward dwpe", hpe, dpe, (size_t)T * C, AMP_DTYPE_F32, 0, 0);
    gpu->ops->release(gpu, gte), gpu->ops->release(gpu, gpe), gpu->ops->release(gpu, gtok);
    gpu->ops->release(gpu, gdout);
    free(tok), free(wte), free(wpe), free(dout), free(co), free(gh), free(dte), free(dpe);
    free(hte), free(hpe);
}

static void test_layernorm(int rows, int C, amp_dtype dt, int with_bias) {
    size_t n = (size_t)rows * C;
    float *x = rnd(n, -3, 4), *w = rnd((size_t)C, 0.5f, 1.5f), *b = rnd((size_t)C, -1, 1);
    float *dout = rnd(n, -1, 1);
    void *co = poisoned(n * esize(dt));
    float *cm = poisoned((size_t)rows * 4), *cr = poisoned((size_t)rows * 4);
    void *go = to_gpu(co, n * esize(dt)), *gm = to_gpu(cm, (size_t)rows * 4),
         *gr = to_gpu(cr, (size_t)rows * 4), *gx = to_gpu(x, n * 4), *gw = to_gpu(w, (size_t)C * 4),
         *gb = to_gpu(b, (size_t)C * 4), *gdout = to_gpu(dout, n * 4);
    amp_round_count c0 = {0, 0, 0}, cc = c0;
    amp_round_count *gc = to_gpu(&c0, sizeof c0);
    const float *bb = with_bias ? b : NULL;
    op_ok(AMP_TRANSFORMER(cpu, layernorm_forward,
                          &(amp_layernorm_fwd){co, dt, cm, cr, x, w, bb, rows, C, 1e-5f, &cc}),
          cpu, "layernorm_forward");
    op_ok(AMP_TRANSFORMER(gpu, layernorm_forward,
                          &(amp_layernorm_fwd){go, dt, gm, gr, gx, gw, with_bias ? gb : NULL, rows,
                                               C, 1e-5f, gc}),
          gpu, "layernorm_forward");
    void *gh = from_gpu(go, n * esize(dt));
    float *ghm = from_gpu(gm, (size_t)rows * 4), *ghr = from_gpu(gr, (size_t)rows * 4);
    amp_round_count *ghc = from_gpu(gc, sizeof c0);
    char what[96];
    double tol = dt == AMP_DTYPE_F32 ? 1e-6 : dt == AMP_DTYPE_F16 ? 1e-3 : 8e-3;
    snprintf(what, sizeof what, "layernorm_forward dt=%d bias=%d", (int)dt, with_bias);
    cmp(what, gh, co, n, dt, 1e-6, tol);
    cmp("layernorm mean", ghm, cm, (size_t)rows, AMP_DTYPE_F32, 1e-6, 1e-6);
    cmp("layernorm rstd", ghr, cr, (size_t)rows, AMP_DTYPE_F32, 1e-6, 1e-6);
    cmp_counts(what, ghc, &cc, 1e-3);
    /* backward from the CPU's statistics, adding into nonzero buffers */
    gm = to_gpu(cm, (size_t)rows * 4), gr = to_gpu(cr, (size_t)rows * 4);
    float *dx = rnd(n, -1, 1), *dw = rnd((size_t)C, -1, 1), *db = rnd((size_t)C, -1, 1);
    void *gdx = to_gpu(dx, n * 4), *gdw = to_gpu(dw, (size_t)C * 4), *gdb = to_gpu(db, (size_t)C * 4);
    op_ok(AMP_TRANSFORMER(
              cpu, layernorm_backward,
              &(amp_layernorm_bwd){dx, dw, with_bias ? db : NULL, dout, x, w, cm, cr, rows, C}),
          cpu, "layernorm_backward");
    op_ok(AMP_TRANSFORMER(gpu, layernorm_backward,
                          &(amp_layernorm_bwd){gdx, gdw, with_bias ? gdb : NULL, gdout, gx, gw, gm,
                                               gr, rows, C}),
          gpu, "layernorm_backward");
    float *hdx = from_gpu(gdx, n * 4), *hdw = from_gpu(gdw, (size_t)C * 4),
          *hdb = from_gpu(gdb, (size_t)C * 4);
    cmp("layernorm_backward dx", hdx, dx, n, AMP_DTYPE_F32, 1e-5, 1e-5);
    cmp("layernorm_backward dw", hdw, dw, (size_t)C, AMP_DTYPE_F32, 1e-5, 1e-5);
    cmp("layernorm_backward db", hdb, db, (size_t)C, AMP_DTYPE_F32, 1e-5, 1e-5);
    gpu->ops->release(gpu, gm), gpu->ops->release(gpu, gr), gpu->ops->release(gpu, gx);
    gpu->ops->release(gpu, gw), gpu->ops->release(gpu, gb), gpu->ops->release(gpu, gdout);
    free(x), free(w), free(b), free(dout), free(co), free(cm), free(cr), free(gh), free(ghm);
    free(ghr), free(ghc), free(dx), free(dw), free(db), free(hdx), free(hdw), free(hdb);
}

static void test_attention(int B, int T, int C, int nh, amp_dtype dt, float spread) {
    size_t nq = (size_t)B * T * 3 * C, ny = (size_t)B * T * C, na = (size_t)B * nh * T * T;
    size_t es = esize(dt), nws = amp_attention_workspace_floats(B, T, C, nh);
    float *qf = rnd(nq, -spread, spread), *gf = rnd(ny, -1, 1);
    void *q = xmalloc(nq * es), *g = xmalloc(ny * es);
    to_dt(q, qf, nq, dt);
    to_dt(g, gf, ny, dt);
    void *co = poisoned(ny * es), *ca = poisoned(na * es), *cd = poisoned(nq * es);
    float *cws = poisoned(nws * 4);
    void *go = to_gpu(co, ny * es), *ga = to_gpu(ca, na * es), *gd = to_gpu(cd, nq * es),
         *gws = to_gpu(cws, nws * 4), *gq = to_gpu(q, nq * es), *gg = to_gpu(g, ny * es);
    amp_round_count z = {0, 0, 0}, cf = z, cb = z;
    amp_round_count *gcf = to_gpu(&z, sizeof z), *gcb = to_gpu(&z, sizeof z);
    op_ok(AMP_TRANSFORMER(cpu, attention_forward, co, ca, cws, q,
                          &(amp_attention_desc){B, T, C, nh, dt}, &cf),
          cpu, "attention_forward");
    op_ok(AMP_TRANSFORMER(gpu, attention_forward, go, ga, gws, gq,
                          &(amp_attention_desc){B, T, C, nh, dt}, gcf),
          gpu, "attention_forward");
    /* backward of each backend from its own forward */
    op_ok(AMP_TRANSFORMER(cpu, attention_backward, cd, cws, g, q, ca,
                          &(amp_attention_desc){B, T, C, nh, dt}, &cb),
          cpu, "attention_backward");
    op_ok(AMP_TRANSFORMER(gpu, attention_backward, gd, gws, gg, gq, ga,
                          &(amp_attention_desc){B, T, C, nh, dt}, gcb),
          gpu, "attention_backward");
    void *ho = from_gpu(go, ny * es), *ha = from_gpu(ga, na * es), *hd = from_gpu(gd, nq * es);
    amp_round_count *hcf = from_gpu(gcf, sizeof z), *hcb = from_gpu(gcb, sizeof z);
    /* FP32: summation order and expf; 16-bit: about two ulps of dt */
    double rtol = dt == AMP_DTYPE_F32 ? 1e-4 : dt == AMP_DTYPE_F16 ? 4e-3 : 3e-2;
    double atol = dt == AMP_DTYPE_F32 ? 1e-5 : dt == AMP_DTYPE_F16 ? 2e-3 : 2e-2;
    char what[96];
    snprintf(what, sizeof what, "attention_forward out dt=%d B%d T%d C%d nh%d", (int)dt, B, T, C, nh);
    cmp(what, ho, co, ny, dt, atol, rtol);
    snprintf(what, sizeof what, "attention_forward att dt=%d", (int)dt);
    cmp(what, ha, ca, na, dt, atol, rtol);
    snprintf(what, sizeof what, "attention_backward dqkv dt=%d", (int)dt);
    cmp(what, hd, cd, nq, dt, 10 * atol, 10 * rtol);
    cmp_counts("attention_forward", hcf, &cf, 0.01);
    cmp_counts("attention_backward", hcb, &cb, 0.01);
    gpu->ops->release(gpu, gws), gpu->ops->release(gpu, gq), gpu->ops->release(gpu, gg);
    free(qf), free(gf), free(q), free(g), free(co), free(ca), free(cd), free(cws), free(ho);
    free(ha), free(hd), free(hcf), free(hcb);
}

static void test_residual(size_t n, amp_dtype dt) {
    float *x = rnd(n, -3, 3), *df = rnd(n, -3, 3);
    void *d = xmalloc(n * esize(dt));
    to_dt(d, df, n, dt);
    float *co = poisoned(n * 4);
    void *go = to_gpu(co, n * 4), *gx = to_gpu(x, n * 4), *gd = to_gpu(d, n * esize(dt));
    op_ok(AMP_TRANSFORMER(cpu, residual_add, co, x, d, dt, n), cpu, "residual_add");
    op_ok(AMP_TRANSFORMER(gpu, residual_add, go, gx, gd, dt, n), gpu, "residual_add");
    float *h = from_gpu(go, n * 4);
    char what[64];
    snprintf(what, sizeof what, "residual_add dt=%d", (int)dt);
    cmp(what, h, co, n, AMP_DTYPE_F32, 0, 0);
    gpu->ops->release(gpu, gx), gpu->ops->release(gpu, gd);
    free(x), free(df), free(d), free(co), free(h);
}

int main(void) {
    if (!amp_backend_cuda_available()) {
        printf("no CUDA device visible: skipped\n");
        return 77;
    }
    char err[512];
    gpu = amp_backend_cuda_create(err, sizeof err);
    cpu = amp_backend_cpu_create(err, sizeof err);
    if (!gpu || !cpu) {
        fprintf(stderr, "FAIL: creating the backends: %s\n", err);
        return 1;
    }
    amp_rng_seed(&rng, 17);
    AMP_OP_ROW(test_embed(12, 64, 128, 65), "embedding B12 T64 C128 V65");
    AMP_OP_ROW(test_embed(2, 3, 5, 7), "embedding B2 T3 C5 V7");
    const amp_dtype dts[3] = {AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16};
    static const char *const dt_names[3] = {"f32", "f16", "bf16"};
    /* volatile: the rows' setjmp (op_rows.h) must not clobber the loop */
    for (volatile int d = 0; d < 3; d++) {
        AMP_OP_ROW(test_layernorm(768, 128, dts[d], 1), "layernorm 768x128 bias %s", dt_names[d]);
        AMP_OP_ROW(test_layernorm(5, 3, dts[d], 0), "layernorm 5x3 no bias %s", dt_names[d]);
        AMP_OP_ROW(test_attention(12, 64, 128, 4, dts[d], 1.0f), "attention B12 T64 C128 h4 %s",
                   dt_names[d]);
        AMP_OP_ROW(test_attention(2, 5, 8, 2, dts[d], 2.0f), "attention B2 T5 C8 h2 %s", dt_names[d]);
        AMP_OP_ROW(test_residual(100003, dts[d]), "residual n100003 %s", dt_names[d]);
    }
    /* FP16 logits past 65504: both backends count the overflow */
    AMP_OP_ROW(test_attention(2, 8, 16, 2, AMP_DTYPE_F16, 300.0f), "attention f16 logits past 65504");
    gpu->ops->destroy(gpu);
    cpu->ops->destroy(cpu);
    return amp_op_finish("test_gpu_transformer");
}
