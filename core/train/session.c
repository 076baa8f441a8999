#include "session.h"
#include "session_sync_bn.h"

#include <float.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zlib.h>

#include "layers/layers.h"
#include "operand_check.h"
#include "scaled_state.h"
#include "util/log.h"
#include "io/safetensors.h"
#include "config/hf_config.h"
#include "init_weights.h"
#include "util/clock.h"

static const char *dtype_name(amp_dtype dt) {
    return dt == AMP_DTYPE_F16 ? "f16" : dt == AMP_DTYPE_BF16 ? "bf16" : "f32";
}

/* Relative paths in a config are taken relative to the config's folder. */
static void resolve_path(char *out, size_t outlen, const amp_config *cfg, const char *p) {
    if (p[0] == '/') {
        snprintf(out, outlen, "%s", p);
        return;
    }
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", amp_config_path(cfg));
    snprintf(out, outlen, "%s/%s", dirname(tmp), p);
}

static int open_backend(amp_session *s, char *err, size_t errlen) {
    amp_device_choice dev = s->set.device;
    if (dev == AMP_RUN_AUTO) {
        static int said; /* once a process: `ab` opens every arm's config */
        dev = amp_backend_cuda_available() ? AMP_RUN_CUDA : AMP_RUN_CPU;
        if (dev == AMP_RUN_CPU && !said++) /* say why auto did not pick the GPU */
            amp_log(AMP_LOG_INFO, "device = auto: using the CPU (%s)",
                    amp_backend_cuda_unavailable_reason());
    }
    /* one device per rank, chosen before the backend opens it */
    if (dev == AMP_RUN_CUDA && amp_dist_select_cuda_device(s->dist, err, errlen) != 0) return -1;
    s->be = dev == AMP_RUN_CUDA ? amp_backend_cuda_create(err, errlen)
                                : amp_backend_cpu_create(err, errlen);
    return s->be ? 0 : -1;
}

/* Asks the policy for every layer's precision and checks the answers. */
static int resolve_precision(amp_session *s, amp_layer_precision *prec, char *err, size_t errlen) {
    const amp_precision_vtable *vt = amp_plugin_precision(&s->precision);
    int nl = s->nlayers;
    s->dtype_max = 3.4028234663852886e38;
    for (int l = 0; l <= nl; l++) {
        const char *layer = l < nl ? s->layer_ptrs[l] : "loss";
        amp_layer_precision p;
        p.struct_size = sizeof p;
        for (int c = 0; c < AMP_OP_COUNT; c++) p.compute[c] = AMP_DTYPE_F32;
        p.activation = p.param = AMP_DTYPE_F32;
        for (int r = 0; r < AMP_ROLE_COUNT; r++)
            p.operand[r] = (amp_operand_format){AMP_FORMAT_DTYPE, 0, 0, 0};
        for (int r = 0; r < AMP_ROLE_COUNT; r++) p.operand_flags[r] = 0;
        s->precision.host.err[0] = '\0';
        if (vt->resolve(s->precision.self, layer, &p) != 0) {
            snprintf(err, errlen, "precision plugin '%s': resolving layer '%s' failed: %s",
                     s->precision.entry->name, layer, amp_plugin_reason(&s->precision));
            return -1;
        }
        if (amp_plugin_misuse(&s->precision)) {
            snprintf(err, errlen, "%s, resolving layer '%s'", amp_plugin_misuse(&s->precision), layer);
            return -1;
        }
        int bad = (unsigned)p.activation >= AMP_DTYPE_COUNT || (unsigned)p.param >= AMP_DTYPE_COUNT;
        for (int c = 0; c < AMP_OP_COUNT; c++) bad |= (unsigned)p.compute[c] >= AMP_DTYPE_COUNT;
        if (bad) {
            snprintf(err, errlen, "precision plugin '%s' returned an unknown dtype for layer '%s'",
                     s->precision.entry->name, layer);
            return -1;
        }
        /* Softmax and the loss are computed in FP32 here (autocast's fp32 list). */
        if (p.compute[AMP_OP_SOFTMAX] != AMP_DTYPE_F32 || p.compute[AMP_OP_LOSS] != AMP_DTYPE_F32) {
            snprintf(err, errlen,
                     "precision plugin '%s' asks for softmax/loss in %s on layer '%s'; amptrain "
                     "computes them in f32 only (remove op.softmax / op.loss overrides)",
                     s->precision.entry->name,
                     dtype_name(p.compute[AMP_OP_SOFTMAX] != AMP_DTYPE_F32 ? p.compute[AMP_OP_SOFTMAX]
                                                                            : p.compute[AMP_OP_LOSS]),
                     layer);
            return -1;
        }
        if (amp_operands_check(s->precision.entry->name, layer,
                               l < nl ? s->layer_classes[l] : 0u, &p, err, errlen) != 0)
            return -1;
        if (l == nl) break;
        prec[l] = p;
        amp_dtype used[3] = {p.compute[AMP_OP_GEMM], p.activation, p.param};
        for (int i = 0; i < 3; i++) {
            double mx = used[i] == AMP_DTYPE_F16 ? 65504.0 : used[i] == AMP_DTYPE_BF16 ? 3.3895313892515355e38 : s->dtype_max;
            if (mx < s->dtype_max) s->dtype_max = mx;
        }
        amp_log(AMP_LOG_DEBUG, "layer %s: gemm %s, activations %s, weights %s (conv %s, attention %s, pointwise %s)",
                layer, dtype_name(p.compute[AMP_OP_GEMM]), dtype_name(p.activation),
                dtype_name(p.param), dtype_name(p.compute[AMP_OP_CONV]),
                dtype_name(p.compute[AMP_OP_ATTENTION]), dtype_name(p.compute[AMP_OP_POINTWISE]));
    }
    return 0;
}

static int open_plugins(amp_session *s, char *err, size_t errlen) {
    char dirbuf[PATH_MAX]; /* the config's folder */
    snprintf(dirbuf, sizeof dirbuf, "%s", amp_config_path(s->cfg));
    const char *base = dirname(dirbuf);
    if (amp_plugin_open(&s->precision, AMP_PLUGIN_KIND_PRECISION, s->set.precision_plugin, base, err,
                        errlen) != 0)
        return -1;
    s->precision.host.layer_classes = s->layer_classes;
    if (amp_plugin_init(&s->precision, s->cfg, "precision", s->layer_ptrs, s->nlayers, err,
                        errlen) != 0)
        return -1;
    const amp_precision_vtable *pv = amp_plugin_precision(&s->precision);
    int needs_scaler = pv->requires_scaler && pv->requires_scaler(s->precision.self);
    const char *scaler = s->set.scaler_plugin ? s->set.scaler_plugin : needs_scaler ? "dynamic" : "none";
    if (amp_plugin_open(&s->scaler, AMP_PLUGIN_KIND_SCALER, scaler, base, err, errlen) != 0) return -1;
    if (amp_plugin_init(&s->scaler, s->cfg, "scaler", s->layer_ptrs, s->nlayers, err, errlen) != 0)
        return -1;
    if (needs_scaler && strcmp(s->scaler.entry->name, "none") == 0)
        amp_log(AMP_LOG_WARN,
                "precision '%s' needs a loss scaler but [scaler] plugin = none: small gradients "
                "will flush to zero in 16 bits (watch the underflow counts)",
                s->precision.entry->name);
    return 0;
}

/* 0; 1: a runtime failure; 2: the checkpoint is bad input. */
static int load_initial_weights(amp_session *s, char *err, size_t errlen) {
    amp_model *m = s->model;
    if (strcmp(s->set.init, "default") == 0) {
        if (m->ops->init_params(m, s->set.seed) != 0) {
            snprintf(err, errlen, "%s", s->be->err);
            return 1;
        }
        return 0;
    }
    char path[PATH_MAX];
    resolve_path(path, sizeof path, s->cfg, s->set.init);
    float *host = malloc(m->desc.nparams * sizeof(float));
    if (!host) {
        snprintf(err, errlen, "out of host memory");
        return 1;
    }
    int rc = amp_init_weights_read(&m->desc, path, host, err, errlen) != 0 ? 2 : 0;
    if (rc == 0 && amp_model_put_master(m, host) != 0) {
        snprintf(err, errlen, "%s", s->be->err);
        rc = 1;
    }
    free(host);
    return rc;
}

/* What the loaded data gives the model. */
static amp_model_input model_input(const amp_session *s) {
    amp_model_input in;
    memset(&in, 0, sizeof in);
    in.batch = s->set.batch_size;
    s->data_ops->describe(&s->data, &in);
    return in;
}

/* The model's tables, the layer names the plugins see, and the model. */
static int describe_model(amp_session *s, amp_model_desc *desc, char *err, size_t errlen) {
    s->model_ops = amp_model_find(s->set.model);
    if (!s->model_ops) { /* the settings' choice list makes this unreachable */
        snprintf(err, errlen, "unknown [model] name '%s'", s->set.model);
        return -1;
    }
    amp_model_input in = model_input(s);
    if (s->model_ops->describe(desc, s->cfg, &in, err, errlen) != 0) return -1;
    s->nlayers = desc->nlayers;
    s->layer_ptrs = calloc((size_t)desc->nlayers, sizeof *s->layer_ptrs);
    s->layer_classes = calloc((size_t)desc->nlayers + 1, sizeof *s->layer_classes);
    s->totals = calloc(2 * (size_t)desc->nlayers, sizeof *s->totals);
    s->hstats = calloc(1, amp_model_stats_bytes(desc->nlayers));
    if (!s->layer_ptrs || !s->layer_classes || !s->totals || !s->hstats) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (int l = 0; l < desc->nlayers; l++) {
        s->layer_ptrs[l] = desc->layers[l].name;
        s->layer_classes[l] = desc->layers[l].op_classes;
    }
    return 0;
}

/* amp_model.grad_of under [dist] shard = gradients: the bucket's buffer. */
static float *grad_slot(void *ctx, int tensor) {
    return amp_dist_grads_slot(ctx, tensor);
}

/* The gradient reduction over the model's parameter table (more than one
 * rank only). */
static int open_dist(amp_session *s, char *err, size_t errlen) {
    if (s->world == 1) return 0;
    amp_model *m = s->model;
    const amp_model_desc *d = &m->desc;
    amp_dist_tensor *t = calloc((size_t)d->nparam_tensors, sizeof *t);
    if (!t) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (int i = 0; i < d->nparam_tensors; i++) {
        t[i].offset = d->params[i].offset;
        t[i].numel = d->params[i].numel;
        t[i].grad_cnt = amp_model_rounds(m, d->params[i].layer, AMP_ROUND_GRAD);
    }
    int rc = amp_dist_grads_open(&s->grads, s->dist, s->be, m->grads, t, d->nparam_tensors,
                                 s->shard, s->shard_grads, err, errlen);
    free(t);
    if (rc == 0 && s->shard) rc = amp_session_shard_device(s, err, errlen);
    if (rc == 0 && s->shard_grads) {
        m->grad_of = grad_slot;
        m->grad_ctx = s->grads;
    }
    return rc;
}

int amp_session_open(amp_session **out, amp_config *cfg, char *err, size_t errlen) {
    return amp_session_open_ex(out, cfg, NULL, err, errlen);
}

int amp_session_open_ex(amp_session **out, amp_config *cfg, amp_dist *dist, char *err,
                        size_t errlen) {
    *out = NULL;
    amp_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of host memory");
        return 1;
    }
    s->cfg = cfg;
    s->inject_inf_step = -1;
    s->opt_full_step = -1;
    s->dist = dist;
    s->rank = amp_dist_rank(dist);
    s->world = amp_dist_world(dist);
    amp_model_desc desc;
    memset(&desc, 0, sizeof desc);
    amp_layer_precision *prec = NULL;
    /* a Hugging Face folder's config.json sets [model] keys before they are read */
    if (amp_hf_config_apply(cfg, err, errlen) != 0 ||
        amp_settings_read(&s->set, cfg, err, errlen) != 0)
        goto config_error;
    const amp_settings *st = &s->set;
    amp_dist_settings ds = {st->dist_grad_bf16 ? AMP_DIST_BF16 : AMP_DIST_F32,
                            (size_t)st->dist_bucket_kb * 1024, st->dist_check_every,
                            st->dist_timeout};
    /* AMPTRAIN_LOG=debug turns the replica check on */
    if (ds.check_every == 0 && amp_log_get_level() >= AMP_LOG_DEBUG) ds.check_every = 10;
    s->check_every = s->world > 1 ? ds.check_every : 0;
    amp_dist_configure(dist, &ds);
    /* The data first: the model's shape follows from it. */
    s->data_ops = amp_data_kind_of(st);
    s->data = (amp_data_view){&s->set, &s->train, &s->test, &s->text, NULL, NULL};
    char data_path[PATH_MAX] = ""; /* [data] path, for the kinds that read one */
    if (st->path) resolve_path(data_path, sizeof data_path, cfg, st->path);
    int data_rc = s->data_ops->open(&s->data, data_path, err, errlen);
    if (data_rc == 2) goto config_error;
    if (data_rc != 0) goto runtime_error;
    if (describe_model(s, &desc, err, errlen) != 0) goto config_error;
    if (open_plugins(s, err, errlen) != 0) goto config_error;
    if (amp_config_check_unread(cfg, err, errlen) != 0) goto config_error;
    prec = calloc((size_t)s->nlayers, sizeof *prec);
    if (!prec) {
        snprintf(err, errlen, "out of host memory");
        goto runtime_error;
    }
    if (resolve_precision(s, prec, err, errlen) != 0) goto config_error;
    int64_t per_step = (int64_t)st->batch_size * st->accumulate * s->world;
    int64_t train_rows = s->data_ops->train_rows(&s->data);
    s->steps_per_epoch = train_rows / per_step;
    if (s->steps_per_epoch == 0) {
        if (s->world > 1)
            snprintf(err, errlen,
                     "[data] batch_size %d x [train] accumulate %lld x %d ranks = %lld examples per "
                     "step, but the training set has only %lld; lower batch_size, accumulate or "
                     "the number of ranks",
                     st->batch_size, (long long)st->accumulate, s->world, (long long)per_step,
                     (long long)train_rows);
        else
            snprintf(err, errlen,
                     "[data] batch_size %d x [train] accumulate %lld = %lld examples per step, but "
                     "the training set has only %lld; lower batch_size or accumulate",
                     st->batch_size, (long long)st->accumulate, (long long)per_step,
                     (long long)train_rows);
        goto config_error;
    }
    s->total_steps = st->steps > 0 ? st->steps : st->epochs * s->steps_per_epoch;
    if (open_backend(s, err, errlen) != 0) goto runtime_error;
    const amp_precision_vtable *pv = amp_plugin_precision(&s->precision);
    s->be->deterministic = s->set.deterministic;
    if (s->set.gemm_path_given &&
        amp_backend_gemm_path(s->be, (amp_gemm_path)s->set.gemm_path, "[run] gemm_path", err,
                              errlen) != 0)
        goto config_error;
    s->be->allow_tf32 = pv->struct_size > offsetof(amp_precision_vtable, allow_tf32) &&
                        pv->allow_tf32 && pv->allow_tf32(s->precision.self);
    amp_model_input in = model_input(s);
    int opt_buffers = st->optim == AMP_OPTIM_ADAMW ? 2 : st->momentum > 0 ? 1 : 0;
    size_t nparams = desc.nparams, opt_lo = 0, opt_len = nparams;
    /* The trained elements are sharded, padded so every rank's shard has one
     * size; the buffers after them (batch norm's running statistics) stay
     * each rank's own, as unsharded. */
    if (st->dist_shard && s->world > 1) {
        s->shard = (desc.ntrained + (size_t)s->world - 1) / (size_t)s->world;
        s->shard_grads = st->dist_shard == 2 && st->accumulate == 1;
        opt_lo = (size_t)s->rank * s->shard;
        opt_len = s->shard;
        int root = s->rank == 0; /* the whole arrays are rank 0's */
        s->gather = calloc((size_t)(root ? s->world : 1) * s->shard, sizeof *s->gather);
        s->opt_full = opt_buffers && root ? malloc((size_t)opt_buffers * nparams * sizeof(float))
                                          : NULL;
        if (!s->gather || (opt_buffers && root && !s->opt_full)) {
            snprintf(err, errlen, "out of host memory");
            goto runtime_error;
        }
    }
    if (amp_model_create_sharded(&s->model, s->model_ops, s->be, &desc, prec, &in, opt_buffers,
                                 opt_lo, opt_len, s->shard_grads, cfg, err, errlen) != 0)
        goto runtime_error;
    if (s->shard && amp_session_shard_open(s, err, errlen) != 0) goto runtime_error;
    s->scaled = s->model->scaled;
    if (s->scaled) s->scaled->seed = s->set.seed;
    amp_scaled_wire(s->scaled, &s->precision);
    /* the names now live in the model's own copy of the tables */
    for (int l = 0; l < s->nlayers; l++) s->layer_ptrs[l] = s->model->desc.layers[l].name;
    int init_rc = load_initial_weights(s, err, errlen);
    if (init_rc == 2) goto config_error;
    if (init_rc != 0) goto runtime_error;
    s->batcher = s->data_ops->batcher(&s->data);
    if (!s->batcher) {
        snprintf(err, errlen, "out of host memory");
        goto runtime_error;
    }
    s->batcher->rank = s->rank;
    s->batcher->world = s->world;
    if (open_dist(s, err, errlen) != 0) goto runtime_error;
    amp_session_sync_bn_open(s);
    free(prec);
    *out = s;
    return 0;
config_error:
    free(prec);
    amp_model_desc_free(&desc);
    amp_session_close(s);
    return 2;
runtime_error:
    free(prec);
    amp_model_desc_free(&desc);
    amp_session_close(s);
    return 1;
}

void amp_session_close(amp_session *s) {
    if (!s) return;
    amp_dist_grads_close(s->grads); /* before the backend goes */
    amp_session_shard_close(s);
    amp_model_free(s->model);
    amp_batcher_free(s->batcher);
    if (s->be) s->be->ops->destroy(s->be);
    free(s->trips);
    amp_plugin_close(&s->scaler);
    amp_plugin_close(&s->precision);
    amp_dataset_free(&s->train);
    amp_dataset_free(&s->test);
    if (s->data_ops && s->data_ops->close) s->data_ops->close(&s->data);
    free(s->layer_ptrs);
    free(s->layer_classes);
    free(s->totals);
    free(s->hstats);
    free(s->data_id);
    free(s->gather);
    free(s->opt_full);
    free(s);
}

int64_t amp_session_rows_per_step(const amp_session *s) {
    return (int64_t)s->set.batch_size * s->set.accumulate * s->model->input.targets * s->world;
}

/* nanoGPT's get_lr(it), with it = the applied steps so far (a skipped step
 * does not advance it) and lr_decay_iters = the run's steps: a linear
 * warm-up lr (it + 1) / (W + 1) for it < W, then a cosine from lr at it = W
 * down to min_lr at the last step. */
double amp_session_lr(const amp_session *s) {
    const amp_settings *st = &s->set;
    double it = (double)s->applied, warmup = (double)st->warmup_steps;
    if (s->applied < st->warmup_steps) return st->lr * (it + 1.0) / (warmup + 1.0);
    if (st->schedule != AMP_SCHED_COSINE) return st->lr;
    if (s->applied > s->total_steps) return st->min_lr;
    double span = (double)s->total_steps - warmup;
    double decay_ratio = span > 0 ? (it - warmup) / span : 1.0;
    double coeff = 0.5 * (1.0 + cos(M_PI * decay_ratio));
    return st->min_lr + coeff * (st->lr - st->min_lr);
}

/* The trained elements whose summed gradients and master update are this
 * rank's: [*lo, *lo + *n) (all of them unsharded; the last shard is short
 * by the padding, a shard past the end empty). */
static void own_range(const amp_session *s, size_t *lo, size_t *n) {
    size_t nt = s->model->desc.ntrained;
    if (!s->shard) {
        *lo = 0;
        *n = nt;
        return;
    }
    *lo = (size_t)s->rank * s->shard < nt ? (size_t)s->rank * s->shard : nt;
    *n = nt - *lo < s->shard ? nt - *lo : s->shard;
}

/* Uploads the batcher's staged rows into the model's input. */
static int upload_batch(amp_session *s, int rows, char *err, size_t errlen) {
    amp_model *m = s->model;
    amp_batcher *b = s->batcher;
    if (m->x_dtype == AMP_DTYPE_F32)
        AMP_BE_TRY(s->be, s->be->ops->upload(s->be, m->x, b->hx, (size_t)rows * b->x_row_bytes));
    else /* the model asked for its batch rounded (model.h) */
        AMP_BE_TRY(s->be, AMP_FUSED(s->be, upload_round, m->x, m->x_dtype, b->hx,
                           (size_t)rows * b->x_row_bytes / sizeof(float),
                           amp_model_rounds(m, m->x_round_layer, AMP_ROUND_FWD)));
    AMP_BE_TRY(s->be,
               s->be->ops->upload(s->be, m->y, b->hy, (size_t)rows * b->y_row_count * sizeof(int32_t)));
    return 0;
}

/* Whether tensor i is stepped together with its working copy
 * (amp_model_ops.working_copy, amp_fused_ops.optim_step_cast). */
static int with_copy(amp_model *m, int fused, int i, amp_working_copy *wc) {
    return fused && m->ops->working_copy(m, i, wc);
}

int amp_model_optimizer_step(amp_model *m, const amp_settings *st, double lr, int64_t t) {
    amp_backend *be = m->be;
    const amp_model_desc *d = &m->desc;
    amp_optim_step o = {st->optim != AMP_OPTIM_SGD, (float)lr, (float)st->momentum, 0.0f,
                        (float)st->beta1, (float)st->beta2, (float)st->eps, t};
    /* A shard ([dist] shard = optimizer) steps part of the flat array: the
     * working copies are cast from the gathered master weights instead, and
     * each run is cut to the shard (AdamW is per element: no value changes). */
    int sharded = m->sharded;
    size_t lo = m->opt_lo, hi = m->opt_lo + m->opt_len;
    int fused = !sharded && m->ops->working_copy && amp_backend_supports(be, "optim_step_cast");
    if (fused) {
        if (amp_kit_cast_begin(m) != 0) return -1;
    }
    /* Runs of consecutive tensors with the same decay flag: one call each
     * (a model whose tensors all decay, like the MLP, makes one call). A
     * tensor with a working copy to write is a run of its own. The buffers
     * after desc.ntrained (batch norm's running statistics) are not
     * trained. With optim_multi_step the runs without a copy are gathered
     * into spans and stepped by one call (one launch) after the loop. */
    amp_optim_span *spans = NULL;
    int nspans = 0;
    if (!sharded && amp_backend_supports(be, "optim_multi_step") && d->nparam_tensors > 0) {
        spans = malloc((size_t)d->nparam_tensors * sizeof *spans);
        if (!spans) {
            snprintf(be->err, sizeof be->err, "optimizer step: out of memory for %d spans",
                     d->nparam_tensors);
            return -1;
        }
    }
    for (int i = 0; i < d->nparam_tensors && !d->params[i].buffer;) {
        amp_working_copy wc, other;
        int copy = with_copy(m, fused, i, &wc), j = i + 1;
        while (!copy && j < d->nparam_tensors && !d->params[j].buffer &&
               d->params[j].decay == d->params[i].decay && !with_copy(m, fused, j, &other))
            j++;
        size_t off = d->params[i].offset;
        size_t end = d->params[j - 1].offset + d->params[j - 1].numel;
        if (off < lo) off = lo;
        if (end > hi) end = hi;
        if (off >= end) { /* the run lies outside this rank's shard */
            i = j;
            continue;
        }
        size_t n = end - off;
        float *w = m->master + (sharded ? off - lo : off), *g = m->grads + (off - m->grads_lo);
        float *s0 = m->opt[0] ? m->opt[0] + (off - lo) : NULL;
        float *s1 = m->opt[1] ? m->opt[1] + (off - lo) : NULL;
        o.weight_decay = d->params[i].decay ? (float)st->weight_decay : 0.0f;
        int rc = 0;
        if (!copy && spans)
            spans[nspans++] = (amp_optim_span){off, n, o.weight_decay};
        else if (copy)
            rc = AMP_FUSED(be, optim_step_cast, &o, w, s0, s1, g, n,
                           &(amp_weight_copy){wc.ptr, wc.dt, wc.f32_store,
                                              amp_kit_cast_count(m, wc.layer)});
        else
            rc = be->ops->optim_step(be, &o, w, s0, s1, g, n);
        if (rc != 0) {
            free(spans);
            return -1;
        }
        i = j;
    }
    int rc = nspans ? AMP_FUSED(be, optim_multi_step, &o, m->master, m->opt[0], m->opt[1], m->grads,
                                spans, nspans)
                    : 0;
    free(spans);
    if (rc != 0) return -1;
    if (fused) amp_kit_cast_end(m, 1);
    return 0;
}

static int optimizer_step(amp_session *s, double lr, char *err, size_t errlen) {
    AMP_BE_TRY(s->be, amp_model_optimizer_step(s->model, &s->set, lr, s->applied + 1));
    /* Each rank updated its shard of the master weights: the working
     * copies of every rank get them, in their working dtypes. */
    return amp_session_share_weights(s, err, errlen);
}

/* The test hook: one inf in this rank's gradients, before they travel. */
static int poison(amp_session *s) {
    if (s->poisoned || s->step != s->inject_inf_step) return 0;
    s->poisoned = 1;
    float inf = INFINITY;
    amp_model *m = s->model; /* element 0: tensor 0's first */
    return s->be->ops->upload(s->be, m->grad_of ? m->grad_of(m->grad_ctx, 0) : m->grads, &inf,
                              sizeof inf);
}

/* amp_backward_args.grads_ready: tensor 0 holds element 0 (the hook's). */
static int on_grads_ready(void *ctx, int first, int count) {
    amp_session *s = ctx;
    char err[512];
    if (first == 0 && poison(s) != 0) return -1;
    if (amp_dist_grads_ready(s->grads, first, count, err, sizeof err) != 0) {
        snprintf(s->be->err, sizeof s->be->err, "%s", err);
        return -1;
    }
    return 0;
}

/* The downloaded step record made common to all ranks in one allreduce:
 * the decision values (non-finite count, sum of squares, max |g|, elements
 * checked) take the max, so every rank feeds its scaler the same numbers
 * even if the summed gradients differed in a bit, and so does the stop
 * signal; the loss, the hits and every rounding count are summed over the
 * ranks' rows. */
static int reduce_stats(amp_session *s, char *err, size_t errlen) {
    amp_step_stats *h = s->hstats;
    amp_round_count *rc = amp_stats_rounds(h, 0, 0);
    int nr = 2 * s->nlayers, n = AMP_DIST_NMAX + 5 + 3 * nr;
    double stackv[AMP_DIST_NMAX + 5 + 3 * 8], *v = stackv;
    enum { SUM0 = AMP_DIST_NMAX };
    /* sharded: each rank checked its own shard, so those three add up */
    int part = s->shard != 0;
    if (n > (int)(sizeof stackv / sizeof stackv[0]) && !(v = malloc((size_t)n * sizeof *v))) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    v[0] = part ? 0.0 : (double)h->nonfinite;
    v[1] = part ? 0.0 : h->sumsq;
    v[2] = (double)h->maxabs;
    v[3] = part ? 0.0 : (double)h->checked;
    v[4] = s->stop_flag ? (double)*s->stop_flag : 0.0;
    v[SUM0] = h->loss_sum;
    v[SUM0 + 1] = (double)h->correct;
    v[SUM0 + 2] = part ? (double)h->nonfinite : 0.0;
    v[SUM0 + 3] = part ? h->sumsq : 0.0;
    v[SUM0 + 4] = part ? (double)h->checked : 0.0;
    double *cnt = v + SUM0 + 5;
    for (int i = 0; i < nr; i++) {
        cnt[3 * i] = (double)rc[i].underflow;
        cnt[3 * i + 1] = (double)rc[i].overflow;
        cnt[3 * i + 2] = (double)rc[i].nonzero;
    }
    int r = amp_dist_reduce_step(s->dist, v, n, err, errlen);
    if (r == 0) {
        h->nonfinite = (unsigned long long)(part ? v[SUM0 + 2] : v[0]);
        h->sumsq = part ? v[SUM0 + 3] : v[1];
        h->maxabs = (float)v[2];
        h->checked = (unsigned long long)(part ? v[SUM0 + 4] : v[3]);
        s->stop_agreed = (int)v[4];
        h->loss_sum = v[SUM0];
        h->correct = (unsigned long long)v[SUM0 + 1];
        for (int i = 0; i < nr; i++) {
            rc[i].underflow = (unsigned long long)cnt[3 * i];
            rc[i].overflow = (unsigned long long)cnt[3 * i + 1];
            rc[i].nonzero = (unsigned long long)cnt[3 * i + 2];
        }
    }
    if (v != stackv) free(v);
    return r;
}

/* CRC32 of a backend array, for the replica check. */
static int crc_of(amp_session *s, const float *dev, size_t n, uint32_t *crc, char *err,
                  size_t errlen) {
    float *h = malloc(n ? n * sizeof(float) : 1);
    if (!h) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    if (n && s->be->ops->download(s->be, h, dev, n * sizeof(float)) != 0) {
        snprintf(err, errlen, "%s", s->be->err);
        free(h);
        return -1;
    }
    *crc = (uint32_t)crc32(*crc, (const unsigned char *)h, (uInt)(n * sizeof(float)));
    free(h);
    return 0;
}

/* [dist] check_every: every rank's master weights, optimizer state, scaler
 * state and counters must be the same bits; a difference fails every rank
 * at once with each rank's checksums (amp_dist_compare). */
static int check_replicas(amp_session *s, char *err, size_t errlen) {
    amp_model *m = s->model;
    size_t n = m->desc.nparams;
    uint32_t sums[4] = {0, 0, 0, 0};
    /* sharded: the FP32 weights every rank holds (each rank's masters are its own shard) */
    if (crc_of(s, s->shard ? m->wts : m->master, s->shard ? m->wts_len : n, &sums[0], err,
               errlen) != 0)
        return -1;
    /* sharded, each rank holds other moments: only its master weights compare */
    for (int k = 0; k < m->opt_buffers && !s->shard; k++)
        if (crc_of(s, m->opt[k], n, &sums[1], err, errlen) != 0) return -1;
    const amp_scaler_vtable *sv = amp_plugin_scaler(&s->scaler);
    double scale = sv->get_scale(s->scaler.self);
    sums[2] = (uint32_t)crc32(0, (const unsigned char *)&scale, sizeof scale);
    if (sv->state_save) {
        size_t need = 0;
        uint8_t *st = NULL;
        if (sv->state_save(s->scaler.self, NULL, 0, &need) == 0 && (st = malloc(need ? need : 1)) &&
            sv->state_save(s->scaler.self, st, need, &need) == 0)
            sums[2] = (uint32_t)crc32(sums[2], st, (uInt)need);
        free(st);
    }
    int64_t counters[3] = {s->step, s->applied, s->skipped};
    sums[3] = (uint32_t)crc32(0, (const unsigned char *)counters, sizeof counters);
    static const char *const labels[] = {"master weights", "optimizer state", "scaler state",
                                         "step counters"};
    int rc = amp_dist_compare(s->dist, sums, labels, 4, s->step, err, errlen);
    if (rc == 0)
        amp_log(AMP_LOG_DEBUG, "replica check after step %lld: all %d ranks hold the same state",
                (long long)s->step, s->world);
    return rc == 0 ? 0 : -1;
}

int amp_session_step(amp_session *s, amp_step_record *rec, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    amp_model *m = s->model;
    amp_backend *be = s->be;
    const amp_scaler_vtable *sv = amp_plugin_scaler(&s->scaler);
    double t0 = amp_clock_ms();
    double scale = sv->get_scale(s->scaler.self);
    if (!isfinite(scale) || !(scale > 0.0)) {
        snprintf(err, errlen, "scaler plugin '%s' returned the invalid scale %g at step %lld (a scale must be finite and > 0)",
                 s->scaler.entry->name, scale, (long long)s->step);
        return -1;
    }
    /* The backward multiplies by float(scale) and the unscale by
     * float(1/scale): both must be finite floats > 0, or inf * 0 = NaN and
     * x * inf = inf would reach the optimizer (or every gradient be zeroed). */
    float scale_f = (float)scale, inv_f = (float)(1.0 / scale);
    /* A backward multiplier that rounds to 0 would apply all-zero gradients
     * as if they were real ones (the same float the forward args get). */
    if (!((float)(scale * st->loss_weight) / (float)amp_session_rows_per_step(s) > 0.0f)) {
        snprintf(err, errlen,
                 "scaler plugin '%s' scale %g times [train] loss_weight %g, over %lld rows per "
                 "step, is 0 as a float32: every gradient would be zero; raise the scale or "
                 "loss_weight",
                 s->scaler.entry->name, scale, st->loss_weight,
                 (long long)amp_session_rows_per_step(s));
        return -1;
    }
    if (!isfinite(scale_f) || !(scale_f > 0.0f) || !isfinite(inv_f) || !(inv_f > 0.0f)) {
        snprintf(err, errlen,
                 "scaler plugin '%s' returned the scale %g at step %lld: %s %g is not a finite "
                 "float32 > 0, so the gradients cannot be unscaled (a scale must lie in "
                 "[%g, %g])",
                 s->scaler.entry->name, scale, (long long)s->step,
                 isfinite(scale_f) && scale_f > 0.0f ? "its reciprocal" : "as a float32 it is",
                 isfinite(scale_f) && scale_f > 0.0f ? 1.0 / scale : (double)scale_f,
                 1.0 / (double)FLT_MAX, (double)FLT_MAX);
        return -1;
    }
    int dp = s->world > 1;
    int64_t per_step = (int64_t)st->batch_size * st->accumulate * s->world;
    s->batcher->ops->begin_step(s->batcher, s->step, per_step);
    size_t stats_bytes = amp_model_stats_bytes(s->nlayers);
    /* Sharded, the copies come from the gathered shards (after the weights
     * were put: gathered now), and the counts of that rounding are the
     * owners' (the last gather's, kept: the masters have not moved since). */
    if (s->shard && m->copies_stale && amp_session_share_weights(s, err, errlen) != 0) return -1;
    if (s->shard) amp_kit_cast_end(m, 1);
    AMP_BE_TRY(s->be, be->ops->zero(be, m->stats, stats_bytes));
    AMP_BE_TRY(s->be, m->ops->cast_weights(m));
    /* Every rank casts the same weights: rank 0 alone counts that rounding;
     * sharded, each rank counts the rounding of its own shard. */
    if (dp && s->rank > 0) AMP_BE_TRY(s->be, be->ops->zero(be, m->stats, stats_bytes));
    if (dp && s->rank > 0 && s->shard) {
        amp_kit_cast_end(m, 1);
        if (amp_model_cast_reuse(m) < 0) AMP_BE_TRY(s->be, -1);
    }
    s->weights_sent = 0;
    amp_dist_grads_begin(s->grads, s->step);
    s->poisoned = 0;
    if (s->scaled) s->scaled->loss_scale = scale_f; /* grad_output amaxes are unscaled by it */
    /* d(loss)/d(row loss) over the GLOBAL rows: the sum over ranks is the mean */
    amp_forward_args fa = {st->batch_size, 1,
                           (float)(scale * st->loss_weight) / (float)amp_session_rows_per_step(s)};
    for (int64_t micro = 0; micro < st->accumulate; micro++) {
        s->batcher->ops->next(s->batcher, st->batch_size);
        if (upload_batch(s, st->batch_size, err, errlen) != 0) return -1;
        /* Grads stay scaled across micro-batches; unscaled once below. The
         * last micro-batch's gradients are final: they travel as the model
         * reports them. */
        amp_backward_args ba = {st->batch_size, micro > 0};
        int last = dp && micro == st->accumulate - 1;
        m->grads_ready = last ? on_grads_ready : NULL;
        m->ready_ctx = last ? s : NULL;
        m->allsum = amp_session_sync_bn(s); /* every micro-batch: its global batch */
        int rc = amp_host_trips_fwd_bwd(&s->trips, m, &fa, &ba);
        m->grads_ready = NULL;
        m->allsum = NULL;
        AMP_BE_TRY(s->be, rc);
    }
    amp_host_trips_step_end(s->trips);
    AMP_BE_TRY(s->be, poison(s));
    if (dp && amp_dist_grads_end(s->grads, err, errlen) != 0) return -1;
    float inv_scale = (float)(1.0 / scale); /* as GradScaler: float(1/double(scale)) */
    /* Sharded, a rank holds the sums of its shard only: it unscales and
     * checks those, and the partial sums of squares, non-finite and checked
     * counts are added over the ranks in the one statistics reduction. */
    size_t own_lo, own_n;
    own_range(s, &own_lo, &own_n);
    if (own_n) AMP_BE_TRY(s->be,
                          be->ops->unscale_check(be, m->grads + (own_lo - m->grads_lo), m->stats,
                                                 own_n, inv_scale));
    AMP_BE_TRY(s->be,
               be->ops->download(be, s->hstats, m->stats, stats_bytes)); /* the step's one sync */
    double t_stats = amp_clock_ms();
    if (dp && reduce_stats(s, err, errlen) != 0) return -1;
    double stats_ms = dp ? amp_clock_ms() - t_stats : 0.0;
    const amp_step_stats hs = *s->hstats;

    amp_scaler_stats ss;
    memset(&ss, 0, sizeof ss);
    ss.struct_size = sizeof ss;
    ss.step = s->step;
    ss.scale = scale;
    ss.found_inf = hs.nonfinite > 0;
    ss.nonfinite = (int64_t)hs.nonfinite;
    ss.grad_count = (int64_t)hs.checked;
    ss.grad_norm = ss.found_inf ? INFINITY : sqrt(hs.sumsq);
    ss.grad_max_abs = hs.maxabs;
    ss.dtype_max = s->dtype_max;
    const amp_round_count *rounds = amp_stats_rounds_const(s->hstats, 0, 0);
    for (int i = 0; i < 2 * s->nlayers; i++) {
        ss.underflow += (int64_t)rounds[i].underflow;
        ss.overflow += (int64_t)rounds[i].overflow;
        ss.rounded += (int64_t)rounds[i].nonzero;
        s->totals[i].underflow += rounds[i].underflow;
        s->totals[i].overflow += rounds[i].overflow;
        s->totals[i].nonzero += rounds[i].nonzero;
    }
    int skip = 0;
    s->scaler.host.err[0] = '\0';
    if (sv->update(s->scaler.self, &ss, &skip) != 0) {
        snprintf(err, errlen, "scaler plugin '%s' failed at step %lld: %s", s->scaler.entry->name,
                 (long long)s->step, amp_plugin_reason(&s->scaler));
        return -1;
    }
    if (amp_plugin_misuse(&s->scaler) || amp_plugin_misuse(&s->precision)) {
        snprintf(err, errlen, "%s, at step %lld",
                 amp_plugin_misuse(&s->scaler) ? amp_plugin_misuse(&s->scaler)
                                               : amp_plugin_misuse(&s->precision),
                 (long long)s->step);
        return -1;
    }
    skip = skip || ss.found_inf; /* never step on non-finite gradients */
    double lr = 0.0;
    if (!skip) {
        if (st->grad_clip > 0.0 && ss.grad_norm > st->grad_clip)
            if (own_n)
                AMP_BE_TRY(s->be, be->ops->scale(be, m->grads + (own_lo - m->grads_lo), own_n,
                                        (float)(st->grad_clip / (ss.grad_norm + 1e-6))));
        lr = amp_session_lr(s);
        if (optimizer_step(s, lr, err, errlen) != 0) return -1;
        s->applied++;
    } else {
        s->skipped++;
    }
    /* The scales follow every step, a skipped one too (as Transformer
     * Engine's amax history does); before the next forward quantizes. */
    AMP_BE_TRY(s->be, amp_model_scaled_collect(m));
    if (amp_scaled_end_step(s->scaled, s->dist, &s->precision, err, errlen) != 0) return -1;
    s->step++;
    rec->step = s->step;
    rec->epoch = s->batcher->epoch;
    rec->loss = hs.loss_sum / (double)amp_session_rows_per_step(s);
    rec->lr = lr;
    rec->scale = scale;
    rec->skipped = skip;
    rec->grad_norm = ss.grad_norm;
    rec->underflow = (uint64_t)ss.underflow;
    rec->overflow = (uint64_t)ss.overflow;
    if (s->check_every > 0 && s->step % s->check_every == 0 && check_replicas(s, err, errlen) != 0)
        return -1;
    rec->comm_ms = amp_dist_grads_comm_ms(s->grads) + stats_ms;
    rec->stop_signal = dp ? s->stop_agreed : 0;
    rec->step_ms = amp_clock_ms() - t0;
    return 0;
}

int amp_session_check_ranks(amp_session *s, char *err, size_t errlen) {
    if (s->world == 1) return 0;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    int bad = !f || amp_config_write_resolved(s->cfg, f) != 0;
    if (f && fclose(f) != 0) bad = 1;
    if (bad) {
        free(text);
        snprintf(err, errlen, "out of host memory");
        return 1;
    }
    /* The resolved text names where each value came from; only the values count. */
    uint32_t sums[3] = {0, 0, 0};
    for (char *line = text; line && *line;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *origin = strstr(line, "  ; ");
        if (line[0] != ';') sums[0] = (uint32_t)crc32(sums[0], (const unsigned char *)line,
                                                       (uInt)(origin ? (size_t)(origin - line) : strlen(line)));
        line = next;
    }
    free(text);
    int64_t data[5] = {s->train.n, s->test.n, s->train.features, s->train.classes, s->text.n_train};
    sums[1] = (uint32_t)crc32(0, (const unsigned char *)data, sizeof data);
    uint64_t model[2] = {s->model->desc.nparams, (uint64_t)s->nlayers};
    sums[2] = (uint32_t)crc32(0, (const unsigned char *)model, sizeof model);
    static const char *const labels[] = {"resolved config", "data sizes", "model size"};
    char why[1024] = "";
    int rc = amp_dist_compare(s->dist, sums, labels, 3, s->step, why, sizeof why);
    if (rc == 0) return 0;
    if (rc < 0) {
        snprintf(err, errlen, "%s", why);
        return 1;
    }
    err[0] = '\0';
    if (s->rank == 0)
        snprintf(err, errlen,
                 "the ranks were started with different settings (another config file, --set or "
                 "data on some rank; give every rank the same): %s",
                 strstr(why, "CRC32") ? strstr(why, "CRC32") : why);
    return 2;
}

#define AMP_EVAL_MAX_SIGNAL 32

int amp_session_evaluate(amp_session *s, double *loss, double *acc, char *err, size_t errlen) {
    amp_model *m = s->model;
    amp_backend *be = s->be;
    size_t stats_bytes = amp_model_stats_bytes(s->nlayers);
    if (s->shard && m->copies_stale && amp_session_share_weights(s, err, errlen) != 0) return -1;
    AMP_BE_TRY(s->be, be->ops->zero(be, m->stats, stats_bytes));
    amp_scaled_eval_begin(m->scaled); /* the scaled operands' state is training's alone */
    AMP_BE_TRY(s->be, m->ops->cast_weights(m));
    int B = s->set.batch_size;
    int64_t n = s->batcher->eval_rows;
    /* rank r evaluates rows [n r / world, n (r + 1) / world) */
    int64_t lo = n * s->rank / s->world, hi = n * (s->rank + 1) / s->world;
    int stopped = 0;
    for (int64_t start = lo; start < hi; start += B) {
        if (s->stop_flag && (stopped = (int)*s->stop_flag) != 0) break;
        int rows = (int)(hi - start < B ? hi - start : B);
        s->batcher->ops->eval(s->batcher, start, rows);
        if (upload_batch(s, rows, err, errlen) != 0) return -1;
        amp_forward_args fa = {rows, 0, 1.0f};
        AMP_BE_TRY(s->be, m->ops->forward(m, &fa));
    }
    AMP_BE_TRY(s->be, amp_model_scaled_eval_end(m));
    AMP_BE_TRY(s->be, be->ops->download(be, s->hstats, m->stats, stats_bytes));
    /* [2 + k]: the ranks that signal k stopped (the largest k wins, as for a step) */
    double sums[2 + AMP_EVAL_MAX_SIGNAL] = {s->hstats->loss_sum, (double)s->hstats->correct};
    if (stopped > 0 && stopped < AMP_EVAL_MAX_SIGNAL) sums[2 + stopped] = 1.0;
    if (s->world > 1 && amp_dist_sum(s->dist, sums, 2 + AMP_EVAL_MAX_SIGNAL, err, errlen) != 0)
        return -1;
    s->eval_stopped = 0;
    for (int k = 1; k < AMP_EVAL_MAX_SIGNAL; k++)
        if (sums[2 + k] > 0) s->eval_stopped = k;
    double count = (double)n * m->input.targets;
    *loss = sums[0] / count;
    *acc = sums[1] / count;
    return 0;
}

float *amp_session_weights(amp_session *s, char *err, size_t errlen) {
    amp_model *m = s->model;
    if (s->shard && (s->master_full_step != s->step || !s->master_full)) {
        snprintf(err, errlen, "[dist] shard: the master weights of step %lld were not gathered "
                 "(amp_session_gather_optim) on this rank (rank 0 gathers them)",
                 (long long)s->step);
        return NULL;
    }
    float *host = malloc(m->desc.nparams * sizeof(float));
    if (!host) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    if (s->shard) {
        memcpy(host, s->master_full, m->desc.nparams * sizeof(float));
        return host;
    }
    if (s->be->ops->download(s->be, host, m->master, m->desc.nparams * sizeof(float)) != 0) {
        snprintf(err, errlen, "%s", s->be->err);
        free(host);
        return NULL;
    }
    return host;
}

int amp_session_save_weights(amp_session *s, const char *path, char *err, size_t errlen) {
    const amp_model_desc *d = &s->model->desc;
    float *host = amp_session_weights(s, err, errlen);
    if (!host) return -1;
    amp_st_tensor *t = calloc((size_t)d->nparam_tensors, sizeof *t);
    if (!t) {
        free(host);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        t[i].name = P->name;
        t[i].data = host + P->offset;
        t[i].ndim = P->ndim;
        for (int k = 0; k < P->ndim; k++) t[i].shape[k] = P->shape[k];
    }
    const char *meta[] = {"format", "pt", "producer", "amptrain " AMP_VERSION, NULL};
    int rc = amp_safetensors_write(path, t, d->nparam_tensors, meta, err, errlen);
    free(t);
    free(host);
    return rc;
}

int amp_session_check_weights(amp_session *s, char *err, size_t errlen) {
    const amp_model_desc *d = &s->model->desc;
    size_t bad = 0, first = 0;
    if (s->shard) { /* rank 0's count of the gathered (or restored) whole */
        if (s->master_full_step != s->step) {
            snprintf(err, errlen, "[dist] shard: the master weights of step %lld were not "
                     "gathered (amp_session_gather_optim)", (long long)s->step);
            return -1;
        }
        bad = s->weights_bad;
        first = s->weights_first;
    } else {
        float *w = amp_session_weights(s, err, errlen);
        if (!w) return -1;
        for (size_t i = 0; i < d->nparams; i++)
            if (!isfinite(w[i]) && bad++ == 0) first = i;
        free(w);
    }
    if (!bad) return 0;
    char where[AMP_MODEL_NAME_MAX + 32];
    amp_param_at(d, first, where, sizeof where);
    snprintf(err, errlen,
             "after step %lld the master weights hold %zu non-finite value%s (the first is %s): "
             "an applied update overflowed; lower [optim] lr or set [optim] grad_clip",
             (long long)s->step, bad, bad == 1 ? "" : "s", where);
    return 1;
}

void amp_session_resolve_path(const amp_session *s, const char *p, char *out, size_t outlen) {
    resolve_path(out, outlen, s->cfg, p);
}
