#include "mlp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define CHECK(expr)                 \
    do {                            \
        if ((expr) != 0) return -1; \
    } while (0)

static size_t dsize(amp_dtype dt) { return dt == AMP_DTYPE_F32 ? 4 : 2; }

int amp_mlp_layer_count(const amp_mlp_spec *spec) { return spec->nhidden + 1; }

void amp_mlp_layer_name(char *out, size_t outlen, int index) {
    snprintf(out, outlen, "fc%d", index + 1);
}

/* dtype of the tensor that feeds layer l's GEMM as X */
static amp_dtype input_dtype(const amp_mlp *m, int l) {
    return l == 0 ? m->x_dtype : m->layers[l - 1].prec.activation;
}

/* The measured arenas against the backend's overcommit bound (see
 * backend.h): a clear error now instead of an OOM kill later. */
static int check_host_memory(const amp_mlp *m, amp_backend *be, char *err, size_t errlen) {
    double ram = be->ops->overcommit_limit(be), need = 0.0;
    if (ram <= 0.0) return 0;
    for (int c = 0; c < AMP_MEM_COUNT; c++) need += (double)m->mem[c].used;
    if (need <= ram) return 0;
    snprintf(err, errlen,
             "the model needs %.1f GiB of host memory (parameters %.1f GiB, activations %.1f "
             "GiB) but this machine has %.1f GiB; make [model] hidden or [data] batch_size smaller",
             need / 1073741824.0, (double)m->mem[AMP_MEM_MASTER].used / 1073741824.0,
             (double)m->mem[AMP_MEM_ACTIVATIONS].used / 1073741824.0, ram / 1073741824.0);
    return -1;
}

/* Carves every buffer out of the category arenas; run to measure, then for real. */
static void layout(amp_mlp *m, const amp_mlp_spec *spec) {
    amp_arena *mem = m->mem;
    size_t B = (size_t)m->batch, widest = (size_t)m->in_features, largest = 0;
    int needs_conversion = 0;
    for (int l = 0; l < m->nlayers; l++) {
        amp_mlp_layer *L = &m->layers[l];
        if ((size_t)L->out > widest) widest = (size_t)L->out;
        if ((size_t)L->out * L->in > largest) largest = (size_t)L->out * L->in;
        amp_dtype gd = L->prec.compute[AMP_OP_GEMM];
        if (L->prec.param != gd || L->prec.activation != gd || input_dtype(m, l) != gd)
            needs_conversion = 1;
    }
    m->master = amp_arena_take(&mem[AMP_MEM_MASTER], m->nparams * 4);
    m->grads = amp_arena_take(&mem[AMP_MEM_GRADS], m->nparams * 4);
    for (int i = 0; i < 2; i++)
        m->opt[i] = i < spec->opt_buffers ? amp_arena_take(&mem[AMP_MEM_OPTIM], m->nparams * 4) : NULL;
    m->x_f32 = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * m->in_features * 4);
    m->labels = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * 4);
    m->x_in = m->x_dtype == AMP_DTYPE_F32
                  ? (void *)m->x_f32
                  : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * m->in_features * 2);
    for (int l = 0; l < m->nlayers; l++) {
        amp_mlp_layer *L = &m->layers[l];
        size_t wn = (size_t)L->out * L->in;
        if (L->prec.param == AMP_DTYPE_F32) {
            L->w_work = m->master ? m->master + L->w_off : NULL;
            L->b_work = m->master ? m->master + L->b_off : NULL;
        } else {
            L->w_work = amp_arena_take(&mem[AMP_MEM_WORKING], wn * 2);
            L->b_work = amp_arena_take(&mem[AMP_MEM_WORKING], (size_t)L->out * 2);
        }
        size_t an = B * (size_t)L->out * dsize(L->prec.activation);
        L->z = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], an);
        L->a = L->act == AMP_ACT_NONE ? L->z : amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], an);
    }
    m->f_y = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * widest * 4);
    m->f_t = amp_arena_take(&mem[AMP_MEM_WORKSPACE], B * widest * 4);
    m->f_w = amp_arena_take(&mem[AMP_MEM_WORKSPACE], largest * 4);
    m->f_bias = amp_arena_take(&mem[AMP_MEM_WORKSPACE], widest * 4);
    m->op_len = needs_conversion ? (largest > B * widest ? largest : B * widest) : 0;
    for (int i = 0; i < 2; i++) {
        m->op_f32[i] = amp_arena_take(&mem[AMP_MEM_WORKSPACE], m->op_len * 4);
        m->op_16[i] = amp_arena_take(&mem[AMP_MEM_WORKSPACE], m->op_len * 2);
    }
    m->stats = amp_arena_take(&mem[AMP_MEM_WORKSPACE], sizeof(amp_step_stats));
}

int amp_mlp_create(amp_mlp **out, amp_backend *be, const amp_mlp_spec *spec, char *err,
                   size_t errlen) {
    *out = NULL;
    int nl = amp_mlp_layer_count(spec);
    if (nl > AMP_MAX_LAYERS || spec->in_features <= 0 || spec->classes <= 1 || spec->batch <= 0) {
        snprintf(err, errlen, "invalid MLP shape (%d layers, %d inputs, %d classes, batch %d)", nl,
                 spec->in_features, spec->classes, spec->batch);
        return -1;
    }
    amp_mlp *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->be = be;
    m->nlayers = nl;
    m->batch = spec->batch;
    m->in_features = spec->in_features;
    m->classes = spec->classes;
    size_t off = 0;
    for (int l = 0; l < nl; l++) {
        amp_mlp_layer *L = &m->layers[l];
        amp_mlp_layer_name(L->name, sizeof L->name, l);
        L->in = l == 0 ? spec->in_features : spec->hidden[l - 1];
        L->out = l == nl - 1 ? spec->classes : spec->hidden[l];
        L->act = l == nl - 1 ? AMP_ACT_NONE : spec->act;
        L->prec = spec->prec[l];
        L->w_off = off;
        off += (size_t)L->out * L->in;
        L->b_off = off;
        off += (size_t)L->out;
    }
    m->nparams = off;
    m->x_dtype = m->layers[0].prec.compute[AMP_OP_GEMM];
    layout(m, spec);
    if (check_host_memory(m, be, err, errlen) != 0) {
        amp_mlp_free(m);
        return -1;
    }
    for (int c = 0; c < AMP_MEM_COUNT; c++) {
        if (amp_arena_commit(&m->mem[c], be) != 0) {
            snprintf(err, errlen, "allocating %zu bytes of %s: %s", m->mem[c].size,
                     amp_mem_category_names[c], be->err);
            amp_mlp_free(m);
            return -1;
        }
    }
    layout(m, spec);
    if (be->ops->zero(be, m->grads, m->nparams * 4) != 0 ||
        (m->opt[0] && be->ops->zero(be, m->opt[0], m->nparams * 4) != 0) ||
        (m->opt[1] && be->ops->zero(be, m->opt[1], m->nparams * 4) != 0)) {
        snprintf(err, errlen, "%s", be->err);
        amp_mlp_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void amp_mlp_free(amp_mlp *m) {
    if (!m) return;
    for (int c = 0; c < AMP_MEM_COUNT; c++) amp_arena_release(&m->mem[c], m->be);
    free(m);
}

int amp_mlp_init_params(amp_mlp *m, uint64_t seed) {
    float *host = malloc(m->nparams * sizeof(float));
    if (!host) {
        snprintf(m->be->err, sizeof m->be->err, "out of host memory");
        return -1;
    }
    amp_rng rng;
    amp_rng_seed(&rng, seed);
    for (int l = 0; l < m->nlayers; l++) {
        const amp_mlp_layer *L = &m->layers[l];
        double bound = 1.0 / sqrt((double)L->in);
        size_t n = (size_t)L->out * L->in + (size_t)L->out; /* weight then bias, contiguous */
        for (size_t i = 0; i < n; i++)
            host[L->w_off + i] = (float)((2.0 * amp_rng_uniform(&rng) - 1.0) * bound);
    }
    int rc = m->be->ops->upload(m->be, m->master, host, m->nparams * sizeof(float));
    free(host);
    return rc;
}

int amp_mlp_cast_weights(amp_mlp *m) {
    amp_backend *be = m->be;
    for (int l = 0; l < m->nlayers; l++) {
        amp_mlp_layer *L = &m->layers[l];
        if (L->prec.param == AMP_DTYPE_F32) continue; /* working == master */
        amp_round_count *cnt = &m->stats->rounds[AMP_ROUND_SLOT(l, AMP_ROUND_FWD)];
        CHECK(be->ops->round(be, L->w_work, L->prec.param, m->master + L->w_off,
                             (size_t)L->out * L->in, cnt));
        CHECK(be->ops->round(be, L->b_work, L->prec.param, m->master + L->b_off, (size_t)L->out,
                             cnt));
    }
    return 0;
}

/* Returns src as dtype `want` for a GEMM operand, converting into scratch
 * slot `slot` when the stored dtype differs (only under mixed overrides). */
static const void *operand(amp_mlp *m, int slot, const void *src, amp_dtype have, amp_dtype want,
                           size_t n) {
    amp_backend *be = m->be;
    if (have == want) return src;
    const float *wide = src;
    if (have != AMP_DTYPE_F32) {
        if (be->ops->widen(be, m->op_f32[slot], src, have, n) != 0) return NULL;
        wide = m->op_f32[slot];
    }
    if (want == AMP_DTYPE_F32) return wide;
    if (be->ops->round(be, m->op_16[slot], want, wide, n, NULL) != 0) return NULL;
    return m->op_16[slot];
}

static int forward(amp_mlp *m, int rows) {
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    CHECK(op->round(be, m->x_in, m->x_dtype, m->x_f32, (size_t)rows * m->in_features,
                    &m->stats->rounds[AMP_ROUND_SLOT(0, AMP_ROUND_FWD)]));
    for (int l = 0; l < m->nlayers; l++) {
        amp_mlp_layer *L = &m->layers[l];
        amp_dtype gd = L->prec.compute[AMP_OP_GEMM], ad = L->prec.activation;
        amp_round_count *cnt = &m->stats->rounds[AMP_ROUND_SLOT(l, AMP_ROUND_FWD)];
        size_t n = (size_t)rows * L->out;
        const void *x = operand(m, 0, l == 0 ? m->x_in : m->layers[l - 1].a, input_dtype(m, l), gd,
                                (size_t)rows * L->in);
        const void *w = operand(m, 1, L->w_work, L->prec.param, gd, (size_t)L->out * L->in);
        if (!x || !w) return -1;
        /* y[rows, out] = x[rows, in] . W[out, in]^T */
        CHECK(op->gemm(be, m->f_y, x, w, gd, 0, 1, rows, L->out, L->in, L->in, L->in, L->out, 1.0f,
                       0.0f));
        CHECK(op->widen(be, m->f_bias, L->b_work, L->prec.param, (size_t)L->out));
        CHECK(op->add_bias(be, m->f_y, m->f_bias, rows, L->out));
        CHECK(op->round(be, L->z, ad, m->f_y, n, cnt));
        if (L->act != AMP_ACT_NONE) {
            CHECK(op->widen(be, m->f_y, L->z, ad, n));
            CHECK(op->act_forward(be, m->f_y, m->f_y, n, L->act));
            CHECK(op->round(be, L->a, ad, m->f_y, n, cnt));
        }
    }
    return 0;
}

static int backward(amp_mlp *m, int rows, int accumulate) {
    amp_backend *be = m->be;
    const amp_backend_ops *op = be->ops;
    int last = m->nlayers - 1;
    /* dlogits (FP32, in f_t) are stored like an activation gradient */
    CHECK(op->round(be, m->layers[last].z, m->layers[last].prec.activation, m->f_t,
                    (size_t)rows * m->classes, &m->stats->rounds[AMP_ROUND_SLOT(last, AMP_ROUND_GRAD)]));
    for (int l = last; l >= 0; l--) {
        amp_mlp_layer *L = &m->layers[l];
        amp_dtype gd = L->prec.compute[AMP_OP_GEMM], ad = L->prec.activation, pd = L->prec.param;
        amp_round_count *cnt = &m->stats->rounds[AMP_ROUND_SLOT(l, AMP_ROUND_GRAD)];
        size_t n = (size_t)rows * L->out, wn = (size_t)L->out * L->in;
        const void *dz = operand(m, 0, L->z, ad, gd, n);
        const void *x = operand(m, 1, l == 0 ? m->x_in : m->layers[l - 1].a, input_dtype(m, l), gd,
                                (size_t)rows * L->in);
        if (!dz || !x) return -1;
        /* dW[out, in] = dZ[rows, out]^T . X[rows, in]; the gradient of a
         * 16-bit working weight is itself 16-bit before it reaches FP32. */
        CHECK(op->gemm(be, m->f_w, dz, x, gd, 1, 0, L->out, L->in, rows, L->out, L->in, L->in, 1.0f,
                       0.0f));
        CHECK(op->quantize(be, m->grads + L->w_off, m->f_w, wn, pd, cnt, accumulate));
        CHECK(op->widen(be, m->f_t, L->z, ad, n));
        CHECK(op->col_sum(be, m->f_bias, m->f_t, rows, L->out));
        CHECK(op->quantize(be, m->grads + L->b_off, m->f_bias, (size_t)L->out, pd, cnt, accumulate));
        if (l == 0) break;
        amp_mlp_layer *P = &m->layers[l - 1];
        amp_round_count *pcnt = &m->stats->rounds[AMP_ROUND_SLOT(l - 1, AMP_ROUND_GRAD)];
        size_t pn = (size_t)rows * L->in;
        const void *w = operand(m, 1, L->w_work, pd, gd, wn);
        if (!w) return -1;
        /* dA[rows, in] = dZ[rows, out] . W[out, in], stored in P's activation dtype */
        CHECK(op->gemm(be, m->f_y, dz, w, gd, 0, 0, rows, L->in, L->out, L->out, L->in, L->in, 1.0f,
                       0.0f));
        CHECK(op->quantize(be, m->f_y, m->f_y, pn, P->prec.activation, pcnt, 0));
        CHECK(op->widen(be, m->f_t, P->z, P->prec.activation, pn));
        CHECK(op->act_backward(be, m->f_y, m->f_y, m->f_t, pn, P->act));
        CHECK(op->round(be, P->z, P->prec.activation, m->f_y, pn, pcnt)); /* dZ replaces Z */
    }
    return 0;
}

int amp_mlp_step(amp_mlp *m, int rows, int do_backward, float loss_scale, float denom,
                 int accumulate) {
    amp_backend *be = m->be;
    CHECK(forward(m, rows));
    int last = m->nlayers - 1;
    size_t n = (size_t)rows * m->classes;
    /* softmax and loss run in FP32 whatever the policy (autocast's fp32 list) */
    CHECK(be->ops->widen(be, m->f_y, m->layers[last].a, m->layers[last].prec.activation, n));
    CHECK(be->ops->softmax_xent(be, do_backward ? m->f_t : NULL, m->stats, m->f_y, m->labels, rows,
                                m->classes, loss_scale / denom));
    if (!do_backward) return 0;
    return backward(m, rows, accumulate);
}
