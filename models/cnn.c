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
 * Precision, as autocast, is the layer kit's (models/layers/image.h): a conv
 * or fc computes in its op class's dtype and stores its output in the
 * layer's activation dtype, batch norm computes in FP32, ReLU and max
 * pooling keep the dtype they are given; every lossy rounding is counted in
 * the owning layer's telemetry slot. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cnn.h"
#include "layers/image.h"
#include "layers/layers.h"
#include "model.h"
#include "keys/settings_table.h"

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

/* One parsed token with its shapes, and its kit object. */
typedef struct cnn_stage {
    int kind;
    int pos, len;          /* the token in the layers string (for messages) */
    int width, k, stride, pad, bias; /* conv: out channels, fc: out features (0: classes); conv/pool window */
    double momentum, eps;  /* bn */
    int c, h, w;           /* input per row (fc: c = features, h = w = 1) */
    int oc, oh, ow;        /* output per row */
    int layer;             /* the owning layer: its own for conv/bn/fc, else the last one (-1) */
    amp_dtype ad;          /* dtype the output is stored in (the kit object's) */
    amp_conv2d conv;
    amp_batchnorm bn;
    amp_linear fc;
    amp_maxpool pool;
    void *out;             /* [batch, oc*oh*ow] in ad (relu: aliases its input) */
} cnn_stage;

typedef struct cnn {
    int nst;
    cnn_stage st[CNN_MAX_STAGES];
    size_t widest;         /* largest activation per row, in elements */
    float *f[3];           /* [batch, widest] FP32: two views (f[0], f[1]) and dlogits */
} cnn;

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
     .doc = "the network, stages separated by blanks: `" CNN_SYNTAX "` (docs/cnn.md)"},
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
    int rc = parse_layers(c, cfg, in, err, errlen), oom = 0;
    char name[AMP_MODEL_NAME_MAX];
    /* layers and trained parameters first, in token order; buffers after */
    for (int s = 0; rc == 0 && s < c->nst; s++) {
        const cnn_stage *t = &c->st[s];
        stage_name(c, s, name, sizeof name);
        if (t->kind == ST_CONV) oom |= amp_conv2d_describe(d, name, t->oc, t->c, t->k, t->bias, 1);
        if (t->kind == ST_BN) oom |= amp_batchnorm_describe(d, name, t->oc, 1);
        if (t->kind == ST_FC) oom |= amp_linear_describe(d, name, t->oc, (int)in_elems(t), 1, 1);
    }
    for (int s = 0; rc == 0 && s < c->nst; s++) {
        stage_name(c, s, name, sizeof name);
        if (c->st[s].kind == ST_BN) oom |= amp_batchnorm_describe_buffers(d, name, c->st[s].oc);
    }
    if (oom) snprintf(err, errlen, "out of host memory");
    free(c);
    return rc || oom ? -1 : 0;
}

static int cnn_create(amp_model *m, amp_config *cfg, char *err, size_t errlen) {
    cnn *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->impl = c;
    if (amp_kit_create(m, err, errlen) != 0) return -1;
    if (parse_layers(c, cfg, &m->input, err, errlen) != 0) return -1;
    int B = m->input.batch;
    amp_dtype prev_ad = AMP_DTYPE_F32; /* the data arrives as FP32 */
    c->widest = (size_t)m->input.features;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        char name[AMP_MODEL_NAME_MAX];
        stage_name(c, s, name, sizeof name);
        if (out_elems(t) > c->widest) c->widest = out_elems(t);
        int rc = 0;
        t->ad = prev_ad; /* relu and pool store what they are given */
        switch (t->kind) {
        case ST_CONV:
            rc = amp_conv2d_init(m, &t->conv, name, prev_ad, B, t->c, t->h, t->w, t->k, t->stride, t->pad);
            t->ad = t->conv.out_dt;
            break;
        case ST_FC:
            rc = amp_linear_init_autocast(m, &t->fc, name, B, amp_array_of(NULL, prev_ad));
            t->ad = t->fc.out_dt;
            break;
        case ST_BN:
            rc = amp_batchnorm_init(m, &t->bn, name, t->c, t->h * t->w, t->momentum, t->eps);
            t->ad = t->bn.out_dt;
            break;
        case ST_POOL: amp_maxpool_init(&t->pool, B, t->c, t->h, t->w, t->k, t->stride, t->pad); break;
        }
        if (rc != 0) {
            snprintf(err, errlen, "[model] layers: %s: %s", name, m->be->err);
            return -1;
        }
        prev_ad = t->ad;
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
    size_t B = (size_t)m->input.batch;
    void *prev = m->x;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        if (t->kind == ST_CONV) amp_conv2d_layout(m, &t->conv, prev);
        if (t->kind == ST_BN) amp_batchnorm_layout(m, &t->bn);
        if (t->kind == ST_POOL) amp_maxpool_layout(m, &t->pool);
        /* relu works in place: its backward needs only out > 0 */
        t->out = t->kind == ST_RELU ? prev : amp_kit_take(m, AMP_MEM_ACTIVATIONS, B * out_elems(t), t->ad);
        prev = t->out;
    }
    for (int i = 0; i < 3; i++) c->f[i] = amp_kit_take(m, AMP_MEM_WORKSPACE, B * c->widest, AMP_DTYPE_F32);
    amp_kit_layout(m);
}

/* What stage s reads: the previous stage's stored output, or the batch. */
static amp_array input_of(amp_model *m, const cnn *c, int s) {
    if (s == 0) return amp_array_of(m->x, AMP_DTYPE_F32);
    return amp_array_of(c->st[s - 1].out, c->st[s - 1].ad);
}

static int cnn_forward(amp_model *m, const amp_forward_args *a) {
    cnn *c = m->impl;
    int R = a->rows;
    const amp_image_scratch views = {{c->f[0], c->f[1]}};
    /* x: the previous output, with the FP32 view its layer left (relu and
     * pooling read it instead of widening the stored values) */
    amp_array x = input_of(m, c, 0);
    int relu_done = 0; /* bn stored the relu after it (AMP_BN_STORE_RELU) */
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        amp_array y = amp_array_of(t->out, t->ad);
        /* a relu next overwrites bn's output in place: bn hands it the view,
         * or stores the relu itself where that is one pass */
        int relu_next = s + 1 < c->nst && c->st[s + 1].kind == ST_RELU;
        int store = !relu_next;
        switch (t->kind) {
        case ST_CONV: CHECK(amp_conv2d_forward(m, &t->conv, t->out, x, R)); break;
        case ST_FC: CHECK(amp_linear_forward_autocast(m, &t->fc, t->out, x, R)); break;
        case ST_BN:
            if (relu_next && amp_batchnorm_fuses_relu(m, &t->bn)) store = AMP_BN_STORE_RELU;
            CHECK(amp_batchnorm_forward(m, &t->bn, &y, t->out, x, &views, R, a->for_backward, store));
            relu_done = store == AMP_BN_STORE_RELU;
            break;
        case ST_RELU: /* in place: its out is its input's array */
            if (relu_done)
                y = x;
            else
                CHECK(amp_relu_forward(m, &y, t->out, x, &views, (size_t)R * out_elems(t)));
            relu_done = 0;
            break;
        case ST_POOL: CHECK(amp_maxpool_forward(m, &t->pool, &y, t->out, x, &views, R)); break;
        }
        x = y;
    }
    /* softmax and loss run in FP32 whatever the policy (autocast's fp32 list) */
    const cnn_stage *last = &c->st[c->nst - 1];
    const float *logits = amp_array_f32(m, &x, c->f[0], (size_t)R * last->oc);
    if (!logits) return -1;
    return m->be->ops->softmax_xent(m->be, a->for_backward ? c->f[2] : NULL, m->stats, logits, m->y,
                                    R, last->oc, a->loss_grad_scale);
}

static int cnn_backward(amp_model *m, const amp_backward_args *a) {
    cnn *c = m->impl;
    int R = a->rows, acc = a->accumulate;
    /* g: the gradient of the current stage's output, FP32 holding values of
     * the output's dtype, in one of the three scratch arrays (the others free) */
    int gi = 2;
    /* g not yet rounded to its activation's dtype: only ever for a conv,
     * which rounds it itself (amp_conv2d_backward_round) */
    int g_raw = 0;
    const cnn_stage *last = &c->st[c->nst - 1];
    CHECK(amp_kit_grad_round(m, c->f[gi], last->ad, last->layer, (size_t)R * last->oc));
    for (int s = c->nst - 1; s >= 0; s--) {
        cnn_stage *t = &c->st[s];
        amp_array in = input_of(m, c, s);
        float *g = c->f[gi], *f1 = c->f[(gi + 1) % 3], *dx = s > 0 ? c->f[(gi + 2) % 3] : NULL;
        int dx_rounded = 0; /* the stage rounded dx into its input's dtype itself */
        switch (t->kind) {
        case ST_CONV:
            if (g_raw) {
                CHECK(amp_conv2d_backward_round(m, &t->conv, dx, g, R, acc,
                                                s > 0 ? c->st[s - 1].ad : AMP_DTYPE_F32,
                                                s > 0 ? c->st[s - 1].layer : -1));
                dx_rounded = 1;
            } else {
                CHECK(amp_conv2d_backward(m, &t->conv, dx, g, R, acc));
            }
            break;
        case ST_FC: {
            amp_array dy = amp_linear_rounded_dy(&t->fc, g);
            CHECK(amp_linear_backward_weights(m, &t->fc, &dy, in, R, acc));
            if (dx) CHECK(amp_linear_backward_data(m, &t->fc, dx, &dy, R));
            break;
        }
        case ST_BN: CHECK(amp_batchnorm_backward(m, &t->bn, g, in, f1, R, acc)); break;
        case ST_RELU:
            CHECK(amp_relu_backward(m, g, amp_array_of(t->out, t->ad), f1, (size_t)R * out_elems(t)));
            break;
        case ST_POOL: /* with the rounding of dx into its input's dtype */
            if (s > 0)
                CHECK(amp_maxpool_backward_round(m, &t->pool, c->f[(gi + 2) % 3], g, R,
                                                 c->st[s - 1].ad, c->st[s - 1].layer));
            else
                CHECK(amp_maxpool_backward(m, &t->pool, c->f[(gi + 2) % 3], g, R));
            break;
        }
        if (s == 0) break;
        if (t->kind != ST_BN && t->kind != ST_RELU) gi = (gi + 2) % 3; /* not in place */
        /* the input's gradient in the input's dtype, counted against the layer
         * that produced it: after a relu it already is (exact, uncounted), a
         * pool rounded it in its backward (a conv too, where it took its dy
         * raw), a conv takes it raw and rounds it itself (in one pass with its
         * own rounding of dy) */
        const cnn_stage *pv = &c->st[s - 1];
        int rounded = t->kind == ST_RELU || t->kind == ST_POOL || dx_rounded;
        g_raw = !rounded && pv->kind == ST_CONV;
        if (!rounded && !g_raw)
            CHECK(amp_kit_grad_round(m, c->f[gi], pv->ad, pv->layer, (size_t)R * in_elems(t)));
    }
    return 0;
}

int amp_cnn_logits(amp_model *m, float *dst, int rows) {
    cnn *c = m->impl;
    const cnn_stage *last = &c->st[c->nst - 1];
    size_t n = (size_t)rows * last->oc;
    amp_array out = amp_array_of(last->out, last->ad);
    const float *l = amp_array_f32(m, &out, c->f[0], n);
    if (!l) return -1;
    return m->be->ops->download(m->be, dst, l, n * sizeof(float));
}

int amp_cnn_conv_gemm_only(amp_model *m, int rows, double *flops) {
    cnn *c = m->impl;
    double f = 0.0;
    for (int s = 0; s < c->nst; s++) {
        cnn_stage *t = &c->st[s];
        float *dx = s > 0 ? c->f[2] : NULL;
        if (t->kind == ST_CONV) CHECK(amp_conv2d_convs_only(m, &t->conv, c->f[1], dx, rows, &f));
        if (t->kind == ST_FC)
            CHECK(amp_linear_gemms_only(m, &t->fc, input_of(m, c, s), c->f[1], dx, rows, &f));
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
    .init_params = amp_kit_init_params,
    .cast_weights = amp_kit_cast_weights,
    .working_copy = amp_kit_working_copy,
    .forward = cnn_forward,
    .backward = cnn_backward,
};
