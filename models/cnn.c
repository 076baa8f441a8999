/* A convolutional network described by one INI line, written once against
 * the backend op table (the same code on the CPU and on CUDA, under every
 * precision policy).
 *
 * [model] name = cnn
 *         layers = conv(32,3,pad=1) bn relu pool(2) conv(64,3,pad=1) bn relu pool(2) fc(128) relu fc
 *
 * Tokens (separated by spaces; arguments in parentheses, positional first):
 *   conv(out, k[, stride=1][, pad=0][, bias=1])  nn.Conv2d(in, out, k, stride, pad, bias)
 *   bn[(momentum=0.1, eps=1e-5)]                 nn.BatchNorm2d
 *   relu                                         nn.ReLU
 *   pool(k[, stride=k][, pad=0])                 nn.MaxPool2d(k, stride, pad)
 *   flatten                                      optional: the first fc flattens anyway
 *   fc(out) | fc                                 nn.Linear; the last one must be `fc`
 *                                                (or fc(classes)): the classifier
 *
 * Names are those of a hand-written PyTorch module (self.conv1, self.bn1,
 * self.fc1, ...): convK.weight [out, in, k, k], convK.bias [out],
 * bnK.weight/bias [c] and the buffers bnK.running_mean/running_var [c] and
 * bnK.num_batches_tracked [] (a scalar; float32 here, which PyTorch's
 * load_state_dict copies into its int64), fcK.weight [out, in], fcK.bias.
 * They are also the layer names the precision policy sees
 * (`layer.conv1 = f32`).
 *
 * Precision, as autocast: a conv or fc takes its input and weights rounded
 * to its op class's dtype (compute[conv] / compute[gemm]; the weights are
 * cast straight from the FP32 master copy, so `op.conv = f32` keeps a conv
 * wide), accumulates in FP32 and stores its output in the layer's activation
 * dtype. Batch norm always computes in FP32 with FP32 weights and statistics
 * and stores its output in its activation dtype. ReLU and max pooling work
 * on the values they are given (exact in any dtype) and store them in the
 * dtype they came in. Gradients are stored in the dtype of the tensor they
 * belong to. Every rounding that can lose something is counted in the
 * owning layer's telemetry slot. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "layers/layers.h"
#include "model.h"
#include "rng.h"
#include "settings_table.h"

#define CNN_MAX_STAGES 64
#define CNN_MAX_KERNEL 64 /* conv: k, stride and pad */
/* pool: k and stride; pad at most k/2. The argmax is kept as a 2-byte
 * offset in the window, so 256x256 is the largest window. */
#define CNN_MAX_POOL 256
#define CNN_DEFAULT_LAYERS \
    "conv(32,3,pad=1) bn relu pool(2) conv(64,3,pad=1) bn relu pool(2) fc(128) relu fc"
#define CNN_SYNTAX                                                                          \
    "conv(out,k[,stride=1,pad=0,bias=1]) bn[(momentum=0.1,eps=1e-5)] relu "                \
    "pool(k[,stride=k,pad=0]) flatten fc(out) fc"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

enum { ST_CONV, ST_BN, ST_RELU, ST_POOL, ST_FC, ST_FLATTEN /* parsed, no stage */ };

/* One parsed token with its shapes. */
typedef struct cnn_stage {
    int kind;
    int pos, len;          /* the token in the layers string (for messages) */
    int width, k, stride, pad, bias; /* conv: out channels, fc: out features (0: classes); conv/pool window */
    double momentum, eps;  /* bn */
    int c, h, w;           /* input per row (fc: c = features, h = w = 1) */
    int oc, oh, ow;        /* output per row */
    int layer;             /* the owning layer: its own for conv/bn/fc, else the last one (-1) */
    /* parameter offsets (elements into the flat arrays) */
    size_t w_off, b_off, g_off, be_off, rm_off, rv_off, nbt_off;
    /* per-run state */
    amp_dtype ad;          /* dtype the output is stored in */
    amp_dtype cd;          /* conv/fc: the dtype operands and working weights are in */
    amp_conv2d_desc conv;  /* n is the batch the model was built for */
    amp_pool2d_desc pool;
    size_t ws_bytes;       /* conv workspace (the backend's answer for the full batch) */
    void *out;             /* [batch, oc*oh*ow] in ad (relu: aliases its input) */
    void *x_op;            /* conv/fc: the input in cd (aliases the input when stored in cd) */
    void *w_work, *b_work; /* conv/fc working weights in cd (alias master for F32) */
    float *save_mean, *save_invstd; /* bn: [c] for the backward */
    uint16_t *idx;         /* pool: [batch, oc*oh*ow] argmax offsets in their windows */
} cnn_stage;

typedef struct cnn {
    int nst;
    cnn_stage st[CNN_MAX_STAGES];
    size_t widest;         /* largest activation per row, in elements */
    size_t largest_w;      /* largest conv/fc weight, in elements */
    int widest_c;          /* largest bias / channel count */
    float *f[3];           /* [batch, widest] FP32 scratch */
    float *f_w, *f_b, *f_b2; /* weight-gradient and bias/channel scratch */
    float *one;            /* a device-side 1.0f for num_batches_tracked += 1 */
    int one_ready;         /* uploaded (on the first training forward) */
    void *ws;              /* conv workspace: the largest any conv asked for */
    size_t ws_bytes;
} cnn;

static size_t dsize(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }
static size_t out_elems(const cnn_stage *s) { return (size_t)s->oc * s->oh * s->ow; }
static size_t in_elems(const cnn_stage *s) { return (size_t)s->c * s->h * s->w; }

/* ---- the layers string ------------------------------------------------------ */

typedef struct parse_ctx {
    const char *where, *text;
    char *err;
    size_t errlen;
} parse_ctx;

static int tok_fail(const parse_ctx *p, const cnn_stage *s, const char *fmt, const char *detail) {
    char what[256];
    snprintf(what, sizeof what, fmt, detail ? detail : "");
    snprintf(p->err, p->errlen, "%s: [model] layers: '%.*s' at character %d: %s", p->where, s->len,
             p->text + s->pos, s->pos + 1, what);
    return -1;
}

/* One number argument: integers for everything but bn's momentum/eps. */
static int arg_number(const parse_ctx *p, const cnn_stage *s, const char *name, const char *v,
                      size_t vlen, double lo, double hi, int integer, double *out) {
    char buf[64];
    if (vlen == 0 || vlen >= sizeof buf) return tok_fail(p, s, "argument '%s' needs a value", name);
    memcpy(buf, v, vlen);
    buf[vlen] = '\0';
    char *end = NULL;
    double d = strtod(buf, &end);
    if (end == buf || *end || !isfinite(d) || (integer && d != floor(d)) || d < lo || d > hi) {
        char detail[160];
        snprintf(detail, sizeof detail, "%s = '%s' must be %s in [%g, %g]", name, buf,
                 integer ? "an integer" : "a number", lo, hi);
        return tok_fail(p, s, "%s", detail);
    }
    *out = d;
    return 0;
}

/* Parses "name" or "name(args)" at text[*i]; fills s (kind and arguments). */
static int parse_token(const parse_ctx *p, int *i, cnn_stage *s) {
    const char *t = p->text;
    int start = *i, n = *i;
    while ((t[n] >= 'a' && t[n] <= 'z') || (t[n] >= '0' && t[n] <= '9') || t[n] == '_') n++;
    int name_len = n - start;
    const char *args = NULL;
    int args_len = 0;
    if (t[n] == '(') {
        int close = n + 1;
        while (t[close] && t[close] != ')' && t[close] != '(') close++;
        if (t[close] != ')') {
            s->pos = start;
            s->len = (int)strlen(t + start);
            return tok_fail(p, s, "missing ')'%s", NULL);
        }
        args = t + n + 1;
        args_len = close - n - 1;
        n = close + 1;
    }
    s->pos = start;
    s->len = n - start;
    *i = n;
    if (name_len == 0) return tok_fail(p, s, "expected a layer name (%s)", CNN_SYNTAX);
    if (t[n] && t[n] != ' ' && t[n] != '\t') {
        s->len = n - start + 1;
        return tok_fail(p, s, "expected a space after the layer%s", NULL);
    }
    static const char *const names[] = {"conv", "bn", "relu", "pool", "fc", "flatten"};
    int kind = -1;
    for (int k = 0; k < 6; k++)
        if ((int)strlen(names[k]) == name_len && strncmp(t + start, names[k], (size_t)name_len) == 0)
            kind = k;
    if (kind < 0) return tok_fail(p, s, "unknown layer; the layers are: %s", CNN_SYNTAX);
    s->kind = kind; /* ST_FLATTEN is handled by the caller */
    s->stride = 0;
    s->pad = 0;
    s->bias = 1;
    s->momentum = 0.1;
    s->eps = 1e-5;
    int npos = 0, want_pos = kind == ST_CONV ? 2 : kind == ST_POOL ? 1 : kind == ST_FC ? 1 : 0;
    if ((kind == ST_RELU || kind == ST_FLATTEN) && args)
        return tok_fail(p, s, "takes no arguments%s", NULL);
    double v;
    for (int a = 0; args && a <= args_len;) {
        int e = a;
        while (e < args_len && args[e] != ',') e++;
        int b0 = a, b1 = e;
        while (b0 < b1 && args[b0] == ' ') b0++;
        while (b1 > b0 && args[b1 - 1] == ' ') b1--;
        const char *eq = memchr(args + b0, '=', (size_t)(b1 - b0));
        if (b1 == b0) return tok_fail(p, s, "empty argument%s", NULL);
        if (!eq) {
            if (npos >= want_pos)
                return tok_fail(p, s, "too many arguments; the layers are: %s", CNN_SYNTAX);
            const char *nm = kind == ST_CONV ? (npos == 0 ? "out" : "k") : kind == ST_POOL ? "k" : "out";
            double hi = strcmp(nm, "k") != 0 ? 65536 : kind == ST_POOL ? CNN_MAX_POOL : CNN_MAX_KERNEL;
            if (arg_number(p, s, nm, args + b0, (size_t)(b1 - b0), 1, hi, 1, &v)) return -1;
            if (strcmp(nm, "out") == 0)
                s->width = (int)v;
            else
                s->k = (int)v;
            npos++;
        } else {
            int kl = (int)(eq - (args + b0));
            while (kl > 0 && args[b0 + kl - 1] == ' ') kl--;
            const char *vs = eq + 1;
            while (vs < args + b1 && *vs == ' ') vs++;
            size_t vl = (size_t)(args + b1 - vs);
            char key[32];
            snprintf(key, sizeof key, "%.*s", kl < 31 ? kl : 31, args + b0);
            int known = 0;
            if (kind == ST_CONV || kind == ST_POOL) {
                /* a pool's stride and padding go with its window (pad <= k/2) */
                int most = kind == ST_POOL ? CNN_MAX_POOL : CNN_MAX_KERNEL;
                if (strcmp(key, "stride") == 0) {
                    if (arg_number(p, s, key, vs, vl, 1, most, 1, &v)) return -1;
                    s->stride = (int)v, known = 1;
                } else if (strcmp(key, "pad") == 0) {
                    if (arg_number(p, s, key, vs, vl, 0, kind == ST_POOL ? most / 2 : most, 1, &v)) return -1;
                    s->pad = (int)v, known = 1;
                }
            }
            if (kind == ST_CONV && strcmp(key, "bias") == 0) {
                if (arg_number(p, s, key, vs, vl, 0, 1, 1, &v)) return -1;
                s->bias = (int)v, known = 1;
            }
            if (kind == ST_BN && strcmp(key, "momentum") == 0) {
                if (arg_number(p, s, key, vs, vl, 1e-9, 1, 0, &v)) return -1;
                s->momentum = v, known = 1;
            }
            if (kind == ST_BN && strcmp(key, "eps") == 0) {
                if (arg_number(p, s, key, vs, vl, 1e-12, 1, 0, &v)) return -1;
                s->eps = v, known = 1;
            }
            if (!known) {
                char detail[96];
                snprintf(detail, sizeof detail, "unknown argument '%s'", key);
                return tok_fail(p, s, "%s; the layers are: " CNN_SYNTAX, detail);
            }
        }
        a = e + 1;
    }
    if (kind == ST_CONV && npos < 2)
        return tok_fail(p, s, "conv needs the output channels and the kernel size: conv(out, k)%s", NULL);
    if (kind == ST_POOL && npos < 1) return tok_fail(p, s, "pool needs the window size: pool(k)%s", NULL);
    if (kind == ST_POOL && !s->stride) s->stride = s->k;
    if (kind == ST_CONV && !s->stride) s->stride = 1;
    return 0;
}

/* The largest tensor the network may hold, in elements: a layer's output
 * per example, and each weight. The backends index planes and GEMM sizes
 * with int, so a shape past this is refused here, not wrapped around. */
#define CNN_MAX_ELEMS INT_MAX

/* d[0] x .. x d[n-1] without overflow; a product past CNN_MAX_ELEMS is
 * refused at the token: "its output, 65536x284x284 = 5285871616 values per
 * example, is more than ...". */
static int checked_size(const parse_ctx *p, const cnn_stage *s, const char *what,
                        const int64_t *d, int n, int64_t *out) {
    int64_t v = 1;
    int over = 0;
    char dims[128] = "";
    for (int i = 0; i < n; i++) {
        over |= d[i] < 1 || __builtin_mul_overflow(v, d[i], &v) || v > CNN_MAX_ELEMS;
        size_t len = strlen(dims);
        snprintf(dims + len, sizeof dims - len, "%s%lld", i ? "x" : "", (long long)d[i]);
    }
    if (!over) {
        *out = v;
        return 0;
    }
    double exact = 1.0;
    for (int i = 0; i < n; i++) exact *= (double)d[i];
    char detail[256];
    snprintf(detail, sizeof detail, "%s is %s = %.0f values, more than the %d a tensor may hold",
             what, dims, exact, CNN_MAX_ELEMS);
    return tok_fail(p, s, "%s", detail);
}

typedef struct cnn_keys {
    const char *layers;
} cnn_keys;

static const amp_setting cnn_settings[] = {
    {"model", "layers", AMP_SETTING_STRING, CNN_DEFAULT_LAYERS, AMP_SETTING_AT(cnn_keys, layers),
     .doc = "the network, stages separated by blanks: `" CNN_SYNTAX "` (see Convolutional networks "
            "in the README)"},
    {.key = NULL}};

/* Parses the layers string and walks the shapes from the input image. */
static int parse_layers(cnn *c, amp_config *cfg, const amp_model_input *in, char *err,
                        size_t errlen) {
    cnn_keys k;
    if (amp_settings_table_read(cnn_settings, &k, cfg, err, errlen) != 0) return -1;
    const char *text = k.layers;
    const char *where = NULL;
    amp_config_lookup(cfg, "model", "layers", &where);
    if (!where) where = amp_config_path(cfg);
    parse_ctx p = {where, text, err, errlen};
    if (in->x_is_tokens || in->targets != 1 || in->channels <= 0 || in->height <= 0 ||
        in->width <= 0) {
        snprintf(err, errlen,
                 "%s: [model] name = cnn needs images (channels x height x width) with one label "
                 "each; this dataset gives flat rows of %d features (use [data] dataset = "
                 "fashion_mnist, or [model] name = mlp)",
                 where, in->features);
        return -1;
    }
    /* every shape in 64 bits, checked against CNN_MAX_ELEMS before it is
     * stored in the stage's int fields */
    int64_t ch = in->channels, h = in->height, w = in->width, elems = 0;
    int flat = 0;
    int nconv = 0, nbn = 0, nfc = 0, layer = -1;
    c->nst = 0;
    int i = 0;
    while (text[i]) {
        while (text[i] == ' ' || text[i] == '\t') i++;
        if (!text[i]) break;
        cnn_stage tok;
        memset(&tok, 0, sizeof tok);
        if (parse_token(&p, &i, &tok) != 0) return -1;
        if (tok.kind == ST_FLATTEN) {
            flat = 1;
            ch = ch * h * w, h = w = 1; /* each stage's output was checked */
            continue;
        }
        if (c->nst == CNN_MAX_STAGES)
            return tok_fail(&p, &tok, "more than 64 layers%s", NULL);
        if (c->nst > 0 && c->st[c->nst - 1].kind == ST_FC && c->st[c->nst - 1].width == 0)
            return tok_fail(&p, &tok, "comes after the classifier `fc`, which must be last%s", NULL);
        tok.c = (int)ch, tok.h = (int)h, tok.w = (int)w;
        int64_t oc = ch, oh = h, ow = w;
        switch (tok.kind) {
        case ST_CONV:
        case ST_POOL: {
            if (flat)
                return tok_fail(&p, &tok, "%s after fc or flatten: the data is flat there",
                                tok.kind == ST_CONV ? "conv" : "pool");
            if (tok.kind == ST_POOL && 2 * tok.pad > tok.k)
                return tok_fail(&p, &tok, "pad must be at most half the window (as in PyTorch)%s", NULL);
            oh = (h + 2 * tok.pad - tok.k) / tok.stride + 1, ow = (w + 2 * tok.pad - tok.k) / tok.stride + 1;
            if (h + 2 * tok.pad < tok.k || w + 2 * tok.pad < tok.k || oh < 1 || ow < 1) {
                char d[128];
                snprintf(d, sizeof d, "the %dx%d window does not fit the %lldx%lld input here",
                         tok.k, tok.k, (long long)h, (long long)w);
                return tok_fail(&p, &tok, "%s", d);
            }
            if (tok.kind == ST_CONV) {
                int64_t wd[4] = {tok.width, ch, tok.k, tok.k};
                if (checked_size(&p, &tok, "its weight", wd, 4, &elems)) return -1;
                oc = tok.width;
                layer = nconv + nbn + nfc, nconv++;
            }
            break;
        }
        case ST_BN:
            if (flat) return tok_fail(&p, &tok, "bn after fc or flatten (BatchNorm1d) is not supported%s", NULL);
            layer = nconv + nbn + nfc, nbn++;
            break;
        case ST_RELU: break;
        case ST_FC: {
            flat = 1;
            tok.c = (int)(ch * h * w), tok.h = tok.w = 1;
            oc = tok.width ? tok.width : in->classes, oh = ow = 1;
            int64_t wd[2] = {oc, tok.c};
            if (checked_size(&p, &tok, "its weight", wd, 2, &elems)) return -1;
            layer = nconv + nbn + nfc, nfc++;
            break;
        }
        }
        int64_t od[3] = {oc, oh, ow};
        if (checked_size(&p, &tok, "its output per example", od, 3, &elems)) return -1;
        tok.oc = (int)oc, tok.oh = (int)oh, tok.ow = (int)ow;
        tok.layer = layer;
        ch = oc, h = oh, w = ow;
        c->st[c->nst++] = tok;
    }
    cnn_stage *last = c->nst ? &c->st[c->nst - 1] : NULL;
    if (!last || last->kind != ST_FC) {
        snprintf(err, errlen,
                 "%s: [model] layers = '%s': must end with the classifier `fc` (%d classes), e.g. "
                 "'" CNN_DEFAULT_LAYERS "'",
                 where, text, in->classes);
        return -1;
    }
    if (last->width && last->width != in->classes) {
        char n[32];
        snprintf(n, sizeof n, "%d", in->classes);
        return tok_fail(&p, last, "the last fc gives the class scores: write `fc` (or fc(%s))", n);
    }
    for (int s = 0; s < c->nst - 1; s++)
        if (c->st[s].kind == ST_FC && c->st[s].width == 0)
            return tok_fail(&p, &c->st[s], "fc without a width must be the last layer (the classifier)%s",
                            NULL);
    return 0;
}

/* The layer names of the stages, in order: conv1, bn1, fc1, ... */
static void stage_name(const cnn *c, int s, char *out, size_t outlen) {
    static const char *const pre[] = {"conv", "bn", "", "", "fc", ""};
    int k = 0;
    for (int i = 0; i <= s; i++) k += c->st[i].kind == c->st[s].kind;
    snprintf(out, outlen, "%s%d", pre[c->st[s].kind], k);
}

static int cnn_describe(amp_model_desc *d, amp_config *cfg, const amp_model_input *in, char *err,
                        size_t errlen) {
    cnn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    int rc = parse_layers(c, cfg, in, err, errlen);
    char name[AMP_MODEL_NAME_MAX], pname[AMP_MODEL_NAME_MAX + 24];
    /* layers and trained parameters first, in token order; buffers after */
    for (int s = 0; rc == 0 && s < c->nst; s++) {
        const cnn_stage *t = &c->st[s];
        if (t->kind != ST_CONV && t->kind != ST_BN && t->kind != ST_FC) continue;
        stage_name(c, s, name, sizeof name);
        unsigned cls = t->kind == ST_CONV ? (1u << AMP_OP_CONV) | (1u << AMP_OP_POINTWISE)
                       : t->kind == ST_BN ? (1u << AMP_OP_NORM) | (1u << AMP_OP_POINTWISE)
                                          : (1u << AMP_OP_GEMM) | (1u << AMP_OP_POINTWISE);
        rc |= amp_model_desc_add_layer(d, name, cls);
        int64_t wshape[4] = {t->oc, t->c, t->k, t->k}, vec[1] = {t->oc};
        if (t->kind == ST_FC) wshape[1] = (int64_t)in_elems(t);
        snprintf(pname, sizeof pname, "%s.weight", name);
        rc |= amp_model_desc_add_param(d, pname, t->layer, 1, t->kind == ST_CONV ? 4 : t->kind == ST_FC ? 2 : 1,
                                       t->kind == ST_BN ? vec : wshape);
        if (t->kind != ST_CONV || t->bias) {
            snprintf(pname, sizeof pname, "%s.bias", name);
            rc |= amp_model_desc_add_param(d, pname, t->layer, 1, 1, vec);
        }
    }
    for (int s = 0; rc == 0 && s < c->nst; s++) {
        const cnn_stage *t = &c->st[s];
        if (t->kind != ST_BN) continue;
        stage_name(c, s, name, sizeof name);
        int64_t vec[1] = {t->oc};
        snprintf(pname, sizeof pname, "%s.running_mean", name);
        rc |= amp_model_desc_add_buffer(d, pname, t->layer, 1, vec);
        snprintf(pname, sizeof pname, "%s.running_var", name);
        rc |= amp_model_desc_add_buffer(d, pname, t->layer, 1, vec);
        snprintf(pname, sizeof pname, "%s.num_batches_tracked", name);
        rc |= amp_model_desc_add_buffer(d, pname, t->layer, 0, NULL);
        if (rc) snprintf(err, errlen, "out of host memory");
    }
    free(c);
    return rc ? -1 : 0;
}

static int cnn_create(amp_model *m, amp_config *cfg, char *err, size_t errlen) {
    cnn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->impl = c;
    if (amp_kit_create(m, err, errlen) != 0) return -1; /* the optimizer's fused cast */
    if (parse_layers(c, cfg, &m->input, err, errlen) != 0) return -1;
    amp_backend *be = m->be;
    const amp_model_desc *d = &m->desc;
    int B = m->input.batch, ti = 0;
    amp_dtype prev_ad = AMP_DTYPE_F32; /* the data arrives as FP32 */
    c->widest = (size_t)m->input.features;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        const amp_layer_precision *P = t->layer >= 0 ? &m->prec[t->layer] : NULL;
        if (out_elems(t) > c->widest) c->widest = out_elems(t);
        if (t->oc > c->widest_c) c->widest_c = t->oc;
        switch (t->kind) {
        case ST_CONV:
        case ST_FC:
            t->cd = P->compute[t->kind == ST_CONV ? AMP_OP_CONV : AMP_OP_GEMM];
            t->ad = P->activation;
            t->w_off = d->params[ti++].offset;
            t->b_off = t->kind == ST_FC || t->bias ? d->params[ti++].offset : (size_t)-1;
            size_t wn = t->kind == ST_CONV ? (size_t)t->oc * t->c * t->k * t->k : (size_t)t->oc * t->c;
            if (wn > c->largest_w) c->largest_w = wn;
            if (t->kind == ST_CONV) {
                t->conv = (amp_conv2d_desc){B,        t->c,      t->h,   t->w,   t->oc, t->k,
                                            t->k,     t->stride, t->stride, t->pad, t->pad, t->cd};
                if (AMP_CONV(be, conv2d_workspace, &t->conv, &t->ws_bytes) != 0) {
                    snprintf(err, errlen, "[model] layers: conv layer %d: %s", t->layer + 1, be->err);
                    return -1;
                }
                if (t->ws_bytes > c->ws_bytes) c->ws_bytes = t->ws_bytes;
            }
            break;
        case ST_BN:
            t->ad = P->activation;
            t->cd = AMP_DTYPE_F32;
            t->g_off = d->params[ti++].offset;
            t->be_off = d->params[ti++].offset;
            break;
        case ST_POOL:
            t->pool = (amp_pool2d_desc){B, t->c, t->h, t->w, t->k, t->k, t->stride, t->stride, t->pad, t->pad};
            /* fall through */
        case ST_RELU: t->ad = prev_ad; break;
        }
        prev_ad = t->ad;
    }
    for (int s = 0; s < c->nst; s++) { /* the buffers, in the order describe added them */
        cnn_stage *t = &c->st[s];
        if (t->kind != ST_BN) continue;
        t->rm_off = d->params[ti++].offset;
        t->rv_off = d->params[ti++].offset;
        t->nbt_off = d->params[ti++].offset;
    }
    if (ti != d->nparam_tensors) {
        snprintf(err, errlen, "cnn: parameter table mismatch (%d of %d tensors)", ti, d->nparam_tensors);
        return -1;
    }
    return 0;
}

static void cnn_destroy(amp_model *m) {
    amp_kit_free(m);
    free(m->impl);
    m->impl = NULL;
}

static void cnn_layout(amp_model *m) {
    cnn *c = m->impl;
    amp_arena *mem = m->mem;
    size_t B = (size_t)m->input.batch;
    void *prev = m->x;
    amp_dtype prev_ad = AMP_DTYPE_F32;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        size_t on = B * out_elems(t);
        if (t->kind == ST_CONV || t->kind == ST_FC) {
            t->x_op = prev_ad == t->cd ? prev : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * in_elems(t) * dsize(t->cd));
            size_t wn = t->kind == ST_CONV ? (size_t)t->oc * t->c * t->k * t->k : (size_t)t->oc * t->c;
            if (t->cd == AMP_DTYPE_F32) {
                t->w_work = m->master ? m->master + t->w_off : NULL;
                t->b_work = m->master && t->b_off != (size_t)-1 ? m->master + t->b_off : NULL;
            } else {
                t->w_work = amp_arena_take(&mem[AMP_MEM_WORKING], wn * 2);
                t->b_work = t->b_off != (size_t)-1 ? amp_arena_take(&mem[AMP_MEM_WORKING], (size_t)t->oc * 2) : NULL;
            }
        }
        if (t->kind == ST_BN) {
            t->save_mean = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], (size_t)t->oc * 4);
            t->save_invstd = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], (size_t)t->oc * 4);
        }
        if (t->kind == ST_POOL) t->idx = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], on * 2);
        /* relu works in place: its backward needs only out > 0 */
        t->out = t->kind == ST_RELU ? prev : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], on * dsize(t->ad));
        prev = t->out;
        prev_ad = t->ad;
    }
    for (int i = 0; i < 3; i++) c->f[i] = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * c->widest * 4);
    c->f_w = amp_arena_take(&mem[AMP_MEM_WORKSPACE], c->largest_w * 4);
    c->f_b = amp_arena_take(&mem[AMP_MEM_WORKSPACE], (size_t)c->widest_c * 4);
    c->f_b2 = amp_arena_take(&mem[AMP_MEM_WORKSPACE], (size_t)c->widest_c * 4);
    c->one = amp_arena_take(&mem[AMP_MEM_WORKSPACE], 4);
    c->ws = amp_arena_take(&mem[AMP_MEM_WORKSPACE], c->ws_bytes);
    amp_kit_layout(m);
}

/* PyTorch's default init: conv and linear weights and biases
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (kaiming_uniform with a = sqrt(5)),
 * batch norm weight 1, bias 0, running mean 0, var 1, count 0. One RNG
 * stream from the seed, tensors in table order. */
static int cnn_init_params(amp_model *m, uint64_t seed) {
    cnn *c = m->impl;
    const amp_model_desc *d = &m->desc;
    float *host = malloc(d->nparams * sizeof(float));
    if (!host) {
        snprintf(m->be->err, sizeof m->be->err, "out of host memory");
        return -1;
    }
    amp_rng rng;
    amp_rng_seed(&rng, seed);
    for (int s = 0; s < c->nst; s++) {
        const cnn_stage *t = &c->st[s];
        if (t->kind == ST_CONV || t->kind == ST_FC) {
            size_t fan_in = t->kind == ST_CONV ? (size_t)t->c * t->k * t->k : (size_t)t->c;
            double bound = 1.0 / sqrt((double)fan_in);
            for (size_t i = 0; i < (size_t)t->oc * fan_in; i++)
                host[t->w_off + i] = (float)((2.0 * amp_rng_uniform(&rng) - 1.0) * bound);
            if (t->b_off != (size_t)-1)
                for (int i = 0; i < t->oc; i++)
                    host[t->b_off + i] = (float)((2.0 * amp_rng_uniform(&rng) - 1.0) * bound);
        } else if (t->kind == ST_BN) {
            for (int i = 0; i < t->oc; i++) {
                host[t->g_off + i] = 1.0f;
                host[t->be_off + i] = 0.0f;
                host[t->rm_off + i] = 0.0f;
                host[t->rv_off + i] = 1.0f;
            }
            host[t->nbt_off] = 0.0f;
        }
    }
    int rc = m->be->ops->upload(m->be, m->master, host, d->nparams * sizeof(float));
    free(host);
    return rc;
}

/* A conv or fc stage's 16-bit working weight or bias. */
static int cnn_working_copy(amp_model *m, int tensor, amp_working_copy *wc) {
    const cnn *c = m->impl;
    size_t off = m->desc.params[tensor].offset;
    for (int s = 0; s < c->nst; s++) {
        const cnn_stage *t = &c->st[s];
        if ((t->kind != ST_CONV && t->kind != ST_FC) || t->cd == AMP_DTYPE_F32) continue;
        void *p = t->w_off == off ? t->w_work : t->b_work && t->b_off == off ? t->b_work : NULL;
        if (!p) continue;
        *wc = (amp_working_copy){p, t->cd, 0, t->layer};
        return 1;
    }
    return 0;
}

static int cnn_cast_weights(amp_model *m) {
    cnn *c = m->impl;
    amp_backend *be = m->be;
    int reused = amp_model_cast_reuse(m);
    if (reused != 0) return reused < 0 ? -1 : 0;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        if ((t->kind != ST_CONV && t->kind != ST_FC) || t->cd == AMP_DTYPE_F32) continue;
        amp_round_count *cnt = amp_model_rounds(m, t->layer, AMP_ROUND_FWD);
        size_t wn = t->kind == ST_CONV ? (size_t)t->oc * t->c * t->k * t->k : (size_t)t->oc * t->c;
        CHECK(be->ops->round(be, t->w_work, t->cd, m->master + t->w_off, wn, cnt));
        if (t->b_work)
            CHECK(be->ops->round(be, t->b_work, t->cd, m->master + t->b_off, (size_t)t->oc, cnt));
    }
    return 0;
}

/* dst(dst_dt)[n] = src(src_dt)[n], through FP32 scratch when both are 16-bit
 * and differ; counts into cnt (what rounding to dst_dt lost). */
static int convert(amp_model *m, void *dst, amp_dtype dst_dt, const void *src, amp_dtype src_dt,
                   size_t n, float *scratch, amp_round_count *cnt) {
    amp_backend *be = m->be;
    if (dst == src && dst_dt == src_dt) return 0;
    if (src_dt == AMP_DTYPE_F32) return be->ops->round(be, dst, dst_dt, src, n, cnt);
    if (dst_dt == AMP_DTYPE_F32) return be->ops->widen(be, dst, src, src_dt, n);
    CHECK(be->ops->widen(be, scratch, src, src_dt, n));
    return be->ops->round(be, dst, dst_dt, scratch, n, cnt);
}

/* src(dt) as FP32: src itself when it is FP32, else widened into scratch. */
static const float *wide(amp_model *m, const void *src, amp_dtype dt, size_t n, float *scratch) {
    if (dt == AMP_DTYPE_F32) return src;
    if (m->be->ops->widen(m->be, scratch, src, dt, n) != 0) return NULL;
    return scratch;
}

/* The FP32 scratch buffer (f[0] or f[1]) that is not x. */
static float *other_scratch(cnn *c, const float *x) { return x == c->f[1] ? c->f[0] : c->f[1]; }

static int cnn_forward(amp_model *m, const amp_forward_args *a) {
    cnn *c = m->impl;
    amp_backend *be = m->be;
    int R = a->rows, training = a->for_backward;
    const void *prev = m->x;
    amp_dtype prev_ad = AMP_DTYPE_F32;
    /* view: FP32 scratch holding exactly widen(prev) when a stage left one
     * (relu and pooling are exact in any dtype, so their FP32 result is
     * their stored output), else NULL: the next stage skips widening. An
     * FP32 output is written in place, never copied. */
    const float *view = NULL;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        const cnn_stage *next = s + 1 < c->nst ? &c->st[s + 1] : NULL;
        size_t in_n = (size_t)R * in_elems(t), on = (size_t)R * out_elems(t);
        amp_round_count *fwd = t->layer >= 0 ? amp_model_rounds(m, t->layer, AMP_ROUND_FWD) : NULL;
        int wide_out = t->ad == AMP_DTYPE_F32;
        const float *out_view = NULL;
        switch (t->kind) {
        case ST_CONV: {
            /* the input rounded to the conv's dtype: counted, as autocast's cast */
            CHECK(convert(m, t->x_op, t->cd, prev, prev_ad, in_n, c->f[0], fwd));
            const float *bias = NULL;
            if (t->b_work) bias = wide(m, t->b_work, t->cd, (size_t)t->oc, c->f_b);
            amp_conv2d_desc d = t->conv;
            d.n = R;
            float *y = wide_out ? t->out : c->f[1];
            CHECK(
                AMP_CONV(be, conv2d_forward, y, t->x_op, t->w_work, bias, &d, c->ws, c->ws_bytes));
            if (!wide_out) CHECK(be->ops->round(be, t->out, t->ad, y, on, fwd));
            break;
        }
        case ST_FC: {
            CHECK(convert(m, t->x_op, t->cd, prev, prev_ad, in_n, c->f[0], fwd));
            amp_gemm_desc g;
            memset(&g, 0, sizeof g);
            g.trans_b = 1; /* y[R, out] = x[R, in] . W[out, in]^T + b */
            g.m = R, g.n = t->oc, g.k = t->c;
            g.lda = t->c, g.ldb = t->c, g.ldc = t->oc;
            g.batch = 1;
            g.in_dtype = t->cd;
            g.a = t->x_op, g.b = t->w_work;
            g.alpha = 1.0f;
            g.acc = c->f[1];
            g.bias = t->b_work;
            g.bias_dtype = t->cd;
            g.act = AMP_ACT_NONE;
            g.out = t->out;
            g.out_dtype = t->ad;
            g.cnt = fwd;
            CHECK(AMP_CALL(be, gemm_ex, &g));
            break;
        }
        case ST_BN: {
            const float *x = view ? view : wide(m, prev, prev_ad, in_n, c->f[0]);
            if (!x) return -1;
            int hw = t->h * t->w;
            float *y = wide_out ? t->out : other_scratch(c, x);
            /* training: batch statistics, running ones updated (in the master
             * array, so checkpoints carry them); evaluation: running ones */
            CHECK(
                AMP_CONV(be, batch_norm_forward,
                         &(amp_batch_norm_fwd){y, t->save_mean, t->save_invstd,
                                               m->master + t->rm_off, m->master + t->rv_off, x,
                                               m->master + t->g_off, m->master + t->be_off, R, t->c,
                                               hw, training, (float)t->momentum, (float)t->eps}));
            if (training && !c->one_ready) {
                const float one = 1.0f;
                CHECK(be->ops->upload(be, c->one, &one, sizeof one));
                c->one_ready = 1;
            }
            if (training) /* num_batches_tracked += 1 */
                CHECK(be->ops->quantize(be, m->master + t->nbt_off, c->one, 1, AMP_DTYPE_F32, NULL, 1));
            if (wide_out) break;
            if (next && next->kind == ST_RELU && next->out == t->out) {
                /* the relu overwrites this output in place: it only needs
                 * the rounded values, so round (counted) in FP32 and skip
                 * the store */
                CHECK(be->ops->quantize(be, y, y, on, t->ad, fwd, 0));
                out_view = y;
            } else {
                CHECK(be->ops->round(be, t->out, t->ad, y, on, fwd));
            }
            break;
        }
        case ST_RELU: {
            /* in place and exact in any dtype: nothing to count */
            const float *x = view ? view : wide(m, prev, prev_ad, on, c->f[0]);
            if (!x) return -1;
            if (wide_out) {
                CHECK(be->ops->act_forward(be, t->out, x, on, AMP_ACT_RELU));
                break;
            }
            float *y = (float *)x; /* x is scratch here: relu it in place */
            CHECK(be->ops->act_forward(be, y, x, on, AMP_ACT_RELU));
            CHECK(be->ops->round(be, t->out, t->ad, y, on, NULL));
            out_view = y;
            break;
        }
        case ST_POOL: {
            const float *x = view ? view : wide(m, prev, prev_ad, in_n, c->f[0]);
            if (!x) return -1;
            amp_pool2d_desc d = t->pool;
            d.n = R;
            float *y = wide_out ? t->out : other_scratch(c, x);
            CHECK(AMP_CONV(be, max_pool2d_forward, y, t->idx, x, &d));
            if (!wide_out) {
                CHECK(be->ops->round(be, t->out, t->ad, y, on, NULL)); /* exact */
                out_view = y;
            }
            break;
        }
        }
        prev = t->out;
        prev_ad = t->ad;
        view = out_view;
    }
    const cnn_stage *last = &c->st[c->nst - 1];
    size_t n = (size_t)R * last->oc;
    /* softmax and loss run in FP32 whatever the policy (autocast's fp32 list) */
    const float *logits = wide(m, last->out, last->ad, n, c->f[0]);
    if (!logits) return -1;
    return be->ops->softmax_xent(be, a->for_backward ? c->f[2] : NULL, m->stats, logits, m->y, R,
                                 last->oc, a->loss_grad_scale);
}

static int cnn_backward(amp_model *m, const amp_backward_args *a) {
    cnn *c = m->impl;
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    int R = a->rows;
    /* g: the gradient of the current stage's output, FP32, holding values of
     * the output's dtype; it lives in one of the three scratch buffers and
     * the others are free. */
    int gi = 2;
    const cnn_stage *last = &c->st[c->nst - 1];
    CHECK(op->quantize(be, c->f[gi], c->f[gi], (size_t)R * last->oc, last->ad,
                       amp_model_rounds(m, last->layer, AMP_ROUND_GRAD), 0));
    for (int s = c->nst - 1; s >= 0; s--) {
        cnn_stage *t = &c->st[s];
        const cnn_stage *pv = s > 0 ? &c->st[s - 1] : NULL;
        const void *in = pv ? pv->out : m->x;
        amp_dtype in_dt = pv ? pv->ad : AMP_DTYPE_F32;
        size_t in_n = (size_t)R * in_elems(t), on = (size_t)R * out_elems(t);
        float *g = c->f[gi], *f1 = c->f[(gi + 1) % 3], *f2 = c->f[(gi + 2) % 3];
        amp_round_count *gc = t->layer >= 0 ? amp_model_rounds(m, t->layer, AMP_ROUND_GRAD) : NULL;
        int dx_in = -1; /* which scratch holds the input's gradient afterwards */
        switch (t->kind) {
        case ST_CONV:
        case ST_FC: {
            /* dy in the op's dtype (exact when it equals the output dtype) */
            const void *dy = g;
            if (t->cd != AMP_DTYPE_F32) {
                CHECK(op->round(be, f1, t->cd, g, on, NULL));
                dy = f1;
            }
            size_t wn = t->kind == ST_CONV ? (size_t)t->oc * t->c * t->k * t->k : (size_t)t->oc * t->c;
            float *db = t->b_off != (size_t)-1 ? c->f_b : NULL;
            if (t->kind == ST_CONV) {
                amp_conv2d_desc d = t->conv;
                d.n = R;
                CHECK(AMP_CONV(be, conv2d_backward_filter, c->f_w, db, t->x_op, dy, &d, c->ws,
                               c->ws_bytes));
                if (s > 0)
                    CHECK(AMP_CONV(be, conv2d_backward_data, f2, dy, t->w_work, &d, c->ws,
                                   c->ws_bytes));
            } else {
                amp_gemm_desc gw;
                memset(&gw, 0, sizeof gw);
                gw.trans_a = 1; /* dW[out, in] = dY[R, out]^T . X[R, in] */
                gw.m = t->oc, gw.n = t->c, gw.k = R;
                gw.lda = t->oc, gw.ldb = t->c, gw.ldc = t->c;
                gw.batch = 1, gw.in_dtype = t->cd, gw.a = dy, gw.b = t->x_op, gw.alpha = 1.0f;
                gw.acc = c->f_w, gw.out_dtype = AMP_DTYPE_F32;
                CHECK(AMP_CALL(be, gemm_ex, &gw));
                CHECK(op->col_sum(be, c->f_b, g, R, t->oc));
                if (s > 0) {
                    amp_gemm_desc gx = gw; /* dX[R, in] = dY[R, out] . W[out, in] */
                    gx.trans_a = 0;
                    gx.m = R, gx.n = t->c, gx.k = t->oc;
                    gx.lda = t->oc, gx.ldb = t->c, gx.ldc = t->c;
                    gx.a = dy, gx.b = t->w_work, gx.acc = f2;
                    CHECK(AMP_CALL(be, gemm_ex, &gx));
                }
            }
            /* a 16-bit working weight's gradient is 16-bit before it reaches FP32 */
            CHECK(op->quantize(be, m->grads + t->w_off, c->f_w, wn, t->cd, gc, a->accumulate));
            if (db)
                CHECK(op->quantize(be, m->grads + t->b_off, db, (size_t)t->oc, t->cd, gc, a->accumulate));
            dx_in = (gi + 2) % 3;
            break;
        }
        case ST_BN: {
            const float *x = wide(m, in, in_dt, in_n, f1);
            if (!x) return -1;
            /* dx replaces dy in place (the op reads a channel before writing it) */
            CHECK(AMP_CONV(be, batch_norm_backward,
                           &(amp_batch_norm_bwd){g, c->f_b, c->f_b2, g, x, m->master + t->g_off,
                                                 t->save_mean, t->save_invstd, R, t->c, t->h * t->w,
                                                 1}));
            CHECK(op->quantize(be, m->grads + t->g_off, c->f_b, (size_t)t->oc, AMP_DTYPE_F32, NULL,
                               a->accumulate));
            CHECK(op->quantize(be, m->grads + t->be_off, c->f_b2, (size_t)t->oc, AMP_DTYPE_F32, NULL,
                               a->accumulate));
            dx_in = gi;
            break;
        }
        case ST_RELU: {
            if (t->ad != AMP_DTYPE_F32 && amp_backend_supports(be, "act_backward_round")) {
                /* one pass reading the 16-bit output; g holds values of the
                 * dtype, so the op's rounding is exact (uncounted, as the
                 * composed ops below) */
                CHECK(AMP_FUSED(
                    be, act_backward_round,
                    &(amp_act_round_args){f1, g, g, t->out, t->ad, on, AMP_ACT_RELU, NULL}));
                dx_in = gi;
                break;
            }
            const float *z = wide(m, t->out, t->ad, on, f1); /* relu's output: > 0 where its input was */
            if (!z) return -1;
            CHECK(op->act_backward(be, g, g, z, on, AMP_ACT_RELU));
            dx_in = gi;
            break;
        }
        case ST_POOL: {
            amp_pool2d_desc d = t->pool;
            d.n = R;
            CHECK(AMP_CONV(be, max_pool2d_backward, f2, g, t->idx, &d));
            dx_in = (gi + 2) % 3;
            break;
        }
        }
        if (s == 0) break;
        gi = dx_in;
        /* the input's gradient is stored in the input's dtype, counted
         * against the layer that produced the input */
        if (t->kind == ST_RELU && pv->ad == t->ad)
            continue; /* dy * (z > 0) of values already in the dtype: exact, uncounted */
        amp_round_count *pc = pv->layer >= 0 ? amp_model_rounds(m, pv->layer, AMP_ROUND_GRAD) : NULL;
        CHECK(op->quantize(be, c->f[gi], c->f[gi], in_n, pv->ad, t->kind == ST_RELU ? NULL : pc, 0));
    }
    return 0;
}

int amp_cnn_logits(amp_model *m, float *dst, int rows) {
    cnn *c = m->impl;
    const cnn_stage *last = &c->st[c->nst - 1];
    size_t n = (size_t)rows * last->oc;
    const float *l = wide(m, last->out, last->ad, n, c->f[0]);
    if (!l) return -1;
    return m->be->ops->download(m->be, dst, l, n * sizeof(float));
}

int amp_cnn_conv_gemm_only(amp_model *m, int rows, double *flops) {
    cnn *c = m->impl;
    amp_backend *be = m->be;
    double f = 0.0;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        if (t->kind == ST_CONV) {
            amp_conv2d_desc d = t->conv;
            d.n = rows;
            double one = 2.0 * rows * t->oc * t->oh * t->ow * (double)t->c * t->k * t->k;
            CHECK(AMP_CONV(be, conv2d_forward, c->f[1], t->x_op, t->w_work, NULL, &d, c->ws,
                           c->ws_bytes));
            CHECK(AMP_CONV(be, conv2d_backward_filter, c->f_w, NULL, t->x_op, c->f[1], &d, c->ws,
                           c->ws_bytes));
            f += 2 * one;
            if (s > 0) {
                CHECK(AMP_CONV(be, conv2d_backward_data, c->f[2], c->f[1], t->w_work, &d, c->ws,
                               c->ws_bytes));
                f += one;
            }
        } else if (t->kind == ST_FC) {
            amp_gemm_desc g;
            memset(&g, 0, sizeof g);
            g.batch = 1, g.in_dtype = t->cd, g.alpha = 1.0f, g.out_dtype = AMP_DTYPE_F32;
            double one = 2.0 * rows * t->oc * (double)t->c;
            g.trans_b = 1, g.m = rows, g.n = t->oc, g.k = t->c, g.lda = t->c, g.ldb = t->c;
            g.ldc = t->oc, g.a = t->x_op, g.b = t->w_work, g.acc = c->f[1];
            CHECK(AMP_CALL(be, gemm_ex, &g)); /* forward */
            g.trans_a = 1, g.trans_b = 0, g.m = t->oc, g.n = t->c, g.k = rows, g.lda = t->oc;
            g.ldb = t->c, g.ldc = t->c, g.a = c->f[1], g.b = t->x_op, g.acc = c->f_w;
            CHECK(AMP_CALL(be, gemm_ex, &g)); /* dW */
            f += 2 * one;
            if (s > 0) {
                g.trans_a = 0, g.m = rows, g.n = t->c, g.k = t->oc, g.lda = t->oc, g.ldb = t->c;
                g.ldc = t->c, g.a = c->f[1], g.b = t->w_work, g.acc = c->f[2];
                CHECK(AMP_CALL(be, gemm_ex, &g)); /* dX */
                f += one;
            }
        }
    }
    if (flops) *flops = f;
    return 0;
}

const amp_model_ops amp_model_cnn = {
    .name = "cnn",
    .settings = cnn_settings,
    .describe = cnn_describe,
    .create = cnn_create,
    .layout = cnn_layout,
    .destroy = cnn_destroy,
    .init_params = cnn_init_params,
    .cast_weights = cnn_cast_weights,
    .working_copy = cnn_working_copy,
    .forward = cnn_forward,
    .backward = cnn_backward,
};
