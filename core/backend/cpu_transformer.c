/* CPU backend: the transformer ops (embedding, layernorm, causal attention,
 * residual add). Plain loops over the shared row/element functions of
 * kernels/ (the same ones the CUDA kernels call) and OpenBLAS sgemm for the
 * attention GEMMs, one (batch, head) at a time; 16-bit operands are widened
 * exactly to FP32 first, so accumulation is FP32. Single-threaded loops keep
 * results deterministic. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cpu_internal.h"
#include "backend/kernels/attention.h"
#include "backend/kernels/embed.h"
#include "backend/kernels/layernorm.h"
#include "backend/kernels/store.h"

static void tally_flush(amp_round_count *cnt, const amp_round_tally *t) {
    if (!cnt) return;
    cnt->nonzero += t->nz;
    cnt->underflow += t->uf;
    cnt->overflow += t->of;
}

static int check_heads(amp_backend *be, const char *op, int C, int nh) {
    if (nh > 0 && C % nh == 0) return 0;
    snprintf(be->err, sizeof be->err, "%s: %d channels do not split into %d heads", op, C, nh);
    return 1;
}

int amp_cpu_embed_forward(amp_backend *be, float *out, const float *wte, const float *wpe,
                          const int32_t *tokens, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    for (size_t i = 0; i < n; i++) out[i] = amp_embed_element(wte, wpe, tokens, T, C, i);
    return 0;
}

/* Rows in order: the GPU kernels sum in the same order, so both are exact
 * twins (and deterministic). */
int amp_cpu_embed_backward(amp_backend *be, float *dwte, float *dwpe, const float *dout,
                           const int32_t *tokens, int B, int T, int C) {
    for (int r = 0; r < B * T; r++) {
        const float *d = dout + (size_t)r * C;
        float *w = dwte + (size_t)tokens[r] * C, *p = dwpe + (size_t)(r % T) * C;
        for (int c = 0; c < C; c++) {
            w[c] += d[c];
            p[c] += d[c];
        }
    }
    return 0;
}

int amp_cpu_layernorm_forward(amp_backend *be, void *out, amp_dtype out_dt, float *mean,
                              float *rstd, const float *x, const float *w, const float *b,
                              int rows, int C, float eps, amp_round_count *cnt) {
    amp_round_tally t = {0, 0, 0};
    size_t es = out_dt == AMP_DTYPE_F32 ? 4 : 2;
    for (int r = 0; r < rows; r++)
        amp_ln_forward_row((char *)out + (size_t)r * C * es, (int)out_dt, &mean[r], &rstd[r],
                           x + (size_t)r * C, w, b, C, eps, &t);
    tally_flush(cnt, &t);
    return 0;
}

int amp_cpu_layernorm_backward(amp_backend *be, float *dx, float *dw, float *db,
                               const float *dout, const float *x, const float *w,
                               const float *mean, const float *rstd, int rows, int C) {
    for (int r = 0; r < rows; r++)
        amp_ln_backward_row(dx + (size_t)r * C, dout + (size_t)r * C, x + (size_t)r * C, w,
                            mean[r], rstd[r], C);
    for (int j = 0; j < C; j++) amp_ln_param_grad_col(dw, db, dout, x, mean, rstd, rows, C, j);
    return 0;
}

int amp_cpu_attention_forward(amp_backend *be, void *out, void *att, float *ws, const void *qkv,
                              amp_dtype dt, int B, int T, int C, int nh, amp_round_count *cnt) {
    if (check_heads(be, "attention_forward", C, nh)) return 1;
    int hs = C / nh, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    const float *q = amp_cpu_widened(be, 2, qkv, dt, (size_t)B * T * C3);
    if (!q) return 1;
    size_t tt = (size_t)T * T;
    float *S = ws, *Y = ws + 2 * (size_t)B * nh * tt;
    amp_round_tally t = {0, 0, 0};
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < nh; h++) {
            const float *Q = q + (size_t)b * T * C3 + (size_t)h * hs, *K = Q + C, *V = Q + 2 * C;
            size_t bh = ((size_t)b * nh + h) * tt;
            float *Sbh = S + bh;
            /* logits[T, T] = scale * Q[T, hs] K[T, hs]^T */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, Q, C3, K, C3,
                        0.0f, Sbh, T);
            /* probabilities rounded into att and, widened, back into Sbh */
            for (int r = 0; r < T; r++)
                amp_attn_softmax_row(att, bh + (size_t)r * T, Sbh + (size_t)r * T,
                                     Sbh + (size_t)r * T, r, T, (int)dt, &t);
            /* y[T, hs] = P[T, T] V[T, hs] */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, Sbh, T, V, C3,
                        0.0f, Y + (size_t)b * T * C + (size_t)h * hs, C);
        }
    }
    tally_flush(cnt, &t);
    /* the output's rounding: the backend's specialised round loop (the
     * same amp_round16 per element) */
    return be->ops->round(be, out, dt, Y, (size_t)B * T * C, cnt);
}

int amp_cpu_attention_backward(amp_backend *be, void *dqkv, float *ws, const void *dout,
                               const void *qkv, const void *att, amp_dtype dt, int B, int T,
                               int C, int nh, amp_round_count *cnt) {
    if (check_heads(be, "attention_backward", C, nh)) return 1;
    int hs = C / nh, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    size_t tt = (size_t)T * T, nbh = (size_t)B * nh;
    const float *dy = amp_cpu_widened(be, 2, dout, dt, (size_t)B * T * C);
    const float *q = amp_cpu_widened(be, 3, qkv, dt, (size_t)B * T * C3);
    const float *p = amp_cpu_widened(be, 4, att, dt, nbh * tt);
    if (!dy || !q || !p) return 1;
    float *dP = ws, *dS = ws + nbh * tt, *dacc = ws + 2 * nbh * tt;
    amp_round_tally t = {0, 0, 0};
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < nh; h++) {
            size_t bh = ((size_t)b * nh + h) * tt;
            const float *Q = q + (size_t)b * T * C3 + (size_t)h * hs, *K = Q + C, *V = Q + 2 * C;
            const float *dY = dy + (size_t)b * T * C + (size_t)h * hs;
            float *dQ = dacc + (size_t)b * T * C3 + (size_t)h * hs, *dK = dQ + C, *dV = dQ + 2 * C;
            /* dP[T, T] = dY[T, hs] V[T, hs]^T ; dV[T, hs] = P^T dY */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dY, C, V, C3,
                        0.0f, dP + bh, T);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, p + bh, T, dY, C,
                        0.0f, dV, C3);
            for (int r = 0; r < T; r++)
                amp_attn_softmax_backward_row(dS, bh + (size_t)r * T, 1, dP + bh + (size_t)r * T,
                                              att, bh + (size_t)r * T, r, T, (int)dt, &t);
            /* dQ = scale dS K ; dK = scale dS^T Q */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, dS + bh, T, K,
                        C3, 0.0f, dQ, C3);
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, dS + bh, T, Q,
                        C3, 0.0f, dK, C3);
        }
    }
    tally_flush(cnt, &t);
    return be->ops->round(be, dqkv, dt, dacc, (size_t)B * T * C3, cnt);
}

int amp_cpu_residual_add(amp_backend *be, float *out, const float *x, const void *d, amp_dtype dt,
                         size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = amp_residual_element(x[i], d, i, (int)dt);
    return 0;
}
