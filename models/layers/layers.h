/* The layer kit: the objects a model is written with (Linear, LayerNorm,
 * Embedding, the attention block, the input batch), in the style of
 * llm.c's gpt2_forward: a model's forward and backward are explicit calls
 * on these objects and never look at a dtype, a backend's capabilities or
 * a working copy. Everything that depends on the number format lives here:
 *
 *   - an object owns its rows of the parameter table (it finds them by
 *     name) and their init rule; amp_kit_init_params writes every tensor
 *     in table order from one seeded RNG;
 *   - an object owns the working copy of its weights (the master weights
 *     cast once per optimizer step by amp_kit_cast_weights, or written by
 *     the optimizer itself through amp_kit_working_copy and
 *     amp_model_cast_reuse);
 *   - the dtype of every operand comes from the layer's resolved precision
 *     (amp_layer_precision), and whether a 16-bit GEMM is fed its own
 *     dtype or FP32 arrays of its values (where the backend widens 16-bit
 *     GEMM inputs anyway) is decided here, once, at init;
 *   - every rounding point counts into the owning layer's telemetry slot
 *     (amp_model_rounds).
 *
 * A model uses it in four places: create() calls amp_kit_create and the
 * objects' *_init (order matters only for the scratch plan, not for the
 * bits); layout() takes its own activations with amp_kit_take and ends with
 * amp_kit_layout; destroy() calls amp_kit_free; its ops table names
 * amp_kit_init_params, amp_kit_cast_weights and amp_kit_working_copy.
 * The contract in prose, and how a number format plugs in: docs/layers.md. */
#ifndef AMP_LAYERS_H
#define AMP_LAYERS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* ---- the kit's state (one per model, m->kit) ------------------------------ */

/* Allocates m->kit for m->desc (host memory only). 0, or -1 and err. */
int amp_kit_create(amp_model *m, char *err, size_t errlen);
/* Carves the working copies, the operand/accumulator scratch and the
 * optimizer-cast counts; the last call of a model's layout (it runs twice,
 * measuring then for real, like the model's). */
void amp_kit_layout(amp_model *m);
void amp_kit_free(amp_model *m);

/* Bytes of one element of dt. */
size_t amp_dtype_bytes(amp_dtype dt);
/* n elements of dt from arena category `mem` (NULL while measuring). */
void *amp_kit_take(amp_model *m, amp_mem_category mem, size_t n, amp_dtype dt);
/* Tensor `tensor`'s index by name (-1 for none), the tensor's FP32 master
 * values and its gradient (NULL for tensor -1). */
int amp_kit_tensor(const amp_model *m, const char *name);
int amp_kit_layer(const amp_model *m, const char *name);
float *amp_kit_master(amp_model *m, int tensor);
float *amp_kit_grad(amp_model *m, int tensor);

/* ---- init rules and the frames of the ops table --------------------------- */

typedef enum amp_init_kind {
    AMP_INIT_NONE = 0,  /* not the kit's: the model writes it (an error here) */
    AMP_INIT_UNIFORM,   /* U(-a, a) */
    AMP_INIT_NORMAL,    /* N(0, a^2) */
    AMP_INIT_CONST      /* every element a, no draw */
} amp_init_kind;

/* Tensor `tensor` starts as `kind` with parameter a (the objects set
 * PyTorch's defaults; a model overrides, as nanoGPT does). */
void amp_kit_init_rule(amp_model *m, int tensor, amp_init_kind kind, double a);
/* amp_model_ops.init_params: every tensor by its rule, in table order,
 * from one RNG seeded with seed; one upload. */
int amp_kit_init_params(amp_model *m, uint64_t seed);
/* amp_model_ops.cast_weights: the master weights into every working copy
 * (counted in the weight's layer), unless the optimizer just wrote them. */
int amp_kit_cast_weights(amp_model *m);
/* amp_model_ops.working_copy. */
int amp_kit_working_copy(amp_model *m, int tensor, amp_working_copy *wc);

/* For cast_weights: when the last optimizer step already wrote the working
 * copies, adds that cast's counts to the stats record's forward counts and
 * returns 1; 0 when the model must cast; -1 on a backend error. */
int amp_model_cast_reuse(amp_model *m);
/* The optimizer's side of the fused cast (amp_backend_ops.optim_step_cast):
 * begin zeroes its counts and marks the copies stale, count is layer's
 * slot for them (dev), end marks them fresh when the step wrote them. */
int amp_kit_cast_begin(amp_model *m);
amp_round_count *amp_kit_cast_count(amp_model *m, int layer);
void amp_kit_cast_end(amp_model *m, int wrote);

/* ---- arrays and their values ------------------------------------------------ */

/* An array in backend memory and what it holds: `store` is its element
 * type, `vals` the dtype its values are exact in (an FP32 array may hold
 * 16-bit values), f32 an optional FP32 array of the same values. */
typedef struct amp_array {
    const void *p;
    amp_dtype store, vals;
    const float *f32;
} amp_array;

static inline amp_array amp_array_of(const void *p, amp_dtype dt) {
    amp_array a = {p, dt, dt, NULL};
    return a;
}

/* ---- Linear: y = act(x W^T + b), nn.Linear ------------------------------- */

/* Layer `name` and its tensors name.weight [out, in] and name.bias [out]
 * (when bias) appended to a description being built (decay: every tensor's
 * weight-decay flag); buffers come after every object's parameters
 * (describe.c). 0, or -1 when out of host memory. */
int amp_linear_describe(amp_model_desc *d, const char *name, int out, int in, int bias, int decay);

/* A scaled input kept for the weight gradient as its codes (backend
 * memory, the model's activations) and the scale it was quantized with
 * (host). */
typedef struct amp_format_keep {
    uint8_t *codes;
    float *scale;
} amp_format_keep;

typedef struct amp_linear {
    int layer;          /* precision, telemetry */
    int in, out, rows;  /* rows: the most per call */
    int w, b;           /* tensors; b = -1 without a bias */
    amp_act act;        /* fused into the GEMM's epilogue */
    amp_dtype gemm;     /* the layer's GEMM dtype */
    amp_dtype out_dt;   /* where its outputs (and their gradients) are stored */
    amp_dtype param;    /* the weight's working dtype (its own layer's param) */
    amp_dtype feed;     /* the arrays its GEMMs read: gemm, or F32 of gemm values */
    int want_f32;       /* its activation backward also keeps dY in FP32 */
    /* per amp_gemm_role: m->scaled's slot index of a per-tensor FP8 operand,
     * or -1; any >= 0 makes its GEMMs FP32 on dequantized values (scaled) */
    int fp8[AMP_ROLE_COUNT];
    int scaled;
    /* its input's family keeps codes (per-tensor FP8): the model may give
     * it `keep` (amp_linear_keep); then its dW reads them, not its x */
    int keeps;
    amp_format_keep keep; /* codes NULL: x as given is kept by the model */
    float keep_scale;
} amp_linear;

/* The Linear `name` (a layer of the table; tensors name.weight [out, in]
 * and name.bias when present) fed x as `x`'s dtypes, at most `rows` rows
 * per call; weight, when not NULL, names another tensor used as the weight
 * (a tied one). Default init: nn.Linear's U(+-1/sqrt(in)). */
int amp_linear_init(amp_model *m, amp_linear *L, const char *name, const char *weight, int rows,
                    amp_act act, amp_array x);
/* At layout: where L's input is in a family that keeps codes (per-tensor
 * FP8), takes rows * in bytes of the model's activations for them and
 * returns 1: L's forward writes its input's codes and scale there, its dW
 * reads them and never the x passed to it, so the model need not keep x
 * after L's forward. 0: the model keeps x as it gave it. */
int amp_linear_keep(amp_model *m, amp_linear *L);
/* L's dY comes stored without its FP32 copy (an attention's dqkv, not
 * amp_linear_grad_in's or act_backward's): plans the operand slots for
 * it, x as given to amp_linear_init. */
void amp_linear_bare_dy(amp_model *m, const amp_linear *L, amp_array x);
/* out[rows, out] = round(x W^T + b); act_out = round(act(out)) when act. */
int amp_linear_forward(amp_model *m, const amp_linear *L, void *out, void *act_out, amp_array x,
                       int rows);
/* dY from an FP32 gradient src[n] of L's output, rounded and counted as L
 * stores it: into dst (out_dt), or into dst32 as FP32 values where L's
 * GEMMs read FP32 (dst32 may be src). */
int amp_linear_grad_in(amp_model *m, const amp_linear *L, amp_array *dy, void *dst, float *dst32,
                       const float *src, size_t n);
/* dY through the activation from dA (FP32 [rows, out], overwritten):
 * dZ = round(quantize(dA) * act'(z)) over z (the forward's `out`). */
int amp_linear_act_backward(amp_model *m, const amp_linear *L, amp_array *dy, void *z, float *da,
                            int rows);
/* dW and db from dY and the forward's x, into the FP32 gradients (added
 * when accumulate); leaves *dy as the GEMM's operand for backward_data. */
int amp_linear_backward_weights(amp_model *m, const amp_linear *L, amp_array *dy, amp_array x,
                                int rows, int accumulate);
/* dx[rows, in] = dY W (FP32). */
int amp_linear_backward_data(amp_model *m, const amp_linear *L, float *dx, const amp_array *dy,
                             int rows);
/* Both (the weight gradients added), then L's tensors marked final
 * (amp_model_grads_ready). */
int amp_linear_backward_all(amp_model *m, const amp_linear *L, amp_array *dy, amp_array x, float *dx,
                            int rows);

/* ---- the input batch (m->x) as a Linear's operand ---------------------------- */

typedef struct amp_input {
    int layer;            /* the first Linear's */
    amp_dtype vals, store;
    void *x;              /* m->x, or a 16-bit copy */
} amp_input;

/* Plans the batch for the first Linear (layer `layer`): rounded on upload
 * where the backend can (m->x_dtype), else rounded by amp_input_forward. */
void amp_input_init(amp_model *m, amp_input *in, int layer);
void amp_input_layout(amp_model *m, amp_input *in);
int amp_input_forward(amp_model *m, const amp_input *in, int rows);
static inline amp_array amp_input_array(const amp_input *in) {
    amp_array a = {in->x, in->store, in->vals, NULL};
    return a;
}

/* ---- LayerNorm (nn.LayerNorm over the last dimension) ------------------------ */

/* Computes in FP32 on the FP32 master weights (autocast runs layer_norm in
 * FP32) and stores its output in its layer's activation dtype (the cast
 * the next GEMM's autocast would do). Owns its output and statistics. */
typedef struct amp_layernorm {
    int layer, C;
    int w, b;          /* tensors name.weight [C], name.bias (-1 without) */
    float eps;
    int rms;           /* RMSNorm: no mean, no bias (Llama's) */
    amp_dtype out_dt;
    void *out;         /* [rows, C] out_dt */
    float *mean, *rstd; /* [rows] */
} amp_layernorm;

/* Init: weight 1, bias 0 (PyTorch's). */
int amp_layernorm_init(amp_model *m, amp_layernorm *n, const char *name, float eps);
/* RMSNorm (Hugging Face's LlamaRMSNorm in FP32): x * rsqrt(mean(x^2) + eps)
 * * weight, on the same object and op (name.weight only; init 1). */
int amp_rmsnorm_init(amp_model *m, amp_layernorm *n, const char *name, float eps);
void amp_layernorm_layout(amp_model *m, amp_layernorm *n, int rows);
/* The same with its output in `out` when `given` (the model's workspace,
 * [rows, C] out_dt; NULL while the layout measures) where the only reader
 * keeps its own codes (amp_linear_keep): then nothing reads it after the
 * next layer's forward. */
void amp_layernorm_layout_out(amp_model *m, amp_layernorm *n, int rows, int given, void *out);
int amp_layernorm_forward(amp_model *m, const amp_layernorm *n, const float *x, int rows);
static inline amp_array amp_layernorm_output(const amp_layernorm *n) {
    return amp_array_of(n->out, n->out_dt);
}
/* dx[rows, C] += the input gradient, from dout (FP32, the gradient of the
 * output: rounded in place first as the output is stored, and counted) and
 * the forward's input x; the weight/bias gradients are added. */
int amp_layernorm_backward(amp_model *m, const amp_layernorm *n, float *dx, float *dout,
                           const float *x, int rows);

/* ---- Embedding: token + position (GPT-2's wte and wpe) ------------------------ */

/* FP32 lookups on the FP32 master weights (autocast leaves embeddings
 * alone); the tokens are m->x. Init N(0, std^2) (nn.Embedding: std 1). */
typedef struct amp_embedding {
    int wte, wpe;      /* tensors [V, C] and [T, C] (wpe -1: none, RoPE models) */
    int T, C;
    float *zero_pe, *dpe_sink; /* [T, C] without wpe (amp_embedding_layout) */
} amp_embedding;

int amp_embedding_init(amp_model *m, amp_embedding *e, const char *wte, const char *wpe,
                       double std);
/* Token embeddings alone (no position table: Llama's embed_tokens); its
 * model calls amp_embedding_layout. */
int amp_embedding_init_tokens(amp_model *m, amp_embedding *e, const char *wte, int T, double std);
void amp_embedding_layout(amp_model *m, amp_embedding *e);
/* out[rows * T, C] (FP32); rows: sequences */
int amp_embedding_forward(amp_model *m, const amp_embedding *e, float *out, int rows);
/* the weights' gradients += from dout (FP32) */
int amp_embedding_backward(amp_model *m, const amp_embedding *e, const float *dout, int rows);

/* ---- causal self-attention over a fused qkv (the backend's op) ----------------- */

/* Its two GEMMs in the layer's attention dtype, softmax in FP32, the
 * logits and the probabilities as rounding points. Owns the saved
 * probabilities and its output. */
typedef struct amp_attention {
    int layer, B, T, C, nh;
    amp_dtype dt;      /* compute[ATTENTION] */
    void *att;         /* [B, nh, T, T] dt */
    void *out;         /* [B * T, C] dt */
} amp_attention;

/* The attention layer `name` over qkv arriving as qkv's dtypes. */
int amp_attention_init(amp_model *m, amp_attention *a, const char *name, int T, int C, int nh,
                       amp_array qkv);
void amp_attention_layout(amp_model *m, amp_attention *a);
/* The same with its output in `out` when `given` ([B*T, C] dt; the
 * model's workspace) where its only reader keeps its own codes (its
 * backward never reads it). */
void amp_attention_layout_out(amp_model *m, amp_attention *a, int given, void *out);
/* rows: sequences of T (B of the batch or fewer) */
int amp_attention_forward(amp_model *m, const amp_attention *a, amp_array qkv, int rows);
static inline amp_array amp_attention_output(const amp_attention *a) {
    return amp_array_of(a->out, a->dt);
}
/* dqkv (*dy: valid until the next attention backward) from dout (FP32
 * [rows * T, C], rounded into dt and counted) and the forward's qkv. */
int amp_attention_backward(amp_model *m, const amp_attention *a, amp_array *dy, const float *dout,
                           amp_array qkv, int rows);

/* ---- SwiGLU MLP: down(silu(gate(x)) * up(x)) (Llama's) ------------------------- */

/* Three Linears, gate and up [I, C], down [C, I], around the backend's
 * swiglu op: silu(gate) rounded into gate's activation dtype, the product
 * rounded into it again (h), as autocast's F.silu and multiply do; those
 * roundings count into the gate's layer. Owns g, u and h. */
typedef struct amp_swiglu {
    amp_linear gate, up, down;
    int rows;
    amp_dtype h_dt;
    void *g, *u, *h;              /* [rows, I] the saved activations */
    float *dh, *dgate, *dy;       /* [rows, I] FP32 workspace (dy: a Linear's dY) */
    float *dx_up;                 /* [rows, C] the up branch's input gradient */
} amp_swiglu;

int amp_swiglu_init(amp_model *m, amp_swiglu *s, const char *gate, const char *up,
                    const char *down, int rows, amp_array x);
void amp_swiglu_layout(amp_model *m, amp_swiglu *s);
/* out[rows, C] (down.out_dt) from x. */
int amp_swiglu_forward(amp_model *m, const amp_swiglu *s, void *out, amp_array x, int rows);
/* From dout (FP32 [rows, C], the gradient of out; dout_16: FP32-sized room
 * for its rounded copy, may be dout): the three Linears' weight gradients
 * (added, marked final) and dx[rows, C] = the gradient of x (FP32). */
int amp_swiglu_backward(amp_model *m, const amp_swiglu *s, float *dx, float *dout, void *dout_16,
                        amp_array x, int rows);

/* ---- Llama's attention input: q/k/v projections, RoPE, grouped-query heads ----- */

/* Three Linears q [nh*hs, in], k and v [nkv*hs, in] and the backend's
 * qkv_pack into the attention's fused qkv (its dtype; the rounding counted
 * in the attention's layer), rotary embeddings on q and k when rope. Owns
 * the packed qkv (kept for the attention's backward). */
typedef struct amp_qkv {
    amp_linear q, k, v;
    int layer;                  /* the attention's */
    amp_dtype dt;               /* the attention's dtype */
    int rows, T, nh, nkv, hs, rope;
    float theta;
    void *qkv;                  /* [rows, 3 nh hs] dt */
    void *qo, *ko, *vo;         /* the Linears' outputs (workspace) */
    float *dq, *dk, *dv, *dy;   /* FP32 workspace; dy: a Linear's dY */
    float *dx2;                 /* [rows, in] a second input gradient */
} amp_qkv;

int amp_qkv_init(amp_model *m, amp_qkv *a, const char *q, const char *k, const char *v,
                 const char *attn, int rows, int T, int nh, int nkv, int rope, float theta,
                 amp_array x);
void amp_qkv_layout(amp_model *m, amp_qkv *a);
int amp_qkv_forward(amp_model *m, const amp_qkv *a, amp_array x, int rows);
static inline amp_array amp_qkv_output(const amp_qkv *a) { return amp_array_of(a->qkv, a->dt); }
/* From the attention's dqkv: the three Linears' weight gradients (added,
 * marked final) and dx[rows, in] (FP32). */
int amp_qkv_backward(amp_model *m, const amp_qkv *a, const amp_array *dqkv, float *dx, amp_array x,
                     int rows);

/* ---- the residual stream and the gradients ------------------------------------ */

/* out[n] = x[n] + d[n] (FP32 out and x; d widened exactly; out may be x). */
int amp_kit_residual(amp_model *m, float *out, const float *x, amp_array d, size_t n);
/* Zeroes the FP32 gradients (a backward that adds into all of them). */
int amp_kit_zero_grads(amp_model *m);

/* ---- softmax cross-entropy on a layer's logits ------------------------------ */

/* The logits (dt) widened into f32 and the FP32 loss; dlogits (FP32) when
 * not NULL. */
int amp_kit_xent(amp_model *m, float *dlogits, float *f32, const void *logits, amp_dtype dt,
                 int rows, int classes, float scale);

#endif
