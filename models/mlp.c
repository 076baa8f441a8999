/* A multi-layer perceptron written once against the backend op table: the
 * same code runs on the CPU and the CUDA backend under any precision policy.
 * Layers are named fc1..fcN and laid out like PyTorch nn.Linear
 * (fcK.weight is [out, in], fcK.bias is [out]).
 *
 * [model] keys: hidden = 256,128 (widths of the hidden layers),
 * activation = relu | gelu | none (after every hidden layer). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers/layers.h"
#include "model.h"
#include "keys/settings_table.h"

#define MLP_MAX_HIDDEN 64

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

typedef struct mlp_layer {
    amp_linear fc;
    void *z;             /* [batch, out] pre-activation; reused for dZ */
    void *a;             /* [batch, out] post-activation (aliases z without activation) */
} mlp_layer;

typedef struct mlp {
    int nlayers, classes;
    mlp_layer *layers;   /* [nlayers] */
    amp_input in;        /* the batch as fc1's operand */
    float *f_logits;     /* [batch, classes] FP32 */
    float *f_dlogits;    /* [batch, classes] */
    float *f_da;         /* [batch, widest] FP32 dA of a hidden layer */
    size_t widest;
} mlp;

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
        if (amp_linear_describe(d, name, out, prev, 1, 1) != 0) goto oom;
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
    if (amp_kit_create(m, err, errlen) != 0) return -1;
    p->nlayers = m->desc.nlayers;
    p->classes = m->input.classes;
    p->widest = (size_t)m->input.features;
    amp_input_init(m, &p->in, 0);
    amp_array x = amp_input_array(&p->in);
    for (int l = 0; l < p->nlayers; l++) {
        amp_linear *L = &p->layers[l].fc;
        if (amp_linear_init(m, L, m->desc.layers[l].name, NULL, m->input.batch,
                            l == p->nlayers - 1 ? AMP_ACT_NONE : act, x) != 0) {
            snprintf(err, errlen, "%s", m->be->err);
            return -1;
        }
        x = amp_array_of(NULL, L->out_dt);
        if ((size_t)L->out > p->widest) p->widest = (size_t)L->out;
    }
    return 0;
}

static void mlp_destroy(amp_model *m) {
    mlp *p = m->impl;
    if (!p) return;
    amp_kit_free(m);
    free(p->layers);
    free(p);
    m->impl = NULL;
}

static void mlp_layout(amp_model *m) {
    mlp *p = m->impl;
    size_t B = (size_t)m->input.batch;
    amp_input_layout(m, &p->in);
    for (int l = 0; l < p->nlayers; l++) {
        mlp_layer *L = &p->layers[l];
        size_t n = B * (size_t)L->fc.out;
        L->z = amp_kit_take(m, AMP_MEM_ACTIVATIONS, n, L->fc.out_dt);
        L->a = L->fc.act == AMP_ACT_NONE ? L->z : amp_kit_take(m, AMP_MEM_ACTIVATIONS, n, L->fc.out_dt);
    }
    p->f_logits = amp_kit_take(m, AMP_MEM_WORKSPACE, B * p->classes, AMP_DTYPE_F32);
    p->f_dlogits = amp_kit_take(m, AMP_MEM_WORKSPACE, B * p->classes, AMP_DTYPE_F32);
    p->f_da = amp_kit_take(m, AMP_MEM_WORKSPACE, B * p->widest, AMP_DTYPE_F32);
    amp_kit_layout(m);
}

/* What layer l's GEMMs take as X. */
static amp_array input_of(const mlp *p, int l) {
    if (l == 0) return amp_input_array(&p->in);
    const mlp_layer *P = &p->layers[l - 1];
    return amp_array_of(P->a, P->fc.out_dt);
}

static int mlp_forward(amp_model *m, const amp_forward_args *a) {
    mlp *p = m->impl;
    int rows = a->rows;
    CHECK(amp_input_forward(m, &p->in, rows));
    for (int l = 0; l < p->nlayers; l++) {
        mlp_layer *L = &p->layers[l];
        CHECK(amp_linear_forward(m, &L->fc, L->z, L->a, input_of(p, l), rows));
    }
    const mlp_layer *T = &p->layers[p->nlayers - 1];
    return amp_kit_xent(m, a->for_backward ? p->f_dlogits : NULL, p->f_logits, T->a, T->fc.out_dt,
                        rows, p->classes, a->loss_grad_scale);
}

static int mlp_backward(amp_model *m, const amp_backward_args *a) {
    mlp *p = m->impl;
    int rows = a->rows, last = p->nlayers - 1;
    mlp_layer *T = &p->layers[last];
    amp_array dz; /* the current layer's dZ: dlogits stored like an activation gradient */
    CHECK(amp_linear_grad_in(m, &T->fc, &dz, T->z, p->f_dlogits, p->f_dlogits,
                             (size_t)rows * p->classes));
    for (int l = last; l >= 0; l--) {
        mlp_layer *L = &p->layers[l];
        CHECK(amp_linear_backward_weights(m, &L->fc, &dz, input_of(p, l), rows, a->accumulate));
        /* fcL.weight and fcL.bias (tensors 2l, 2l + 1) are final */
        CHECK(amp_model_grads_ready(m, 2 * l, 2));
        if (l == 0) break;
        mlp_layer *P = &p->layers[l - 1];
        CHECK(amp_linear_backward_data(m, &L->fc, p->f_da, &dz, rows));
        CHECK(amp_linear_act_backward(m, &P->fc, &dz, P->z, p->f_da, rows)); /* dZ replaces Z */
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
    .init_params = amp_kit_init_params,
    .cast_weights = amp_kit_cast_weights,
    .working_copy = amp_kit_working_copy,
    .forward = mlp_forward,
    .backward = mlp_backward,
};
