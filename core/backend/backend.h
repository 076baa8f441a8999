/* The backend interface: a core of ops every backend has (memory, copies,
 * the GEMM, roundings, reductions, the optimizer step) and optional op
 * families a backend offers by name (amp_backend_supports): "transformer",
 * "conv" and the fused ops. Models call these through amp_backend; they
 * never touch device memory directly. docs/backend.md describes it.
 *
 * Conventions: matrices are row-major; outputs first, then inputs, then
 * sizes. Pointers marked (dev) live in the backend's memory (host memory for
 * the CPU backend, device memory for CUDA). Every op returns 0 on success and
 * non-zero on failure with a message in be->err. Ops may be asynchronous on
 * the GPU; download() synchronises. */
#ifndef AMP_BACKEND_H
#define AMP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "amptrain/plugin.h"
#include "backend/kernels/fp8.h"
#include "backend/kernels/nvfp4.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum amp_device { AMP_DEVICE_CPU = 0, AMP_DEVICE_CUDA = 1 } amp_device;

/* GELU is the exact erf form; GELU_TANH the tanh approximation (GPT-2). */
typedef enum amp_act {
    AMP_ACT_NONE = 0,
    AMP_ACT_RELU = 1,
    AMP_ACT_GELU = 2,
    AMP_ACT_GELU_TANH = 3
} amp_act;

/* What rounding into 16 bits lost, counted per element rounded. */
typedef struct amp_round_count {
    unsigned long long underflow; /* nonzero finite value became +-0 */
    unsigned long long overflow;  /* finite value became +-inf */
    unsigned long long nonzero;   /* nonzero values rounded */
} amp_round_count;

/* Round-count slots: two per layer of the model (forward values, gradient
 * values). The model owns how many layers there are: the stats record is
 * this header followed by 2 * nlayers amp_round_count (models/model.h,
 * amp_stats_rounds). */
#define AMP_ROUND_FWD 0
#define AMP_ROUND_GRAD 1

/* The per-step record, kept in backend memory and read back once per step
 * (the only device->host transfer of a training step). */
typedef struct amp_step_stats {
    unsigned long long nonfinite; /* unscale_check: inf/NaN gradient elements */
    unsigned long long checked;   /* unscale_check: elements checked */
    double sumsq;                 /* unscale_check: sum of squares of finite unscaled grads */
    float maxabs;                 /* unscale_check: max |g| over finite unscaled grads */
    float pad0;
    double loss_sum;              /* softmax_xent: sum of per-row losses */
    unsigned long long correct;   /* softmax_xent: rows whose argmax is the label */
} amp_step_stats;

/* One optimizer step's hyper-parameters (optim_step and the fused steps). */
typedef struct amp_optim_step {
    int adamw;                        /* 0: SGD, 1: AdamW */
    float lr, momentum, weight_decay; /* momentum: SGD only */
    float beta1, beta2, eps;          /* AdamW only */
    int64_t t;                        /* AdamW: 1-based count of applied steps */
} amp_optim_step;

/* One run of a multi-tensor optimizer step (optim_multi_step): elements
 * [off, off + n) of the flat arrays, with its own weight decay. */
typedef struct amp_optim_span {
    size_t off, n;
    float weight_decay;
} amp_optim_span;

/* One GEMM call: C = alpha * op(A) op(B) + beta * C for `batch` matrices
 * at fixed strides, then an optional epilogue over the FP32 result, one
 * pass per element:
 *   v = acc + bias[col]                  (bias widened from bias_dtype)
 *   out = round_out_dtype(v)             (counted into cnt)
 *   act_out = round_out_dtype(act(widen(out)))  (when act != NONE; counted)
 * A and B hold in_dtype, accumulation is FP32. acc is the FP32 result
 * ([m, n] per batch at ldc): a caller-provided workspace, or the output
 * itself when out_dtype is F32 and out == acc. Matrices are row-major;
 * lda/ldb/ldc are row strides of the stored (untransposed) matrices. */
typedef struct amp_gemm_desc {
    int trans_a, trans_b;
    int m, n, k;
    int lda, ldb, ldc;
    int batch;                          /* 1 for a plain GEMM */
    long long stride_a, stride_b, stride_c; /* elements between batch matrices */
    amp_dtype in_dtype;
    const void *a, *b;
    float alpha, beta;
    float *acc;                         /* FP32 result (beta applies to it) */
    /* epilogue (all optional) */
    const void *bias;                   /* [n], NULL for none */
    amp_dtype bias_dtype;
    amp_act act;
    void *out;                          /* NULL: the result stays in acc */
    void *act_out;                      /* when act != NONE */
    amp_dtype out_dtype;
    amp_round_count *cnt;               /* telemetry for the roundings (dev, may be NULL) */
} amp_gemm_desc;

/* Which operands of a plain GEMM are transposed: N(ormal) or T for A,
 * then for B. */
typedef enum amp_gemm_trans {
    AMP_GEMM_NN = 0,
    AMP_GEMM_NT = 1,
    AMP_GEMM_TN = 2,
    AMP_GEMM_TT = 3
} amp_gemm_trans;
#define AMP_GEMM_TRANS(trans_a, trans_b)                                                           \
    ((amp_gemm_trans)(((trans_a) ? 2 : 0) | ((trans_b) ? 1 : 0)))

/* A plain GEMM on densely stored row-major matrices: C[m,n] = op(A) op(B)
 * into acc, leading dimensions from the shapes, no batch, no epilogue
 * (set the epilogue fields on the result to add one). */
static inline amp_gemm_desc amp_gemm_plain(float *acc, const void *a, const void *b, amp_dtype dt,
                                           amp_gemm_trans trans, int m, int n, int k) {
    int trans_a = (trans & 2) != 0, trans_b = (trans & 1) != 0;
    amp_gemm_desc g = {0};
    g.trans_a = trans_a;
    g.trans_b = trans_b;
    g.m = m;
    g.n = n;
    g.k = k;
    g.lda = trans_a ? m : k;
    g.ldb = trans_b ? k : n;
    g.ldc = n;
    g.batch = 1;
    g.in_dtype = dt;
    g.a = a;
    g.b = b;
    g.alpha = 1.0f;
    g.acc = acc;
    g.out_dtype = AMP_DTYPE_F32;
    return g;
}

/* A 2-D convolution as PyTorch's nn.Conv2d with groups = 1 and dilation
 * = 1, NCHW: x [n, c_in, h, w], w [c_out, c_in, kh, kw], y [n, c_out, p, q]
 * with p = (h + 2 pad_h - kh) / stride_h + 1 and q likewise
 * (amp_conv2d_out_h/_w). */
typedef struct amp_conv2d_desc {
    int n, c_in, h, w;
    int c_out, kh, kw;
    int stride_h, stride_w;
    int pad_h, pad_w;
    amp_dtype dt; /* x, w and dy: F32, F16 or BF16 (FP32 accumulation always) */
} amp_conv2d_desc;

static inline int amp_conv2d_out_h(const amp_conv2d_desc *d) {
    return (d->h + 2 * d->pad_h - d->kh) / d->stride_h + 1;
}
static inline int amp_conv2d_out_w(const amp_conv2d_desc *d) {
    return (d->w + 2 * d->pad_w - d->kw) / d->stride_w + 1;
}

/* Max pooling as F.max_pool2d (floor mode, dilation 1): x [n, c, h, w],
 * y [n, c, p, q]; padding at most half the window, as PyTorch requires. */
typedef struct amp_pool2d_desc {
    int n, c, h, w;
    int kh, kw;
    int stride_h, stride_w;
    int pad_h, pad_w;
} amp_pool2d_desc;

static inline int amp_pool2d_out_h(const amp_pool2d_desc *d) {
    return (d->h + 2 * d->pad_h - d->kh) / d->stride_h + 1;
}
static inline int amp_pool2d_out_w(const amp_pool2d_desc *d) {
    return (d->w + 2 * d->pad_w - d->kw) / d->stride_w + 1;
}

/* 0 when the shape is valid for the ops; else -1 and a message naming the
 * field (every backend checks with these before touching memory). */
int amp_conv2d_desc_check(const amp_conv2d_desc *d, char *err, size_t errlen);
int amp_pool2d_desc_check(const amp_pool2d_desc *d, char *err, size_t errlen);

typedef struct amp_backend amp_backend;

/* ---- argument records of the ops that take more than a handful ---- */

/* The working copy an optimizer step writes in the same pass
 * (optim_step_cast): dst(dt)[n] = round(w), or with f32 an FP32 array of
 * the rounded values, counted into cnt (dev, may be NULL). */
typedef struct amp_weight_copy {
    void *dst;
    amp_dtype dt;
    int f32;
    amp_round_count *cnt;
} amp_weight_copy;

/* act_backward_round: dz(dt)[n] = round_dt(quantize_dt(da[n]) *
 * act'(widen(z(dt)[n]))), both roundings counted into cnt (dev, may be
 * NULL); dz may equal z. dz_f32 (may be NULL) also receives widen(dz); dz
 * may be NULL when only dz_f32 is wanted (not both). For dt == F32 it is
 * dz = da * act'(z), counting nothing. exact = 1 says da already holds dt's
 * values and act is ReLU (da * 1 or da * 0), so both roundings are exact
 * and the op may skip them (cnt must then be NULL). */
typedef struct amp_act_round_args {
    void *dz;
    float *dz_f32;
    const float *da;
    const void *z;
    amp_dtype dt;
    size_t n;
    amp_act act;
    amp_round_count *cnt;
    int exact;
} amp_act_round_args;

/* round_act: dst(dt)[n] = round_dt(act(quantize_dt(src[n]))) for a 16-bit dt
 * and an act that maps dt's values to dt's values (AMP_ACT_NONE,
 * AMP_ACT_RELU), so the second rounding is exact: only the first is
 * counted into cnt (dev, may be NULL). wide (may be NULL, may equal src)
 * also receives widen(dst). A stored activation and the in-place ReLU after
 * it, in one pass. */
typedef struct amp_round_act_args {
    void *dst;
    float *wide;
    const float *src;
    amp_dtype dt;
    size_t n;
    amp_act act;
    amp_round_count *cnt;
} amp_round_act_args;

/* layernorm_forward: out(out_dt)[rows, C] = round((x - mean) * rstd * w + b)
 * with FP32 statistics (biased variance, rstd = 1/sqrt(var + eps)); b may
 * be NULL. Writes mean[rows] and rstd[rows] for the backward; counts into
 * cnt (dev, may be NULL). rms = 1 is RMSNorm: mean = 0, rstd =
 * 1/sqrt(mean(x^2) + eps) (the backward then drops the mean's term). */
typedef struct amp_layernorm_fwd {
    void *out;
    amp_dtype out_dt;
    float *mean, *rstd;
    const float *x, *w, *b;
    int rows, C;
    float eps;
    amp_round_count *cnt;
    int rms;
} amp_layernorm_fwd;

/* layernorm_backward: dx[rows, C] += d/dx, dw[C] += d/dw, db[C] += d/db
 * (db may be NULL), from dout (FP32) and the forward's x, w, mean, rstd. */
typedef struct amp_layernorm_bwd {
    float *dx, *dw, *db;
    const float *dout, *x, *w, *mean, *rstd;
    int rows, C;
    int rms;
} amp_layernorm_bwd;

/* swiglu_forward: h(h_dt)[n] = round(round_gate_dt(silu(gate)) * up) (both
 * roundings counted into cnt); swiglu_backward: from dh (FP32, holding h_dt
 * values) dup[n] = dh * silu(gate) and dgate[n] = round_gate_dt(dh * up) *
 * silu'(gate) in FP32 (that rounding counted into cnt). The arithmetic of
 * kernels/swiglu.h on every backend. */
typedef struct amp_swiglu_args {
    void *h;
    amp_dtype h_dt;
    float *dgate, *dup;
    const float *dh;
    const void *gate, *up;
    amp_dtype gate_dt, up_dt;
    size_t n;
    amp_round_count *cnt;
} amp_swiglu_args;

/* qkv_pack: qkv(dt)[B*T, 3C] (C = nh*hs) from q(q_dt)[B*T, C] and k, v
 * [B*T, nkv*hs]: q and k turned by rotary position embeddings when rope
 * (Hugging Face Llama's rotate-half, base theta), each key/value head
 * repeated for nh/nkv query heads; the rounding into dt counted into cnt.
 * qkv_unpack: dq [B*T, C], dk, dv [B*T, nkv*hs] (FP32) from dqkv(dt): the
 * turn undone and the repeated heads summed in head order. The arithmetic
 * of kernels/rope.h on every backend. */
typedef struct amp_qkv_args {
    void *qkv;
    amp_dtype dt;
    const void *q, *k, *v;
    amp_dtype q_dt, k_dt, v_dt;
    float *dq, *dk, *dv;
    int B, T, nh, nkv, hs, rope;
    float theta;
    amp_round_count *cnt;
} amp_qkv_args;

/* Causal self-attention's shape: qkv(dt)[B, T, 3C] (q, k, v side by side),
 * nh heads of C/nh; ws holds amp_attention_workspace_floats() floats. */
typedef struct amp_attention_desc {
    int B, T, C, nh;
    amp_dtype dt;
} amp_attention_desc;

/* Sums v[n] (FP64, in the backend's memory) over the ranks of a
 * data-parallel run, in place: how batch norm takes the statistics of the
 * global batch (SyncBatchNorm). The session supplies it; a backend only
 * calls it. 0, or non-zero with be->err set. */
typedef struct amp_allsum {
    int (*sum)(void *ctx, double *v, size_t n);
    void *ctx;
} amp_allsum;

/* conv2d_forward_round's output: p(dt), the rounding counted into cnt
 * (dev, may be NULL). */
typedef struct amp_round_out {
    void *p;
    amp_dtype dt;
    amp_round_count *cnt;
} amp_round_out;

/* conv2d_backward_round's results (FP32, overwritten): dw [c_out, c_in, kh,
 * kw], dbias [c_out] and dx [n, c_in, h, w] (each but dw may be NULL), and
 * the count of dy's rounding (dev, may be NULL). dx is then also rounded to
 * dx_dt (F32: left as it is), counted into dx_cnt (dev, may be NULL): the
 * input's gradient in the dtype its input is stored in, as a quantize
 * after the op would give it. */
typedef struct amp_conv2d_grads {
    float *dw, *dbias, *dx;
    amp_round_count *dy_cnt;
    amp_dtype dx_dt;
    amp_round_count *dx_cnt;
} amp_conv2d_grads;

/* batch_norm_forward over x [n, c, hw] (see amp_conv_ops). */
typedef struct amp_batch_norm_fwd {
    float *y, *save_mean, *save_invstd;
    float *running_mean, *running_var; /* may be NULL */
    const float *x, *gamma, *beta;
    int n, c, hw;
    int training;
    float momentum, eps;
    const amp_allsum *sync; /* training: the statistics over all ranks' rows (NULL: these rows) */
    /* x stored in 16 bits instead (x unused): x16 [n, c, hw] in x16_dt, read
     * as its exact FP32 values; only where amp_backend_supports(be,
     * "batch_norm_x16"). NULL: x. */
    const uint16_t *x16;
    amp_dtype x16_dt;
} amp_batch_norm_fwd;

/* batch_norm_backward (see amp_conv_ops). */
typedef struct amp_batch_norm_bwd {
    float *dx, *dgamma, *dbeta;
    const float *dy, *x, *gamma, *save_mean, *save_invstd;
    int n, c, hw;
    int training;
    const amp_allsum *sync; /* training: dx from all ranks' sums (dgamma/dbeta stay these rows') */
    const uint16_t *x16; /* as in amp_batch_norm_fwd */
    amp_dtype x16_dt;
} amp_batch_norm_bwd;

/* ---- family "transformer" (the GPT): each runs its math in FP32 and
 * rounds only where it says, counting into cnt (dev, may be NULL) ---- */
typedef struct amp_transformer_ops {
    /* out[B*T, C] = wte[tokens[b,t], :] + wpe[t, :] (FP32 weights and
     * output; every token in [0, rows of wte)). */
    int (*embed_forward)(amp_backend *be, float *out, const float *wte, const float *wpe,
                         const int32_t *tokens, int B, int T, int C);
    /* dwte[tokens[b,t], :] += dout[b,t,:] and dwpe[t, :] += dout[b,t,:],
     * summed over rows in order on every backend (deterministic, no
     * atomics). */
    int (*embed_backward)(amp_backend *be, float *dwte, float *dwpe, const float *dout,
                          const int32_t *tokens, int B, int T, int C);
    int (*layernorm_forward)(amp_backend *be, const amp_layernorm_fwd *a);
    int (*layernorm_backward)(amp_backend *be, const amp_layernorm_bwd *a);
    /* logits = round_dt(QK^T / sqrt(C/nh)), probabilities att(dt)[B, nh,
     * T, T] = round_dt(softmax_fp32(masked logits)), out(dt)[B, T, C] =
     * round_dt(att V). The GEMMs are strided-batched with FP32
     * accumulation. */
    int (*attention_forward)(amp_backend *be, void *out, void *att, float *ws, const void *qkv,
                             const amp_attention_desc *d, amp_round_count *cnt);
    /* dqkv(dt)[B, T, 3C] from dout(dt)[B, T, C] and the forward's qkv and
     * att; the gradients of the probabilities and of the logits are rounded
     * into dt (as autocast's casts do), dqkv too. */
    int (*attention_backward)(amp_backend *be, void *dqkv, float *ws, const void *dout,
                              const void *qkv, const void *att, const amp_attention_desc *d,
                              amp_round_count *cnt);
    /* out[n] = x[n] + widen(d(dt)[n]) (out may equal x). */
    int (*residual_add)(amp_backend *be, float *out, const float *x, const void *d, amp_dtype dt,
                        size_t n);
    /* Llama's MLP middle (see amp_swiglu_args). */
    int (*swiglu_forward)(amp_backend *be, const amp_swiglu_args *a);
    int (*swiglu_backward)(amp_backend *be, const amp_swiglu_args *a);
    /* Llama's attention input (see amp_qkv_args). */
    int (*qkv_pack)(amp_backend *be, const amp_qkv_args *a);
    int (*qkv_unpack)(amp_backend *be, const amp_qkv_args *a);
} amp_transformer_ops;

/* ---- family "conv" (the CNN; see amp_conv2d_desc and friends) ---- */
typedef struct amp_conv_ops {
    /* Bytes of workspace the three conv2d ops need for this shape (the
     * largest of the three directions). On the GPU it also chooses the cuDNN
     * algorithms for the shape (once; cached), honouring be->deterministic.
     * The caller carves the workspace from its own memory (the `workspace`
     * category) and passes it to every conv2d call of the shape. */
    int (*conv2d_workspace)(amp_backend *be, const amp_conv2d_desc *d, size_t *bytes);
    /* y[n, c_out, p, q] (FP32) = conv(x, w) + bias: x [n, c_in, h, w] and w
     * [c_out, c_in, kh, kw] hold d->dt, accumulation is FP32. For a 16-bit dt
     * the convolution's result is rounded to dt before the bias is added in
     * FP32 (the 16-bit library stores its output in dt, as under autocast);
     * that rounding is not counted. bias [c_out] FP32 or NULL. */
    int (*conv2d_forward)(amp_backend *be, float *y, const void *x, const void *w,
                          const float *bias, const amp_conv2d_desc *d, void *ws,
                          size_t ws_bytes);
    /* dx[n, c_in, h, w] (FP32) = the gradient of conv2d_forward's y with
     * respect to x, from dy [n, c_out, p, q] and w, both in d->dt; rounded
     * through dt for a 16-bit dt like the forward output. */
    int (*conv2d_backward_data)(amp_backend *be, float *dx, const void *dy, const void *w,
                                const amp_conv2d_desc *d, void *ws, size_t ws_bytes);
    /* dw[c_out, c_in, kh, kw] (FP32, overwritten) from x and dy (d->dt),
     * summed over the batch, rounded through dt for a 16-bit dt; dbias[c_out]
     * (FP32, may be NULL) = the sum of dy over n, p, q in FP64, rounded once
     * to FP32. */
    int (*conv2d_backward_filter)(amp_backend *be, float *dw, float *dbias, const void *x,
                                  const void *dy, const amp_conv2d_desc *d, void *ws,
                                  size_t ws_bytes);
    /* Max pooling as F.max_pool2d, FP32: y[n, c, p, q] and idx (each
     * window's maximum as its offset in the window, amp_maxpool_value; may
     * be NULL when no backward follows). */
    int (*max_pool2d_forward)(amp_backend *be, float *y, uint16_t *idx, const float *x,
                              const amp_pool2d_desc *d);
    /* dx[n, c, h, w] (FP32, overwritten) from dy [n, c, p, q] and idx. */
    int (*max_pool2d_backward)(amp_backend *be, float *dx, const float *dy, const uint16_t *idx,
                               const amp_pool2d_desc *d);
    /* Batch normalisation as nn.BatchNorm2d over x [n, c, hw] in FP32 with
     * FP64 channel sums. training = 1: normalises with the batch's mean and
     * biased variance, writes them as save_mean / save_invstd
     * (1/sqrt(var + eps)) for the backward, and updates running_mean /
     * running_var (when non-NULL) with `momentum` and the unbiased variance;
     * n*hw must be > 1. training = 0: normalises with the running statistics
     * and writes them (as mean / invstd) to save_mean / save_invstd.
     * With a->sync (training): the per-channel sums of x, then of (x -
     * mean)^2 about the global mean, are summed over the ranks before use,
     * with the row count, so the statistics (and the running update's
     * unbiased variance) are those of the global batch, the same two-pass
     * formula as one process over all the rows. */
    int (*batch_norm_forward)(amp_backend *be, const amp_batch_norm_fwd *a);
    /* dx (FP32, overwritten), dgamma = sum(dy * xhat) and dbeta = sum(dy)
     * per channel (FP32, overwritten; FP64 sums) from the forward's x,
     * save_mean and save_invstd, in the forward's mode. With a->sync
     * (training): sum(dy), sum(dy * xhat) and the row count are summed over
     * the ranks for dx; dgamma and dbeta stay this rank's (the gradient
     * sum over the ranks adds them). */
    int (*batch_norm_backward)(amp_backend *be, const amp_batch_norm_bwd *a);
    /* 1: the two batch_norm ops read a 16-bit x (x16) as well, widening it
     * as they go, so a 16-bit activation needs no FP32 copy for them. */
    int batch_norm_x16;
    /* Optional (amp_backend_supports(be, "conv2d_forward_round")):
     * conv2d_forward with its y rounded to out->dt (16-bit), counted into
     * out->cnt and stored in out->p while each piece of y is at hand,
     * instead of an FP32 y for a separate round: the same bits and counts as
     * conv2d_forward then round. */
    int (*conv2d_forward_round)(amp_backend *be, const amp_round_out *out, const void *x,
                                const void *w, const float *bias, const amp_conv2d_desc *d,
                                void *ws, size_t ws_bytes);
    /* Optional (amp_backend_supports(be, "conv2d_backward_round")), for a
     * 16-bit d->dt: conv2d_backward_filter into g->dw, g->dbias and, when
     * g->dx is not NULL, conv2d_backward_data on dy given in FP32 [n, c_out,
     * p, q], which they read rounded to d->dt, that rounding counted once
     * into g->dy_cnt: the same bits and counts as round + the two ops, with
     * no 16-bit copy of dy to write and read back. */
    int (*conv2d_backward_round)(amp_backend *be, const amp_conv2d_grads *g, const void *x,
                                 const float *dy, const void *w, const amp_conv2d_desc *d,
                                 void *ws, size_t ws_bytes);
} amp_conv_ops;

/* ---- family "scaled": FP8 operands (backend/kernels/fp8.h, mx.h). fmt is
 * an amp_fp8_format; st (dev, may be NULL) is an amp_fp8_stats the op
 * merges what it saw into (amax: max, counts: added), so one record can
 * collect a whole optimizer step. ---- */

/* An MX32 operand: a row-major [rows, cols] array in blocks of 32 along
 * each row (scales [rows][ceil(cols / 32)]) or, with along_cols, down each
 * column (scales [ceil(rows / 32)][cols]); a short last block is a block of
 * its own. fmt: the elements' amp_fp8_format. */
typedef struct amp_mx_desc {
    int rows, cols;
    int fmt;
    int along_cols;
} amp_mx_desc;

/* An NVFP4 operand: amp_nvfp4_desc (backend/kernels/nvfp4.h). */

typedef struct amp_scaled_ops {
    /* *amax_host = max |x[i]| over the non-NaN elements (synchronises). */
    int (*fp8_amax)(amp_backend *be, float *amax_host, const float *x, size_t n);
    /* q[n] = amp_fp8_quantize_element(x, scale, fmt), stats into st. */
    int (*fp8_quantize)(amp_backend *be, uint8_t *q, const float *x, size_t n, float scale, int fmt,
                        amp_fp8_stats *st);
    /* x[n] = decode(q) * amp_fp8_inv_scale(scale). */
    int (*fp8_dequantize)(amp_backend *be, float *x, const uint8_t *q, size_t n, float scale,
                          int fmt);
    /* y[n] = dequantize(quantize(x)) without storing the codes (y may be x). */
    int (*fp8_qdq)(amp_backend *be, float *y, const float *x, size_t n, float scale, int fmt,
                   amp_fp8_stats *st);
    /* MX32 (backend/kernels/mx.h, E8M0 scales): codes elem [rows * cols]
     * and scales of x; st (may be NULL) takes the saturated / flushed / NaN
     * counts only (an MX operand has no amax). */
    int (*mx_quantize)(amp_backend *be, uint8_t *elem, uint8_t *scales, const float *x,
                       const amp_mx_desc *d, amp_fp8_stats *st);
    int (*mx_dequantize)(amp_backend *be, float *x, const uint8_t *elem, const uint8_t *scales,
                         const amp_mx_desc *d);
    /* y = mx_dequantize(mx_quantize(x)) without storing the codes (y may be x). */
    int (*mx_qdq)(amp_backend *be, float *y, const float *x, const amp_mx_desc *d,
                  amp_fp8_stats *st);
    /* A Conv2d's GEMM operands for the kit (its scaled operands are
     * quantized between the im2col and the GEMM, so the layer does both):
     * col [K, n*p*q] (K = c_in*kh*kw, images side by side) from x [n, c_in,
     * h, w], as FP32, 0 in the padding (d->dt is ignored: FP32). */
    int (*conv2d_im2col)(amp_backend *be, float *col, const float *x, const amp_conv2d_desc *d);
    /* dx [n, c_in, h, w] (FP32, overwritten) = the sum of col [K, n*p*q]'s
     * entries over the positions im2col read them from (col2im). */
    int (*conv2d_col2im)(amp_backend *be, float *dx, const float *col, const amp_conv2d_desc *d);
    /* NVFP4 (may be NULL: the kit refuses NVFP4 operands then). codes: 4 bits
     * per value, element j in byte j / 2 (low nibble for even j); scales the
     * E4M3 block scales in the desc's layout; *s_dec the tensor's decode
     * scale (host). st takes amax and the saturated / flushed / NaN counts,
     * nv the block scales' range and the rounding bias (both may be NULL). */
    int (*nvfp4_quantize)(amp_backend *be, uint8_t *codes, uint8_t *scales, float *s_dec,
                          const float *x, const amp_nvfp4_desc *d, amp_fp8_stats *st,
                          amp_nvfp4_stats *nv);
    int (*nvfp4_dequantize)(amp_backend *be, float *x, const uint8_t *codes, const uint8_t *scales,
                            float s_dec, const amp_nvfp4_desc *d);
    /* y = dequantize(quantize(x)) without storing the codes (y may be x);
     * *s_enc_host (may be NULL) the tensor scale used. */
    int (*nvfp4_qdq)(amp_backend *be, float *y, const float *x, const amp_nvfp4_desc *d,
                     float *s_enc_host, amp_fp8_stats *st, amp_nvfp4_stats *nv);
} amp_scaled_ops;

/* fp8_gemm's operands: d->a and d->b hold FP8 codes (1 byte each, stored
 * densely as the descriptor's shapes say), quantized as cast(clamp(v *
 * scale)) with these formats (amp_fp8_format) and per-tensor scales.
 * MX32 operands instead (both or neither; a_scale and b_scale unused): the
 * E8M0 block scales (dev) of A [m, k] and B [n, k] (the TN form: trans_a 0,
 * trans_b 1), blocks of 32 along k, as mx_quantize writes them with
 * along_cols 0 (scales [m][ceil(k / 32)] and [n][ceil(k / 32)]). */
typedef struct amp_fp8_gemm_operands {
    int a_fmt, b_fmt;
    float a_scale, b_scale;
    const uint8_t *a_mx, *b_mx;
} amp_fp8_gemm_operands;

/* nvfp4_gemm's operands: d->a holds A [m, k]'s codes and d->b B [n, k]'s
 * (the TN form: trans_a 0, trans_b 1; 4 bits each, packed as the nvfp4
 * ops write them), quantized by nvfp4_quantize with blocks of 16 along k:
 * A's scales (dev) in AMP_NVFP4_ROWS, B's in b_blocks (AMP_NVFP4_ROWS, or
 * AMP_NVFP4_TILES: a weight's 16x16 tiles); a_s_dec and b_s_dec the
 * tensors' decode scales (host). */
typedef struct amp_nvfp4_gemm_operands {
    const uint8_t *a_scales, *b_scales;
    int b_blocks;
    float a_s_dec, b_s_dec;
} amp_nvfp4_gemm_operands;

/* ---- fused ops: each optional on its own, asked for by its name with
 * amp_backend_supports(be, "optim_step_cast") etc. A caller without one
 * composes core ops that give the same bits. ---- */
typedef struct amp_fused_ops {
    /* One tensor's optimizer step (as optim_step) and, in the same pass over
     * memory, the working copy of the updated weights (amp_weight_copy).
     * cast_weights then has nothing left to do (amp_model_cast_reuse). */
    int (*optim_step_cast)(amp_backend *be, const amp_optim_step *o, float *w, float *s0, float *s1,
                           const float *g, size_t n, const amp_weight_copy *wc);
    /* The optimizer step (per element optim_step's; o->weight_decay is
     * unused) of nspans disjoint spans of the flat arrays w, s0, s1, g in
     * one pass: one launch for all of a model's tensors. Without it the
     * caller makes one optim_step call per span. */
    int (*optim_multi_step)(amp_backend *be, const amp_optim_step *o, float *w, float *s0,
                            float *s1, const float *g, const amp_optim_span *spans, int nspans);
    /* dst_dev(dt)[n] = round(src_host[n]) for a 16-bit dt, counted into cnt
     * (dev, may be NULL): an FP32 input batch lands in the model already
     * rounded, with no FP32 copy of it on the device. Without it a model
     * keeps its input batch in FP32. */
    int (*upload_round)(amp_backend *be, void *dst_dev, amp_dtype dt, const float *src_host,
                        size_t n, amp_round_count *cnt);
    /* Backward through an activation with the roundings a stored gradient
     * gets, in one pass (amp_act_round_args). Without it models compose
     * quantize + widen + act_backward + round, which gives the same bits. */
    int (*act_backward_round)(amp_backend *be, const amp_act_round_args *a);
    /* gemm_ex (batch 1, FP32 accumulation, its epilogue) on FP8 codes:
     * acc = op(dec(A) / a_scale) op(dec(B) / b_scale), or with MX32
     * operands acc = mx_dequantize(A) . mx_dequantize(B)^T. A backend runs it on
     * an FP8 GEMM unit where the GPU and the shapes allow and otherwise
     * composes fp8_dequantize (mx_dequantize) of both operands + the FP32 gemm_ex (saying
     * so once in the log); unlike the other fused ops the FP8 unit's sums
     * are ordered and rounded (and its scales applied) its own way, so its
     * result equals the composition to the rounding of its accumulation,
     * not bit for bit. The CPU has no FP8 unit and no fp8_gemm: its Linear
     * composes. */
    int (*fp8_gemm)(amp_backend *be, const amp_gemm_desc *d, const amp_fp8_gemm_operands *q);
    /* gemm_ex (batch 1, FP32 accumulation, its epilogue) on NVFP4 codes:
     * acc = nvfp4_dequantize(A) . nvfp4_dequantize(B)^T (a Linear's
     * forward). As fp8_gemm: a block-scaled FP4 unit where the GPU and the
     * shapes allow (its sums, and the tensor scales applied once to them,
     * rounded its own way: equal to the composition to the rounding of its
     * accumulation), else nvfp4_dequantize of both + the FP32 gemm_ex,
     * each path said once in the log. The CPU has none: its Linear
     * composes. */
    int (*nvfp4_gemm)(amp_backend *be, const amp_gemm_desc *d, const amp_nvfp4_gemm_operands *q);
    /* A rounding and an activation in one pass (amp_round_act_args).
     * Without it models compose quantize + act_forward + round, which gives
     * the same bits. */
    int (*round_act)(amp_backend *be, const amp_round_act_args *a);
} amp_fused_ops;

/* ---- the core: every backend has all of these (none is NULL) ---- */
typedef struct amp_backend_ops {
    const char *name; /* "cpu" or "cuda" */
    void (*destroy)(amp_backend *be);
    void *(*alloc)(amp_backend *be, size_t bytes); /* NULL + be->err on failure */
    void (*release)(amp_backend *be, void *p);
    int (*upload)(amp_backend *be, void *dst_dev, const void *src_host, size_t bytes);
    int (*download)(amp_backend *be, void *dst_host, const void *src_dev, size_t bytes);
    int (*zero)(amp_backend *be, void *dst_dev, size_t bytes);
    /* dst_dev[bytes] = src_dev[bytes] (device memory, not overlapping, any
     * alignment), ordered with the backend's other work. */
    int (*copy)(amp_backend *be, void *dst_dev, const void *src_dev, size_t bytes);
    /* The descriptor GEMM (see amp_gemm_desc): batched, with the fused
     * bias/activation/rounding epilogue. */
    int (*gemm_ex)(amp_backend *be, const amp_gemm_desc *d);
    /* dst(dt)[n] = round(src[n]); counts into cnt (dev, may be NULL).
     * For dt == F32 a plain copy that counts nothing. */
    int (*round)(amp_backend *be, void *dst, amp_dtype dt, const float *src, size_t n,
                 amp_round_count *cnt);
    /* dst[n] = (accumulate ? dst : 0) + widen(round_dt(src)), counting like round. */
    int (*quantize)(amp_backend *be, float *dst, const float *src, size_t n, amp_dtype dt,
                    amp_round_count *cnt, int accumulate);
    /* dst[n] = (float)src(dt)[n], exact. */
    int (*widen)(amp_backend *be, float *dst, const void *src, amp_dtype dt, size_t n);
    /* out[n] = act(in[n]) (out may equal in) */
    int (*act_forward)(amp_backend *be, float *out, const float *in, size_t n, amp_act act);
    /* dz[n] = da[n] * act'(z[n]) */
    int (*act_backward)(amp_backend *be, float *dz, const float *da, const float *z, size_t n,
                        amp_act act);
    /* out[cols] = sum over rows of in[rows,cols] */
    int (*col_sum)(amp_backend *be, float *out, const float *in, int rows, int cols);
    /* Row-wise softmax cross-entropy in FP32. Adds the rows' losses to
     * stats->loss_sum and the argmax hits to stats->correct. When dlogits is
     * non-NULL writes dlogits = (softmax - onehot) * grad_scale. */
    int (*softmax_xent)(amp_backend *be, float *dlogits, amp_step_stats *stats, const float *logits,
                        const int32_t *labels, int rows, int cols, float grad_scale);
    /* Fused pass over grads: counts inf/NaN, multiplies by inv_scale (skipped
     * when it is 1), accumulates sumsq and maxabs of the finite results. */
    int (*unscale_check)(amp_backend *be, float *g, amp_step_stats *stats, size_t n,
                         float inv_scale);
    /* x[n] *= s */
    int (*scale)(amp_backend *be, float *x, size_t n, float s);
    /* One tensor's optimizer step. o->adamw = 0: SGD as torch.optim.SGD (L2
     * weight decay added to the gradient, no dampening; s0 the momentum,
     * which starts zeroed, as torch's first-step copy; s1 unused). 1: AdamW
     * as torch.optim.AdamW (s0, s1 the two moments). */
    int (*optim_step)(amp_backend *be, const amp_optim_step *o, float *w, float *s0, float *s1,
                      const float *g, size_t n);
    /* Bytes the device reports in use (cudaMemGetInfo); 0 on the CPU. */
    size_t (*device_bytes_used)(amp_backend *be);
    /* When the allocator overcommits (host malloc), allocations beyond what
     * the machine can back are granted and the process is OOM-killed on
     * first touch; this is that bound (physical RAM), so a model larger than
     * it is refused before allocating. 0 when alloc itself reports failure
     * (cudaMalloc). */
    double (*overcommit_limit)(amp_backend *be);

    /* The optional families, NULL where the backend lacks them: call their
     * ops through AMP_TRANSFORMER / AMP_CONV / AMP_FUSED, which fail with a
     * message naming the backend and the op instead of crashing. */
    const amp_transformer_ops *transformer; /* "transformer" */
    const amp_conv_ops *conv;               /* "conv" */
    const amp_fused_ops *fused;             /* each member optional, by its own name */
    const amp_scaled_ops *scaled;           /* "scaled" */
} amp_backend_ops;

/* One GEMM shape's path as the CPU backend chose it (cpu_gemm_tune.h). */
#define AMP_GEMM_MAX_CANDS 4
typedef struct amp_gemm_choice {
    char key[128];   /* the shape: amp_gemm_tune_key's text */
    char path[24];   /* the candidate that runs it: "onednn-f32", "onednn-bf16", ... */
    char source[12]; /* "measured", "cache", "checkpoint", or "only" (one candidate allowed) */
    int ncand;       /* candidates timed (0 unless measured here or in the cached run) */
    char cand[AMP_GEMM_MAX_CANDS][24];
    double ms[AMP_GEMM_MAX_CANDS]; /* each candidate's fastest time, ms */
} amp_gemm_choice;

/* [run] gemm_path / AMPTRAIN_GEMM_PATH: how 16-bit GEMM operands are fed. */
typedef enum amp_gemm_path {
    AMP_GEMM_PATH_AUTO = 0, /* 16-bit operands where a native kernel exists; paths by measurement */
    AMP_GEMM_PATH_WIDENED,  /* FP32 arrays of the rounded values into FP32 GEMMs */
    AMP_GEMM_PATH_NATIVE,   /* 16-bit operands into native 16-bit kernels only */
    AMP_GEMM_PATH_COUNT
} amp_gemm_path;
/* "auto", "widened", "native", NULL */
extern const char *const amp_gemm_path_names[AMP_GEMM_PATH_COUNT + 1];

/* What a backend runs, for summary.json, bench_step and the checkpoint's
 * warning when a run resumes on another path. Filled at creation (isa,
 * threads, widened_gemm) and as GEMMs run (gemm, scratch_bytes). */
typedef struct amp_backend_info {
    char isa[32];          /* instruction-set path: "avx512", "avx2", ...; "" when not reported */
    char isa_available[32]; /* the best path this machine supports */
    int threads;           /* threads of the element-wise kernels and GEMMs; 0 = not reported */
    char gemm[AMP_DTYPE_COUNT][128]; /* per GEMM input dtype: the kernel(s) that ran */
    /* bit (1u << dtype): GEMMs with 16-bit inputs of that dtype widen them to
     * FP32 first (no native 16-bit kernel), so a model does better to keep an
     * FP32 copy of its working weights (rounded through the dtype) once per
     * step than to have them widened at every GEMM */
    unsigned widened_gemm;
    size_t scratch_bytes;  /* peak backend-internal scratch (widened operands, GEMM library) */
    char gemm_path[16];    /* amp_gemm_path_names[...] in force; "" on a backend without a choice */
    unsigned native_gemm;  /* bit (1u << dtype): a native 16-bit GEMM kernel exists here */
    /* the CPU's GEMM paths by shape, as chosen so far (NULL, 0 on CUDA) */
    const amp_gemm_choice *gemm_choices;
    int n_gemm_choices;
} amp_backend_info;

struct amp_backend {
    const amp_backend_ops *ops;
    amp_device device;
    int allow_tf32; /* set by the core from the precision policy */
    int deterministic; /* [run] deterministic: only deterministic library algorithms (cuDNN) */
    amp_backend_info info;
    /* Host round trips so far: every download (it synchronises), every
     * upload from pageable host memory, and every value an op hands back to
     * the host (fp8_amax, nvfp4_quantize's s_dec, nvfp4_qdq's s_enc). The
     * CPU backend counts the same calls (they stand for those transfers), so
     * both report one count; the trainer reads it around forward/backward
     * (summary.json, backend.host_round_trips_per_step). */
    unsigned long long host_round_trips;
    void *impl;
    char err[512];
};

/* 1 when the backend offers `name`: a family ("transformer", "conv", "scaled") or
 * a fused op ("optim_step_cast", "optim_multi_step", "upload_round",
 * "act_backward_round", "fp8_gemm", "nvfp4_gemm", "round_act") or the conv family's
 * "batch_norm_x16", "conv2d_forward_round" and "conv2d_backward_round"; 0 otherwise
 * (unknown names included). */
int amp_backend_supports(const amp_backend *be, const char *name);
/* Sets be->err to "backend 'cpu' has no op 'NAME' (family 'FAMILY')" and
 * returns 1: what calling a missing op gives. */
int amp_backend_missing(amp_backend *be, const char *family, const char *op);
/* Checks what every gemm_ex implementation requires of a descriptor; 0,
 * or 1 with be->err. */
int amp_gemm_desc_check(amp_backend *be, const amp_gemm_desc *d);
/* Checks what every nvfp4_* op (op: its name) requires of a descriptor:
 * sizes >= 0, a known layout, the transform only in nvfp4_qdq down the
 * columns; 0, or 1 with be->err. */
int amp_nvfp4_desc_check(amp_backend *be, const amp_nvfp4_desc *d, const char *op);
/* Core ops: every backend has them. */
#define AMP_CALL(be, op, ...) ((be)->ops->op((be), __VA_ARGS__))
/* An op of an optional family or a fused op: fails with be->err naming
 * the backend and the op when the backend lacks it. */
#define AMP_TRANSFORMER(be, op, ...)                                                               \
    ((be)->ops->transformer ? (be)->ops->transformer->op((be), __VA_ARGS__)                        \
                            : amp_backend_missing((be), "transformer", #op))
#define AMP_CONV(be, op, ...)                                                                      \
    ((be)->ops->conv ? (be)->ops->conv->op((be), __VA_ARGS__)                                      \
                     : amp_backend_missing((be), "conv", #op))
/* In a function with `err` and `errlen` in scope: a call on backend `be`
 * that fails returns -1 with the backend's message. */
#define AMP_BE_TRY(be, expr)                                                                       \
    do {                                                                                           \
        if ((expr) != 0) {                                                                         \
            snprintf(err, errlen, "%s", (be)->err);                                                \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)
#define AMP_SCALED(be, op, ...)                                                                    \
    ((be)->ops->scaled ? (be)->ops->scaled->op((be), __VA_ARGS__)                                  \
                       : amp_backend_missing((be), "scaled", #op))
#define AMP_FUSED(be, op, ...)                                                                     \
    ((be)->ops->fused && (be)->ops->fused->op ? (be)->ops->fused->op((be), __VA_ARGS__)            \
                                              : amp_backend_missing((be), "fused", #op))

/* The CPU backend's GEMM path setting ([run] gemm_path, which wins over
 * AMPTRAIN_GEMM_PATH): sets info.gemm_path and info.widened_gemm, so call it
 * before a model is made. native on a CPU without a native 16-bit GEMM is
 * an error naming `what` (the key or variable). Other backends: 0, nothing
 * changes. 0 or -1 with err. */
int amp_backend_gemm_path(amp_backend *be, amp_gemm_path path, const char *what, char *err,
                          size_t errlen);
/* A resume's GEMM path for one shape key (amp_gemm_choice.key): the CPU
 * backend runs that shape on it instead of measuring, when it has that
 * candidate (else it warns and measures). Other backends: 0. */
int amp_backend_gemm_preload(amp_backend *be, const char *key, const char *path, char *err,
                             size_t errlen);

/* Constructors: NULL and a message in err when unavailable. */
amp_backend *amp_backend_cpu_create(char *err, size_t errlen);
/* Defined only when built with CUDA (AMP_HAVE_CUDA); otherwise a stub that
 * says so. */
amp_backend *amp_backend_cuda_create(char *err, size_t errlen);
/* 1 when built with CUDA and a device is visible. */
int amp_backend_cuda_available(void);
/* The cudaStream_t every op of a CUDA backend runs on, for code that orders
 * its own work against the backend's (NCCL in core/dist/); NULL for any
 * other backend and without CUDA. */
void *amp_backend_cuda_stream(amp_backend *be);
/* Why amp_backend_cuda_available() is 0: cudaGetDeviceCount's error, the
 * driver's and the runtime's CUDA versions, or that this build has no CUDA;
 * "" when a device is visible. Static storage, valid until the next call. */
const char *amp_backend_cuda_unavailable_reason(void);
/* Builds with CUDA: NAME in the CUDA module (libamptrain_cuda.so, opened on
 * first use; core/backend/backend_cuda_load.c), for the core code that
 * lives in it (core/dist/dist_nccl.c); NULL with err when it cannot. */
void *amp_cuda_module_symbol(const char *name, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
