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
 * The same decoder is Llama by keys (their defaults are nanoGPT's, which
 * keeps its bits): norm = rmsnorm (norm_eps), mlp = swiglu (intermediate),
 * names = llama (Hugging Face Llama's module names, with separate q/k/v
 * projections packed by amp_qkv), position = rope (rope_theta; no position
 * table), n_kv_head (grouped-query heads), tie_embeddings = false (lm_head
 * with its own weight).
 *
 * Precision follows PyTorch autocast (llm.c's layout of buffers):
 *   - the embeddings, the residual stream and LayerNorm run in FP32 on the
 *     FP32 master weights (autocast leaves embedding lookups alone and runs
 *     layer_norm in FP32); a LayerNorm's output is stored in its layer's
 *     activation dtype (the cast the next GEMM's autocast would do);
 *   - every Linear is one descriptor GEMM in its layer's GEMM dtype with
 *     FP32 accumulation and a bias/GELU/rounding epilogue into the
 *     activation dtype, on a working copy of the weights in the param dtype
 *     (how each operand reaches its GEMM is the layer kit's business,
 *     models/layers/);
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
 * block input and the c_proj output (an exact FP32 add). A per-tensor FP8
 * Linear keeps its input's codes instead (amp_linear_keep): then the 16-bit
 * input it reads (ln_1's, the attention's, ln_2's, the GELU's output) is
 * kept nowhere and lives in f_dx until that Linear's forward. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers/layers.h"
#include "model.h"
#include "keys/settings_table.h"
#include "keys/text_defaults.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

typedef enum gpt_norm { GPT_LAYERNORM, GPT_RMSNORM } gpt_norm;
/* GPT_MLP_GELU_TANH is read as GPT_MLP_GELU with activation = gelu_tanh */
typedef enum gpt_mlp { GPT_MLP_GELU, GPT_MLP_GELU_TANH, GPT_MLP_SWIGLU } gpt_mlp;
typedef enum gpt_names { GPT_NAMES_GPT2, GPT_NAMES_LLAMA } gpt_names;
typedef enum gpt_position { GPT_POS_LEARNED, GPT_POS_ROPE } gpt_position;

typedef struct gpt_keys {
    int n_layer, n_head, n_embd, block_size, bias;
    amp_act act; /* the MLP's GELU: AMP_ACT_GELU or AMP_ACT_GELU_TANH */
    int norm;    /* gpt_norm */
    double norm_eps;
    int mlp;          /* gpt_mlp */
    int intermediate; /* the MLP's width; 0: 4 n_embd */
    int names;        /* gpt_names */
    int position;     /* gpt_position */
    double rope_theta;
    int n_kv_head;    /* 0: n_head */
    int tie;          /* tie_embeddings */
} gpt_keys;

typedef struct gpt_block {
    amp_layernorm ln1, ln2;
    amp_linear c_attn, c_proj, c_fc, fc_proj;
    amp_attention attn;
    amp_swiglu sw;            /* mlp = swiglu (c_fc/fc_proj unused) */
    amp_qkv qkvp;             /* names = llama: q/k/v_proj (c_attn unused) */
    /* saved for the backward (the layers keep their own outputs) */
    float *x;                 /* [N, C] the block's input (residual stream, FP32) */
    void *qkv;                /* [N, 3C] c_attn.out_dt */
    void *proj;               /* [N, C] c_proj.out_dt: the attention branch's output */
    void *fch, *fch_gelu;     /* [N, 4C] c_fc.out_dt, before and after GELU (fch: dZ in the backward) */
} gpt_block;

typedef struct gpt {
    gpt_keys k;
    int B, T, C, V, N;        /* N = B * T rows */
    amp_embedding emb;
    gpt_block *blocks;        /* [n_layer] */
    amp_layernorm ln_f;
    amp_linear lm_head;       /* weight: transformer.wte's working copy */
    float *x_final;           /* [N, C] the residual stream after the last block */
    /* workspace */
    float *f_dx;              /* [N, 4C] input gradients */
    float *dres;              /* [N, C] the residual stream's gradient */
    float *x_mid;             /* [N, C] the residual after attention (recomputed) */
    float *f_logits, *f_dlogits; /* [N, V] FP32 */
    void *logits;             /* [N, V] lm_head.out_dt */
    void *g_small;            /* [N, C] FP32-sized: a branch output, or its gradient */
} gpt;

/* nanoGPT's MLP is nn.GELU(), the erf form: its state_dict computes that function */
static const char *const gpt_acts[] = {"gelu", "gelu_tanh", NULL};
static const char *const gpt_norms[] = {"layernorm", "rmsnorm", NULL};
static const char *const gpt_mlps[] = {"gelu", "gelu_tanh", "swiglu", NULL};
static const char *const gpt_namings[] = {"gpt2", "llama", NULL};
static const char *const gpt_positions[] = {"learned", "rope", NULL};
static const int gpt_act_values[] = {AMP_ACT_GELU, AMP_ACT_GELU_TANH};
#define GPT_KEY(field) AMP_SETTING_AT(gpt_keys, field)
static const amp_setting gpt_settings[] = {
    {"model", "n_layer", AMP_SETTING_INT, "6", 1, 1024, GPT_KEY(n_layer), .doc = "blocks"},
    {"model", "n_head", AMP_SETTING_INT, "6", 1, 1024, GPT_KEY(n_head),
     .doc = "attention heads (must divide `n_embd`)"},
    {"model", "n_embd", AMP_SETTING_INT, "384", 1, 1 << 16, GPT_KEY(n_embd), .doc = "width"},
    {"model", "block_size", AMP_SETTING_INT, AMP_SETTING_TEXT(AMP_TEXT_DEFAULT_BLOCK), 1, 1 << 16, GPT_KEY(block_size),
     .doc = "the context length, and the length of the text windows"},
    {"model", "bias", AMP_SETTING_BOOL, "false", GPT_KEY(bias),
     .doc = "biases in the Linears and LayerNorms (nanoGPT's `bias`)"},
    {"model", "norm", AMP_SETTING_CHOICE, "layernorm", .choices = gpt_norms, GPT_KEY(norm),
     .doc = "the blocks' and the final norm: `layernorm` (GPT-2's) or `rmsnorm` (Llama's: "
            "`x * rsqrt(mean(x^2) + norm_eps) * weight`, no bias whatever `bias` says)"},
    {"model", "norm_eps", AMP_SETTING_DOUBLE, "1e-5", .dmin = 0, .dmax = 1, GPT_KEY(norm_eps),
     .doc = "the norms' epsilon (nanoGPT's LayerNorm: 1e-5; Llama: `rms_norm_eps`)"},
    {"model", "mlp", AMP_SETTING_CHOICE, "gelu", .choices = gpt_mlps, GPT_KEY(mlp),
     .doc = "the MLP: `gelu` (c_fc -> GELU (`activation`) -> c_proj, nanoGPT's), `gelu_tanh` "
            "(the same with GPT-2's tanh GELU: `gelu` with `activation = gelu_tanh`, which it "
            "sets; another `activation` is an error) or `swiglu` (down_proj(silu(gate_proj(x)) "
            "* up_proj(x)), Llama's; no biases unless `bias`)"},
    {"model", "intermediate", AMP_SETTING_INT, "0", 0, 1 << 20, GPT_KEY(intermediate),
     .doc = "the MLP's hidden width; 0: 4 `n_embd` (GPT-2's)"},
    {"model", "names", AMP_SETTING_CHOICE, "gpt2", .choices = gpt_namings, GPT_KEY(names),
     .doc = "module names and attention layout: `gpt2` (nanoGPT's `transformer.h.N.attn.c_attn`, "
            "one fused qkv Linear) or `llama` (Hugging Face Llama's `model.layers.N.self_attn.q_proj`, "
            "`k_proj`, `v_proj`, `o_proj`, `input_layernorm`, `post_attention_layernorm`, "
            "`model.embed_tokens`, `model.norm`, `lm_head`); `precision.layer.<glob>` and "
            "`ab --scan` use these names"},
    {"model", "position", AMP_SETTING_CHOICE, "learned", .choices = gpt_positions,
     GPT_KEY(position),
     .doc = "`learned` (a position table, GPT-2's `wpe`) or `rope` (rotary embeddings on q and k, "
            "Hugging Face Llama's rotate-half; needs `names = llama`)"},
    {"model", "rope_theta", AMP_SETTING_DOUBLE, "10000", .dmin = 1, .dmax = 1e12,
     GPT_KEY(rope_theta), .doc = "RoPE's base (Llama's `rope_theta`)"},
    {"model", "n_kv_head", AMP_SETTING_INT, "0", 0, 1024, GPT_KEY(n_kv_head),
     .doc = "key/value heads (grouped-query attention; 1: multi-query), dividing `n_head`; 0: "
            "`n_head`. Other than `n_head` needs `names = llama`"},
    {"model", "tie_embeddings", AMP_SETTING_BOOL, "true", GPT_KEY(tie),
     .doc = "the LM head reuses the token embedding (GPT-2's); false: its own `lm_head.weight`"},
    {"model", "activation", AMP_SETTING_CHOICE, "gelu", .choices = gpt_acts,
     .values = gpt_act_values, GPT_KEY(act), .alt_when = "mlp=gelu_tanh", .alt_def = "gelu_tanh",
     .doc = "the MLP's GELU, `gelu` (exact erf form) or `gelu_tanh` (GPT-2's tanh form). The default "
            "is nanoGPT's: its `model.py` uses `nn.GELU()`, the erf form, so a nanoGPT `state_dict` "
            "loaded through `[model] init` computes the same function. Both cost the same on the CPU "
            "(`gelu` runs amptrain's own `erf` through `vexp`, as `gelu_tanh` runs its `tanh`): "
            "2026-12-02, AMD EPYC Zen 5, other builds running, `AMPTRAIN_THREADS=1 bench_step --model "
            "gpt --activation gelu|gelu_tanh --no-floor`, 4 interleaved rounds, median ms a step "
            "fp32/fp16/bf16: `gelu` 62/61/67 with libm's `erff` → 40/45/49, `gelu_tanh` 42/47/45. A "
            "checkpoint from before this key ran `gelu_tanh`: it resumes only under `gelu_tanh`, and "
            "`sample` of such a run uses it"},
    {.key = NULL}};

static int check_keys(amp_config *cfg, const gpt_keys *k, char *err, size_t errlen);

static int read_keys(amp_config *cfg, gpt_keys *k, char *err, size_t errlen) {
    if (amp_settings_table_read(gpt_settings, k, cfg, err, errlen) != 0) return -1;
    if (k->intermediate == 0) k->intermediate = 4 * k->n_embd;
    if (k->n_kv_head == 0) k->n_kv_head = k->n_head;
    if (check_keys(cfg, k, err, errlen) != 0) return -1;
    if (k->mlp == GPT_MLP_GELU_TANH) k->mlp = GPT_MLP_GELU; /* with activation = gelu_tanh */
    return 0;
}

/* The decoder keys that hold only together; each refusal names the key at
 * fault and why. */
static int check_keys(amp_config *cfg, const gpt_keys *k, char *err, size_t errlen) {
    const char *key = NULL;
    char why[256];
    int hs = k->n_embd / k->n_head;
    if (k->n_embd % k->n_head)
        key = "n_head", snprintf(why, sizeof why, "n_embd = %d does not split into n_head = %d "
                                 "heads; pick n_head dividing n_embd", k->n_embd, k->n_head);
    else if (k->n_head % k->n_kv_head)
        key = "n_kv_head", snprintf(why, sizeof why, "n_kv_head = %d does not divide n_head = %d "
                                    "(each key/value head serves an equal group of query heads)",
                                    k->n_kv_head, k->n_head);
    else if (k->names == GPT_NAMES_GPT2 && k->n_kv_head != k->n_head)
        key = "n_kv_head", snprintf(why, sizeof why, "n_kv_head = %d needs names = llama (GPT-2's "
                                    "fused c_attn has as many key/value heads as heads, %d)",
                                    k->n_kv_head, k->n_head);
    else if (k->names == GPT_NAMES_GPT2 && k->position == GPT_POS_ROPE)
        key = "position", snprintf(why, sizeof why, "position = rope needs names = llama (GPT-2's "
                                   "layout has a learned position table)");
    else if (k->position == GPT_POS_ROPE && hs % 2)
        key = "position", snprintf(why, sizeof why, "position = rope turns pairs of a head's values, "
                                   "but a head has n_embd / n_head = %d / %d = %d, an odd number",
                                   k->n_embd, k->n_head, hs);
    else if (k->mlp == GPT_MLP_GELU_TANH && k->act != AMP_ACT_GELU_TANH)
        key = "activation", snprintf(why, sizeof why, "activation = gelu disagrees with mlp = "
                                     "gelu_tanh (the MLP's GELU is the tanh form); drop "
                                     "activation, or write mlp = gelu");
    else if (k->mlp == GPT_MLP_SWIGLU && k->act == AMP_ACT_GELU_TANH)
        key = "activation", snprintf(why, sizeof why, "activation = gelu_tanh, but mlp = swiglu has "
                                     "no GELU (its gate is silu): drop activation");
    if (!key) return 0;
    const char *where = NULL;
    amp_config_lookup(cfg, "model", key, &where);
    snprintf(err, errlen, "%s: [model] %s", where ? where : amp_config_path(cfg), why);
    return -1;
}

/* ---- names: nanoGPT's or Hugging Face Llama's ------------------------------- */

enum { N_LN1, N_ATTN, N_C_ATTN, N_Q, N_K, N_V, N_O, N_LN2, N_FC, N_FCP, N_GATE, N_UP, N_DOWN,
       N_WTE, N_WPE, N_LNF, N_COUNT };
static const char *const names_of[2][N_COUNT] = {
    {"ln_1", "attn", "attn.c_attn", "", "", "", "attn.c_proj", "ln_2", "mlp.c_fc", "mlp.c_proj",
     "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj", "transformer.wte", "transformer.wpe",
     "transformer.ln_f"},
    {"input_layernorm", "self_attn", "", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
     "self_attn.o_proj", "post_attention_layernorm", "mlp.c_fc", "mlp.c_proj", "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj", "model.embed_tokens", "model.embed_positions", "model.norm"}};

/* Block i's module `what` (i < 0: a top-level one) into p, with suffix
 * (may be ""). */
static const char *gname(const gpt_keys *k, char *p, size_t n, int i, int what, const char *suffix) {
    const char *s = names_of[k->names][what];
    if (i < 0)
        snprintf(p, n, "%s%s", s, suffix);
    else
        snprintf(p, n, k->names == GPT_NAMES_LLAMA ? "model.layers.%d.%s%s" : "transformer.h.%d.%s%s",
                 i, s, suffix);
    return p;
}

/* ---- describe: the parameter and layer tables ---------------------------- */

typedef struct builder {
    amp_model_desc *d;
    int bias, norm_bias;
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
    if (b->norm_bias) add_param(b, name, "bias", l, 0, 1, C, 0);
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
    builder b = {d, k.bias, k.bias && k.norm == GPT_LAYERNORM, 0};
    /* transformer.wte is also the LM head's weight (tied; nanoGPT's state_dict
     * holds it under both names, safetensors' save_model under lm_head.weight).
     * The GEMM that reads it is lm_head's: that layer has the GEMM class and
     * its operands (an FP8 weight operand quantizes this tensor), the lookup
     * here has none. */
    char p[AMP_MODEL_NAME_MAX];
    int wte = add_layer(&b, gname(&k, p, sizeof p, -1, N_WTE, ""), 1u << AMP_OP_POINTWISE);
    add_param(&b, p, "weight", wte, 1, 2, V, C);
    if (!b.fail && k.tie) amp_model_desc_tie_last(d, "lm_head.weight");
    if (k.position == GPT_POS_LEARNED) {
        int wpe = add_layer(&b, gname(&k, p, sizeof p, -1, N_WPE, ""), 1u << AMP_OP_POINTWISE);
        add_param(&b, p, "weight", wpe, 1, 2, k.block_size, C);
    }
    int Ckv = C / k.n_head * k.n_kv_head;
    for (int i = 0; i < k.n_layer; i++) {
#define NAME(w) gname(&k, p, sizeof p, i, w, "")
        add_norm(&b, NAME(N_LN1), C);
        if (k.names == GPT_NAMES_LLAMA) {
            add_linear(&b, NAME(N_Q), C, C, 0);
            add_linear(&b, NAME(N_K), C, Ckv, 0);
            add_linear(&b, NAME(N_V), C, Ckv, 0);
        } else {
            add_linear(&b, NAME(N_C_ATTN), C, 3 * C, 0);
        }
        add_layer(&b, NAME(N_ATTN), (1u << AMP_OP_ATTENTION) | (1u << AMP_OP_SOFTMAX));
        add_linear(&b, NAME(N_O), C, C, 0);
        add_norm(&b, NAME(N_LN2), C);
        if (k.mlp == GPT_MLP_SWIGLU) {
            add_linear(&b, NAME(N_GATE), C, k.intermediate, 1u << AMP_OP_POINTWISE);
            add_linear(&b, NAME(N_UP), C, k.intermediate, 0);
            add_linear(&b, NAME(N_DOWN), k.intermediate, C, 0);
        } else {
            add_linear(&b, NAME(N_FC), C, k.intermediate, 1u << AMP_OP_POINTWISE);
            add_linear(&b, NAME(N_FCP), k.intermediate, C, 0);
        }
#undef NAME
    }
    add_norm(&b, gname(&k, p, sizeof p, -1, N_LNF, ""), C);
    int head = add_layer(&b, "lm_head", 1u << AMP_OP_GEMM);
    if (!k.tie) add_param(&b, "lm_head", "weight", head, 1, 2, V, C);
    if (b.fail) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    return 0;
}

/* ---- create / layout --------------------------------------------------------- */

/* nanoGPT's init of a Linear: weight N(0, std), bias 0. */
static void init_gpt2(amp_model *m, const amp_linear *L, double std) {
    amp_kit_init_rule(m, L->w, AMP_INIT_NORMAL, std);
    amp_kit_init_rule(m, L->b, AMP_INIT_CONST, 0.0);
}

/* The block's or the final norm, as [model] norm says. */
static int norm_init(amp_model *m, const gpt *g, amp_layernorm *n, const char *name) {
    float eps = (float)g->k.norm_eps;
    return g->k.norm == GPT_RMSNORM ? amp_rmsnorm_init(m, n, name, eps)
                                    : amp_layernorm_init(m, n, name, eps);
}

static int create_block(amp_model *m, gpt *g, int i) {
    gpt_block *b = &g->blocks[i];
    int N = g->N, C = g->C;
    const gpt_keys *k = &g->k;
    char p[AMP_MODEL_NAME_MAX], p1[AMP_MODEL_NAME_MAX], p2[AMP_MODEL_NAME_MAX], p3[AMP_MODEL_NAME_MAX];
#define NAME(w) gname(k, p, sizeof p, i, w, "")
    CHECK(norm_init(m, g, &b->ln1, NAME(N_LN1)));
    /* GPT-2's init: N(0, 0.02), the residual projections 0.02/sqrt(2 n_layer) */
    double proj_std = 0.02 / sqrt(2.0 * g->k.n_layer);
    if (k->names == GPT_NAMES_LLAMA) {
        CHECK(amp_qkv_init(m, &b->qkvp, gname(k, p1, sizeof p1, i, N_Q, ""),
                           gname(k, p2, sizeof p2, i, N_K, ""), gname(k, p3, sizeof p3, i, N_V, ""),
                           NAME(N_ATTN), N, g->T, k->n_head, k->n_kv_head,
                           k->position == GPT_POS_ROPE, (float)k->rope_theta,
                           amp_layernorm_output(&b->ln1)));
        CHECK(amp_attention_init(m, &b->attn, NAME(N_ATTN), g->T, C, k->n_head,
                                 amp_qkv_output(&b->qkvp)));
        init_gpt2(m, &b->qkvp.q, 0.02);
        init_gpt2(m, &b->qkvp.k, 0.02);
        init_gpt2(m, &b->qkvp.v, 0.02);
    } else {
        CHECK(amp_linear_init(m, &b->c_attn, NAME(N_C_ATTN), NULL, N, AMP_ACT_NONE,
                              amp_layernorm_output(&b->ln1)));
        CHECK(amp_attention_init(m, &b->attn, NAME(N_ATTN), g->T, C, k->n_head,
                                 amp_array_of(NULL, b->c_attn.out_dt)));
        amp_linear_bare_dy(m, &b->c_attn, amp_layernorm_output(&b->ln1));
        init_gpt2(m, &b->c_attn, 0.02);
    }
    CHECK(amp_linear_init(m, &b->c_proj, NAME(N_O), NULL, N, AMP_ACT_NONE,
                          amp_attention_output(&b->attn)));
    CHECK(norm_init(m, g, &b->ln2, NAME(N_LN2)));
    init_gpt2(m, &b->c_proj, proj_std);
    if (g->k.mlp == GPT_MLP_SWIGLU) {
        CHECK(amp_swiglu_init(m, &b->sw, gname(k, p1, sizeof p1, i, N_GATE, ""),
                              gname(k, p2, sizeof p2, i, N_UP, ""), NAME(N_DOWN), N,
                              amp_layernorm_output(&b->ln2)));
        init_gpt2(m, &b->sw.gate, 0.02);
        init_gpt2(m, &b->sw.up, 0.02);
        init_gpt2(m, &b->sw.down, proj_std);
        return 0;
    }
    CHECK(amp_linear_init(m, &b->c_fc, NAME(N_FC), NULL, N, g->k.act,
                          amp_layernorm_output(&b->ln2)));
    CHECK(amp_linear_init(m, &b->fc_proj, NAME(N_FCP), NULL, N, AMP_ACT_NONE,
                          amp_array_of(NULL, b->c_fc.out_dt)));
#undef NAME
    init_gpt2(m, &b->c_fc, 0.02);
    init_gpt2(m, &b->fc_proj, proj_std);
    return 0;
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
    char wte[AMP_MODEL_NAME_MAX], wpe[AMP_MODEL_NAME_MAX], lnf[AMP_MODEL_NAME_MAX];
    gname(&g->k, wte, sizeof wte, -1, N_WTE, ".weight");
    gname(&g->k, wpe, sizeof wpe, -1, N_WPE, ".weight");
    int rc = g->k.position == GPT_POS_ROPE ? amp_embedding_init_tokens(m, &g->emb, wte, g->T, 0.02)
                                           : amp_embedding_init(m, &g->emb, wte, wpe, 0.02);
    for (int i = 0; rc == 0 && i < g->k.n_layer; i++) rc = create_block(m, g, i);
    rc = rc || norm_init(m, g, &g->ln_f, gname(&g->k, lnf, sizeof lnf, -1, N_LNF, ""));
    /* the LM head runs in its own layer's GEMM dtype on the tied weight,
     * whose working copy is transformer.wte's (counted there) */
    rc = rc || amp_linear_init(m, &g->lm_head, "lm_head", g->k.tie ? wte : NULL, g->N,
                               AMP_ACT_NONE, amp_layernorm_output(&g->ln_f));
    if (!rc && !g->k.tie) init_gpt2(m, &g->lm_head, 0.02);
    if (rc) snprintf(err, errlen, "%s", m->be->err);
    return rc ? -1 : 0;
}

static void gpt_destroy(amp_model *m) {
    gpt *g = m->impl;
    if (!g) return;
    amp_kit_free(m);
    free(g->blocks);
    free(g);
    m->impl = NULL;
}

static void gpt_layout(amp_model *m) {
    gpt *g = m->impl;
    size_t N = (size_t)g->N, C = (size_t)g->C, V = (size_t)g->V, I = (size_t)g->k.intermediate;
    size_t wide = I > C ? I : C;
    amp_mem_category W = AMP_MEM_WORKSPACE;
    g->f_dx = amp_kit_take(m, W, N * wide, AMP_DTYPE_F32);
    /* A 16-bit input whose only reader keeps its codes (an FP8 Linear,
     * as Transformer Engine keeps its FP8 cast) is read by nothing after
     * that Linear's forward: it lives in f_dx, which only the backward
     * uses ([N, wide] FP32 holds any of them). */
    void *spare = g->f_dx;
    int gpt2 = g->k.names != GPT_NAMES_LLAMA, gelu = g->k.mlp != GPT_MLP_SWIGLU;
    for (int i = 0; i < g->k.n_layer; i++) {
        gpt_block *b = &g->blocks[i];
        b->x = amp_kit_take(m, AMP_MEM_ACTIVATIONS, N * C, AMP_DTYPE_F32);
        int k_attn = gpt2 && amp_linear_keep(m, &b->c_attn), k_proj = amp_linear_keep(m, &b->c_proj);
        int k_fc = gelu && amp_linear_keep(m, &b->c_fc), k_fcp = gelu && amp_linear_keep(m, &b->fc_proj);
        amp_layernorm_layout_out(m, &b->ln1, g->N, k_attn, spare);
        if (!gpt2)
            amp_qkv_layout(m, &b->qkvp);
        else
            b->qkv = amp_kit_take(m, AMP_MEM_ACTIVATIONS, N * 3 * C, b->c_attn.out_dt);
        amp_attention_layout_out(m, &b->attn, k_proj, spare);
        b->proj = amp_kit_take(m, AMP_MEM_ACTIVATIONS, N * C, b->c_proj.out_dt);
        amp_layernorm_layout_out(m, &b->ln2, g->N, k_fc, spare);
        if (!gelu) {
            amp_swiglu_layout(m, &b->sw);
            continue;
        }
        b->fch = amp_kit_take(m, AMP_MEM_ACTIVATIONS, N * I, b->c_fc.out_dt);
        b->fch_gelu = k_fcp ? spare : amp_kit_take(m, AMP_MEM_ACTIVATIONS, N * I, b->c_fc.out_dt);
    }
    amp_embedding_layout(m, &g->emb);
    g->x_final = amp_kit_take(m, AMP_MEM_ACTIVATIONS, N * C, AMP_DTYPE_F32);
    amp_layernorm_layout_out(m, &g->ln_f, g->N, amp_linear_keep(m, &g->lm_head), spare);
    g->dres = amp_kit_take(m, W, N * C, AMP_DTYPE_F32);
    g->x_mid = amp_kit_take(m, W, N * C, AMP_DTYPE_F32);
    g->f_logits = amp_kit_take(m, W, N * V, AMP_DTYPE_F32);
    g->f_dlogits = amp_kit_take(m, W, N * V, AMP_DTYPE_F32);
    g->logits = amp_kit_take(m, W, N * V, g->lm_head.out_dt);
    g->g_small = amp_kit_take(m, W, N * C, AMP_DTYPE_F32);
    amp_kit_layout(m);
}

/* ---- forward ------------------------------------------------------------------ */

/* The attention's input, as the block made it. */
static amp_array block_qkv(const gpt *g, const gpt_block *b) {
    return g->k.names == GPT_NAMES_LLAMA ? amp_qkv_output(&b->qkvp)
                                         : amp_array_of(b->qkv, b->c_attn.out_dt);
}

static int block_forward(amp_model *m, gpt_block *b, float *next, int Bn) {
    gpt *g = m->impl;
    int rows = Bn * g->T;
    size_t nc = (size_t)rows * g->C;
    amp_array qkv = block_qkv(g, b);
    CHECK(amp_layernorm_forward(m, &b->ln1, b->x, rows));
    if (g->k.names == GPT_NAMES_LLAMA)
        CHECK(amp_qkv_forward(m, &b->qkvp, amp_layernorm_output(&b->ln1), Bn));
    else
        CHECK(amp_linear_forward(m, &b->c_attn, b->qkv, NULL, amp_layernorm_output(&b->ln1), rows));
    CHECK(amp_attention_forward(m, &b->attn, qkv, Bn));
    CHECK(amp_linear_forward(m, &b->c_proj, b->proj, NULL, amp_attention_output(&b->attn), rows));
    CHECK(amp_kit_residual(m, g->x_mid, b->x, amp_array_of(b->proj, b->c_proj.out_dt), nc));
    CHECK(amp_layernorm_forward(m, &b->ln2, g->x_mid, rows));
    if (g->k.mlp == GPT_MLP_SWIGLU) {
        CHECK(amp_swiglu_forward(m, &b->sw, g->g_small, amp_layernorm_output(&b->ln2), rows));
        return amp_kit_residual(m, next, g->x_mid, amp_array_of(g->g_small, b->sw.down.out_dt), nc);
    }
    CHECK(amp_linear_forward(m, &b->c_fc, b->fch, b->fch_gelu, amp_layernorm_output(&b->ln2), rows));
    CHECK(amp_linear_forward(m, &b->fc_proj, g->g_small, NULL,
                             amp_array_of(b->fch_gelu, b->c_fc.out_dt), rows));
    return amp_kit_residual(m, next, g->x_mid, amp_array_of(g->g_small, b->fc_proj.out_dt), nc);
}

static int gpt_forward(amp_model *m, const amp_forward_args *a) {
    gpt *g = m->impl;
    int Bn = a->rows, rows = a->rows * g->T;
    CHECK(amp_embedding_forward(m, &g->emb, g->k.n_layer > 0 ? g->blocks[0].x : g->x_final, Bn));
    for (int i = 0; i < g->k.n_layer; i++)
        CHECK(block_forward(m, &g->blocks[i], i + 1 < g->k.n_layer ? g->blocks[i + 1].x : g->x_final,
                            Bn));
    CHECK(amp_layernorm_forward(m, &g->ln_f, g->x_final, rows));
    CHECK(amp_linear_forward(m, &g->lm_head, g->logits, NULL, amp_layernorm_output(&g->ln_f), rows));
    return amp_kit_xent(m, a->for_backward ? g->f_dlogits : NULL, g->f_logits, g->logits,
                        g->lm_head.out_dt, rows, g->V, a->loss_grad_scale);
}

/* ---- backward ------------------------------------------------------------------ */

/* The gradients of L's weights (added: the backward zeroed them) and of
 * its input into f_dx, from dY. */
static int linear_backward(amp_model *m, const amp_linear *L, amp_array *dy, amp_array x, int rows) {
    gpt *g = m->impl;
    CHECK(amp_linear_backward_weights(m, L, dy, x, rows, 1));
    return amp_linear_backward_data(m, L, g->f_dx, dy, rows);
}

/* A layer's weight and bias (-1: none) hold their final gradients: they
 * can travel while backward goes on (amp_model_grads_ready). */
static int ready(amp_model *m, int w, int b) {
    CHECK(amp_model_grads_ready(m, w, 1));
    return b >= 0 ? amp_model_grads_ready(m, b, 1) : 0;
}

static int block_backward(amp_model *m, gpt_block *b, int Bn) {
    gpt *g = m->impl;
    int rows = Bn * g->T;
    size_t nc = (size_t)rows * g->C;
    amp_array dy;
    /* MLP: dres is the gradient of its c_proj output */
    if (g->k.mlp == GPT_MLP_SWIGLU) {
        CHECK(amp_swiglu_backward(m, &b->sw, g->f_dx, g->dres, g->g_small,
                                  amp_layernorm_output(&b->ln2), rows));
    } else {
        CHECK(amp_linear_grad_in(m, &b->fc_proj, &dy, g->g_small, g->g_small, g->dres, nc));
        CHECK(linear_backward(m, &b->fc_proj, &dy, amp_array_of(b->fch_gelu, b->c_fc.out_dt), rows));
        CHECK(ready(m, b->fc_proj.w, b->fc_proj.b));
        CHECK(amp_linear_act_backward(m, &b->c_fc, &dy, b->fch, g->f_dx, rows));
        CHECK(linear_backward(m, &b->c_fc, &dy, amp_layernorm_output(&b->ln2), rows));
        CHECK(ready(m, b->c_fc.w, b->c_fc.b));
    }
    /* ln_2's input: the residual after attention, recomputed exactly */
    CHECK(amp_kit_residual(m, g->x_mid, b->x, amp_array_of(b->proj, b->c_proj.out_dt), nc));
    CHECK(amp_layernorm_backward(m, &b->ln2, g->dres, g->f_dx, g->x_mid, rows));
    CHECK(ready(m, b->ln2.w, b->ln2.b));
    /* attention: dres is now the gradient of its c_proj output */
    CHECK(amp_linear_grad_in(m, &b->c_proj, &dy, g->g_small, g->g_small, g->dres, nc));
    CHECK(linear_backward(m, &b->c_proj, &dy, amp_attention_output(&b->attn), rows));
    CHECK(ready(m, b->c_proj.w, b->c_proj.b));
    CHECK(amp_attention_backward(m, &b->attn, &dy, g->f_dx, block_qkv(g, b), Bn));
    if (g->k.names == GPT_NAMES_LLAMA) {
        CHECK(amp_qkv_backward(m, &b->qkvp, &dy, g->f_dx, amp_layernorm_output(&b->ln1), Bn));
    } else {
        CHECK(linear_backward(m, &b->c_attn, &dy, amp_layernorm_output(&b->ln1), rows));
        CHECK(ready(m, b->c_attn.w, b->c_attn.b));
    }
    CHECK(amp_layernorm_backward(m, &b->ln1, g->dres, g->f_dx, b->x, rows));
    return ready(m, b->ln1.w, b->ln1.b);
}

static int gpt_backward(amp_model *m, const amp_backward_args *a) {
    gpt *g = m->impl;
    int Bn = a->rows, rows = a->rows * g->T;
    size_t nc = (size_t)rows * g->C;
    if (!a->accumulate) CHECK(amp_kit_zero_grads(m));
    /* LM head: the FP32 dlogits are the gradient of its stored logits */
    amp_array dy;
    CHECK(amp_linear_grad_in(m, &g->lm_head, &dy, g->logits, g->f_dlogits, g->f_dlogits,
                             (size_t)rows * g->V));
    CHECK(linear_backward(m, &g->lm_head, &dy, amp_layernorm_output(&g->ln_f), rows));
    if (!g->k.tie) CHECK(ready(m, g->lm_head.w, g->lm_head.b));
    CHECK(m->be->ops->zero(m->be, g->dres, nc * sizeof(float)));
    CHECK(amp_layernorm_backward(m, &g->ln_f, g->dres, g->f_dx, g->x_final, rows));
    CHECK(ready(m, g->ln_f.w, g->ln_f.b));
    for (int i = g->k.n_layer - 1; i >= 0; i--) CHECK(block_backward(m, &g->blocks[i], Bn));
    /* the embeddings take the residual stream's gradient as it is (FP32);
     * wte is final only now (the LM head's share came first) */
    CHECK(amp_embedding_backward(m, &g->emb, g->dres, Bn));
    CHECK(ready(m, g->emb.wte, -1));
    return g->emb.wpe >= 0 ? ready(m, g->emb.wpe, -1) : 0;
}

/* ---- sampling ----------------------------------------------------------------- */

static int gpt_logits(amp_model *m, int row, int pos, float *host) {
    gpt *g = m->impl;
    size_t at = ((size_t)row * g->T + (size_t)pos) * (size_t)g->V;
    return m->be->ops->download(m->be, host, g->f_logits + at, (size_t)g->V * sizeof(float));
}

const amp_model_ops amp_model_gpt = {
    .name = "gpt",
    .settings = gpt_settings,
    .describe = gpt_describe,
    .create = gpt_create,
    .layout = gpt_layout,
    .destroy = gpt_destroy,
    .init_params = amp_kit_init_params,
    .cast_weights = amp_kit_cast_weights,
    .working_copy = amp_kit_working_copy,
    .forward = gpt_forward,
    .backward = gpt_backward,
    .logits = gpt_logits,
};
