/* The model-independent half of a model: the parameter/layer tables, the
 * common buffers (master weights, gradients, optimizer state, the input
 * batch, the stats record) and the arenas the model's layout carves. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/family.h"
#include "io/config.h"

void amp_model_desc_free(amp_model_desc *d) {
    if (!d) return;
    free(d->params);
    free(d->layers);
    memset(d, 0, sizeof *d);
}

int amp_model_desc_add_layer(amp_model_desc *d, const char *name, unsigned op_classes) {
    amp_layer_desc *v = realloc(d->layers, (size_t)(d->nlayers + 1) * sizeof *v);
    if (!v) return -1;
    d->layers = v;
    amp_layer_desc *L = &v[d->nlayers++];
    memset(L, 0, sizeof *L);
    snprintf(L->name, sizeof L->name, "%s", name);
    L->op_classes = op_classes;
    return 0;
}

static int add_tensor(amp_model_desc *d, const char *name, int layer, int decay, int buffer,
                      int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > AMP_MODEL_MAX_DIMS) return -1; /* 0: a scalar, one element */
    if (!buffer && d->ntrained != d->nparams) return -1; /* buffers come last */
    amp_param_desc *v = realloc(d->params, (size_t)(d->nparam_tensors + 1) * sizeof *v);
    if (!v) return -1;
    d->params = v;
    amp_param_desc *P = &v[d->nparam_tensors++];
    memset(P, 0, sizeof *P);
    snprintf(P->name, sizeof P->name, "%s", name);
    P->ndim = ndim;
    P->numel = 1;
    for (int i = 0; i < ndim; i++) {
        P->shape[i] = shape[i];
        P->numel *= (size_t)shape[i];
    }
    P->offset = d->nparams;
    P->layer = layer;
    P->decay = decay;
    P->buffer = buffer;
    d->nparams += P->numel;
    if (!buffer) d->ntrained = d->nparams;
    return 0;
}

int amp_model_desc_add_param(amp_model_desc *d, const char *name, int layer, int decay, int ndim,
                             const int64_t *shape) {
    return add_tensor(d, name, layer, decay, 0, ndim, shape);
}

int amp_model_desc_add_buffer(amp_model_desc *d, const char *name, int layer, int ndim,
                              const int64_t *shape) {
    return add_tensor(d, name, layer, 0, 1, ndim, shape);
}

void amp_model_desc_tie_last(amp_model_desc *d, const char *tied) {
    if (d->nparam_tensors > 0)
        snprintf(d->params[d->nparam_tensors - 1].tied, sizeof d->params[0].tied, "%s", tied);
}

int amp_model_desc_find(const amp_model_desc *d, const char *name) {
    for (int i = 0; i < d->nparam_tensors; i++)
        if (strcmp(d->params[i].name, name) == 0) return i;
    return -1;
}

size_t amp_model_stats_bytes(int nlayers) {
    return sizeof(amp_step_stats) + 2 * (size_t)nlayers * sizeof(amp_round_count);
}

amp_round_count *amp_stats_rounds(amp_step_stats *stats, int layer, int dir) {
    return stats ? (amp_round_count *)(stats + 1) + 2 * layer + dir : NULL;
}

const amp_round_count *amp_stats_rounds_const(const amp_step_stats *stats, int layer, int dir) {
    return (const amp_round_count *)(stats + 1) + 2 * layer + dir;
}

/* The common buffers first, then the model's own; run to measure, then for real. */
static void layout(amp_model *m) {
    amp_arena *mem = m->mem;
    size_t n = m->desc.nparams, B = (size_t)m->input.batch;
    m->master = amp_arena_take(&mem[AMP_MEM_MASTER], (m->sharded ? m->opt_len : n) * 4);
    /* sharded: the FP32 weights every rank reads */
    m->wts = m->sharded ? amp_arena_take(&mem[AMP_MEM_WORKING], m->wts_len * 4) : NULL;
    m->grads = amp_arena_take(&mem[AMP_MEM_GRADS], m->grads_len * 4);
    for (int i = 0; i < 2; i++)
        m->opt[i] = i < m->opt_buffers ? amp_arena_take(&mem[AMP_MEM_OPTIM], m->opt_len * 4) : NULL;
    m->x = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS],
                          B * (size_t)m->input.features * (m->x_dtype == AMP_DTYPE_F32 ? 4 : 2));
    m->y = amp_arena_take(&mem[AMP_MEM_ACTIVATIONS], B * (size_t)m->input.targets * 4);
    m->ops->layout(m);
    m->stats = amp_arena_take(&mem[AMP_MEM_WORKSPACE], amp_model_stats_bytes(m->desc.nlayers));
}

/* The measured arenas against the backend's overcommit bound (see
 * backend.h): a clear error now instead of an OOM kill later. */
static int check_host_memory(const amp_model *m, char *err, size_t errlen) {
    amp_backend *be = m->be;
    double ram = be->ops->overcommit_limit(be), need = 0.0;
    if (ram <= 0.0) return 0;
    for (int c = 0; c < AMP_MEM_COUNT; c++) need += (double)m->mem[c].used;
    if (need <= ram) return 0;
    snprintf(err, errlen,
             "the model needs %.1f GiB of host memory (parameters %.1f GiB, activations %.1f "
             "GiB) but this machine has %.1f GiB; make the [model] smaller or [data] batch_size "
             "smaller",
             need / 1073741824.0, (double)m->mem[AMP_MEM_MASTER].used / 1073741824.0,
             (double)m->mem[AMP_MEM_ACTIVATIONS].used / 1073741824.0, ram / 1073741824.0);
    return -1;
}

/* *p = nslots zeroed records of `size` bytes in the backend's memory. */
static int dev_records(amp_model *m, void **p, size_t size, char *err, size_t errlen) {
    amp_backend *be = m->be;
    size_t bytes = (size_t)m->scaled->nslots * size;
    *p = be->ops->alloc(be, bytes);
    if (!*p || be->ops->zero(be, *p, bytes) != 0) {
        snprintf(err, errlen, "the scaled operands' step records (%zu bytes): %s", bytes, be->err);
        return -1;
    }
    return 0;
}

/* m->scaled from the policy's operand formats. A policy with scaled operands
 * on a backend without the "scaled" family is refused here, naming both. A
 * device backend gets the slots' step records in its own memory. */
static int create_scaled(amp_model *m, char *err, size_t errlen) {
    int n = m->desc.nlayers;
    m->layer_names = calloc((size_t)n, sizeof *m->layer_names);
    if (!m->layer_names) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (int i = 0; i < n; i++) m->layer_names[i] = m->desc.layers[i].name;
    if (amp_scaled_create(&m->scaled, n, m->prec, m->layer_names, err, errlen) != 0) return -1;
    int nslots = m->scaled->nslots;
    if (nslots > 0 && !amp_backend_supports(m->be, "scaled")) {
        const amp_scaled_slot *sl = &m->scaled->slot[0];
        snprintf(err, errlen,
                 "backend '%s' has no family 'scaled' (FP8/MX GEMM operands): layer '%s' has a "
                 "scaled operand; run on a backend that has it or choose a policy without "
                 "scaled formats",
                 m->be->ops->name, m->layer_names[sl->layer]);
        return -1;
    }
    for (int i = 0; i < m->scaled->nslots; i++) {
        const amp_scaled_slot *sl = &m->scaled->slot[i];
        const amp_scaled_ops *so = m->be->ops->scaled;
        /* a conv's scaled GEMMs run on im2col columns (conv2d_scaled.c) */
        if ((m->desc.layers[sl->layer].op_classes & (1u << AMP_OP_CONV)) &&
            (!so->conv2d_im2col || !so->conv2d_col2im)) {
            snprintf(err, errlen,
                     "backend '%s' has no scaled convolution ops (conv2d_im2col, "
                     "conv2d_col2im): conv layer '%s' has a scaled operand; run on the CPU "
                     "(run.device = cpu) or keep the convs out (layer.%s = bf16)",
                     m->be->ops->name, m->layer_names[sl->layer], m->layer_names[sl->layer]);
            return -1;
        }
        const char *lacks = sl->family && sl->family->lacks ? sl->family->lacks(m->be) : NULL;
        if (lacks) {
            snprintf(err, errlen,
                     "backend '%s' has no %s: layer '%s' has a %s operand; run on the CPU "
                     "(run.device = cpu) or choose a policy without it",
                     m->be->ops->name, lacks, m->layer_names[sl->layer], sl->family->name);
            return -1;
        }
    }
    if (nslots > 0 && m->be->device != AMP_DEVICE_CPU) {
        int nv = 0; /* a family that counts into the NVFP4 records */
        for (int i = 0; i < nslots; i++)
            nv |= m->scaled->slot[i].family && m->scaled->slot[i].family->nv_records;
        if (dev_records(m, (void **)&m->scaled_dev, sizeof *m->scaled_dev, err, errlen) != 0 ||
            (nv && dev_records(m, (void **)&m->nvfp4_dev, sizeof *m->nvfp4_dev, err, errlen) != 0))
            return -1;
    }
    return 0;
}

/* Every scaled slot is one a layer object quantizes: a slot nothing uses
 * would keep its scale forever and fill the telemetry and the checkpoint
 * with an operand that does not exist (the policy gave formats to a layer
 * whose GEMM is another layer's). */
static int check_scaled_claimed(const amp_model *m, char *err, size_t errlen) {
    for (int i = 0; i < m->scaled->nslots; i++) {
        const amp_scaled_slot *sl = &m->scaled->slot[i];
        if (sl->claimed) continue;
        static const char *const role[AMP_ROLE_COUNT] = {"input", "weight", "grad_output"};
        snprintf(err, errlen,
                 "model '%s': layer '%s' has a scaled %s operand, but none of its GEMMs reads "
                 "one (only Linear and Conv2d layers quantize their operands)",
                 m->ops->name, m->layer_names[sl->layer], role[sl->role]);
        return -1;
    }
    return 0;
}

int amp_model_scaled_collect(amp_model *m) {
    if (!m->scaled || m->scaled->nslots == 0) return 0;
    if (!amp_backend_supports(m->be, "scaled"))
        return amp_backend_missing(m->be, "scaled", "scaled_collect");
    if (!m->scaled_dev) return 0; /* the CPU family's quantizers merged into slot->step */
    amp_backend *be = m->be;
    int n = m->scaled->nslots;
    size_t bytes = (size_t)n * sizeof *m->scaled_dev, nv_bytes = (size_t)n * sizeof *m->nvfp4_dev;
    amp_fp8_stats *h = malloc(bytes);
    amp_nvfp4_stats *hv = m->nvfp4_dev ? malloc(nv_bytes) : NULL;
    if (!h || (m->nvfp4_dev && !hv)) {
        free(h);
        snprintf(be->err, sizeof be->err, "out of host memory for %d scaled-operand records", n);
        return 1;
    }
    int rc = be->ops->download(be, h, m->scaled_dev, bytes);
    if (rc == 0) rc = be->ops->zero(be, m->scaled_dev, bytes);
    if (rc == 0 && hv) rc = be->ops->download(be, hv, m->nvfp4_dev, nv_bytes);
    if (rc == 0 && hv) rc = be->ops->zero(be, m->nvfp4_dev, nv_bytes);
    for (int i = 0; rc == 0 && i < n; i++) {
        amp_fp8_stats_merge(&m->scaled->slot[i].step, &h[i]);
        if (hv) amp_nvfp4_stats_merge(&m->scaled->slot[i].nv_step, &hv[i]);
    }
    free(h);
    free(hv);
    return rc;
}

int amp_model_scaled_eval_end(amp_model *m) {
    if (!m->scaled || m->scaled->nslots == 0) return 0;
    amp_backend *be = m->be;
    size_t n = (size_t)m->scaled->nslots;
    int rc = m->scaled_dev ? be->ops->zero(be, m->scaled_dev, n * sizeof *m->scaled_dev) : 0;
    if (rc == 0 && m->nvfp4_dev) rc = be->ops->zero(be, m->nvfp4_dev, n * sizeof *m->nvfp4_dev);
    amp_scaled_eval_end(m->scaled);
    return rc;
}

int amp_model_copy16(amp_model *m, int t, amp_working_copy *wc) {
    return t < m->desc.nparam_tensors && !m->desc.params[t].buffer && m->ops->working_copy &&
           m->ops->working_copy(m, t, wc);
}

/* Sharded: where each tensor the forward reads in FP32 lives in wts (the
 * copies are known once the model's create has run); a tied tensor with a
 * 16-bit copy that is read in FP32 too has both. */
static int plan_wts(amp_model *m, char *err, size_t errlen) {
    int nt = m->desc.nparam_tensors;
    m->wts_off = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *m->wts_off);
    if (!m->wts_off) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    size_t at = 0;
    for (int t = 0; t < nt; t++) {
        amp_working_copy wc;
        m->wts_off[t] = amp_model_copy16(m, t, &wc) && !wc.also_f32 ? (size_t)-1 : at;
        if (m->wts_off[t] != (size_t)-1) at += m->desc.params[t].numel;
    }
    m->wts_len = at;
    return 0;
}

int amp_model_put_master(amp_model *m, const float *host) {
    amp_backend *be = m->be;
    const amp_model_desc *d = &m->desc;
    if (!m->sharded) return be->ops->upload(be, m->master, host, d->nparams * sizeof(float));
    size_t lo = m->opt_lo < d->ntrained ? m->opt_lo : d->ntrained;
    size_t mine = d->ntrained - lo < m->opt_len ? d->ntrained - lo : m->opt_len;
    if (mine && be->ops->upload(be, m->master, host + lo, mine * sizeof(float)) != 0) return -1;
    for (int t = 0; t < d->nparam_tensors; t++)
        if (m->wts_off[t] != (size_t)-1 && d->params[t].numel &&
            be->ops->upload(be, m->wts + m->wts_off[t], host + d->params[t].offset,
                            d->params[t].numel * sizeof(float)) != 0)
            return -1;
    m->copies_stale = 1;
    return 0;
}

int amp_model_create(amp_model **out, const amp_model_ops *ops, amp_backend *be,
                     amp_model_desc *desc, const amp_layer_precision *prec,
                     const amp_model_input *in, int opt_buffers, amp_config *cfg, char *err,
                     size_t errlen) {
    return amp_model_create_sharded(out, ops, be, desc, prec, in, opt_buffers, 0, desc->nparams,
                                    0, cfg, err, errlen);
}

int amp_model_create_sharded(amp_model **out, const amp_model_ops *ops, amp_backend *be,
                             amp_model_desc *desc, const amp_layer_precision *prec,
                             const amp_model_input *in, int opt_buffers, size_t opt_lo,
                             size_t opt_len, int shard_grads, amp_config *cfg, char *err,
                             size_t errlen) {
    *out = NULL;
    amp_model *m = calloc(1, sizeof *m);
    amp_layer_precision *p = calloc(desc->nlayers > 0 ? (size_t)desc->nlayers : 1, sizeof *p);
    if (!m || !p) {
        free(m);
        free(p);
        amp_model_desc_free(desc);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    m->ops = ops;
    m->be = be;
    m->desc = *desc;
    memset(desc, 0, sizeof *desc);
    memcpy(p, prec, (size_t)m->desc.nlayers * sizeof *p);
    m->prec = p;
    m->input = *in;
    m->opt_buffers = opt_buffers;
    m->opt_lo = opt_lo;
    m->opt_len = opt_len;
    m->sharded = opt_lo != 0 || opt_len != m->desc.nparams;
    m->grads_lo = shard_grads ? opt_lo : 0;
    m->grads_len = shard_grads ? opt_len : m->desc.nparams;
    if (in->batch <= 0 || m->desc.nlayers <= 0 || m->desc.nparams == 0) {
        snprintf(err, errlen, "model '%s': invalid shape (%d layers, %zu parameters, batch %d)",
                 ops->name, m->desc.nlayers, m->desc.nparams, in->batch);
        amp_model_free(m);
        return -1;
    }
    if (create_scaled(m, err, errlen) != 0) {
        amp_model_free(m);
        return -1;
    }
    if (ops->create(m, cfg, err, errlen) != 0 || check_scaled_claimed(m, err, errlen) != 0) {
        amp_model_free(m);
        return -1;
    }
    if (m->sharded && plan_wts(m, err, errlen) != 0) {
        amp_model_free(m);
        return -1;
    }
    layout(m);
    if (check_host_memory(m, err, errlen) != 0) {
        amp_model_free(m);
        return -1;
    }
    for (int c = 0; c < AMP_MEM_COUNT; c++) {
        if (amp_arena_commit(&m->mem[c], be) != 0) {
            snprintf(err, errlen, "allocating %zu bytes of %s: %s", m->mem[c].size,
                     amp_mem_category_names[c], be->err);
            amp_model_free(m);
            return -1;
        }
    }
    layout(m);
    if (be->ops->zero(be, m->grads, m->grads_len * 4) != 0 ||
        (m->opt[0] && be->ops->zero(be, m->opt[0], m->opt_len * 4) != 0) ||
        (m->opt[1] && be->ops->zero(be, m->opt[1], m->opt_len * 4) != 0)) {
        snprintf(err, errlen, "%s", be->err);
        amp_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void amp_model_free(amp_model *m) {
    if (!m) return;
    if (m->ops && m->ops->destroy) m->ops->destroy(m);
    for (int c = 0; c < AMP_MEM_COUNT; c++) amp_arena_release(&m->mem[c], m->be);
    amp_model_desc_free(&m->desc);
    if (m->scaled_dev) m->be->ops->release(m->be, m->scaled_dev);
    if (m->nvfp4_dev) m->be->ops->release(m->be, m->nvfp4_dev);
    amp_scaled_free(m->scaled);
    free(m->layer_names);
    free(m->prec);
    free(m->wts_off);
    free(m);
}
