/* CUDA backend: the transformer ops (embedding, layernorm, causal attention,
 * residual add). The per-element math is the shared functions of
 * core/backend/kernels/ -- the very ones the CPU loops call. Layout:
 * layernorm and the attention softmax run one warp per row (lanes stride the
 * row, so reads are coalesced; sums are warp butterflies, the same bits on
 * every run); the layernorm parameter gradients are per-block column
 * partials over row chunks, combined in chunk order; the token-embedding
 * gradient sorts the rows by token (stable) and sums each token's rows in
 * row order, as the CPU does, so it equals the CPU's bits; the attention
 * GEMMs are one cuBLAS batched call each over batch x heads. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "backend/cuda/cuda_internal.h"
#include "backend/cuda/warp.cuh"
#include "backend/kernels/attention.h"
#include "backend/kernels/embed.h"
#include "backend/kernels/layernorm.h"
#include "backend/kernels/rope.h"
#include "backend/kernels/swiglu.h"
#include "backend/kernels/store.h"

#define AMP_TF_BLOCK 256

static cudaStream_t tf_stream(amp_backend *be) { return amp_cuda_im(be)->stream; }

static unsigned tf_blocks(size_t n) { return (unsigned)((n + AMP_TF_BLOCK - 1) / AMP_TF_BLOCK); }

/* Warps per block of the row kernels, and the grid for `rows` rows. */
#define AMP_TF_ROWS_PER_BLOCK (AMP_TF_BLOCK / AMP_WARP)

static unsigned tf_row_blocks(size_t rows) {
    return (unsigned)((rows + AMP_TF_ROWS_PER_BLOCK - 1) / AMP_TF_ROWS_PER_BLOCK);
}

/* The row of the calling warp; every lane of a warp gets the same one. */
__device__ static inline size_t tf_warp_row(void) {
    return (size_t)blockIdx.x * AMP_TF_ROWS_PER_BLOCK + threadIdx.x / AMP_WARP;
}

/* Carves `bytes` off the front of *p (256-byte aligned); returns the piece. */
static char *tf_take(char **p, size_t bytes) {
    char *q = *p;
    *p += (bytes + 255) / 256 * 256;
    return q;
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

static int cuda_embed_forward(amp_backend *be, float *out, const float *wte, const float *wpe,
                              const int32_t *tokens, int B, int T, int C) {
    size_t n = (size_t)B * T * C;
    if (n == 0) return 0;
    amp_k_embed_forward<<<tf_blocks(n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(out, wte, wpe, tokens,
                                                                         T, C, n);
    AMP_CHECK_LAUNCH(amp_k_embed_forward);
    return 0;
}

/* dwte: the rows sorted by token (a stable radix sort, so each token's rows
 * stay in row order); block (i, y) starts at sorted position i when it is
 * the first of its token and sums that token's rows, in row order, into
 * channels y*AMP_TF_BLOCK.. -- the CPU loop's order for each element, so
 * the same bits, with no floating-point atomics. dwpe: one thread per
 * (t, c) walks the sequences in order. */
__global__ void amp_k_iota(int32_t *v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) v[i] = i;
}

__global__ void amp_k_embed_backward_wte(float *dwte, const float *dout, const int32_t *tok,
                                         const int32_t *row, int n, int C) {
    int i = blockIdx.x;
    int c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= C || (i > 0 && tok[i - 1] == tok[i])) return;
    int id = tok[i];
    float *d = dwte + (size_t)id * C + c;
    float s = *d;
    for (int k = i; k < n && tok[k] == id; k++) s += dout[(size_t)row[k] * C + c];
    *d = s;
}

__global__ void amp_k_embed_backward_wpe(float *dwpe, const float *dout, int B, int T, int C) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)T * C) return;
    float s = dwpe[i];
    for (int b = 0; b < B; b++) s += dout[(size_t)b * T * C + i];
    dwpe[i] = s;
}

static int cuda_embed_backward(amp_backend *be, float *dwte, float *dwpe, const float *dout,
                               const int32_t *tokens, int B, int T, int C) {
    if (B <= 0 || T <= 0 || C <= 0) return 0;
    if ((long long)B * T > INT32_MAX) {
        snprintf(be->err, sizeof be->err, "embed_backward: %d x %d rows exceed the int range", B, T);
        return 1;
    }
    int n = B * T;
    size_t sort_bytes = 0;
    if (amp_cuda_sort_pairs_bytes(be, n, &sort_bytes)) return 1;
    size_t vec = ((size_t)n * 4 + 255) / 256 * 256;
    void *base;
    if (amp_cuda_scratch(be, 3 * vec + sort_bytes + 256, &base)) return 1;
    char *p = (char *)base;
    int32_t *tok_sorted = (int32_t *)tf_take(&p, vec), *rows = (int32_t *)tf_take(&p, vec),
            *rows_sorted = (int32_t *)tf_take(&p, vec);
    void *sort_tmp = tf_take(&p, sort_bytes);
    amp_k_iota<<<tf_blocks((size_t)n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(rows, n);
    AMP_CHECK_LAUNCH(amp_k_iota);
    if (amp_cuda_sort_pairs(be, sort_tmp, sort_bytes, tokens, tok_sorted, rows, rows_sorted, n))
        return 1;
    dim3 grid((unsigned)n, tf_blocks((size_t)C));
    amp_k_embed_backward_wte<<<grid, AMP_TF_BLOCK, 0, tf_stream(be)>>>(dwte, dout, tok_sorted,
                                                                      rows_sorted, n, C);
    AMP_CHECK_LAUNCH(amp_k_embed_backward_wte);
    amp_k_embed_backward_wpe<<<tf_blocks((size_t)T * C), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dwpe, dout, B, T, C);
    AMP_CHECK_LAUNCH(amp_k_embed_backward_wpe);
    return 0;
}

/* ---- layernorm --------------------------------------------------------------- */

/* One warp per row: the two-pass mean and biased variance of
 * amp_ln_stats (lane sums, then a butterfly), then amp_ln_value per element. */
__global__ void amp_k_ln_forward(void *out, int dt, float *mean, float *rstd, const float *x,
                                 const float *w, const float *b, size_t rows, int C, float eps,
                                 int rms, amp_round_count *cnt) {
    size_t r = tf_warp_row();
    if (r >= rows) return; /* the whole warp */
    int lane = threadIdx.x % AMP_WARP;
    const float *xr = x + r * C;
    float s = 0.0f;
    if (!rms)
        for (int i = lane; i < C; i += AMP_WARP) s += xr[i];
    float m = rms ? 0.0f : amp_warp_sum(s) / (float)C; /* RMSNorm: no mean */
    float v = 0.0f;
    for (int i = lane; i < C; i += AMP_WARP) {
        float d = xr[i] - m;
        v += d * d;
    }
    float var = amp_warp_sum(v) / (float)C;
    float sd = 1.0f / sqrtf(var + eps);
    amp_round_tally t = {0, 0, 0};
    void *o = (char *)out + r * C * (dt == AMP_DTYPE_F32 ? 4 : 2);
    for (int i = lane; i < C; i += AMP_WARP)
        amp_store(o, (size_t)i, dt, 0, amp_ln_value(xr[i], m, sd, w[i], b ? b[i] : 0.0f), &t);
    if (lane == 0) {
        mean[r] = m;
        rstd[r] = sd;
    }
    amp_warp_flush(cnt, t);
}

static int cuda_layernorm_forward(amp_backend *be, const amp_layernorm_fwd *a) {
    void *out = a->out;
    amp_dtype out_dt = a->out_dt;
    float *mean = a->mean, *rstd = a->rstd;
    const float *x = a->x, *w = a->w, *b = a->b;
    int rows = a->rows, C = a->C;
    float eps = a->eps;
    amp_round_count *cnt = a->cnt;
    if (rows <= 0) return 0;
    amp_k_ln_forward<<<tf_row_blocks((size_t)rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        out, (int)out_dt, mean, rstd, x, w, b, (size_t)rows, C, eps, a->rms, cnt);
    AMP_CHECK_LAUNCH(amp_k_ln_forward);
    return 0;
}

/* One warp per row: amp_ln_backward_row's two sums as butterflies. */
__global__ void amp_k_ln_backward_rows(float *dx, const float *dout, const float *x,
                                       const float *w, const float *mean, const float *rstd,
                                       size_t rows, int C, int rms) {
    size_t r = tf_warp_row();
    if (r >= rows) return; /* the whole warp */
    int lane = threadIdx.x % AMP_WARP;
    const float *xr = x + r * C, *dr = dout + r * C;
    float m = mean[r], sd = rstd[r], a = 0.0f, an = 0.0f;
    for (int i = lane; i < C; i += AMP_WARP) {
        float xhat = amp_ln_xhat(xr[i], m, sd);
        float dnorm = w[i] * dr[i];
        a += dnorm;
        an += dnorm * xhat;
    }
    float dnorm_mean = rms ? 0.0f : amp_warp_sum(a) / (float)C;
    float dnorm_norm_mean = amp_warp_sum(an) / (float)C;
    float *dxr = dx + r * C;
    for (int i = lane; i < C; i += AMP_WARP) {
        float xhat = amp_ln_xhat(xr[i], m, sd);
        float dval = w[i] * dr[i] - dnorm_mean - xhat * dnorm_norm_mean;
        dxr[i] += dval * sd;
    }
}

/* The parameter gradients, deterministic in two passes: block (x, y) sums
 * rows [y*per, (y+1)*per) of 32 columns (threadIdx.y strides the rows,
 * then its 8 sums are added in y order), writing per-chunk partials; then
 * one thread per column adds the chunks in order. The chunking depends on
 * `rows` alone, so the bits do not depend on the GPU. */
#define AMP_LN_COL_ROWS 8     /* threadIdx.y extent */
#define AMP_LN_CHUNK_ROWS 256 /* rows per chunk, before the cap */
#define AMP_LN_MAX_CHUNKS 1024

__global__ void amp_k_ln_param_partials(float *pw, float *pb, const float *dout, const float *x,
                                        const float *mean, const float *rstd, int rows, int C,
                                        int per) {
    __shared__ float sw[AMP_LN_COL_ROWS][AMP_WARP], sb[AMP_LN_COL_ROWS][AMP_WARP];
    int j = blockIdx.x * AMP_WARP + threadIdx.x;
    long long r0 = (long long)blockIdx.y * per;
    long long r1 = r0 + per < rows ? r0 + per : rows;
    float a = 0.0f, c = 0.0f;
    if (j < C)
        for (long long r = r0 + threadIdx.y; r < r1; r += AMP_LN_COL_ROWS) {
            size_t k = (size_t)r * C + j;
            a += dout[k] * amp_ln_xhat(x[k], mean[r], rstd[r]);
            c += dout[k];
        }
    sw[threadIdx.y][threadIdx.x] = a;
    sb[threadIdx.y][threadIdx.x] = c;
    __syncthreads();
    if (threadIdx.y == 0 && j < C) {
        for (int y = 1; y < AMP_LN_COL_ROWS; y++) {
            a += sw[y][threadIdx.x];
            c += sb[y][threadIdx.x];
        }
        pw[(size_t)blockIdx.y * C + j] = a;
        pb[(size_t)blockIdx.y * C + j] = c;
    }
}

__global__ void amp_k_ln_param_combine(float *dw, float *db, const float *pw, const float *pb,
                                       int chunks, int C) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    if (j >= C) return;
    float a = 0.0f, c = 0.0f;
    for (int y = 0; y < chunks; y++) {
        a += pw[(size_t)y * C + j];
        c += pb[(size_t)y * C + j];
    }
    dw[j] += a;
    if (db) db[j] += c;
}

static int cuda_layernorm_backward(amp_backend *be, const amp_layernorm_bwd *a) {
    float *dx = a->dx, *dw = a->dw, *db = a->db;
    const float *dout = a->dout, *x = a->x, *w = a->w, *mean = a->mean, *rstd = a->rstd;
    int rows = a->rows, C = a->C;
    if (rows <= 0 || C <= 0) return 0;
    amp_k_ln_backward_rows<<<tf_row_blocks((size_t)rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dx, dout, x, w, mean, rstd, (size_t)rows, C, a->rms);
    AMP_CHECK_LAUNCH(amp_k_ln_backward_rows);
    int chunks = (rows + AMP_LN_CHUNK_ROWS - 1) / AMP_LN_CHUNK_ROWS;
    if (chunks > AMP_LN_MAX_CHUNKS) chunks = AMP_LN_MAX_CHUNKS;
    int per = (int)(((long long)rows + chunks - 1) / chunks);
    void *part;
    if (amp_cuda_scratch(be, 2 * (size_t)chunks * C * sizeof(float), &part)) return 1;
    float *pw = (float *)part, *pb = pw + (size_t)chunks * C;
    dim3 grid((unsigned)((C + AMP_WARP - 1) / AMP_WARP), (unsigned)chunks);
    dim3 block(AMP_WARP, AMP_LN_COL_ROWS);
    amp_k_ln_param_partials<<<grid, block, 0, tf_stream(be)>>>(pw, pb, dout, x, mean, rstd, rows,
                                                              C, per);
    AMP_CHECK_LAUNCH(amp_k_ln_param_partials);
    amp_k_ln_param_combine<<<tf_blocks((size_t)C), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dw, db, pw, pb, chunks, C);
    AMP_CHECK_LAUNCH(amp_k_ln_param_combine);
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

/* An attention GEMM operand of head h of sequence b lies at
 * base + b*sb + h*sh bytes. Q, K, V and the head columns of Y sit at two
 * strides (sequence, head) that no single stride spans, so the GEMMs over
 * batch x heads are pointer-array batched calls: one kernel writes the
 * pointer tables of all of an op's GEMMs, then one cuBLAS call per GEMM. */
typedef struct tf_operand {
    const char *base;
    long long sb, sh;
} tf_operand;

#define TF_MAX_OPERANDS 12 /* 4 GEMMs x (A, B, C) */
typedef struct tf_operands {
    tf_operand op[TF_MAX_OPERANDS];
    int n;
} tf_operands;

__global__ void amp_k_head_pointers(const void **tab, tf_operands ops, int nbh, int nh) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)ops.n * nbh) return;
    int o = (int)(i / nbh), bh = (int)(i % nbh);
    const tf_operand *d = &ops.op[o];
    tab[i] = d->base + (long long)(bh / nh) * d->sb + (long long)(bh % nh) * d->sh;
}

/* Writes the tables of ops into scratch: table o at *tab + o*nbh. */
static int tf_head_pointers(amp_backend *be, const tf_operands *ops, int nbh, int nh,
                            const void ***tab) {
    void *p;
    if (amp_cuda_scratch(be, (size_t)ops->n * nbh * sizeof(void *), &p)) return 1;
    *tab = (const void **)p;
    amp_k_head_pointers<<<tf_blocks((size_t)ops->n * nbh), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        *tab, *ops, nbh, nh);
    AMP_CHECK_LAUNCH(amp_k_head_pointers);
    return 0;
}

/* Row-major C[m, n] (FP32) = alpha op(A) op(B) for each of the nbh
 * matrices of the tables tab[0..nbh) (A), tab[nbh..) (B), tab[2nbh..) (C);
 * A and B hold dt (see cuda_gemm in backend_cuda.cu for the
 * row-major/column-major swap). */
static int tf_gemm_heads(amp_backend *be, const void **tab, int nbh, amp_dtype dt, int ta, int tb,
                         int m, int n, int k, int lda, int ldb, int ldc, float alpha) {
    cudaDataType_t type;
    cublasComputeType_t compute;
    if (tf_cuda_type(be, dt, &type, &compute)) return 1;
    float beta = 0.0f;
    AMP_CHECK_CUBLAS(cublasGemmBatchedEx(
        amp_cuda_im(be)->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n,
        m, k, &alpha, tab + nbh, type, ldb, tab, type, lda, &beta, (void *const *)(tab + 2 * nbh),
        CUDA_R_32F, ldc, nbh, compute, CUBLAS_GEMM_DEFAULT));
    AMP_CHECK_LAUNCH(cublasGemmBatchedEx);
    return 0;
}

static size_t tf_es(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

/* One warp per query row (b, h, t) of amp_attn_softmax_row (max and sum as
 * butterflies); S holds the FP32 logits. */
__global__ void amp_k_attn_softmax(void *att, float *S, size_t rows, int T, int dt,
                                   amp_round_count *cnt) {
    size_t r = tf_warp_row();
    if (r >= rows) return; /* the whole warp */
    int lane = threadIdx.x % AMP_WARP, t_q = (int)(r % (size_t)T);
    amp_round_tally t = {0, 0, 0};
    size_t base = r * T;
    float *s = S + base;
    float mx = -INFINITY;
    for (int j = lane; j <= t_q; j += AMP_WARP) {
        s[j] = amp_store(s, (size_t)j, dt, 1, s[j], &t); /* the logits' rounding point */
        if (s[j] > mx) mx = s[j];
    }
    mx = amp_warp_max(mx);
    float sum = 0.0f;
    for (int j = lane; j <= t_q; j += AMP_WARP) sum += expf(s[j] - mx);
    float inv = 1.0f / amp_warp_sum(sum);
    for (int j = lane; j < T; j += AMP_WARP) {
        float p = j <= t_q ? expf(s[j] - mx) * inv : 0.0f;
        amp_store(att, base + (size_t)j, dt, 0, p, &t);
    }
    amp_warp_flush(cnt, t);
}

/* One warp per row of amp_attn_softmax_backward_row (the dot a butterfly). */
__global__ void amp_k_attn_softmax_backward(void *dS, float *dP, const void *att, size_t rows,
                                            int T, int dt, amp_round_count *cnt) {
    size_t r = tf_warp_row();
    if (r >= rows) return; /* the whole warp */
    int lane = threadIdx.x % AMP_WARP, t_q = (int)(r % (size_t)T);
    amp_round_tally t = {0, 0, 0};
    size_t base = r * T;
    float *dp = dP + base;
    float dot = 0.0f;
    for (int j = lane; j <= t_q; j += AMP_WARP) {
        dp[j] = amp_store(dp, (size_t)j, dt, 1, dp[j], &t);
        dot += amp_load(att, base + (size_t)j, dt) * dp[j];
    }
    dot = amp_warp_sum(dot);
    for (int j = lane; j < T; j += AMP_WARP) {
        float ds = j <= t_q ? amp_load(att, base + (size_t)j, dt) * (dp[j] - dot) : 0.0f;
        amp_store(dS, base + (size_t)j, dt, 0, ds, &t);
    }
    amp_warp_flush(cnt, t);
}

/* dst(dt)[n] = round(src[n]), counting: the backend's round op (block-reduced
 * counts), the same per-element amp_round16 as amp_store. */
static int tf_store(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                    amp_round_count *cnt) {
    return be->ops->round(be, dst, dt, src, n, cnt);
}

static int cuda_attention_forward(amp_backend *be, void *out, void *att, float *ws, const void *qkv,
                                  const amp_attention_desc *d, amp_round_count *cnt) {
    amp_dtype dt = d->dt;
    int B = d->B, T = d->T, C = d->C, nh = d->nh;
    if (tf_check_heads(be, "attention_forward", C, nh)) return 1;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / nh, C3 = 3 * C, nbh = B * nh;
    float scale = 1.0f / sqrtf((float)hs);
    size_t tt = (size_t)T * T;
    long long es = (long long)tf_es(dt), sq = (long long)T * C3 * es;
    long long ssf = (long long)((size_t)nh * tt * 4), ssp = (long long)((size_t)nh * tt) * es;
    float *S = ws, *Y = ws + 2 * (size_t)nbh * tt;
    const char *q = (const char *)qkv, *p = (const char *)att;
    /* A, B, C of: S = scale Q K^T ; Y = P V (into the head's columns of Y) */
    tf_operands ops = {{{q, sq, hs * es},
                        {q + C * es, sq, hs * es},
                        {(const char *)S, ssf, (long long)tt * 4},
                        {p, ssp, (long long)tt * es},
                        {q + 2 * C * es, sq, hs * es},
                        {(const char *)Y, (long long)T * C * 4, (long long)hs * 4}},
                       6};
    const void **tab;
    if (tf_head_pointers(be, &ops, nbh, nh, &tab) ||
        tf_gemm_heads(be, tab, nbh, dt, 0, 1, T, T, hs, C3, C3, T, scale))
        return 1;
    size_t rows = (size_t)nbh * T;
    amp_k_attn_softmax<<<tf_row_blocks(rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(att, S, rows, T,
                                                                               (int)dt, cnt);
    AMP_CHECK_LAUNCH(amp_k_attn_softmax);
    if (tf_gemm_heads(be, tab + 3 * (size_t)nbh, nbh, dt, 0, 0, T, hs, T, T, C3, C, 1.0f))
        return 1;
    return tf_store(be, out, dt, Y, (size_t)B * T * C, cnt);
}

static int cuda_attention_backward(amp_backend *be, void *dqkv, float *ws, const void *dout,
                                   const void *qkv, const void *att, const amp_attention_desc *d,
                                   amp_round_count *cnt) {
    amp_dtype dt = d->dt;
    int B = d->B, T = d->T, C = d->C, nh = d->nh;
    if (tf_check_heads(be, "attention_backward", C, nh)) return 1;
    if (B <= 0 || T <= 0) return 0;
    int hs = C / nh, C3 = 3 * C, nbh = B * nh;
    float scale = 1.0f / sqrtf((float)hs);
    size_t tt = (size_t)T * T;
    long long es = (long long)tf_es(dt), sq = (long long)T * C3 * es, sy = (long long)T * C * es;
    long long sp = (long long)((size_t)nh * tt) * es, sacc = (long long)T * C3 * 4;
    float *dP = ws, *dacc = ws + 2 * (size_t)nbh * tt;
    void *dS = ws + (size_t)nbh * tt; /* holds dt values */
    const char *q = (const char *)qkv, *dy = (const char *)dout, *p = (const char *)att;
    const char *ds = (const char *)dS, *acc = (const char *)dacc;
    const tf_operand Q = {q, sq, hs * es}, K = {q + C * es, sq, hs * es},
                     V = {q + 2 * C * es, sq, hs * es}, dY = {dy, sy, hs * es},
                     P = {p, sp, (long long)tt * es}, dSo = {ds, sp, (long long)tt * es},
                     dPo = {(const char *)dP, (long long)((size_t)nh * tt * 4), (long long)tt * 4},
                     dQ = {acc, sacc, (long long)hs * 4}, dK = {acc + C * 4, sacc, (long long)hs * 4},
                     dV = {acc + 2 * C * 4, sacc, (long long)hs * 4};
    /* A, B, C of: dP = dY V^T ; dV = P^T dY ; dQ = scale dS K ; dK = scale dS^T Q */
    tf_operands ops = {{dY, V, dPo, P, dY, dV, dSo, K, dQ, dSo, Q, dK}, 12};
    const void **tab;
    size_t g = 3 * (size_t)nbh;
    if (tf_head_pointers(be, &ops, nbh, nh, &tab) ||
        tf_gemm_heads(be, tab, nbh, dt, 0, 1, T, T, hs, C, C3, T, 1.0f) ||
        tf_gemm_heads(be, tab + g, nbh, dt, 1, 0, T, hs, T, T, C, C3, 1.0f))
        return 1;
    size_t rows = (size_t)nbh * T;
    amp_k_attn_softmax_backward<<<tf_row_blocks(rows), AMP_TF_BLOCK, 0, tf_stream(be)>>>(
        dS, dP, att, rows, T, (int)dt, cnt);
    AMP_CHECK_LAUNCH(amp_k_attn_softmax_backward);
    if (tf_gemm_heads(be, tab + 2 * g, nbh, dt, 0, 0, T, hs, T, T, C3, C3, scale) ||
        tf_gemm_heads(be, tab + 3 * g, nbh, dt, 1, 0, T, hs, T, T, C3, C3, scale))
        return 1;
    return tf_store(be, dqkv, dt, dacc, (size_t)B * T * C3, cnt);
}

/* ---- residual add ---------------------------------------------------------------- */

__global__ void amp_k_residual_add(float *out, const float *x, const void *d, int dt, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = amp_residual_element(x[i], d, i, dt);
}

static int cuda_residual_add(amp_backend *be, float *out, const float *x, const void *d,
                             amp_dtype dt, size_t n) {
    if (n == 0) return 0;
    amp_k_residual_add<<<tf_blocks(n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(out, x, d, (int)dt, n);
    AMP_CHECK_LAUNCH(amp_k_residual_add);
    return 0;
}

/* ---- SwiGLU: one thread per element, warp tallies ------------------------------ */

__global__ void amp_k_swiglu_forward(amp_swiglu_args a) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    amp_round_tally t = {0, 0, 0};
    if (i < a.n)
        amp_swiglu_forward_elem(a.h, (int)a.h_dt, a.gate, (int)a.gate_dt, a.up, (int)a.up_dt, i,
                                &t);
    amp_warp_flush(a.cnt, t);
}

__global__ void amp_k_swiglu_backward(amp_swiglu_args a) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    amp_round_tally t = {0, 0, 0};
    if (i < a.n)
        amp_swiglu_backward_elem(a.dgate, a.dup, a.dh, a.gate, (int)a.gate_dt, a.up,
                                 (int)a.up_dt, i, &t);
    amp_warp_flush(a.cnt, t);
}

static int cuda_swiglu_forward(amp_backend *be, const amp_swiglu_args *a) {
    if (a->n == 0) return 0;
    amp_k_swiglu_forward<<<tf_blocks(a->n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(*a);
    AMP_CHECK_LAUNCH(amp_k_swiglu_forward);
    return 0;
}

static int cuda_swiglu_backward(amp_backend *be, const amp_swiglu_args *a) {
    if (a->n == 0) return 0;
    amp_k_swiglu_backward<<<tf_blocks(a->n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(*a);
    AMP_CHECK_LAUNCH(amp_k_swiglu_backward);
    return 0;
}

/* ---- Llama's attention input: one thread per element ----------------------------- */

__global__ void amp_k_qkv_pack(amp_qkv_args a, size_t n) {
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    amp_round_tally t = {0, 0, 0};
    if (e < n)
        amp_qkv_pack_elem(a.qkv, (int)a.dt, a.q, (int)a.q_dt, a.k, (int)a.k_dt, a.v, (int)a.v_dt, e,
                          a.T, a.nh, a.nkv, a.hs, a.rope, a.theta, &t);
    amp_warp_flush(a.cnt, t);
}

__global__ void amp_k_qkv_unpack(amp_qkv_args a, size_t N, size_t n) {
    size_t e = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e < n)
        amp_qkv_unpack_elem(a.dq, a.dk, a.dv, a.qkv, (int)a.dt, e, N, a.T, a.nh, a.nkv, a.hs,
                            a.rope, a.theta);
}

static int cuda_qkv_pack(amp_backend *be, const amp_qkv_args *a) {
    size_t n = (size_t)a->B * a->T * 3 * a->nh * a->hs;
    if (n == 0) return 0;
    amp_k_qkv_pack<<<tf_blocks(n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(*a, n);
    AMP_CHECK_LAUNCH(amp_k_qkv_pack);
    return 0;
}

static int cuda_qkv_unpack(amp_backend *be, const amp_qkv_args *a) {
    size_t N = (size_t)a->B * a->T, n = N * (size_t)(a->nh + 2 * a->nkv) * a->hs;
    if (n == 0) return 0;
    amp_k_qkv_unpack<<<tf_blocks(n), AMP_TF_BLOCK, 0, tf_stream(be)>>>(*a, N, n);
    AMP_CHECK_LAUNCH(amp_k_qkv_unpack);
    return 0;
}

static amp_transformer_ops cuda_make_transformer_ops(void) {
    amp_transformer_ops t;
    memset(&t, 0, sizeof t);
    t.embed_forward = cuda_embed_forward;
    t.embed_backward = cuda_embed_backward;
    t.layernorm_forward = cuda_layernorm_forward;
    t.layernorm_backward = cuda_layernorm_backward;
    t.attention_forward = cuda_attention_forward;
    t.attention_backward = cuda_attention_backward;
    t.residual_add = cuda_residual_add;
    t.swiglu_forward = cuda_swiglu_forward;
    t.swiglu_backward = cuda_swiglu_backward;
    t.qkv_pack = cuda_qkv_pack;
    t.qkv_unpack = cuda_qkv_unpack;
    return t;
}

const amp_transformer_ops amp_cuda_transformer_ops = cuda_make_transformer_ops();
