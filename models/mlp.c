/* A multi-layer perceptron written once against the backend op table: the
 * same code runs on the CPU and the CUDA backend under any precision policy.
 * Layers are named fc1..fcN and laid out like PyTorch nn.Linear
 * (fcK.weight is [out, in], fcK.bias is [out]).
 *
 * [model] keys: hidden = 256,128 (widths of the hidden layers),
 * activation = relu | gelu | none (after every hidden layer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "rng.h"
#include "settings_table.h"

#define MLP_MAX_HIDDEN 64

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

typedef struct mlp_layer {
    int in, out;
    amp_act act;
    amp_layer_precision prec;
    size_t w_off, b_off; /* element offsets into the flat parameter arrays */
    /* A "wide" layer's GEMM dtype is 16-bit but the backend widens 16-bit
     * GEMM inputs to FP32 (be->info.widened_gemm): its GEMMs are fed FP32
     * arrays holding values rounded through the GEMM dtype (the same values
     * the backend would widen to), so the working weights are such an FP32
     * copy, rounded once per optimizer step, not widened at every GEMM. */
    int wide;
    amp_dtype w_store;   /* dtype of the w_work/b_work arrays */
    void *w_work;        /* [out, in] working weights, values in prec.param (aliases master for F32) */
    void *b_work;        /* [out] */
    void *z;             /* [batch, out] pre-activation in prec.activation; reused for dZ */
    void *a;             /* [batch, out] post-activation (aliases z without activation) */
} mlp_layer;

typedef struct mlp {
    int nlayers;
    mlp_layer *layers;    /* [nlayers] */
    int in_features, classes;
    void *x_in;           /* [batch, in] the batch rounded into fc1's GEMM dtype (m->x itself
                             when rounded on upload, or rounded in place when fc1 is F32 or
                             wide) */
    amp_dtype x_dtype;    /* fc1's GEMM dtype: the values x_in holds */
    amp_dtype x_store;    /* the dtype of the x_in array */
    float *f_y, *f_t;     /* [batch, widest] FP32 scratch */
    float *f_dz;          /* [batch, widest] FP32 dZ, alternating with f_t (16-bit activations) */
    float *f_w;           /* [largest weight] FP32 scratch for dW */
    float *f_bias;        /* [widest] */
    float *op_f32[2];     /* operand conversion scratch (mixed dtypes, wide layers) */
    void *op_16[2];
    size_t op_len;
} mlp;

static size_t dsize(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

/* "256,128" -> widths; each in [1, 1<<20]. */
static int parse_hidden(int *hidden, int *nhidden, amp_config *cfg, const char *text, char *err,
                        size_t errlen) {
    const char *where = NULL;
    amp_config_lookup(cfg, "model", "hidden", &where);
    if (!where) where = amp_config_path(cfg);
    *nhidden = 0;
    const char *p = text;
    while (*p) {
        char *end = NULL;
        long v = strtol(p, &end, 10);
        if (end == p || v < 1 || v > (1L << 20) || *nhidden >= MLP_MAX_HIDDEN) {
            snprintf(err, errlen,
                     "%s: [model] hidden = '%s': expected a comma-separated list of 1 to %d widths, "
                     "each in [1, 1048576] (e.g. 256,128)",
                     where, text, MLP_MAX_HIDDEN);
            return -1;
        }
        hidden[(*nhidden)++] = (int)v;
        while (*end == ' ') end++;
        if (*end == ',') end++;
        while (*end == ' ') end++;
        p = end;
    }
    if (*nhidden == 0) {
        snprintf(err, errlen, "%s: [model] hidden is empty; give at least one width (e.g. 256,128)",
                 where);
        return -1;
    }
    return 0;
}

typedef struct mlp_keys {
    const char *hidden;
    int act; /* amp_act */
} mlp_keys;

static const char *const mlp_acts[] = {"none", "relu", "gelu", NULL};
static const amp_setting mlp_settings[] = {
    {"model", "hidden", AMP_SETTING_STRING, "256,128", AMP_SETTING_AT(mlp_keys, hidden),
     .doc = "hidden widths, comma-separated (1 to " AMP_SETTING_TEXT(MLP_MAX_HIDDEN) " layers, each "
            "1..1048576)"},
    {"model", "activation", AMP_SETTING_CHOICE, "relu", .choices = mlp_acts,
     AMP_SETTING_AT(mlp_keys, act), .doc = "`relu`, `gelu` (exact erf form) or `none`"},
    {.key = NULL}};

static int read_keys(amp_config *cfg, int *hidden, int *nhidden, amp_act *act, char *err,
                     size_t errlen) {
    mlp_keys k;
    if (amp_settings_table_read(mlp_settings, &k, cfg, err, errlen) != 0) return -1;
    if (parse_hidden(hidden, nhidden, cfg, k.hidden, err, errlen) != 0) return -1;
    *act = (amp_act)k.act;
    return 0;
}

static int mlp_describe(amp_model_desc *d, amp_config *cfg, const amp_model_input *in, char *err,
                        size_t errlen) {
    int hidden[MLP_MAX_HIDDEN], nh = 0;
    amp_act act;
    if (read_keys(cfg, hidden, &nh, &act, err, errlen) != 0) return -1;
    if (in->x_is_tokens || in->targets != 1) {
        snprintf(err, errlen, "[model] name = mlp needs rows of features with one label each; "
                              "this dataset gives token sequences (use [model] name = gpt)");
        return -1;
    }
    int prev = in->features;
    for (int l = 0; l <= nh; l++) {
        int out = l == nh ? in->classes : hidden[l];
        char name[AMP_MODEL_NAME_MAX];
        snprintf(name, sizeof name, "fc%d", l + 1);
        unsigned ops = (1u << AMP_OP_GEMM) | (1u << AMP_OP_POINTWISE);
        if (amp_model_desc_add_layer(d, name, ops) != 0) goto oom;
        char pname[AMP_MODEL_NAME_MAX + 8];
        int64_t wshape[2] = {out, prev}, bshape[1] = {out};
        snprintf(pname, sizeof pname, "%s.weight", name);
        if (amp_model_desc_add_param(d, pname, l, 1, 2, wshape) != 0) goto oom;
        snprintf(pname, sizeof pname, "%s.bias", name);
        if (amp_model_desc_add_param(d, pname, l, 1, 1, bshape) != 0) goto oom;
        prev = out;
    }
    return 0;
oom:
    snprintf(err, errlen, "out of host memory");
    return -1;
}

static int mlp_create(amp_model *m, amp_config *cfg, char *err, size_t errlen) {
    int hidden[MLP_MAX_HIDDEN], nh = 0;
    amp_act act;
    if (read_keys(cfg, hidden, &nh, &act, err, errlen) != 0) return -1;
    mlp *p = calloc(1, sizeof *p);
    if (p) p->layers = calloc((size_t)m->desc.nlayers, sizeof *p->layers);
    if (!p || !p->layers) {
        if (p) free(p);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->impl = p;
    p->nlayers = m->desc.nlayers;
    p->in_features = m->input.features;
    p->classes = m->input.classes;
    for (int l = 0; l < p->nlayers; l++) {
        mlp_layer *L = &p->layers[l];
        const amp_param_desc *W = &m->desc.params[2 * l], *b = &m->desc.params[2 * l + 1];
        L->out = (int)W->shape[0];
        L->in = (int)W->shape[1];
        L->act = l == p->nlayers - 1 ? AMP_ACT_NONE : act;
        L->prec = m->prec[l];
        L->w_off = W->offset;
        L->b_off = b->offset;
    }
    p->x_dtype = p->layers[0].prec.compute[AMP_OP_GEMM];
    unsigned widened = m->be->info.widened_gemm;
    for (int l = 0; l < p->nlayers; l++) {
        mlp_layer *L = &p->layers[l];
        amp_dtype gd = L->prec.compute[AMP_OP_GEMM];
        L->wide = gd != AMP_DTYPE_F32 && ((widened >> gd) & 1u);
        L->w_store = L->wide ? AMP_DTYPE_F32 : L->prec.param;
    }
    /* A 16-bit fc1 takes the batch rounded on upload where the backend can
     * (no FP32 batch); otherwise the forward rounds the FP32 batch into x_in. */
    if (p->x_dtype != AMP_DTYPE_F32 && amp_backend_supports(m->be, "upload_round")) {
        m->x_dtype = p->x_dtype;
        m->x_round_layer = 0;
    }
    p->x_store = m->x_dtype != AMP_DTYPE_F32 || !p->layers[0].wide ? p->x_dtype : AMP_DTYPE_F32;
    return 0;
}

static void mlp_destroy(amp_model *m) {
    mlp *p = m->impl;
    if (!p) return;
    free(p->layers);
    free(p);
    m->impl = NULL;
}

/* dtype of the values that feed layer l's GEMM as X, and of their array */
static amp_dtype input_dtype(const mlp *p, int l) {
    return l == 0 ? p->x_dtype : p->layers[l - 1].prec.activation;
}
static amp_dtype input_store(const mlp *p, int l) {
    return l == 0 ? p->x_store : p->layers[l - 1].prec.activation;
}
/* the dtype layer l's GEMMs are fed */
static amp_dtype feed_dtype(const mlp_layer *L) {
    return L->wide ? AMP_DTYPE_F32 : L->prec.compute[AMP_OP_GEMM];
}

static void mlp_layout(amp_model *m) {
    mlp *p = m->impl;
    amp_arena *mem = m->mem;
    size_t B = (size_t)m->input.batch, widest = (size_t)p->in_features, largest = 0;
    int act_conversion = 0, w_conversion = 0, any16 = 0;
    for (int l = 0; l < p->nlayers; l++) {
        mlp_layer *L = &p->layers[l];
        if ((size_t)L->out > widest) widest = (size_t)L->out;
        if ((size_t)L->out * L->in > largest) largest = (size_t)L->out * L->in;
        amp_dtype gd = L->prec.compute[AMP_OP_GEMM], fd = feed_dtype(L);
        /* operands that are not already arrays of the feed dtype holding gd values */
        if (L->prec.activation != fd || input_store(p, l) != fd ||
            (gd != AMP_DTYPE_F32 && (L->prec.activation != gd || input_dtype(p, l) != gd)))
            act_conversion = 1;
        if (L->w_store != fd || (gd != AMP_DTYPE_F32 && L->prec.param != gd)) w_conversion = 1;
        if (L->prec.activation != AMP_DTYPE_F32) any16 = 1;
    }
    p->x_in = p->x_store == AMP_DTYPE_F32 || m->x_dtype != AMP_DTYPE_F32
                  ? m->x
                  : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * p->in_features * 2);
    for (int l = 0; l < p->nlayers; l++) {
        mlp_layer *L = &p->layers[l];
        size_t wn = (size_t)L->out * L->in, ws = dsize(L->w_store);
        if (L->prec.param == AMP_DTYPE_F32) {
            L->w_work = m->master ? m->master + L->w_off : NULL;
            L->b_work = m->master ? m->master + L->b_off : NULL;
        } else {
            L->w_work = amp_arena_take(&mem[AMP_MEM_WORKING], wn * ws);
            L->b_work = amp_arena_take(&mem[AMP_MEM_WORKING], (size_t)L->out * ws);
        }
        size_t an = B * (size_t)L->out * dsize(L->prec.activation);
        L->z = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], an);
        L->a = L->act == AMP_ACT_NONE ? L->z : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], an);
    }
    p->f_y = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * widest * 4);
    p->f_t = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * widest * 4);
    p->f_dz = amp_arena_take(&mem[AMP_MEM_WORKSPACE], any16 ? B * widest * 4 : 0);
    p->f_w = amp_arena_take(&mem[AMP_MEM_WORKSPACE], largest * 4);
    p->f_bias = amp_arena_take(&mem[AMP_MEM_WORKSPACE], widest * 4);
    p->op_len = w_conversion ? (largest > B * widest ? largest : B * widest)
                : act_conversion ? B * widest : 0;
    for (int i = 0; i < 2; i++) {
        p->op_f32[i] = amp_arena_take(&mem[AMP_MEM_WORKSPACE], p->op_len * 4);
        p->op_16[i] = amp_arena_take(&mem[AMP_MEM_WORKSPACE], p->op_len * 2);
    }
}

/* PyTorch nn.Linear's default init: U(-1/sqrt(in), 1/sqrt(in)) for weights
 * and biases, from the seed. */
static int mlp_init_params(amp_model *m, uint64_t seed) {
    mlp *p = m->impl;
    float *host = malloc(m->desc.nparams * sizeof(float));
    if (!host) {
        snprintf(m->be->err, sizeof m->be->err, "out of host memory");
        return -1;
    }
    amp_rng rng;
    amp_rng_seed(&rng, seed);
    for (int l = 0; l < p->nlayers; l++) {
        const mlp_layer *L = &p->layers[l];
        double bound = 1.0 / sqrt((double)L->in);
        size_t n = (size_t)L->out * L->in + (size_t)L->out; /* weight then bias, contiguous */
        for (size_t i = 0; i < n; i++)
            host[L->w_off + i] = (float)((2.0 * amp_rng_uniform(&rng) - 1.0) * bound);
    }
    int rc = m->be->ops->upload(m->be, m->master, host, m->desc.nparams * sizeof(float));
    free(host);
    return rc;
}

static int mlp_working_copy(amp_model *m, int tensor, amp_working_copy *wc) {
    const mlp *p = m->impl;
    const mlp_layer *L = &p->layers[tensor / 2]; /* fcL.weight, fcL.bias */
    if (L->prec.param == AMP_DTYPE_F32) return 0;
    *wc = (amp_working_copy){tensor % 2 ? L->b_work : L->w_work, L->prec.param, L->wide, tensor / 2};
    return 1;
}

static int mlp_cast_weights(amp_model *m) {
    mlp *p = m->impl;
    amp_backend *be = m->be;
    int reused = amp_model_cast_reuse(m);
    if (reused != 0) return reused < 0 ? -1 : 0;
    for (int l = 0; l < p->nlayers; l++) {
        mlp_layer *L = &p->layers[l];
        if (L->prec.param == AMP_DTYPE_F32) continue; /* working == master */
        amp_round_count *cnt = amp_model_rounds(m, l, AMP_ROUND_FWD);
        size_t wn = (size_t)L->out * L->in;
        if (L->wide) { /* FP32 arrays of the rounded values, counted the same */
            CHECK(be->ops->quantize(be, L->w_work, m->master + L->w_off, wn, L->prec.param, cnt, 0));
            CHECK(be->ops->quantize(be, L->b_work, m->master + L->b_off, (size_t)L->out,
                                    L->prec.param, cnt, 0));
            continue;
        }
        CHECK(be->ops->round(be, L->w_work, L->prec.param, m->master + L->w_off, wn, cnt));
        CHECK(be->ops->round(be, L->b_work, L->prec.param, m->master + L->b_off, (size_t)L->out,
                             cnt));
    }
    return 0;
}

/* A GEMM operand for layer L: an array of feed_dtype(L) holding the values
 * of src rounded through L's GEMM dtype gd. src is an array of dtype
 * `store` holding values of dtype `vals` (an FP32 array may hold rounded
 * values); `f32` (may be NULL) is an FP32 array with src's values, which
 * saves widening. Converts into scratch slot `slot` only when needed. */
static const void *operand(amp_model *m, const mlp_layer *L, int slot, const void *src,
                           amp_dtype store, amp_dtype vals, const float *f32, size_t n) {
    mlp *p = m->impl;
    amp_backend *be = m->be;
    amp_dtype gd = L->prec.compute[AMP_OP_GEMM], fd = feed_dtype(L);
    int rounds = gd != AMP_DTYPE_F32 && vals != gd; /* the values change */
    if (!rounds && store == fd) return src;
    if (!rounds && fd == AMP_DTYPE_F32 && f32) return f32;
    const float *wide = store == AMP_DTYPE_F32 ? src : f32;
    if (!wide) {
        if (be->ops->widen(be, p->op_f32[slot], src, store, n) != 0) return NULL;
        wide = p->op_f32[slot];
    }
    if (fd == AMP_DTYPE_F32) { /* wide layer, or an F32 GEMM fed 16-bit values */
        if (!rounds) return wide;
        if (be->ops->quantize(be, p->op_f32[slot], wide, n, gd, NULL, 0) != 0) return NULL;
        return p->op_f32[slot];
    }
    if (be->ops->round(be, p->op_16[slot], gd, wide, n, NULL) != 0) return NULL;
    return p->op_16[slot];
}

/* layer l forward: z = round(x W^T + b), a = round(act(z)); one GEMM call
 * with the bias/activation/rounding epilogue. */
static int linear_forward(amp_model *m, int l, int rows) {
    mlp *p = m->impl;
    amp_backend *be = m->be;
    mlp_layer *L = &p->layers[l];
    const void *x = operand(m, L, 0, l == 0 ? p->x_in : p->layers[l - 1].a, input_store(p, l),
                            input_dtype(p, l), NULL, (size_t)rows * L->in);
    const void *w = operand(m, L, 1, L->w_work, L->w_store, L->prec.param, NULL,
                            (size_t)L->out * L->in);
    if (!x || !w) return -1;
    /* y[rows, out] = x[rows, in] . W[out, in]^T */
    amp_gemm_desc g = amp_gemm_plain(p->f_y, x, w, feed_dtype(L), AMP_GEMM_NT, rows, L->out, L->in);
    g.bias = L->b_work;
    g.bias_dtype = L->w_store;
    g.act = L->act;
    g.out = L->z;
    g.act_out = L->a;
    g.out_dtype = L->prec.activation;
    g.cnt = amp_model_rounds(m, l, AMP_ROUND_FWD);
    return AMP_CALL(be, gemm_ex, &g);
}

static int mlp_forward(amp_model *m, const amp_forward_args *a) {
    mlp *p = m->impl;
    amp_backend *be = m->be;
    int rows = a->rows, last = p->nlayers - 1;
    /* the batch rounded into fc1's GEMM dtype (in place, as FP32 values, when
     * fc1 is wide), unless the upload did that (m->x_dtype) */
    amp_round_count *xc = amp_model_rounds(m, 0, AMP_ROUND_FWD);
    size_t xn = (size_t)rows * p->in_features;
    if (m->x_dtype == AMP_DTYPE_F32) {
        if (p->x_store == AMP_DTYPE_F32)
            CHECK(be->ops->quantize(be, p->x_in, m->x, xn, p->x_dtype, xc, 0));
        else
            CHECK(be->ops->round(be, p->x_in, p->x_dtype, m->x, xn, xc));
    }
    for (int l = 0; l < p->nlayers; l++) CHECK(linear_forward(m, l, rows));
    size_t n = (size_t)rows * p->classes;
    /* softmax and loss run in FP32 whatever the policy (autocast's fp32 list) */
    CHECK(be->ops->widen(be, p->f_y, p->layers[last].a, p->layers[last].prec.activation, n));
    return be->ops->softmax_xent(be, a->for_backward ? p->f_t : NULL, m->stats, p->f_y, m->y, rows,
                                 p->classes, a->loss_grad_scale);
}

/* dZ of layer P (whose activation gradient dA the dX GEMM left in p->f_y),
 * stored over P->z in P's activation dtype, and its FP32 values in dz32:
 * dZ = round(quantize(dA) * act'(Z)), both roundings counted. */
static int act_backward(amp_model *m, mlp_layer *P, float *dz32, size_t n, amp_round_count *cnt) {
    mlp *p = m->impl;
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    amp_dtype ad = P->prec.activation;
    float *f32 = ad == AMP_DTYPE_F32 ? NULL : dz32;
    if (amp_backend_supports(be, "act_backward_round"))
        return AMP_FUSED(be, act_backward_round,
                         &(amp_act_round_args){P->z, f32, p->f_y, P->z, ad, n, P->act, cnt});
    /* the same math as separate ops */
    CHECK(op->quantize(be, p->f_y, p->f_y, n, ad, cnt, 0));
    CHECK(op->widen(be, dz32, P->z, ad, n));
    CHECK(op->act_backward(be, p->f_y, p->f_y, dz32, n, P->act));
    CHECK(op->round(be, P->z, ad, p->f_y, n, cnt));
    return f32 ? op->widen(be, f32, P->z, ad, n) : 0;
}

static int mlp_backward(amp_model *m, const amp_backward_args *a) {
    mlp *p = m->impl;
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    int rows = a->rows, last = p->nlayers - 1;
    /* dlogits (FP32, in f_t) are stored like an activation gradient; f_t
     * then holds their stored values as FP32 */
    mlp_layer *T = &p->layers[last];
    size_t tn = (size_t)rows * p->classes;
    CHECK(op->round(be, T->z, T->prec.activation, p->f_t, tn,
                    amp_model_rounds(m, last, AMP_ROUND_GRAD)));
    if (T->prec.activation != AMP_DTYPE_F32) CHECK(op->widen(be, p->f_t, T->z, T->prec.activation, tn));
    float *dz32 = p->f_t; /* FP32 values of the current layer's dZ (16-bit activations) */
    for (int l = last; l >= 0; l--) {
        mlp_layer *L = &p->layers[l];
        amp_dtype ad = L->prec.activation, pd = L->prec.param;
        amp_round_count *cnt = amp_model_rounds(m, l, AMP_ROUND_GRAD);
        size_t n = (size_t)rows * L->out, wn = (size_t)L->out * L->in;
        const float *dzf = ad == AMP_DTYPE_F32 ? L->z : dz32;
        const void *dz = operand(m, L, 0, L->z, ad, ad, dzf, n);
        const void *x = operand(m, L, 1, l == 0 ? p->x_in : p->layers[l - 1].a, input_store(p, l),
                                input_dtype(p, l), NULL, (size_t)rows * L->in);
        if (!dz || !x) return -1;
        /* dW[out, in] = dZ[rows, out]^T . X[rows, in]; the gradient of a
         * 16-bit working weight is itself 16-bit before it reaches FP32. The
         * first micro-batch's lands in grads directly (rounded there in
         * place: one pass over the weight-sized array fewer). */
        float *gdst = a->accumulate ? p->f_w : m->grads + L->w_off;
        amp_gemm_desc gw =
            amp_gemm_plain(gdst, dz, x, feed_dtype(L), AMP_GEMM_TN, L->out, L->in, rows);
        CHECK(AMP_CALL(be, gemm_ex, &gw));
        if (pd != AMP_DTYPE_F32 || a->accumulate)
            CHECK(op->quantize(be, m->grads + L->w_off, gdst, wn, pd, cnt, a->accumulate));
        CHECK(op->col_sum(be, p->f_bias, dzf, rows, L->out));
        CHECK(op->quantize(be, m->grads + L->b_off, p->f_bias, (size_t)L->out, pd, cnt,
                           a->accumulate));
        /* fcL.weight and fcL.bias (tensors 2l, 2l + 1) are final */
        CHECK(amp_model_grads_ready(m, 2 * l, 2));
        if (l == 0) break;
        mlp_layer *P = &p->layers[l - 1];
        amp_round_count *pcnt = amp_model_rounds(m, l - 1, AMP_ROUND_GRAD);
        size_t pn = (size_t)rows * L->in;
        const void *w = operand(m, L, 1, L->w_work, L->w_store, pd, NULL, wn);
        if (!w) return -1;
        /* dA[rows, in] = dZ[rows, out] . W[out, in], stored in P's activation dtype */
        amp_gemm_desc gx =
            amp_gemm_plain(p->f_y, dz, w, feed_dtype(L), AMP_GEMM_NN, rows, L->in, L->out);
        CHECK(AMP_CALL(be, gemm_ex, &gx));
        float *next = dz32 == p->f_t ? p->f_dz : p->f_t;
        if (P->prec.activation == AMP_DTYPE_F32) next = p->f_t; /* scratch for the composed ops */
        CHECK(act_backward(m, P, next, pn, pcnt)); /* dZ replaces Z */
        dz32 = next;
    }
    return 0;
}

const amp_model_ops amp_model_mlp = {
    .name = "mlp",
    .settings = mlp_settings,
    .describe = mlp_describe,
    .create = mlp_create,
    .layout = mlp_layout,
    .destroy = mlp_destroy,
    .init_params = mlp_init_params,
    .cast_weights = mlp_cast_weights,
    .working_copy = mlp_working_copy,
    .forward = mlp_forward,
    .backward = mlp_backward,
};
