/* CPU backend: the transformer ops (embedding, layernorm, causal attention,
 * residual add), on the per-element and per-row functions of kernels/ (the
 * same ones the CUDA kernels call) and the backend's ISA kernel table
 * (cpu_kern.h: vector rounding with telemetry, widening, expf with libm's
 * bits).
 *
 * Threads: OpenMP over rows (layernorm, softmax, embedding, residual,
 * packing) or over column blocks (the column sums of the layernorm's
 * parameter gradients and of the embedding's gradient, each column still
 * summed over rows in row order). No floating-point sum crosses a thread
 * boundary and the rounding counts are integers, so every result here is
 * the same bits for every thread count and every ISA path, and the same as
 * the scalar row functions give.
 *
 * Attention: q, k and v are packed (widened for 16-bit dtypes) into dense
 * [B, nh, T, hs] FP32 blocks, so each of its GEMMs is one batched gemm_ex
 * over the B * nh matrices (one oneDNN call); accumulation is FP32. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu_internal.h"
#include "backend/cpu_kern.h"
#include "backend/kernels/attention.h"
#include "backend/kernels/embed.h"
#include "backend/kernels/layernorm.h"
#include "backend/kernels/rope.h"
#include "backend/kernels/swiglu.h"
#include "backend/kernels/store.h"

/* Work below this many elements stays on the calling thread: a parallel
 * region costs more than it saves there. Results do not depend on it. */
#define PAR_MIN 16384
/* Columns per block of a column-sum (a multiple of 16: whole vectors). */
#define COL_BLOCK 64

static int check_heads(amp_backend *be, const char *op, int C, int nh) {
    if (nh > 0 && C % nh == 0) return 0;
    snprintf(be->err, sizeof be->err, "%s: %d channels do not split into %d heads", op, C, nh);
    return 1;
}

static int out_of_memory(amp_backend *be, const char *op) {
    snprintf(be->err, sizeof be->err, "%s: out of host memory for a thread's row buffer", op);
    return 1;
}

/* dst(dt)[n] = round(src[n]) counted into *t, or a copy for F32. */
static void store_row(const amp_cpu_kern *k, void *dst, const float *src, size_t n, amp_dtype dt,
                      amp_tally *t) {
    if (dt == AMP_DTYPE_F32)
        memcpy(dst, src, n * sizeof(float));
    else
        k->round16(dst, src, n, (int)dt, t);
}

/* v[n] = widen(round_dt(v[n])) counted into *t (the rounding point of an
 * FP32 value kept in FP32 after it), in one pass; nothing for F32. */
static void round_in_place(const amp_cpu_kern *k, float *v, size_t n, amp_dtype dt, amp_tally *t) {
    if (dt == AMP_DTYPE_F32) return;
    k->quantize16(v, v, n, (int)dt, t);
}

static size_t dt_size(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

static int cpu_embed_forward(amp_backend *be, float *out, const float *wte, const float *wpe,
                             const int32_t *tokens, int B, int T, int C) {
    (void)be;
    int rows = B * T;
#pragma omp parallel for schedule(static) if ((size_t)rows * C >= PAR_MIN)
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * C;
        const float *w = wte + (size_t)tokens[r] * C, *p = wpe + (size_t)(r % T) * C;
        for (int c = 0; c < C; c++) o[c] = w[c] + p[c];
    }
    return 0;
}

/* Rows in order for every column (the GPU kernels sum in the same order,
 * so both are exact twins); threads take blocks of columns. */
static int cpu_embed_backward(amp_backend *be, float *dwte, float *dwpe, const float *dout,
                              const int32_t *tokens, int B, int T, int C) {
    (void)be;
    int rows = B * T, nblk = (C + COL_BLOCK - 1) / COL_BLOCK;
#pragma omp parallel for schedule(static) if ((size_t)rows * C >= PAR_MIN && nblk > 1)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * COL_BLOCK, c1 = c0 + COL_BLOCK < C ? c0 + COL_BLOCK : C;
        for (int r = 0; r < rows; r++) {
            const float *d = dout + (size_t)r * C;
            float *w = dwte + (size_t)tokens[r] * C, *p = dwpe + (size_t)(r % T) * C;
            for (int c = c0; c < c1; c++) {
                w[c] += d[c];
                p[c] += d[c];
            }
        }
    }
    return 0;
}

static int cpu_layernorm_forward(amp_backend *be, const amp_layernorm_fwd *a) {
    void *out = a->out;
    amp_dtype out_dt = a->out_dt;
    float *mean = a->mean, *rstd = a->rstd;
    const float *x = a->x, *w = a->w, *b = a->b;
    int rows = a->rows, C = a->C;
    float eps = a->eps;
    amp_round_count *cnt = a->cnt;
    const amp_cpu_kern *k = amp_cpu_kern_of(be);
    size_t es = dt_size(out_dt);
    unsigned long long nz = 0, uf = 0, of = 0;
    int fail = 0;
    int groups = (rows + AMP_LN_ROWS - 1) / AMP_LN_ROWS;
#pragma omp parallel reduction(+ : nz, uf, of, fail) if ((size_t)rows * C >= PAR_MIN)
    {
        float *v = malloc((size_t)C * sizeof *v);
        amp_tally t = {0, 0, 0};
        fail += v == NULL;
#pragma omp for schedule(static)
        for (int gi = 0; gi < groups; gi++) {
            int r0 = gi * AMP_LN_ROWS, R = rows - r0 < AMP_LN_ROWS ? rows - r0 : AMP_LN_ROWS;
            if (!v) continue;
            /* the statistics of AMP_LN_ROWS rows at once (the same bits as one by one) */
            if (R == AMP_LN_ROWS)
                amp_ln_stats_rows(x + (size_t)r0 * C, (size_t)C, AMP_LN_ROWS, C, eps, a->rms,
                                  mean + r0, rstd + r0);
            else
                for (int r = r0; r < r0 + R; r++)
                    amp_ln_stats(x + (size_t)r * C, C, eps, a->rms, mean + r, rstd + r);
            for (int r = r0; r < r0 + R; r++) {
                const float *xr = x + (size_t)r * C;
                float m = mean[r], s = rstd[r];
                for (int i = 0; i < C; i++) v[i] = amp_ln_value(xr[i], m, s, w[i], b ? b[i] : 0.0f);
                store_row(k, (char *)out + (size_t)r * C * es, v, (size_t)C, out_dt, &t);
            }
        }
        free(v);
        nz += t.nz;
        uf += t.uf;
        of += t.of;
    }
    if (fail) return out_of_memory(be, "layernorm_forward");
    amp_cpu_count_add(cnt, nz, uf, of);
    return 0;
}

/* dx by rows; dw and db by column blocks, each column summed over rows in
 * row order from 0 as amp_ln_param_grad_col does. */
static int cpu_layernorm_backward(amp_backend *be, const amp_layernorm_bwd *a) {
    float *dx = a->dx, *dw = a->dw, *db = a->db;
    const float *dout = a->dout, *x = a->x, *w = a->w, *mean = a->mean, *rstd = a->rstd;
    int rows = a->rows, C = a->C;
    (void)be;
    int par = (size_t)rows * C >= PAR_MIN, nblk = (C + COL_BLOCK - 1) / COL_BLOCK;
    int groups = (rows + AMP_LN_ROWS - 1) / AMP_LN_ROWS;
#pragma omp parallel for schedule(static) if (par)
    for (int gi = 0; gi < groups; gi++) {
        int r0 = gi * AMP_LN_ROWS, R = rows - r0 < AMP_LN_ROWS ? rows - r0 : AMP_LN_ROWS;
        size_t o = (size_t)r0 * C;
        if (R == AMP_LN_ROWS) /* constant R: the sums stay in registers */
            amp_ln_backward_rows(dx + o, dout + o, x + o, w, mean + r0, rstd + r0, (size_t)C,
                                 AMP_LN_ROWS, C, a->rms);
        else
            amp_ln_backward_rows(dx + o, dout + o, x + o, w, mean + r0, rstd + r0, (size_t)C, R, C,
                                 a->rms);
    }
#pragma omp parallel for schedule(static) if (par && nblk > 1)
    for (int blk = 0; blk < nblk; blk++) {
        int c0 = blk * COL_BLOCK, n = C - c0 < COL_BLOCK ? C - c0 : COL_BLOCK;
        float sw[COL_BLOCK], sb[COL_BLOCK];
        for (int j = 0; j < n; j++) sw[j] = sb[j] = 0.0f;
        for (int r = 0; r < rows; r++) {
            const float *d = dout + (size_t)r * C + c0, *xr = x + (size_t)r * C + c0;
            float m = mean[r], s = rstd[r];
            for (int j = 0; j < n; j++) {
                sw[j] += d[j] * amp_ln_xhat(xr[j], m, s);
                sb[j] += d[j];
            }
        }
        for (int j = 0; j < n; j++) {
            dw[c0 + j] += sw[j];
            if (db) db[c0 + j] += sb[j];
        }
    }
    return 0;
}

/* ---- attention ---------------------------------------------------------------- */

/* Packs `parts` [rows, parts * C] blocks of src (dt, row stride parts * C)
 * into dense FP32 [parts][B, nh, T, hs] at dst (widening 16-bit values).
 * A 16-bit row is widened in one call into a thread's row buffer and its
 * heads copied from there: one call over parts * C elements costs less
 * than parts * nh calls over hs. 1 when a thread has no row buffer. */
static int pack_heads(const amp_cpu_kern *k, float *dst, const void *src, amp_dtype dt, int parts,
                      int B, int T, int C, int nh) {
    int hs = C / nh, rows = B * T, fail = 0;
    size_t nc = (size_t)rows * C, W = (size_t)parts * C;
#pragma omp parallel reduction(+ : fail) if ((size_t)rows * W >= PAR_MIN)
    {
        float *wrow = dt == AMP_DTYPE_F32 ? NULL : malloc(W * sizeof *wrow);
        fail += dt != AMP_DTYPE_F32 && !wrow;
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++) {
            const float *row = (const float *)src + (size_t)r * W;
            if (dt != AMP_DTYPE_F32) {
                if (!wrow) continue;
                k->widen16(wrow, (const uint16_t *)src + (size_t)r * W, W, (int)dt);
                row = wrow;
            }
            int b = r / T, t = r % T;
            for (int part = 0; part < parts; part++)
                for (int h = 0; h < nh; h++)
                    memcpy(dst + part * nc + (((size_t)b * nh + h) * T + t) * hs,
                           row + (size_t)part * C + (size_t)h * hs, (size_t)hs * sizeof *row);
        }
        free(wrow);
    }
    return fail;
}

/* The inverse, rounding into dt with the counts: dense FP32 [parts][B, nh,
 * T, hs] at src into dst (dt) [rows, parts * C]; a 16-bit row gathered in
 * a thread's row buffer and rounded in one call. 1 when a thread has no
 * row buffer. */
static int unpack_heads(const amp_cpu_kern *k, void *dst, const float *src, amp_dtype dt, int parts,
                        int B, int T, int C, int nh, amp_round_count *cnt) {
    int hs = C / nh, rows = B * T, fail = 0;
    size_t nc = (size_t)rows * C, W = (size_t)parts * C;
    unsigned long long nz = 0, uf = 0, of = 0;
#pragma omp parallel reduction(+ : nz, uf, of, fail) if ((size_t)rows * W >= PAR_MIN)
    {
        float *wrow = dt == AMP_DTYPE_F32 ? NULL : malloc(W * sizeof *wrow);
        amp_tally tl = {0, 0, 0};
        fail += dt != AMP_DTYPE_F32 && !wrow;
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++) {
            float *row = dt == AMP_DTYPE_F32 ? (float *)dst + (size_t)r * W : wrow;
            if (!row) continue;
            int b = r / T, t = r % T;
            for (int part = 0; part < parts; part++)
                for (int h = 0; h < nh; h++)
                    memcpy(row + (size_t)part * C + (size_t)h * hs,
                           src + part * nc + (((size_t)b * nh + h) * T + t) * hs,
                           (size_t)hs * sizeof *row);
            if (dt != AMP_DTYPE_F32) k->round16((uint16_t *)dst + (size_t)r * W, row, W, (int)dt, &tl);
        }
        free(wrow);
        nz += tl.nz;
        uf += tl.uf;
        of += tl.of;
    }
    if (dt != AMP_DTYPE_F32) amp_cpu_count_add(cnt, nz, uf, of);
    return fail;
}

/* C[i] = alpha A[i] B[i] (op per trans) for the B * nh dense matrices of
 * the attention, as one batched gemm_ex. */
static int heads_gemm(amp_backend *be, float *c, const float *a, const float *b, int ta, int tb,
                      int m, int n, int kk, int batch, float alpha) {
    amp_gemm_desc d = amp_gemm_plain(c, a, b, AMP_DTYPE_F32, AMP_GEMM_TRANS(ta, tb), m, n, kk);
    d.batch = batch;
    d.stride_a = (long long)m * kk;
    d.stride_b = (long long)kk * n;
    d.stride_c = (long long)m * n;
    d.alpha = alpha;
    return be->ops->gemm_ex(be, &d);
}

/* One softmax row as amp_attn_softmax_row computes it: s[T] holds the
 * scaled FP32 logits and receives the FP32 widening of the rounded
 * probabilities; att row (dt) from `base`. e: T floats. */
static void softmax_row(const amp_cpu_kern *k, void *att, size_t base, float *s, int tq, int T,
                        amp_dtype dt, float *e, amp_tally *t) {
    int n = tq + 1;
    round_in_place(k, s, (size_t)n, dt, t); /* the logits' rounding point */
    float mx = -INFINITY;
    for (int j = 0; j < n; j++)
        if (s[j] > mx) mx = s[j];
    for (int j = 0; j < n; j++) e[j] = s[j] - mx;
    k->vexp(e, e, (size_t)n);
    float sum = 0.0f;
    for (int j = 0; j < n; j++) sum += e[j];
    float inv = 1.0f / sum;
    for (int j = 0; j < n; j++) e[j] = e[j] * inv;
    for (int j = n; j < T; j++) e[j] = 0.0f;
    if (dt == AMP_DTYPE_F32) {
        memcpy((float *)att + base, e, (size_t)T * sizeof(float));
        memcpy(s, e, (size_t)T * sizeof(float));
    } else {
        k->round16_wide((uint16_t *)att + base, s, e, (size_t)T, (int)dt, t);
    }
}

/* One row of the softmax backward as amp_attn_softmax_backward_row (wide)
 * computes it: dp[T] (FP32, rounded into dt here), p[T] the widened
 * probabilities; ds[T] receives the widened rounded gradient of the logits. */
static void softmax_back_row(const amp_cpu_kern *k, float *ds, float *dp, const float *p, int tq,
                             int T, amp_dtype dt, float *e, amp_tally *t) {
    int n = tq + 1;
    round_in_place(k, dp, (size_t)n, dt, t);
    float dot = 0.0f;
    for (int j = 0; j < n; j++) dot += p[j] * dp[j];
    for (int j = 0; j < n; j++) e[j] = p[j] * (dp[j] - dot);
    for (int j = n; j < T; j++) e[j] = 0.0f;
    if (dt == AMP_DTYPE_F32)
        memcpy(ds, e, (size_t)T * sizeof(float));
    else
        k->quantize16(ds, e, (size_t)T, (int)dt, t);
}

static int cpu_attention_forward(amp_backend *be, void *out, void *att, float *ws, const void *qkv,
                                 const amp_attention_desc *d, amp_round_count *cnt) {
    amp_dtype dt = d->dt;
    int B = d->B, T = d->T, C = d->C, nh = d->nh;
    if (check_heads(be, "attention_forward", C, nh)) return 1;
    const amp_cpu_kern *k = amp_cpu_kern_of(be);
    int hs = C / nh, bh = B * nh;
    size_t tt = (size_t)T * T, nc = (size_t)B * T * C;
    float scale = 1.0f / sqrtf((float)hs);
    float *qp = amp_cpu_scratch(be, 2, 3 * nc);
    if (!qp) return 1;
    if (pack_heads(k, qp, qkv, dt, 3, B, T, C, nh)) return out_of_memory(be, "attention_forward");
    float *S = ws, *Y = ws + 2 * (size_t)bh * tt;
    /* logits[T, T] = scale * Q K^T for every (batch, head) */
    if (heads_gemm(be, S, qp, qp + nc, 0, 1, T, T, hs, bh, scale) != 0) return 1;
    /* probabilities rounded into att and, widened, back into S */
    unsigned long long nz = 0, uf = 0, of = 0;
    int fail = 0, rows = bh * T;
#pragma omp parallel reduction(+ : nz, uf, of, fail) if ((size_t)rows * T >= PAR_MIN)
    {
        float *e = malloc((size_t)T * sizeof *e);
        amp_tally t = {0, 0, 0};
        fail += !e;
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++)
            if (e) softmax_row(k, att, (size_t)r * T, S + (size_t)r * T, r % T, T, dt, e, &t);
        free(e);
        nz += t.nz;
        uf += t.uf;
        of += t.of;
    }
    if (fail) return out_of_memory(be, "attention_forward");
    amp_cpu_count_add(cnt, nz, uf, of);
    /* y[T, hs] = P[T, T] V[T, hs], then rounded into out [B, T, C] */
    if (heads_gemm(be, Y, S, qp + 2 * nc, 0, 0, T, hs, T, bh, 1.0f) != 0) return 1;
    if (unpack_heads(k, out, Y, dt, 1, B, T, C, nh, cnt)) return out_of_memory(be, "attention_forward");
    return 0;
}

static int cpu_attention_backward(amp_backend *be, void *dqkv, float *ws, const void *dout,
                                  const void *qkv, const void *att, const amp_attention_desc *d,
                                  amp_round_count *cnt) {
    amp_dtype dt = d->dt;
    int B = d->B, T = d->T, C = d->C, nh = d->nh;
    if (check_heads(be, "attention_backward", C, nh)) return 1;
    const amp_cpu_kern *k = amp_cpu_kern_of(be);
    int hs = C / nh, bh = B * nh;
    float scale = 1.0f / sqrtf((float)hs);
    size_t tt = (size_t)T * T, nc = (size_t)B * T * C;
    float *qp = amp_cpu_scratch(be, 2, 3 * nc);
    float *dyp = qp ? amp_cpu_scratch(be, 3, nc) : NULL;
    if (!dyp) return 1;
    if (pack_heads(k, qp, qkv, dt, 3, B, T, C, nh) || pack_heads(k, dyp, dout, dt, 1, B, T, C, nh))
        return out_of_memory(be, "attention_backward");
    const float *Q = qp, *K = qp + nc, *V = qp + 2 * nc;
    float *dP = ws, *dS = ws + (size_t)bh * tt, *dacc = ws + 2 * (size_t)bh * tt;
    /* 16-bit probabilities widen into dS: each row of the softmax backward
     * reads its row of P before it writes that row of dS */
    const float *p = att;
    if (dt != AMP_DTYPE_F32) {
        if (be->ops->widen(be, dS, att, dt, (size_t)bh * tt) != 0) return 1;
        p = dS;
    }
    /* dP = dY V^T ; dV = P^T dY */
    if (heads_gemm(be, dP, dyp, V, 0, 1, T, T, hs, bh, 1.0f) != 0 ||
        heads_gemm(be, dacc + 2 * nc, p, dyp, 1, 0, T, hs, T, bh, 1.0f) != 0)
        return 1;
    unsigned long long nz = 0, uf = 0, of = 0;
    int fail = 0, rows = bh * T;
#pragma omp parallel reduction(+ : nz, uf, of, fail) if ((size_t)rows * T >= PAR_MIN)
    {
        float *e = malloc((size_t)T * sizeof *e);
        amp_tally t = {0, 0, 0};
        fail += !e;
#pragma omp for schedule(static)
        for (int r = 0; r < rows; r++)
            if (e)
                softmax_back_row(k, dS + (size_t)r * T, dP + (size_t)r * T, p + (size_t)r * T,
                                 r % T, T, dt, e, &t);
        free(e);
        nz += t.nz;
        uf += t.uf;
        of += t.of;
    }
    if (fail) return out_of_memory(be, "attention_backward");
    amp_cpu_count_add(cnt, nz, uf, of);
    /* dQ = scale dS K ; dK = scale dS^T Q */
    if (heads_gemm(be, dacc, dS, K, 0, 0, T, hs, T, bh, scale) != 0 ||
        heads_gemm(be, dacc + nc, dS, Q, 1, 0, T, hs, T, bh, scale) != 0)
        return 1;
    if (unpack_heads(k, dqkv, dacc, dt, 3, B, T, C, nh, cnt))
        return out_of_memory(be, "attention_backward");
    return 0;
}

static int cpu_residual_add(amp_backend *be, float *out, const float *x, const void *d,
                            amp_dtype dt, size_t n) {
    const amp_cpu_kern *k = amp_cpu_kern_of(be);
    enum { TILE_N = 1024 };
    size_t ntile = (n + TILE_N - 1) / TILE_N;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (size_t c = 0; c < ntile; c++) {
        size_t i0 = c * TILE_N, len = n - i0 < TILE_N ? n - i0 : TILE_N;
        float w[TILE_N];
        if (dt == AMP_DTYPE_F32)
            for (size_t i = 0; i < len; i++) out[i0 + i] = x[i0 + i] + ((const float *)d)[i0 + i];
        else {
            k->widen16(w, (const uint16_t *)d + i0, len, (int)dt);
            for (size_t i = 0; i < len; i++) out[i0 + i] = x[i0 + i] + w[i];
        }
    }
    return 0;
}

/* ---- SwiGLU ------------------------------------------------------------------ */

/* Forward (backward = 0) or backward over the elements, threads tallying apart. */
static int cpu_swiglu(const amp_swiglu_args *a, int backward) {
    unsigned long long nz = 0, uf = 0, of = 0;
    long long n = (long long)a->n;
#pragma omp parallel reduction(+ : nz, uf, of) if (a->n >= PAR_MIN)
    {
        amp_round_tally t = {0, 0, 0};
#pragma omp for schedule(static)
        for (long long i = 0; i < n; i++) {
            if (backward)
                amp_swiglu_backward_elem(a->dgate, a->dup, a->dh, a->gate, (int)a->gate_dt, a->up,
                                         (int)a->up_dt, (size_t)i, &t);
            else
                amp_swiglu_forward_elem(a->h, (int)a->h_dt, a->gate, (int)a->gate_dt, a->up,
                                        (int)a->up_dt, (size_t)i, &t);
        }
        nz += t.nz, uf += t.uf, of += t.of;
    }
    amp_cpu_count_add(a->cnt, nz, uf, of);
    return 0;
}

static int cpu_swiglu_forward(amp_backend *be, const amp_swiglu_args *a) {
    (void)be;
    return cpu_swiglu(a, 0);
}

static int cpu_swiglu_backward(amp_backend *be, const amp_swiglu_args *a) {
    (void)be;
    return cpu_swiglu(a, 1);
}

/* ---- Llama's attention input: RoPE and grouped-query heads ----------------------- */

static int cpu_qkv_pack(amp_backend *be, const amp_qkv_args *a) {
    unsigned long long nz = 0, uf = 0, of = 0;
    long long n = (long long)a->B * a->T * 3 * a->nh * a->hs;
    (void)be;
#pragma omp parallel reduction(+ : nz, uf, of) if (n >= PAR_MIN)
    {
        amp_round_tally t = {0, 0, 0};
#pragma omp for schedule(static)
        for (long long e = 0; e < n; e++)
            amp_qkv_pack_elem(a->qkv, (int)a->dt, a->q, (int)a->q_dt, a->k, (int)a->k_dt, a->v,
                              (int)a->v_dt, (size_t)e, a->T, a->nh, a->nkv, a->hs, a->rope,
                              a->theta, &t);
        nz += t.nz, uf += t.uf, of += t.of;
    }
    amp_cpu_count_add(a->cnt, nz, uf, of);
    return 0;
}

static int cpu_qkv_unpack(amp_backend *be, const amp_qkv_args *a) {
    size_t N = (size_t)a->B * a->T;
    long long n = (long long)(N * (size_t)(a->nh + 2 * a->nkv) * a->hs);
    (void)be;
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (long long e = 0; e < n; e++)
        amp_qkv_unpack_elem(a->dq, a->dk, a->dv, a->qkv, (int)a->dt, (size_t)e, N, a->T, a->nh,
                            a->nkv, a->hs, a->rope, a->theta);
    return 0;
}

const amp_transformer_ops amp_cpu_transformer_ops = {
    .embed_forward = cpu_embed_forward,
    .embed_backward = cpu_embed_backward,
    .layernorm_forward = cpu_layernorm_forward,
    .layernorm_backward = cpu_layernorm_backward,
    .attention_forward = cpu_attention_forward,
    .attention_backward = cpu_attention_backward,
    .residual_add = cpu_residual_add,
    .swiglu_forward = cpu_swiglu_forward,
    .swiglu_backward = cpu_swiglu_backward,
    .qkv_pack = cpu_qkv_pack,
    .qkv_unpack = cpu_qkv_unpack,
};
