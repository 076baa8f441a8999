/* GPT-2 as nanoGPT's model.py writes it, on the backend op table: token and
 * position embeddings, pre-LN blocks (ln_1, causal self-attention with
 * c_attn/c_proj, ln_2, MLP c_fc -> GELU -> c_proj), ln_f and an LM
 * head tied to the token embedding. Parameter names and layouts are
 * nanoGPT's state_dict ones (transformer.h.0.attn.c_attn.weight is
 * [3C, C]); lm_head.weight is transformer.wte.weight and is stored once.
 *
 * [model] keys: n_layer, n_head, n_embd, block_size (the context; the text
 * data cuts windows of this length), bias (biases in the Linears and
 * LayerNorms), activation (gelu: the exact erf form of nanoGPT's nn.GELU(),
 * the default; gelu_tanh: GPT-2's tanh approximation).
 *
 * Precision follows PyTorch autocast (llm.c's layout of buffers):
 *   - the embeddings, the residual stream and LayerNorm run in FP32 on the
 *     FP32 master weights (autocast leaves embedding lookups alone and runs
 *     layer_norm in FP32); a LayerNorm's output is stored in its layer's
 *     activation dtype (the cast the next GEMM's autocast would do);
 *   - every Linear is one descriptor GEMM in its layer's GEMM dtype with
 *     FP32 accumulation and a bias/GELU/rounding epilogue into the
 *     activation dtype, on a working copy of the weights in the param dtype;
 *     where the backend would widen 16-bit GEMM inputs to FP32 anyway
 *     (be->info.widened_gemm) the working copy is an FP32 array of the
 *     rounded values (cast once per step, not widened at every GEMM) and
 *     each 16-bit activation operand is widened once here, so the backward's
 *     dY serves its dW and dX GEMMs from one widening; the values, and so
 *     the bits, are those of the 16-bit GEMM;
 *   - attention runs its two GEMMs in the attention dtype, softmax in FP32,
 *     with the logits and the probabilities as rounding points;
 *   - cross-entropy runs in FP32 on the widened logits.
 * Every rounding into 16 bits is counted in its layer's telemetry slot
 * (forward values in AMP_ROUND_FWD, gradients in AMP_ROUND_GRAD).
 *
 * Memory: per block the residual input (FP32), ln_1/ln_2 outputs, qkv, the
 * attention probabilities [B, nh, T, T], the attention output, the c_proj
 * output and the MLP's pre- and post-GELU activations are kept for the
 * backward (the activation dtype), the LayerNorm statistics (FP32). The
 * residual after attention is not kept: the backward recomputes it from the
 * block input and the c_proj output (an exact FP32 add). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kernels/attention.h"
#include "layers/layers.h"
#include "model.h"
#include "rng.h"
#include "text.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

#define GPT_LN_EPS 1e-5f
#define NO_PARAM ((size_t)-1)

typedef struct gpt_keys {
    int n_layer, n_head, n_embd, block_size, bias;
    amp_act act; /* the MLP's GELU: AMP_ACT_GELU or AMP_ACT_GELU_TANH */
} gpt_keys;

/* One Linear (or the LM head): its layer, shape, parameters and working copies. */
typedef struct gpt_linear {
    int layer;                /* telemetry slot and precision */
    int in, out;
    size_t w_off, b_off;      /* b_off == NO_PARAM without a bias */
    amp_dtype gemm, act;      /* the layer's GEMM and activation dtypes */
    amp_dtype wdt;            /* the working copy's dtype (of its values) */
    int wide;                 /* the GEMM dtype is 16-bit and the backend widens it */
    amp_dtype wstore;         /* the working copy's array: F32 when wide, else wdt */
    int cast_layer;           /* whose FWD slot counts the working-copy rounding */
    void *w_work, *b_work;    /* aliases of the master weights when wdt is F32 */
} gpt_linear;

typedef struct gpt_norm {
    int layer;
    size_t w_off, b_off;      /* b_off == NO_PARAM without a bias */
    amp_dtype act;            /* where its output is stored */
} gpt_norm;

typedef struct gpt_block {
    gpt_norm ln1, ln2;
    gpt_linear c_attn, c_proj, c_fc, fc_proj;
    int attn_layer;
    amp_dtype adt;            /* attention dtype (compute[ATTENTION]) */
    /* saved for the backward */
    float *x;                 /* [N, C] the block's input (residual stream, FP32) */
    void *ln1_out;            /* [N, C] ln1.act */
    float *ln1_mean, *ln1_rstd; /* [N] */
    void *qkv;                /* [N, 3C] c_attn.act */
    void *att;                /* [B, nh, T, T] adt */
    void *atty;               /* [N, C] adt */
    void *proj;               /* [N, C] c_proj.act: the attention branch's output */
    void *ln2_out;            /* [N, C] ln2.act */
    float *ln2_mean, *ln2_rstd;
    void *fch, *fch_gelu;     /* [N, 4C] c_fc.act, before and after GELU */
} gpt_block;

typedef struct gpt {
    gpt_keys k;
    int B, T, C, V, N;        /* N = B * T rows */
    size_t wte_off, wpe_off;
    int wte_layer;
    gpt_block *blocks;        /* [n_layer] */
    gpt_norm ln_f;
    gpt_linear lm_head;       /* weight: wte's working copy */
    float *x_final;           /* [N, C] the residual stream after the last block */
    void *lnf_out;            /* [N, C] */
    float *lnf_mean, *lnf_rstd;
    /* workspace */
    float *f_acc;             /* [N, max(4C, V)] GEMM accumulators */
    float *f_w;               /* [largest weight] dW */
    float *f_b;               /* [max(4C, V)] db */
    float *f_t;               /* [N, max(4C, V)] widened copies */
    float *f_dx;              /* [N, 4C] input gradients */
    float *dres;              /* [N, C] the residual stream's gradient */
    float *x_mid;             /* [N, C] the residual after attention (recomputed) */
    float *f_logits, *f_dlogits; /* [N, V] FP32 */
    void *logits;             /* [N, V] lm_head.act */
    void *g_small;            /* [N, C] 16- or 32-bit gradient of a branch output */
    void *g_big;              /* [N, 4C] */
    void *g_qkv;              /* [N, 3C] */
    float *att_ws;            /* amp_attention_workspace_floats */
    float *op_f32[2];         /* operand conversions (only when a policy mixes dtypes) */
    void *op_16[2];
    size_t op_len;
    unsigned widened_gemm;    /* be->info.widened_gemm at create */
} gpt;

static size_t dsize(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

static int read_keys(amp_config *cfg, gpt_keys *k, char *err, size_t errlen) {
    int64_t v;
    if (amp_config_get_int(cfg, "model", "n_layer", 6, 1, 1024, &v, err, errlen) < 0) return -1;
    k->n_layer = (int)v;
    if (amp_config_get_int(cfg, "model", "n_head", 6, 1, 1024, &v, err, errlen) < 0) return -1;
    k->n_head = (int)v;
    if (amp_config_get_int(cfg, "model", "n_embd", 384, 1, 1 << 16, &v, err, errlen) < 0) return -1;
    k->n_embd = (int)v;
    if (amp_config_get_int(cfg, "model", "block_size", AMP_TEXT_DEFAULT_BLOCK, 1, 1 << 16, &v, err,
                           errlen) < 0)
        return -1;
    k->block_size = (int)v;
    if (amp_config_get_bool(cfg, "model", "bias", 0, &k->bias, err, errlen) < 0) return -1;
    /* nanoGPT's MLP is nn.GELU(), the erf form: its state_dict computes that function */
    static const char *const acts[] = {"gelu", "gelu_tanh", NULL};
    int idx = 0;
    if (amp_config_get_choice(cfg, "model", "activation", "gelu", acts, &idx, err, errlen) < 0)
        return -1;
    k->act = idx == 0 ? AMP_ACT_GELU : AMP_ACT_GELU_TANH;
    if (k->n_embd % k->n_head != 0) {
        const char *where = NULL;
        amp_config_lookup(cfg, "model", "n_head", &where);
        snprintf(err, errlen, "%s: [model] n_embd = %d does not split into n_head = %d heads; pick "
                 "n_head dividing n_embd", where ? where : amp_config_path(cfg), k->n_embd,
                 k->n_head);
        return -1;
    }
    return 0;
}

/* ---- describe: the parameter and layer tables ---------------------------- */

typedef struct builder {
    amp_model_desc *d;
    int bias;
    int fail;
} builder;

static int add_layer(builder *b, const char *name, unsigned classes) {
    if (amp_model_desc_add_layer(b->d, name, classes) != 0) b->fail = 1;
    return b->d->nlayers - 1;
}

static void add_param(builder *b, const char *prefix, const char *what, int layer, int decay,
                      int ndim, int64_t d0, int64_t d1) {
    char name[AMP_MODEL_NAME_MAX];
    int64_t shape[2] = {d0, d1};
    snprintf(name, sizeof name, "%s.%s", prefix, what);
    if (amp_model_desc_add_param(b->d, name, layer, decay, ndim, shape) != 0) b->fail = 1;
}

/* A Linear: weight [out, in] decays (2-D), bias [out] does not. */
static void add_linear(builder *b, const char *name, int in, int out, unsigned extra) {
    int l = add_layer(b, name, (1u << AMP_OP_GEMM) | extra);
    add_param(b, name, "weight", l, 1, 2, out, in);
    if (b->bias) add_param(b, name, "bias", l, 0, 1, out, 0);
}

static void add_norm(builder *b, const char *name, int C) {
    int l = add_layer(b, name, 1u << AMP_OP_NORM);
    add_param(b, name, "weight", l, 0, 1, C, 0);
    if (b->bias) add_param(b, name, "bias", l, 0, 1, C, 0);
}

static int gpt_describe(amp_model_desc *d, amp_config *cfg, const amp_model_input *in, char *err,
                        size_t errlen) {
    gpt_keys k;
    if (read_keys(cfg, &k, err, errlen) != 0) return -1;
    if (!in->x_is_tokens) {
        snprintf(err, errlen, "[model] name = gpt needs token sequences; set [data] dataset = text");
        return -1;
    }
    if (in->features != k.block_size || in->targets != k.block_size) {
        snprintf(err, errlen, "[model] name = gpt: the data gives windows of %d tokens but "
                 "block_size is %d", in->features, k.block_size);
        return -1;
    }
    int C = k.n_embd, V = in->classes;
    builder b = {d, k.bias, 0};
    /* transformer.wte is also the LM head's weight (tied; nanoGPT's state_dict
     * holds it under both names, safetensors' save_model under lm_head.weight) */
    int wte = add_layer(&b, "transformer.wte", (1u << AMP_OP_POINTWISE) | (1u << AMP_OP_GEMM));
    add_param(&b, "transformer.wte", "weight", wte, 1, 2, V, C);
    if (!b.fail) amp_model_desc_tie_last(d, "lm_head.weight");
    int wpe = add_layer(&b, "transformer.wpe", 1u << AMP_OP_POINTWISE);
    add_param(&b, "transformer.wpe", "weight", wpe, 1, 2, k.block_size, C);
    for (int i = 0; i < k.n_layer; i++) {
        char p[AMP_MODEL_NAME_MAX];
#define NAME(s) (snprintf(p, sizeof p, "transformer.h.%d." s, i), p)
        add_norm(&b, NAME("ln_1"), C);
        add_linear(&b, NAME("attn.c_attn"), C, 3 * C, 0);
        add_layer(&b, NAME("attn"), (1u << AMP_OP_ATTENTION) | (1u << AMP_OP_SOFTMAX));
        add_linear(&b, NAME("attn.c_proj"), C, C, 0);
        add_norm(&b, NAME("ln_2"), C);
        add_linear(&b, NAME("mlp.c_fc"), C, 4 * C, 1u << AMP_OP_POINTWISE);
        add_linear(&b, NAME("mlp.c_proj"), 4 * C, C, 0);
#undef NAME
    }
    add_norm(&b, "transformer.ln_f", C);
    add_layer(&b, "lm_head", 1u << AMP_OP_GEMM);
    if (b.fail) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    return 0;
}

/* ---- create / layout --------------------------------------------------------- */

static size_t param_off(const amp_model *m, const char *name) {
    int i = amp_model_desc_find(&m->desc, name);
    return i < 0 ? NO_PARAM : m->desc.params[i].offset;
}

static int layer_index(const amp_model *m, const char *name) {
    for (int l = 0; l < m->desc.nlayers; l++)
        if (strcmp(m->desc.layers[l].name, name) == 0) return l;
    return -1;
}

static void init_linear(const amp_model *m, gpt_linear *L, const char *name, int in, int out) {
    char p[AMP_MODEL_NAME_MAX + 16];
    L->layer = layer_index(m, name);
    L->cast_layer = L->layer;
    L->in = in;
    L->out = out;
    snprintf(p, sizeof p, "%s.weight", name);
    L->w_off = param_off(m, p);
    snprintf(p, sizeof p, "%s.bias", name);
    L->b_off = param_off(m, p);
    const amp_layer_precision *pr = &m->prec[L->layer];
    L->gemm = pr->compute[AMP_OP_GEMM];
    L->act = pr->activation;
    L->wdt = pr->param;
}

static void set_wide(const gpt *g, gpt_linear *L) {
    L->wide = L->gemm != AMP_DTYPE_F32 && ((g->widened_gemm >> L->gemm) & 1u);
    L->wstore = L->wide && L->wdt != AMP_DTYPE_F32 ? AMP_DTYPE_F32 : L->wdt;
}

static void init_norm(const amp_model *m, gpt_norm *n, const char *name) {
    char p[AMP_MODEL_NAME_MAX + 16];
    n->layer = layer_index(m, name);
    snprintf(p, sizeof p, "%s.weight", name);
    n->w_off = param_off(m, p);
    snprintf(p, sizeof p, "%s.bias", name);
    n->b_off = param_off(m, p);
    n->act = m->prec[n->layer].activation;
}

static int gpt_create(amp_model *m, amp_config *cfg, char *err, size_t errlen) {
    gpt *g = calloc(1, sizeof *g);
    if (!g || read_keys(cfg, &g->k, err, errlen) != 0) {
        if (!g) snprintf(err, errlen, "out of host memory");
        free(g);
        return -1;
    }
    g->blocks = calloc((size_t)g->k.n_layer, sizeof *g->blocks);
    if (!g->blocks) {
        free(g);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->impl = g;
    if (amp_kit_create(m, err, errlen) != 0) return -1;
    g->B = m->input.batch;
    g->T = m->input.features;
    g->C = g->k.n_embd;
    g->V = m->input.classes;
    g->N = g->B * g->T;
    g->widened_gemm = m->be->info.widened_gemm;
    int C = g->C;
    g->wte_off = param_off(m, "transformer.wte.weight");
    g->wpe_off = param_off(m, "transformer.wpe.weight");
    g->wte_layer = layer_index(m, "transformer.wte");
    for (int i = 0; i < g->k.n_layer; i++) {
        gpt_block *b = &g->blocks[i];
        char p[AMP_MODEL_NAME_MAX];
#define NAME(s) (snprintf(p, sizeof p, "transformer.h.%d." s, i), p)
        init_norm(m, &b->ln1, NAME("ln_1"));
        init_linear(m, &b->c_attn, NAME("attn.c_attn"), C, 3 * C);
        b->attn_layer = layer_index(m, NAME("attn"));
        init_linear(m, &b->c_proj, NAME("attn.c_proj"), C, C);
        init_norm(m, &b->ln2, NAME("ln_2"));
        init_linear(m, &b->c_fc, NAME("mlp.c_fc"), C, 4 * C);
        init_linear(m, &b->fc_proj, NAME("mlp.c_proj"), 4 * C, C);
#undef NAME
        b->adt = m->prec[b->attn_layer].compute[AMP_OP_ATTENTION];
        set_wide(g, &b->c_attn);
        set_wide(g, &b->c_proj);
        set_wide(g, &b->c_fc);
        set_wide(g, &b->fc_proj);
    }
    init_norm(m, &g->ln_f, "transformer.ln_f");
    /* The LM head runs in its own layer's GEMM dtype on the tied weight,
     * whose working copy is the wte layer's (counted there). */
    gpt_linear *h = &g->lm_head;
    h->layer = layer_index(m, "lm_head");
    h->in = C;
    h->out = g->V;
    h->w_off = g->wte_off;
    h->b_off = NO_PARAM;
    h->gemm = m->prec[h->layer].compute[AMP_OP_GEMM];
    h->act = m->prec[h->layer].activation;
    h->wdt = m->prec[g->wte_layer].param;
    h->cast_layer = g->wte_layer;
    set_wide(g, h);
    return 0;
}

static void gpt_destroy(amp_model *m) {
    gpt *g = m->impl;
    if (!g) return;
    amp_kit_free(m);
    free(g->blocks);
    free(g);
    m->impl = NULL;
}

static void take_working(amp_model *m, gpt_linear *L) {
    amp_arena *mem = m->mem;
    size_t wn = (size_t)L->in * L->out;
    if (L->wdt == AMP_DTYPE_F32) {
        L->w_work = m->master ? m->master + L->w_off : NULL;
        L->b_work = m->master && L->b_off != NO_PARAM ? m->master + L->b_off : NULL;
    } else {
        size_t es = dsize(L->wstore);
        L->w_work = amp_arena_take(&mem[AMP_MEM_WORKING], wn * es);
        L->b_work = L->b_off != NO_PARAM ? amp_arena_take(&mem[AMP_MEM_WORKING], (size_t)L->out * es)
                                         : NULL;
    }
}

/* 1 when some GEMM operand is stored in another dtype than its GEMM runs in
 * (only a policy with per-layer overrides mixes them). */
static int mixed_dtypes(const gpt *g) {
    int mixed = 0;
    for (int i = 0; i < g->k.n_layer; i++) {
        const gpt_block *b = &g->blocks[i];
        const gpt_linear *Ls[4] = {&b->c_attn, &b->c_proj, &b->c_fc, &b->fc_proj};
        amp_dtype ins[4] = {b->ln1.act, b->adt, b->ln2.act, b->c_fc.act};
        for (int j = 0; j < 4; j++)
            mixed |= Ls[j]->wdt != Ls[j]->gemm || Ls[j]->act != Ls[j]->gemm || ins[j] != Ls[j]->gemm;
        mixed |= b->c_attn.act != b->adt;
    }
    mixed |= g->lm_head.wdt != g->lm_head.gemm || g->lm_head.act != g->lm_head.gemm ||
             g->ln_f.act != g->lm_head.gemm;
    return mixed;
}

static void gpt_layout(amp_model *m) {
    gpt *g = m->impl;
    amp_arena *mem = m->mem;
    size_t N = (size_t)g->N, C = (size_t)g->C, V = (size_t)g->V;
    size_t att = (size_t)g->B * g->k.n_head * g->T * g->T;
    amp_arena *A = &mem[AMP_MEM_ACTIVATIONS], *W = &mem[AMP_MEM_WORKSPACE];
    for (int i = 0; i < g->k.n_layer; i++) {
        gpt_block *b = &g->blocks[i];
        take_working(m, &b->c_attn);
        take_working(m, &b->c_proj);
        take_working(m, &b->c_fc);
        take_working(m, &b->fc_proj);
    }
    take_working(m, &g->lm_head);
    for (int i = 0; i < g->k.n_layer; i++) {
        gpt_block *b = &g->blocks[i];
        b->x = amp_arena_take(A, N * C * 4);
        b->ln1_out = amp_arena_take(A, N * C * dsize(b->ln1.act));
        b->ln1_mean = amp_arena_take(A, N * 4);
        b->ln1_rstd = amp_arena_take(A, N * 4);
        b->qkv = amp_arena_take(A, N * 3 * C * dsize(b->c_attn.act));
        b->att = amp_arena_take(A, att * dsize(b->adt));
        b->atty = amp_arena_take(A, N * C * dsize(b->adt));
        b->proj = amp_arena_take(A, N * C * dsize(b->c_proj.act));
        b->ln2_out = amp_arena_take(A, N * C * dsize(b->ln2.act));
        b->ln2_mean = amp_arena_take(A, N * 4);
        b->ln2_rstd = amp_arena_take(A, N * 4);
        b->fch = amp_arena_take(A, N * 4 * C * dsize(b->c_fc.act));
        b->fch_gelu = amp_arena_take(A, N * 4 * C * dsize(b->c_fc.act));
    }
    g->x_final = amp_arena_take(A, N * C * 4);
    g->lnf_out = amp_arena_take(A, N * C * dsize(g->ln_f.act));
    g->lnf_mean = amp_arena_take(A, N * 4);
    g->lnf_rstd = amp_arena_take(A, N * 4);
    size_t wide = 4 * C > V ? 4 * C : V;
    size_t largest = 4 * C * C > V * C ? 4 * C * C : V * C;
    g->f_acc = amp_arena_take(W, N * wide * 4);
    g->f_w = amp_arena_take(W, largest * 4);
    g->f_b = amp_arena_take(W, wide * 4);
    g->f_t = amp_arena_take(W, N * wide * 4);
    g->f_dx = amp_arena_take(W, N * 4 * C * 4);
    g->dres = amp_arena_take(W, N * C * 4);
    g->x_mid = amp_arena_take(W, N * C * 4);
    g->f_logits = amp_arena_take(W, N * V * 4);
    g->f_dlogits = amp_arena_take(W, N * V * 4);
    g->logits = amp_arena_take(W, N * V * dsize(g->lm_head.act));
    g->g_small = amp_arena_take(W, N * C * 4);
    g->g_big = amp_arena_take(W, N * 4 * C * 4);
    g->g_qkv = amp_arena_take(W, N * 3 * C * 4);
    g->att_ws = amp_arena_take(W, amp_attention_workspace_floats(g->B, g->T, g->C, g->k.n_head) * 4);
    int any_wide = g->lm_head.wide;
    for (int i = 0; i < g->k.n_layer; i++) {
        const gpt_block *b = &g->blocks[i];
        any_wide |= b->c_attn.wide | b->c_proj.wide | b->c_fc.wide | b->fc_proj.wide;
    }
    g->op_len = mixed_dtypes(g) || any_wide ? (N * wide > largest ? N * wide : largest) : 0;
    for (int i = 0; i < 2; i++) {
        g->op_f32[i] = amp_arena_take(W, g->op_len * 4);
        g->op_16[i] = amp_arena_take(W, g->op_len * 2);
    }
    amp_kit_layout(m);
}

/* ---- init and casts ------------------------------------------------------------ */

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* GPT-2's init as nanoGPT writes it: weights N(0, 0.02), the residual
 * projections N(0, 0.02/sqrt(2 n_layer)), biases 0, LayerNorm weights 1. */
static int gpt_init_params(amp_model *m, uint64_t seed) {
    gpt *g = m->impl;
    const amp_model_desc *d = &m->desc;
    float *host = malloc(d->nparams * sizeof(float));
    if (!host) {
        snprintf(m->be->err, sizeof m->be->err, "out of host memory");
        return -1;
    }
    amp_rng rng;
    amp_rng_seed(&rng, seed);
    double proj_std = 0.02 / sqrt(2.0 * g->k.n_layer);
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        float *w = host + P->offset;
        int is_norm = strstr(P->name, ".ln_") != NULL;
        if (ends_with(P->name, ".bias")) {
            for (size_t j = 0; j < P->numel; j++) w[j] = 0.0f;
        } else if (is_norm) {
            for (size_t j = 0; j < P->numel; j++) w[j] = 1.0f;
        } else {
            double std = ends_with(P->name, "c_proj.weight") ? proj_std : 0.02;
            for (size_t j = 0; j < P->numel; j++) w[j] = (float)(std * amp_rng_normal(&rng));
        }
    }
    int rc = m->be->ops->upload(m->be, m->master, host, d->nparams * sizeof(float));
    free(host);
    return rc;
}

static int cast_linear(amp_model *m, const gpt_linear *L) {
    amp_backend *be = m->be;
    if (L->wdt == AMP_DTYPE_F32) return 0; /* working == master */
    amp_round_count *cnt = amp_model_rounds(m, L->cast_layer, AMP_ROUND_FWD);
    size_t wn = (size_t)L->in * L->out;
    if (L->wstore == AMP_DTYPE_F32) { /* wide: the rounded values, widened once */
        CHECK(be->ops->quantize(be, L->w_work, m->master + L->w_off, wn, L->wdt, cnt, 0));
        if (L->b_off != NO_PARAM)
            CHECK(be->ops->quantize(be, L->b_work, m->master + L->b_off, (size_t)L->out, L->wdt,
                                    cnt, 0));
        return 0;
    }
    CHECK(be->ops->round(be, L->w_work, L->wdt, m->master + L->w_off, wn, cnt));
    if (L->b_off != NO_PARAM)
        CHECK(be->ops->round(be, L->b_work, L->wdt, m->master + L->b_off, (size_t)L->out, cnt));
    return 0;
}

/* Linear layer i of the 4 n_layer + 1: c_attn, c_proj, c_fc, fc_proj of
 * each block, then the LM head. */
static const gpt_linear *nth_linear(const gpt *g, int i) {
    if (i == 4 * g->k.n_layer) return &g->lm_head;
    const gpt_block *b = &g->blocks[i / 4];
    const gpt_linear *Ls[4] = {&b->c_attn, &b->c_proj, &b->c_fc, &b->fc_proj};
    return Ls[i % 4];
}

/* The linear whose working copy holds tensor `off` (weight or bias), or NULL. */
static const gpt_linear *linear_of(const gpt *g, size_t off, int *is_bias) {
    for (int i = 0; i <= 4 * g->k.n_layer; i++) {
        const gpt_linear *L = nth_linear(g, i);
        if (L->w_off == off) return *is_bias = 0, L;
        if (L->b_off != NO_PARAM && L->b_off == off) return *is_bias = 1, L;
    }
    return NULL;
}

/* The tied transformer.wte's working copy is the LM head's. */
static int gpt_working_copy(amp_model *m, int tensor, amp_working_copy *wc) {
    int bias = 0;
    const gpt_linear *L = linear_of(m->impl, m->desc.params[tensor].offset, &bias);
    if (!L || L->wdt == AMP_DTYPE_F32) return 0;
    *wc = (amp_working_copy){bias ? L->b_work : L->w_work, L->wdt, L->wstore == AMP_DTYPE_F32,
                             L->cast_layer};
    return 1;
}

static int gpt_cast_weights(amp_model *m) {
    gpt *g = m->impl;
    int reused = amp_model_cast_reuse(m);
    if (reused != 0) return reused < 0 ? -1 : 0;
    for (int i = 0; i <= 4 * g->k.n_layer; i++) CHECK(cast_linear(m, nth_linear(g, i)));
    return 0;
}

/* ---- forward ------------------------------------------------------------------ */

/* src as dtype `want` (a GEMM operand): src itself, or a conversion into
 * scratch slot `slot` (only under a policy that mixes dtypes). */
static const void *operand(amp_model *m, int slot, const void *src, amp_dtype have, amp_dtype want,
                           size_t n) {
    gpt *g = m->impl;
    amp_backend *be = m->be;
    if (have == want) return src;
    if (n > g->op_len) {
        snprintf(be->err, sizeof be->err, "gpt: operand conversion of %zu elements exceeds the "
                 "scratch of %zu (a dtype mix the layout did not plan for)", n, g->op_len);
        return NULL;
    }
    const float *wide = src;
    if (have != AMP_DTYPE_F32) {
        if (be->ops->widen(be, g->op_f32[slot], src, have, n) != 0) return NULL;
        wide = g->op_f32[slot];
    }
    if (want == AMP_DTYPE_F32) return wide;
    if (be->ops->round(be, g->op_16[slot], want, wide, n, NULL) != 0) return NULL;
    return g->op_16[slot];
}

/* A GEMM operand of L: src stored as `store` holding values of dtype
 * `vals`. Without L->wide, operand() into L->gemm. With it, the GEMM runs
 * on FP32 arrays of values rounded through L->gemm (what the backend's
 * widening would give): src itself when it is such an array, else its
 * widening (and, under a policy that mixes dtypes, rounding) into the FP32
 * scratch of `slot`. */
static const void *gemm_operand(amp_model *m, const gpt_linear *L, int slot, const void *src,
                                amp_dtype store, amp_dtype vals, size_t n) {
    gpt *g = m->impl;
    amp_backend *be = m->be;
    if (!L->wide) return operand(m, slot, src, store, L->gemm, n);
    if (store == AMP_DTYPE_F32 && vals == L->gemm) return src;
    if (n > g->op_len) {
        snprintf(be->err, sizeof be->err, "gpt: operand widening of %zu elements exceeds the "
                 "scratch of %zu", n, g->op_len);
        return NULL;
    }
    float *f = g->op_f32[slot];
    if (store != AMP_DTYPE_F32) {
        if (be->ops->widen(be, f, src, store, n) != 0) return NULL;
        src = f;
    }
    if (vals == L->gemm) return src;
    if (be->ops->quantize(be, f, src, n, L->gemm, NULL, 0) != 0) return NULL;
    return f;
}

static amp_dtype gemm_dtype(const gpt_linear *L) { return L->wide ? AMP_DTYPE_F32 : L->gemm; }

/* out(L->act)[rows, out] = round(x W^T + b), and act_out = round(act(out))
 * when act != NONE: one GEMM with the epilogue. */
static int linear_forward(amp_model *m, const gpt_linear *L, const void *x, amp_dtype x_dt,
                          int rows, void *out, amp_act act, void *act_out) {
    gpt *g = m->impl;
    const void *xg = gemm_operand(m, L, 0, x, x_dt, x_dt, (size_t)rows * L->in);
    const void *wg = gemm_operand(m, L, 1, L->w_work, L->wstore, L->wdt, (size_t)L->in * L->out);
    if (!xg || !wg) return -1;
    amp_gemm_desc d = amp_gemm_plain(g->f_acc, xg, wg, gemm_dtype(L), 0, 1, rows, L->out, L->in);
    d.bias = L->b_work;
    d.bias_dtype = L->wstore;
    d.act = act;
    d.out = out;
    d.act_out = act_out;
    d.out_dtype = L->act;
    d.cnt = amp_model_rounds(m, L->layer, AMP_ROUND_FWD);
    return AMP_CALL(m->be, gemm_ex, &d);
}

static int norm_forward(amp_model *m, const gpt_norm *n, void *out, float *mean, float *rstd,
                        const float *x, int rows) {
    gpt *g = m->impl;
    return AMP_CALL(m->be, layernorm_forward, out, n->act, mean, rstd, x, m->master + n->w_off,
                    n->b_off != NO_PARAM ? m->master + n->b_off : NULL, rows, g->C, GPT_LN_EPS,
                    amp_model_rounds(m, n->layer, AMP_ROUND_FWD));
}

static int gpt_forward(amp_model *m, const amp_forward_args *a) {
    gpt *g = m->impl;
    amp_backend *be = m->be;
    int Bn = a->rows, rows = a->rows * g->T, C = g->C;
    size_t nc = (size_t)rows * C;
    float *x = g->k.n_layer > 0 ? g->blocks[0].x : g->x_final;
    CHECK(AMP_CALL(be, embed_forward, x, m->master + g->wte_off, m->master + g->wpe_off,
                   (const int32_t *)m->x, Bn, g->T, C));
    for (int i = 0; i < g->k.n_layer; i++) {
        gpt_block *b = &g->blocks[i];
        float *next = i + 1 < g->k.n_layer ? g->blocks[i + 1].x : g->x_final;
        CHECK(norm_forward(m, &b->ln1, b->ln1_out, b->ln1_mean, b->ln1_rstd, b->x, rows));
        CHECK(linear_forward(m, &b->c_attn, b->ln1_out, b->ln1.act, rows, b->qkv, AMP_ACT_NONE, NULL));
        const void *qkv = operand(m, 0, b->qkv, b->c_attn.act, b->adt, 3 * nc);
        if (!qkv) return -1;
        CHECK(AMP_CALL(be, attention_forward, b->atty, b->att, g->att_ws, qkv, b->adt, Bn, g->T, C,
                       g->k.n_head, amp_model_rounds(m, b->attn_layer, AMP_ROUND_FWD)));
        CHECK(linear_forward(m, &b->c_proj, b->atty, b->adt, rows, b->proj, AMP_ACT_NONE, NULL));
        CHECK(AMP_CALL(be, residual_add, g->x_mid, b->x, b->proj, b->c_proj.act, nc));
        CHECK(norm_forward(m, &b->ln2, b->ln2_out, b->ln2_mean, b->ln2_rstd, g->x_mid, rows));
        CHECK(linear_forward(m, &b->c_fc, b->ln2_out, b->ln2.act, rows, b->fch, g->k.act,
                             b->fch_gelu));
        CHECK(linear_forward(m, &b->fc_proj, b->fch_gelu, b->c_fc.act, rows, g->g_small,
                             AMP_ACT_NONE, NULL));
        CHECK(AMP_CALL(be, residual_add, next, g->x_mid, g->g_small, b->fc_proj.act, nc));
    }
    CHECK(norm_forward(m, &g->ln_f, g->lnf_out, g->lnf_mean, g->lnf_rstd, g->x_final, rows));
    CHECK(linear_forward(m, &g->lm_head, g->lnf_out, g->ln_f.act, rows, g->logits, AMP_ACT_NONE,
                         NULL));
    size_t nv = (size_t)rows * g->V;
    /* cross-entropy in FP32 whatever the policy (autocast's fp32 list) */
    CHECK(be->ops->widen(be, g->f_logits, g->logits, g->lm_head.act, nv));
    return be->ops->softmax_xent(be, a->for_backward ? g->f_dlogits : NULL, m->stats, g->f_logits,
                                 m->y, rows, g->V, a->loss_grad_scale);
}

/* ---- backward ------------------------------------------------------------------ */

/* From dy[rows, out] (values in dy_dt, stored as dy_store: dy_dt, or F32 for
 * a wide L, see grad_for): dW (and db) added into the FP32 gradients,
 * rounded first to the working copy's dtype when it is 16-bit (the
 * gradient of a 16-bit weight is 16-bit); dx[rows, in] = dy W in FP32 when
 * dx is not NULL. */
static int linear_backward(amp_model *m, const gpt_linear *L, const void *dy, amp_dtype dy_store,
                           amp_dtype dy_dt, const void *x, amp_dtype x_dt, int rows, float *dx) {
    gpt *g = m->impl;
    amp_backend *be = m->be;
    amp_round_count *cnt = amp_model_rounds(m, L->layer, AMP_ROUND_GRAD);
    size_t wn = (size_t)L->in * L->out;
    const void *dyg = gemm_operand(m, L, 0, dy, dy_store, dy_dt, (size_t)rows * L->out);
    const void *xg = gemm_operand(m, L, 1, x, x_dt, x_dt, (size_t)rows * L->in);
    if (!dyg || !xg) return -1;
    /* dW[out, in] = dY[rows, out]^T X[rows, in] */
    amp_gemm_desc dw = amp_gemm_plain(g->f_w, dyg, xg, gemm_dtype(L), 1, 0, L->out, L->in, rows);
    CHECK(AMP_CALL(be, gemm_ex, &dw));
    CHECK(be->ops->quantize(be, m->grads + L->w_off, g->f_w, wn, L->wdt, cnt, 1));
    if (L->b_off != NO_PARAM) {
        const float *dyf = dy; /* an FP32 dY is summed where it is, not copied first */
        if (dy_store != AMP_DTYPE_F32) {
            CHECK(be->ops->widen(be, g->f_t, dy, dy_store, (size_t)rows * L->out));
            dyf = g->f_t;
        }
        CHECK(be->ops->col_sum(be, g->f_b, dyf, rows, L->out));
        CHECK(be->ops->quantize(be, m->grads + L->b_off, g->f_b, (size_t)L->out, L->wdt, cnt, 1));
    }
    if (!dx) return 0;
    const void *wg = gemm_operand(m, L, 1, L->w_work, L->wstore, L->wdt, wn);
    if (!wg) return -1;
    /* dX[rows, in] = dY[rows, out] W[out, in] */
    amp_gemm_desc dd = amp_gemm_plain(dx, dyg, wg, gemm_dtype(L), 0, 0, rows, L->in, L->out);
    return AMP_CALL(be, gemm_ex, &dd);
}

/* L's dY from its FP32 gradient src[n], rounded into dt and counted: the
 * dt array dst, or, when L is wide, the FP32 array of the rounded values
 * (what its GEMMs read, so they need no widening) in wide_buf (may be src).
 * *dy and *store say which. */
static int grad_for(amp_model *m, const gpt_linear *L, void *dst, float *wide_buf,
                    const float *src, size_t n, amp_dtype dt, amp_round_count *cnt,
                    const void **dy, amp_dtype *store) {
    amp_backend *be = m->be;
    if (L->wide && dt != AMP_DTYPE_F32) {
        CHECK(be->ops->quantize(be, wide_buf, src, n, dt, cnt, 0));
        *dy = wide_buf;
        *store = AMP_DTYPE_F32;
        return 0;
    }
    CHECK(be->ops->round(be, dst, dt, src, n, cnt));
    *dy = dst;
    *store = dt;
    return 0;
}

/* dres += the LayerNorm's input gradient from dout (FP32, [rows, C]); its
 * weight/bias gradients are added into the FP32 gradients. */
static int norm_backward(amp_model *m, const gpt_norm *n, const float *dout, const float *x,
                         const float *mean, const float *rstd, int rows) {
    gpt *g = m->impl;
    return AMP_CALL(m->be, layernorm_backward, g->dres, m->grads + n->w_off,
                    n->b_off != NO_PARAM ? m->grads + n->b_off : NULL, dout, x,
                    m->master + n->w_off, mean, rstd, rows, g->C);
}

static int gpt_backward(amp_model *m, const amp_backward_args *a) {
    gpt *g = m->impl;
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    int Bn = a->rows, rows = a->rows * g->T, C = g->C;
    size_t nc = (size_t)rows * C;
    if (!a->accumulate) CHECK(op->zero(be, m->grads, m->desc.nparams * sizeof(float)));
    /* LM head: the FP32 dlogits are the gradient of 16-bit logits */
    const gpt_linear *h = &g->lm_head;
    const void *dy;
    amp_dtype dy_store;
    CHECK(grad_for(m, h, g->logits, g->f_dlogits, g->f_dlogits, (size_t)rows * g->V, h->act,
                   amp_model_rounds(m, h->layer, AMP_ROUND_GRAD), &dy, &dy_store));
    CHECK(linear_backward(m, h, dy, dy_store, h->act, g->lnf_out, g->ln_f.act, rows, g->f_dx));
    CHECK(op->quantize(be, g->f_dx, g->f_dx, nc, g->ln_f.act,
                       amp_model_rounds(m, g->ln_f.layer, AMP_ROUND_GRAD), 0));
    CHECK(op->zero(be, g->dres, nc * sizeof(float)));
    CHECK(norm_backward(m, &g->ln_f, g->f_dx, g->x_final, g->lnf_mean, g->lnf_rstd, rows));
    for (int i = g->k.n_layer - 1; i >= 0; i--) {
        gpt_block *b = &g->blocks[i];
        size_t n4 = 4 * nc;
        /* MLP: dres is the gradient of its c_proj output (16-bit there) */
        CHECK(grad_for(m, &b->fc_proj, g->g_small, g->g_small, g->dres, nc, b->fc_proj.act,
                       amp_model_rounds(m, b->fc_proj.layer, AMP_ROUND_GRAD), &dy, &dy_store));
        CHECK(linear_backward(m, &b->fc_proj, dy, dy_store, b->fc_proj.act, b->fch_gelu,
                              b->c_fc.act, rows, g->f_dx));
        amp_round_count *fc_cnt = amp_model_rounds(m, b->c_fc.layer, AMP_ROUND_GRAD);
        dy = g->g_big;
        dy_store = b->c_fc.act;
        if (op->act_backward_round) { /* the same bits in one pass */
            /* wide: its FP32 widening too, which the GEMMs read */
            int wide = b->c_fc.wide && b->c_fc.act != AMP_DTYPE_F32;
            CHECK(op->act_backward_round(be, g->g_big, wide ? g->f_t : NULL, g->f_dx, b->fch,
                                         b->c_fc.act, n4, g->k.act, fc_cnt));
            if (wide) {
                dy = g->f_t;
                dy_store = AMP_DTYPE_F32;
            }
        } else {
            CHECK(op->quantize(be, g->f_dx, g->f_dx, n4, b->c_fc.act, fc_cnt, 0));
            CHECK(op->widen(be, g->f_t, b->fch, b->c_fc.act, n4));
            CHECK(op->act_backward(be, g->f_dx, g->f_dx, g->f_t, n4, g->k.act));
            CHECK(op->round(be, g->g_big, b->c_fc.act, g->f_dx, n4, fc_cnt));
        }
        CHECK(linear_backward(m, &b->c_fc, dy, dy_store, b->c_fc.act, b->ln2_out, b->ln2.act, rows,
                              g->f_dx));
        CHECK(op->quantize(be, g->f_dx, g->f_dx, nc, b->ln2.act,
                           amp_model_rounds(m, b->ln2.layer, AMP_ROUND_GRAD), 0));
        /* ln_2's input: the residual after attention, recomputed exactly */
        CHECK(AMP_CALL(be, residual_add, g->x_mid, b->x, b->proj, b->c_proj.act, nc));
        CHECK(norm_backward(m, &b->ln2, g->f_dx, g->x_mid, b->ln2_mean, b->ln2_rstd, rows));
        /* attention: dres is now the gradient of its c_proj output */
        CHECK(grad_for(m, &b->c_proj, g->g_small, g->g_small, g->dres, nc, b->c_proj.act,
                       amp_model_rounds(m, b->c_proj.layer, AMP_ROUND_GRAD), &dy, &dy_store));
        CHECK(linear_backward(m, &b->c_proj, dy, dy_store, b->c_proj.act, b->atty, b->adt, rows,
                              g->f_dx));
        amp_round_count *at_cnt = amp_model_rounds(m, b->attn_layer, AMP_ROUND_GRAD);
        CHECK(op->round(be, g->g_big, b->adt, g->f_dx, nc, at_cnt));
        const void *qkv = operand(m, 0, b->qkv, b->c_attn.act, b->adt, 3 * nc);
        if (!qkv) return -1;
        CHECK(AMP_CALL(be, attention_backward, g->g_qkv, g->att_ws, g->g_big, qkv, b->att, b->adt,
                       Bn, g->T, C, g->k.n_head, at_cnt));
        CHECK(linear_backward(m, &b->c_attn, g->g_qkv, b->adt, b->adt, b->ln1_out, b->ln1.act,
                              rows, g->f_dx));
        CHECK(op->quantize(be, g->f_dx, g->f_dx, nc, b->ln1.act,
                           amp_model_rounds(m, b->ln1.layer, AMP_ROUND_GRAD), 0));
        CHECK(norm_backward(m, &b->ln1, g->f_dx, b->x, b->ln1_mean, b->ln1_rstd, rows));
    }
    /* the embeddings take the residual stream's gradient as it is (FP32) */
    return AMP_CALL(be, embed_backward, m->grads + g->wte_off, m->grads + g->wpe_off, g->dres,
                    (const int32_t *)m->x, Bn, g->T, C);
}

/* ---- sampling ----------------------------------------------------------------- */

static int gpt_logits(amp_model *m, int row, int pos, float *host) {
    gpt *g = m->impl;
    size_t at = ((size_t)row * g->T + (size_t)pos) * (size_t)g->V;
    return m->be->ops->download(m->be, host, g->f_logits + at, (size_t)g->V * sizeof(float));
}

const amp_model_ops amp_model_gpt = {
    .name = "gpt",
    .keys = (const char *const[]){"n_layer", "n_head", "n_embd", "block_size", "bias", "activation", NULL},
    .describe = gpt_describe,
    .create = gpt_create,
    .layout = gpt_layout,
    .destroy = gpt_destroy,
    .init_params = gpt_init_params,
    .cast_weights = gpt_cast_weights,
    .working_copy = gpt_working_copy,
    .forward = gpt_forward,
    .backward = gpt_backward,
    .logits = gpt_logits,
};
