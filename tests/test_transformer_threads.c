/* The CPU backend's transformer ops, threaded and vectorised
 * (core/backend/cpu_transformer.c): layernorm forward and backward and the
 * attention's softmax bit for bit against the shared row functions of
 * kernels/layernorm.h and kernels/attention.h (the CUDA kernels' math), with
 * the same rounding counts; and every op (embedding,
 * layernorm, attention, residual add) at 1, 2 and 3 threads under FP32,
 * FP16 and BF16: not one bit and not one count differs from 1 thread. The
 * shapes are above the ops' threading threshold and not multiples of their
 * row groups or column blocks, so the tails run too. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/kernels/attention.h"
#include "backend/kernels/layernorm.h"
#include "backend/kernels/store.h"
#include "expect.h"
#include "util/rng.h"

static amp_rng rng;

static float *rnd(size_t n, float lo, float hi) {
    float *p = malloc(n * sizeof(float));
    if (!p) abort();
    for (size_t i = 0; i < n; i++) p[i] = lo + (hi - lo) * (float)amp_rng_uniform(&rng);
    return p;
}

static void *dup(const void *p, size_t bytes) {
    void *q = malloc(bytes);
    if (!q) abort();
    memcpy(q, p, bytes);
    return q;
}

static int same_count(const amp_round_count *a, const amp_round_count *b) {
    return a->nonzero == b->nonzero && a->underflow == b->underflow && a->overflow == b->overflow;
}

static size_t esz(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

/* layernorm (rms = 1: RMSNorm) on the backend against amp_ln_forward_row /
 * amp_ln_backward_row / amp_ln_param_grad_col, bit for bit */
static void ln_against_rows(amp_backend *be, amp_dtype dt, int with_bias, int rms) {
    enum { ROWS = 301, C = 97 };
    float *x = rnd((size_t)ROWS * C, -3.0f, 3.0f), *w = rnd(C, 0.5f, 1.5f);
    float *b = with_bias ? rnd(C, -0.5f, 0.5f) : NULL;
    x[5] = 7e4f; /* an FP16 overflow */
    for (int i = 0; i < C; i++) x[(size_t)7 * C + i] = 1e-30f * (float)i; /* tiny values */
    void *out = malloc((size_t)ROWS * C * 4), *ref = malloc((size_t)ROWS * C * 4);
    float mean[ROWS], rstd[ROWS], rmean[ROWS], rstd_ref[ROWS];
    amp_round_count cnt = {0, 0, 0};
    amp_round_tally t = {0, 0, 0};
    EXPECT(AMP_TRANSFORMER(
               be, layernorm_forward,
               &(amp_layernorm_fwd){out, dt, mean, rstd, x, w, b, ROWS, C, 1e-5f, &cnt, rms}) == 0,
           "layernorm_forward: %s", be->err);
    for (int r = 0; r < ROWS; r++)
        amp_ln_forward_row((char *)ref + (size_t)r * C * esz(dt), (int)dt, &rmean[r], &rstd_ref[r],
                           x + (size_t)r * C, w, b, C, 1e-5f, rms, &t);
    EXPECT(memcmp(out, ref, (size_t)ROWS * C * esz(dt)) == 0 && memcmp(mean, rmean, sizeof mean) == 0 &&
               memcmp(rstd, rstd_ref, sizeof rstd) == 0,
           "layernorm_forward dt %d bias %d rms %d differs from amp_ln_forward_row", (int)dt,
           with_bias, rms);
    /* RMSNorm against its definition in double: mean 0, rstd =
     * 1/sqrt(mean(x^2) + eps), out = x * rstd * w (FP32 output only) */
    for (int r = 0; rms && r < ROWS; r++) {
        double ss = 0.0;
        for (int i = 0; i < C; i++) ss += (double)x[(size_t)r * C + i] * x[(size_t)r * C + i];
        double want = 1.0 / sqrt(ss / C + 1e-5);
        EXPECT(mean[r] == 0.0f && fabs(rstd[r] - want) <= 1e-5 * want,
               "rmsnorm row %d: mean %g, rstd %.8g, mean(x^2) gives %.8g", r, mean[r], rstd[r], want);
        for (int i = 0; dt == AMP_DTYPE_F32 && i < C; i++) {
            double o = ((const float *)out)[(size_t)r * C + i], e = x[(size_t)r * C + i] * want * w[i];
            if (fabs(o - e) > 1e-5 * fabs(e) + 1e-30) {
                EXPECT(0, "rmsnorm row %d col %d: %.8g, want %.8g", r, i, o, e);
                break;
            }
        }
    }
    EXPECT(cnt.nonzero == t.nz && cnt.underflow == t.uf && cnt.overflow == t.of,
           "layernorm_forward dt %d counts %llu/%llu/%llu, rows give %llu/%llu/%llu", (int)dt,
           cnt.nonzero, cnt.underflow, cnt.overflow, t.nz, t.uf, t.of);
    float *dout = rnd((size_t)ROWS * C, -1.0f, 1.0f), *dx = rnd((size_t)ROWS * C, -1.0f, 1.0f);
    float *dx_ref = dup(dx, (size_t)ROWS * C * 4);
    float *dw = rnd(C, -1.0f, 1.0f), *db = rnd(C, -1.0f, 1.0f);
    float *dw_ref = dup(dw, C * 4), *db_ref = dup(db, C * 4);
    EXPECT(AMP_TRANSFORMER(be, layernorm_backward,
                           &(amp_layernorm_bwd){dx, dw, with_bias ? db : NULL, dout, x, w, mean,
                                                rstd, ROWS, C, rms}) == 0,
           "layernorm_backward: %s", be->err);
    for (int r = 0; r < ROWS; r++)
        amp_ln_backward_row(dx_ref + (size_t)r * C, dout + (size_t)r * C, x + (size_t)r * C, w,
                            mean[r], rstd[r], C, rms);
    for (int j = 0; j < C; j++)
        amp_ln_param_grad_col(dw_ref, with_bias ? db_ref : NULL, dout, x, mean, rstd, ROWS, C, j);
    EXPECT(memcmp(dx, dx_ref, (size_t)ROWS * C * 4) == 0, "layernorm_backward dx differs from the rows");
    EXPECT(memcmp(dw, dw_ref, C * 4) == 0 && memcmp(db, db_ref, C * 4) == 0,
           "layernorm_backward dw/db differ from the column sums");
    free(x), free(w), free(b), free(out), free(ref), free(dout), free(dx), free(dx_ref), free(dw),
        free(db), free(dw_ref), free(db_ref);
}

/* The attention's probabilities against amp_attn_softmax_row (the CUDA
 * kernels' row function) on the same logits: q and k packed per head, the
 * logits from the same batched gemm_ex the op issues, then the row function
 * over each row; att and the counts of both rounding points must match. */
static void softmax_against_rows(amp_backend *be, amp_dtype dt) {
    enum { SB = 2, ST = 37, SC = 48, SNH = 3 };
    int hs = SC / SNH, bh = SB * SNH;
    size_t N = (size_t)SB * ST, es = esz(dt), natt = (size_t)bh * ST * ST;
    float *qf = rnd(N * 3 * SC, -3.0f, 3.0f);
    for (int i = 0; i < hs; i++) qf[i] = qf[SC + i] = 150.0f; /* an FP16 logit overflow */
    void *qkv = malloc(N * 3 * SC * es), *y = malloc(N * SC * es), *att = malloc(natt * es);
    void *ref = malloc(natt * es);
    float *ws = malloc(amp_attention_workspace_floats(SB, ST, SC, SNH) * 4);
    float *q = malloc(N * SC * 4), *k = malloc(N * SC * 4), *S = malloc(natt * 4);
    EXPECT(be->ops->round(be, qkv, dt, qf, N * 3 * SC, NULL) == 0, "round");
    amp_round_count cnt = {0, 0, 0};
    EXPECT(AMP_TRANSFORMER(be, attention_forward, y, att, ws, qkv,
                           &(amp_attention_desc){SB, ST, SC, SNH, dt}, &cnt) == 0,
           "attention_forward: %s", be->err);
    /* q, k as [b, h, t, hs] FP32 (the 16-bit values widened) */
    for (size_t r = 0; r < N; r++)
        for (int h = 0; h < SNH; h++)
            for (int i = 0; i < hs; i++) {
                size_t b = r / ST, t = r % ST, at = ((b * SNH + h) * ST + t) * hs + i;
                size_t src = r * 3 * SC + (size_t)h * hs + i;
                q[at] = amp_load(qkv, src, (int)dt);
                k[at] = amp_load(qkv, src + SC, (int)dt);
            }
    amp_gemm_desc d = amp_gemm_plain(S, q, k, AMP_DTYPE_F32, AMP_GEMM_NT, ST, ST, hs);
    d.batch = bh;
    d.stride_a = d.stride_b = (long long)ST * hs;
    d.stride_c = (long long)ST * ST;
    d.alpha = 1.0f / sqrtf((float)hs);
    EXPECT(be->ops->gemm_ex(be, &d) == 0, "gemm_ex: %s", be->err);
    amp_round_tally t = {0, 0, 0};
    for (size_t r = 0; r < (size_t)bh * ST; r++)
        amp_attn_softmax_row(ref, r * ST, NULL, S + r * ST, (int)(r % ST), ST, (int)dt, &t);
    EXPECT(memcmp(att, ref, natt * es) == 0, "dt %d: the probabilities differ from amp_attn_softmax_row",
           (int)dt);
    /* cnt also holds the output's rounding: compare the softmax's part by
     * counting the output alone */
    amp_round_count yc = {0, 0, 0};
    float *yw = malloc(N * SC * 4);
    for (size_t i = 0; i < N * SC; i++) yw[i] = amp_load(y, i, (int)dt);
    EXPECT(be->ops->round(be, y, dt, yw, N * SC, &yc) == 0, "round");
    EXPECT(cnt.nonzero - yc.nonzero == t.nz && cnt.underflow - yc.underflow == t.uf &&
               cnt.overflow - yc.overflow == t.of,
           "dt %d: the softmax's counts differ from the row function's", (int)dt);
    if (dt == AMP_DTYPE_F16) EXPECT(t.of > 0, "an FP16 logit overflows");
    free(qf), free(qkv), free(y), free(att), free(ref), free(ws), free(q), free(k), free(S), free(yw);
}

/* Every op once, its outputs and counts in one record. */
typedef struct run_out {
    float *emb, *dwte, *dwpe;
    void *ln;
    float *mean, *rstd, *dx, *dw;
    void *y, *att, *dqkv;
    float *res;
    amp_round_count cnt[4];
} run_out;

enum { B = 3, T = 53, C = 96, NH = 4, V = 29 };

static void run_ops(amp_backend *be, amp_dtype dt, const float *wte, const float *wpe,
                    const int32_t *tok, const float *x, const float *w, const void *qkv,
                    const void *dy, const float *dout, run_out *o) {
    size_t N = (size_t)B * T, es = esz(dt), natt = (size_t)B * NH * T * T;
    memset(o, 0, sizeof *o);
    o->emb = malloc(N * C * 4);
    o->dwte = calloc((size_t)V * C, 4);
    o->dwpe = calloc((size_t)T * C, 4);
    o->ln = malloc(N * C * es);
    o->mean = malloc(N * 4);
    o->rstd = malloc(N * 4);
    o->dx = calloc(N * C, 4);
    o->dw = calloc(C, 4);
    o->y = malloc(N * C * es);
    o->att = malloc(natt * es);
    o->dqkv = malloc(N * 3 * C * es);
    o->res = malloc(N * C * 4);
    float *ws = malloc(amp_attention_workspace_floats(B, T, C, NH) * 4);
    int rc = AMP_TRANSFORMER(be, embed_forward, o->emb, wte, wpe, tok, B, T, C);
    rc |= AMP_TRANSFORMER(be, embed_backward, o->dwte, o->dwpe, dout, tok, B, T, C);
    rc |= AMP_TRANSFORMER(be, layernorm_forward,
                          &(amp_layernorm_fwd){o->ln, dt, o->mean, o->rstd, x, w, NULL, (int)N, C,
                                               1e-5f, &o->cnt[0], 0});
    rc |= AMP_TRANSFORMER(
        be, layernorm_backward,
        &(amp_layernorm_bwd){o->dx, o->dw, NULL, dout, x, w, o->mean, o->rstd, (int)N, C, 0});
    rc |= AMP_TRANSFORMER(be, attention_forward, o->y, o->att, ws, qkv,
                          &(amp_attention_desc){B, T, C, NH, dt}, &o->cnt[1]);
    rc |= AMP_TRANSFORMER(be, attention_backward, o->dqkv, ws, dy, qkv, o->att,
                          &(amp_attention_desc){B, T, C, NH, dt}, &o->cnt[2]);
    rc |= AMP_TRANSFORMER(be, residual_add, o->res, x, o->y, dt, N * C);
    EXPECT(rc == 0, "an op failed: %s", be->err);
    free(ws);
}

static void run_free(run_out *o) {
    void *p[] = {o->emb, o->dwte, o->dwpe, o->ln, o->mean, o->rstd, o->dx, o->dw,
                 o->y,   o->att,  o->dqkv, o->res};
    for (size_t i = 0; i < sizeof p / sizeof p[0]; i++) free(p[i]);
}

static void threads_agree(amp_backend *be, amp_dtype dt) {
    size_t N = (size_t)B * T, es = esz(dt), natt = (size_t)B * NH * T * T;
    float *wte = rnd((size_t)V * C, -1.0f, 1.0f), *wpe = rnd((size_t)T * C, -1.0f, 1.0f);
    int32_t *tok = malloc(N * sizeof *tok);
    for (size_t i = 0; i < N; i++) tok[i] = (int32_t)(amp_rng_uniform(&rng) * V) % V;
    float *x = rnd(N * C, -2.0f, 2.0f), *w = rnd(C, 0.5f, 1.5f), *dout = rnd(N * C, -1.0f, 1.0f);
    /* the GEMM inputs in dt: q, k, v wide enough that some FP16 logits overflow */
    float *qf = rnd(N * 3 * C, -4.0f, 4.0f), *dyf = rnd(N * C, -1e-3f, 1e-3f);
    for (int i = 0; i < C / NH; i++) qf[i] = qf[C + i] = 200.0f; /* row 0, head 0: q.k overflows */
    void *qkv = malloc(N * 3 * C * es), *dy = malloc(N * C * es);
    EXPECT(be->ops->round(be, qkv, dt, qf, N * 3 * C, NULL) == 0 &&
               be->ops->round(be, dy, dt, dyf, N * C, NULL) == 0,
           "round");
    run_out first, o;
    for (int t = 1; t <= 3; t++) {
        omp_set_num_threads(t);
        run_ops(be, dt, wte, wpe, tok, x, w, qkv, dy, dout, t == 1 ? &first : &o);
        if (t == 1) continue;
        EXPECT(memcmp(first.emb, o.emb, N * C * 4) == 0 && memcmp(first.dwte, o.dwte, (size_t)V * C * 4) == 0 &&
                   memcmp(first.dwpe, o.dwpe, (size_t)T * C * 4) == 0,
               "dt %d: embedding at %d threads differs from 1", (int)dt, t);
        EXPECT(memcmp(first.ln, o.ln, N * C * es) == 0 && memcmp(first.mean, o.mean, N * 4) == 0 &&
                   memcmp(first.rstd, o.rstd, N * 4) == 0 && memcmp(first.dx, o.dx, N * C * 4) == 0 &&
                   memcmp(first.dw, o.dw, C * 4) == 0,
               "dt %d: layernorm at %d threads differs from 1", (int)dt, t);
        EXPECT(memcmp(first.y, o.y, N * C * es) == 0 && memcmp(first.att, o.att, natt * es) == 0 &&
                   memcmp(first.dqkv, o.dqkv, N * 3 * C * es) == 0,
               "dt %d: attention at %d threads differs from 1", (int)dt, t);
        EXPECT(memcmp(first.res, o.res, N * C * 4) == 0, "dt %d: residual_add at %d threads", (int)dt, t);
        for (int k = 0; k < 3; k++)
            EXPECT(same_count(&first.cnt[k], &o.cnt[k]), "dt %d: counts %d at %d threads differ", (int)dt,
                   k, t);
        run_free(&o);
    }
    if (dt == AMP_DTYPE_F16)
        EXPECT(first.cnt[1].overflow > 0 && first.cnt[1].underflow > 0,
               "the FP16 attention reaches overflow and underflow (%llu, %llu)", first.cnt[1].overflow,
               first.cnt[1].underflow);
    run_free(&first);
    free(wte), free(wpe), free(tok), free(x), free(w), free(dout), free(qf), free(dyf), free(qkv),
        free(dy);
}

int main(void) {
    char err[512];
    amp_backend *be = amp_backend_cpu_create(err, sizeof err);
    if (!be) {
        fprintf(stderr, "FAIL: %s\n", err);
        return 1;
    }
    amp_rng_seed(&rng, 5);
    static const amp_dtype dts[3] = {AMP_DTYPE_F32, AMP_DTYPE_F16, AMP_DTYPE_BF16};
    for (int i = 0; i < 3; i++) {
        ln_against_rows(be, dts[i], 1, 0);
        ln_against_rows(be, dts[i], 0, 0);
        ln_against_rows(be, dts[i], 0, 1);
        softmax_against_rows(be, dts[i]);
        threads_agree(be, dts[i]);
    }
    printf("transformer ops (%s path): layernorm, rmsnorm and softmax = the row functions; 1, 2, 3 "
           "threads agree\n",
           be->info.isa);
    omp_set_num_threads(be->info.threads);
    be->ops->destroy(be);
    return amp_test_failures ? 1 : 0;
}
