/* CUDA backend: the transformer ops (embedding, layernorm, causal attention,
 * residual add). The math is the shared row/element functions of
 * core/backend/kernels/ -- the very ones the CPU loops call -- so each
 * kernel is indexing glue: one thread per row (layernorm, softmax), per
 * column (parameter gradients: rows summed in order, as on the CPU, so the
 * result is deterministic and equals the CPU's) or per element. The
 * attention GEMMs are cuBLAS strided-batched GEMMs (FP32 accumulation), one
 * call per head batched over the sequences. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/kernels/attention.h"
#include "backend/kernels/embed.h"
#include "backend/kernels/layernorm.h"
#include "backend/kernels/store.h"

#define AMP_TF_BLOCK 256

static cudaStream_t tf_stream(amp_backend *be) { return amp_cuda_im(be)->stream; }

static unsigned tf_blocks(size_t n) { return (unsigned)((n + AMP_TF_BLOCK - 1) / AMP_TF_BLOCK); }

/* Adds the thread's tally to *cnt (one atomic per nonzero field; the
 * counts are integers, so the order does not matter). */
__device__ static void tf_flush(amp_round_count *cnt, const amp_round_tally &t) {
    if (!cnt) return;
    if (t.nz) atomicAdd(&cnt->nonzero, t.nz);
    if (t.uf) atomicAdd(&cnt->underflow, t.uf);
    if (t.of) atomicAdd(&cnt->overflow, t.of);
}

static int tf_check_heads(amp_backend *be, const char *op, int C, int nh) {
    if (nh > 0 && C % nh == 0) return 0;
    snprintf(be->err, sizeof be->err, "%s: %d channels do not split into %d heads", op, C, nh);
    return 1;
}

/* ---- embedding ------------------------------------------------------------ */

__global__ void amp_k_embed_forward(float *out, const float *wte, const float *wpe,
                                    const int32_t *tokens, int T, int C, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = amp_embed_element(wte, wpe, tokens, T, C, i);
}

int amp_cuda_embed_forward(amp_backend *be, float *out, const float *wte, const float *wpe,
                           const int32_t *tokens, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    if (n == 0) return 0;
    amp_k_embed_forward<<<tf_blocks(n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(out, wte, wpe, tokens,
                                                                         T, C, n);
    AMP_CHECK_LAUNCH(amp_k_embed_forward);
    return 0;
}

/* dwte: one thread per channel walks the rows in order; dwpe: one thread per
 * (t, c) walks the sequences in order. Both orders are the CPU loop's. */
__global__ void amp_k_embed_backward_wte(float *dwte, const float *dout, const int32_t *tokens,
                                         int rows, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int r = 0; r < rows; r++) dwte[(size_t)tokens[r] * C + c] += dout[(size_t)r * C + c];
}

__global__ void amp_k_embed_backward_wpe(float *dwpe, const float *dout, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    float s = dwpe[i];
    for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + i];
    dwpe[i] = s;
}

int amp_cuda_embed_backward(amp_backend *be, float *dwte, float *dwpe, const float *dout,
                            const int32_t *tokens, int B, int T, int C) {
    if (B <= 0 || T <= 0 || C <= 0) return 0;
    amp_k_embed_backward_wte<<<tf_blocks((size_t)C), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dwte, dout, tokens, B * T, C);
    AMP_CHECK_LAUNCH(amp_k_embed_backward_wte);
    amp_k_embed_backward_wpe<<<tf_blocks((size_t)T * C), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dwpe, dout, B, T, C);
    AMP_CHECK_LAUNCH(amp_k_embed_backward_wpe);
    return 0;
}

/* ---- layernorm --------------------------------------------------------------- */

__global__ void amp_k_ln_forward(void *out, int dt, float *mean, float *rstd, const float *x,
                                 const float *w, const float *b, int rows, int C, float eps,
                                 amp_round_count *cnt) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    amp_round_tally t = {0, 0, 0};
    size_t es = dt == AMP_DTYPE_F32 ? 4 : 2;
    amp_ln_forward_row((char *)out + (size_t)r * C * es, dt, &mean[r], &rstd[r], x + (size_t)r * C,
                       w, b, C, eps, &t);
    tf_flush(cnt, t);
}

int amp_cuda_layernorm_forward(amp_backend *be, void *out, amp_dtype out_dt, float *mean,
                               float *rstd, const float *x, const float *w, const float *b,
                               int rows, int C, float eps, amp_round_count *cnt) {
    if (rows <= 0) return 0;
    amp_k_ln_forward<<<tf_blocks((size_t)rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        out, (int)out_dt, mean, rstd, x, w, b, rows, C, eps, cnt);
    AMP_CHECK_LAUNCH(amp_k_ln_forward);
    return 0;
}

__global__ void amp_k_ln_backward_rows(float *dx, const float *dout, const float *x,
                                       const float *w, const float *mean, const float *rstd,
                                       int rows, int C) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    amp_ln_backward_row(dx + (size_t)r * C, dout + (size_t)r * C, x + (size_t)r * C, w, mean[r],
                        rstd[r], C);
}

__global__ void amp_k_ln_backward_cols(float *dw, float *db, const float *dout, const float *x,
                                       const float *mean, const float *rstd, int rows, int C) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= C) return;
    amp_ln_param_grad_col(dw, db, dout, x, mean, rstd, rows, C, j);
}

int amp_cuda_layernorm_backward(amp_backend *be, float *dx, float *dw, float *db,
                                const float *dout, const float *x, const float *w,
                                const float *mean, const float *rstd, int rows, int C) {
    if (rows <= 0 || C <= 0) return 0;
    amp_k_ln_backward_rows<<<tf_blocks((size_t)rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dx, dout, x, w, mean, rstd, rows, C);
    AMP_CHECK_LAUNCH(amp_k_ln_backward_rows);
    amp_k_ln_backward_cols<<<tf_blocks((size_t)C), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dw, db, dout, x, mean, rstd, rows, C);
    AMP_CHECK_LAUNCH(amp_k_ln_backward_cols);
    return 0;
}

/* ---- attention ------------------------------------------------------------------ */

static int tf_cuda_type(amp_backend *be, amp_dtype dt, cudaDataType_t *type,
                        cublasComputeType_t *compute) {
    *compute = CUBLAS_COMPUTE_32F;
    switch (dt) {
    case AMP_DTYPE_F32:
        *type = CUDA_R_32F;
        if (be->allow_tf32) *compute = CUBLAS_COMPUTE_32F_FAST_TF32;
        return 0;
    case AMP_DTYPE_F16: *type = CUDA_R_16F; return 0;
    case AMP_DTYPE_BF16: *type = CUDA_R_16BF; return 0;
    default:
        snprintf(be->err, sizeof be->err, "cuda attention: unknown dtype %d", (int)dt);
        return 1;
    }
}

/* Row-major C[m, n] (FP32) = alpha op(A) op(B) for `batch` matrices at the
 * given element strides; A and B hold `type` (see cuda_gemm in
 * backend_cuda.cu for the row-major/column-major swap). */
static int tf_gemm_batched(amp_backend *be, float *c, const void *a, const void *b, amp_dtype dt,
                           int ta, int tb, int m, int n, int k, int lda, int ldb, int ldc,
                           long long sa, long long sb, long long sc, int batch, float alpha) {
    cudaDataType_t type;
    cublasComputeType_t compute;
    if (tf_cuda_type(be, dt, &type, &compute)) return 1;
    float beta = 0.0f;
    AMP_CHECK_CUBLAS(cublasGemmStridedBatchedEx(
        amp_cuda_im(be)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n,
        m, k, &alpha, b, type, ldb, sb, a, type, lda, sa, &beta, c, CUDA_R_32F, ldc, sc, batch,
        compute, CUBLAS_GEMM_DEFAULT));
    AMP_CHECK_LAUNCH(cublasGemmStridedBatchedEx);
    return 0;
}

static size_t tf_es(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

/* One thread per query row (b, h, t); S holds the FP32 logits. */
__global__ void amp_k_attn_softmax(void *att, float *S, int rows, int T, int dt,
                                   amp_round_count *cnt) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    amp_round_tally t = {0, 0, 0};
    size_t base = (size_t)r * T;
    amp_attn_softmax_row(att, base, NULL, S + base, r % T, T, dt, &t);
    tf_flush(cnt, t);
}

__global__ void amp_k_attn_softmax_backward(void *dS, float *dP, const void *att, int rows, int T,
                                            int dt, amp_round_count *cnt) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    amp_round_tally t = {0, 0, 0};
    size_t base = (size_t)r * T;
    amp_attn_softmax_backward_row(dS, base, 0, dP + base, att, base, r % T, T, dt, &t);
    tf_flush(cnt, t);
}

/* dst(dt)[n] = round(src[n]), counting: the backend's round op (block-reduced
 * counts), the same per-element amp_round16 as amp_store. */
static int tf_store(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                    amp_round_count *cnt) {
    return amp_cuda_round(be, dst, dt, src, n, cnt);
}

int amp_cuda_attention_forward(amp_backend *be, void *out, void *att, float *ws, const void *qkv,
                               amp_dtype dt, int B, int T, int C, int nh, amp_round_count *cnt) {
    if (tf_check_heads(be, "attention_forward", C, nh)) return 1;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / nh, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    size_t tt = (size_t)T * T, es = tf_es(dt);
    float *S = ws, *Y = ws + 2 * (size_t)B * nh * tt;
    const char *q = (const char *)qkv;
    for (int h = 0; h < nh; h++) {
        /* logits of head h for every sequence: [T, T] = scale Q K^T */
        if (tf_gemm_batched(be, S + h * tt, q + (size_t)h * hs * es, q + (size_t)(C + h * hs) * es,
                            dt, 0, 1, T, T, hs, C3, C3, T, (long long)T * C3, (long long)T * C3,
                            (long long)nh * tt, B, scale))
            return 1;
    }
    int rows = B * nh * T;
    amp_k_attn_softmax<<<tf_blocks((size_t)rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        att, S, rows, T, (int)dt, cnt);
    AMP_CHECK_LAUNCH(amp_k_attn_softmax);
    const char *p = (const char *)att;
    for (int h = 0; h < nh; h++) {
        /* y[T, hs] = P V, into columns h*hs.. of Y[B, T, C] */
        if (tf_gemm_batched(be, Y + (size_t)h * hs, p + (size_t)h * tt * es,
                            q + (size_t)(2 * C + h * hs) * es, dt, 0, 0, T, hs, T, T, C3, C,
                            (long long)nh * tt, (long long)T * C3, (long long)T * C, B, 1.0f))
            return 1;
    }
    return tf_store(be, out, dt, Y, (size_t)B * T * C, cnt);
}

int amp_cuda_attention_backward(amp_backend *be, void *dqkv, float *ws, const void *dout,
                                const void *qkv, const void *att, amp_dtype dt, int B, int T,
                                int C, int nh, amp_round_count *cnt) {
    if (tf_check_heads(be, "attention_backward", C, nh)) return 1;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / nh, C3 = 3 * C;
    float scale = 1.0f / sqrtf((float)hs);
    size_t tt = (size_t)T * T, nbh = (size_t)B * nh, es = tf_es(dt);
    float *dP = ws, *dacc = ws + 2 * nbh * tt;
    void *dS = ws + nbh * tt; /* holds dt values */
    const char *q = (const char *)qkv, *dy = (const char *)dout, *p = (const char *)att;
    const char *ds = (const char *)dS;
    long long sq = (long long)T * C3, sy = (long long)T * C, sp = (long long)nh * tt;
    for (int h = 0; h < nh; h++) {
        const char *V = q + (size_t)(2 * C + h * hs) * es;
        const char *dY = dy + (size_t)h * hs * es, *P = p + (size_t)h * tt * es;
        /* dP = dY V^T ; dV = P^T dY */
        if (tf_gemm_batched(be, dP + h * tt, dY, V, dt, 0, 1, T, T, hs, C, C3, T, sy, sq, sp, B,
                            1.0f) ||
            tf_gemm_batched(be, dacc + 2 * C + h * hs, P, dY, dt, 1, 0, T, hs, T, T, C, C3, sp, sy,
                            sq, B, 1.0f))
            return 1;
    }
    int rows = B * nh * T;
    amp_k_attn_softmax_backward<<<tf_blocks((size_t)rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dS, dP, att, rows, T, (int)dt, cnt);
    AMP_CHECK_LAUNCH(amp_k_attn_softmax_backward);
    for (int h = 0; h < nh; h++) {
        const char *Q = q + (size_t)h * hs * es, *K = q + (size_t)(C + h * hs) * es;
        const char *dSh = ds + (size_t)h * tt * es;
        /* dQ = scale dS K ; dK = scale dS^T Q */
        if (tf_gemm_batched(be, dacc + h * hs, dSh, K, dt, 0, 0, T, hs, T, T, C3, C3, sp, sq, sq, B,
                            scale) ||
            tf_gemm_batched(be, dacc + C + h * hs, dSh, Q, dt, 1, 0, T, hs, T, T, C3, C3, sp, sq, sq,
                            B, scale))
            return 1;
    }
    return tf_store(be, dqkv, dt, dacc, (size_t)B * T * C3, cnt);
}

/* ---- residual add ---------------------------------------------------------------- */

__global__ void amp_k_residual_add(float *out, const float *x, const void *d, int dt, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = amp_residual_element(x[i], d, i, dt);
}

int amp_cuda_residual_add(amp_backend *be, float *out, const float *x, const void *d, amp_dtype dt,
                          size_t n) {
    if (n == 0) return 0;
    amp_k_residual_add<<<tf_blocks(n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(out, x, d, (int)dt, n);
    AMP_CHECK_LAUNCH(amp_k_residual_add);
    return 0;
}
