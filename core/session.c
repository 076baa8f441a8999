#include "session.h"

#include <float.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "io/safetensors.h"

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

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

static const char *config_dir(const amp_config *cfg, char *buf, size_t len) {
    snprintf(buf, len, "%s", amp_config_path(cfg));
    return dirname(buf);
}

static int open_backend(amp_session *s, char *err, size_t errlen) {
    amp_device_choice dev = s->set.device;
    if (dev == AMP_RUN_AUTO) dev = amp_backend_cuda_available() ? AMP_RUN_CUDA : AMP_RUN_CPU;
    s->be = dev == AMP_RUN_CUDA ? amp_backend_cuda_create(err, errlen)
                                : amp_backend_cpu_create(err, errlen);
    return s->be ? 0 : -1;
}

static int load_data(amp_session *s, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    if (st->dataset == AMP_DATA_FASHION_MNIST) {
        char dir[PATH_MAX];
        resolve_path(dir, sizeof dir, s->cfg, st->path);
        if (amp_dataset_load_fashion_mnist(&s->train, dir, "train", st->train_limit, err, errlen) ||
            amp_dataset_load_fashion_mnist(&s->test, dir, "test", st->test_limit, err, errlen) ||
            amp_dataset_check_splits(&s->train, &s->test, dir, err, errlen))
            return -1;
    } else {
        if (amp_dataset_make_tiny(&s->train, "train", st->tiny_train, st->tiny_features,
                                  st->tiny_classes, st->input_scale, st->seed, err, errlen) ||
            amp_dataset_make_tiny(&s->test, "test", st->tiny_test, st->tiny_features,
                                  st->tiny_classes, st->input_scale, st->seed, err, errlen))
            return -1;
    }
    return 0;
}

/* Asks the policy for every layer's precision and checks the answers. */
static int resolve_precision(amp_session *s, amp_mlp_spec *spec, char *err, size_t errlen) {
    const amp_precision_vtable *vt = amp_plugin_precision(&s->precision);
    int nl = amp_mlp_layer_count(spec);
    s->dtype_max = 3.4028234663852886e38;
    for (int l = 0; l <= nl; l++) {
        const char *layer = l < nl ? s->layer_ptrs[l] : "loss";
        amp_layer_precision p;
        p.struct_size = sizeof p;
        for (int c = 0; c < AMP_OP_COUNT; c++) p.compute[c] = AMP_DTYPE_F32;
        p.activation = p.param = AMP_DTYPE_F32;
        s->precision.host.err[0] = '\0';
        if (vt->resolve(s->precision.self, layer, &p) != 0) {
            snprintf(err, errlen, "precision plugin '%s': resolving layer '%s' failed: %s",
                     s->precision.entry->name, layer, s->precision.host.err);
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
        if (l == nl) break;
        spec->prec[l] = p;
        amp_dtype used[3] = {p.compute[AMP_OP_GEMM], p.activation, p.param};
        for (int i = 0; i < 3; i++) {
            double mx = used[i] == AMP_DTYPE_F16 ? 65504.0 : used[i] == AMP_DTYPE_BF16 ? 3.3895313892515355e38 : s->dtype_max;
            if (mx < s->dtype_max) s->dtype_max = mx;
        }
        amp_log(AMP_LOG_DEBUG, "layer %s: gemm %s, activations %s, weights %s", layer,
                dtype_name(p.compute[AMP_OP_GEMM]), dtype_name(p.activation), dtype_name(p.param));
    }
    return 0;
}

static int open_plugins(amp_session *s, char *err, size_t errlen) {
    char dirbuf[PATH_MAX];
    const char *base = config_dir(s->cfg, dirbuf, sizeof dirbuf);
    if (amp_plugin_open(&s->precision, AMP_PLUGIN_KIND_PRECISION, s->set.precision_plugin, base, err,
                        errlen) != 0)
        return -1;
    if (amp_plugin_init(&s->precision, s->cfg, "precision", s->layer_ptrs,
                        (int)(s->set.nhidden + 1), err, errlen) != 0)
        return -1;
    const amp_precision_vtable *pv = amp_plugin_precision(&s->precision);
    int needs_scaler = pv->requires_scaler && pv->requires_scaler(s->precision.self);
    const char *scaler = s->set.scaler_plugin ? s->set.scaler_plugin : needs_scaler ? "dynamic" : "none";
    if (amp_plugin_open(&s->scaler, AMP_PLUGIN_KIND_SCALER, scaler, base, err, errlen) != 0) return -1;
    if (amp_plugin_init(&s->scaler, s->cfg, "scaler", s->layer_ptrs, (int)(s->set.nhidden + 1), err,
                        errlen) != 0)
        return -1;
    if (needs_scaler && strcmp(s->scaler.entry->name, "none") == 0)
        amp_log(AMP_LOG_WARN,
                "precision '%s' needs a loss scaler but [scaler] plugin = none: small gradients "
                "will flush to zero in 16 bits (watch the underflow counts)",
                s->precision.entry->name);
    return 0;
}

static int load_initial_weights(amp_session *s, char *err, size_t errlen) {
    if (strcmp(s->set.init, "default") == 0) {
        if (amp_mlp_init_params(s->mlp, s->set.seed) != 0) {
            snprintf(err, errlen, "%s", s->be->err);
            return -1;
        }
        return 0;
    }
    char path[PATH_MAX];
    resolve_path(path, sizeof path, s->cfg, s->set.init);
    amp_safetensors *st = NULL;
    if (amp_safetensors_open(&st, path, err, errlen) != 0) return -1;
    amp_mlp *m = s->mlp;
    float *host = malloc(m->nparams * sizeof(float));
    int rc = host ? 0 : -1;
    if (!host) snprintf(err, errlen, "out of host memory");
    for (int l = 0; l < m->nlayers && rc == 0; l++) {
        const amp_mlp_layer *L = &m->layers[l];
        char name[64];
        int64_t wshape[2] = {L->out, L->in}, bshape[1] = {L->out};
        snprintf(name, sizeof name, "%s.weight", L->name);
        rc = amp_safetensors_get_f32(st, name, 2, wshape, host + L->w_off, err, errlen);
        if (rc == 0) {
            snprintf(name, sizeof name, "%s.bias", L->name);
            rc = amp_safetensors_get_f32(st, name, 1, bshape, host + L->b_off, err, errlen);
        }
    }
    /* Training from inf/NaN would skip every step (or worse): refuse it here. */
    for (size_t i = 0; rc == 0 && i < m->nparams; i++)
        if (!isfinite(host[i])) {
            for (int l = 0; l < m->nlayers; l++) {
                const amp_mlp_layer *L = &m->layers[l];
                int in_w = i >= L->w_off && i < L->w_off + (size_t)L->out * (size_t)L->in;
                if (in_w || (i >= L->b_off && i < L->b_off + (size_t)L->out))
                    snprintf(err, errlen, "%s: %s.%s[%zu] is %g; initial weights must be finite",
                             path, L->name, in_w ? "weight" : "bias",
                             i - (in_w ? L->w_off : L->b_off), (double)host[i]);
            }
            rc = -1;
        }
    if (rc == 0 && amp_safetensors_count(st) != 2 * m->nlayers) {
        snprintf(err, errlen, "%s: holds %d tensors but the model has %d (fc1.weight, fc1.bias, ...)",
                 path, amp_safetensors_count(st), 2 * m->nlayers);
        rc = -1;
    }
    if (rc == 0 && s->be->ops->upload(s->be, m->master, host, m->nparams * sizeof(float)) != 0) {
        snprintf(err, errlen, "%s", s->be->err);
        rc = -1;
    }
    free(host);
    amp_safetensors_close(st);
    return rc;
}

int amp_session_open(amp_session **out, amp_config *cfg, char *err, size_t errlen) {
    *out = NULL;
    amp_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of host memory");
        return 1;
    }
    s->cfg = cfg;
    s->inject_inf_step = -1;
    if (amp_settings_read(&s->set, cfg, err, errlen) != 0) goto config_error;
    const amp_settings *st = &s->set;
    int nl = st->nhidden + 1;
    for (int l = 0; l < nl; l++) {
        amp_mlp_layer_name(s->layer_names[l], sizeof s->layer_names[l], l);
        s->layer_ptrs[l] = s->layer_names[l];
    }
    if (open_plugins(s, err, errlen) != 0) goto config_error;
    if (amp_config_check_unread(cfg, err, errlen) != 0) goto config_error;

    amp_mlp_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.nhidden = st->nhidden;
    memcpy(spec.hidden, st->hidden, sizeof spec.hidden);
    if (resolve_precision(s, &spec, err, errlen) != 0) goto config_error;
    if (load_data(s, err, errlen) != 0) goto runtime_error;
    int64_t per_step = (int64_t)st->batch_size * st->accumulate;
    s->steps_per_epoch = s->train.n / per_step;
    if (s->steps_per_epoch == 0) {
        snprintf(err, errlen,
                 "[data] batch_size %d x [train] accumulate %lld = %lld examples per step, but the "
                 "training set has only %lld; lower batch_size or accumulate",
                 st->batch_size, (long long)st->accumulate, (long long)per_step,
                 (long long)s->train.n);
        goto config_error;
    }
    s->total_steps = st->steps > 0 ? st->steps : st->epochs * s->steps_per_epoch;
    if (open_backend(s, err, errlen) != 0) goto runtime_error;
    const amp_precision_vtable *pv = amp_plugin_precision(&s->precision);
    s->be->allow_tf32 = pv->struct_size > offsetof(amp_precision_vtable, allow_tf32) &&
                        pv->allow_tf32 && pv->allow_tf32(s->precision.self);
    spec.in_features = s->train.features;
    spec.classes = s->train.classes;
    spec.act = st->activation;
    spec.batch = st->batch_size;
    spec.opt_buffers = st->optim == AMP_OPTIM_ADAMW ? 2 : st->momentum > 0 ? 1 : 0;
    if (amp_mlp_create(&s->mlp, s->be, &spec, err, errlen) != 0) goto runtime_error;
    if (load_initial_weights(s, err, errlen) != 0) goto runtime_error;
    s->perm = malloc((size_t)s->train.n * sizeof *s->perm);
    s->hx = malloc((size_t)st->batch_size * s->train.features * sizeof(float));
    s->hy = malloc((size_t)st->batch_size * sizeof(int32_t));
    if (!s->perm || !s->hx || !s->hy) {
        snprintf(err, errlen, "out of host memory");
        goto runtime_error;
    }
    amp_dataset_order(s->perm, s->train.n, st->seed, 0, st->shuffle);
    *out = s;
    return 0;
config_error:
    amp_session_close(s);
    return 2;
runtime_error:
    amp_session_close(s);
    return 1;
}

void amp_session_close(amp_session *s) {
    if (!s) return;
    amp_mlp_free(s->mlp);
    if (s->be) s->be->ops->destroy(s->be);
    amp_plugin_close(&s->scaler);
    amp_plugin_close(&s->precision);
    amp_dataset_free(&s->train);
    amp_dataset_free(&s->test);
    free(s->perm);
    free(s->hx);
    free(s->hy);
    free(s);
}

double amp_session_lr(const amp_session *s) {
    const amp_settings *st = &s->set;
    double t = (double)s->applied;
    if (st->warmup_steps > 0 && s->applied < st->warmup_steps)
        return st->lr * (t + 1.0) / (double)st->warmup_steps;
    if (st->schedule == AMP_SCHED_COSINE) {
        double span = (double)(s->total_steps - st->warmup_steps);
        double progress = span > 0 ? (t - (double)st->warmup_steps) / span : 1.0;
        if (progress > 1.0) progress = 1.0;
        return st->lr * 0.5 * (1.0 + cos(M_PI * progress));
    }
    return st->lr;
}

#define BE_CHECK(expr)                                      \
    do {                                                    \
        if ((expr) != 0) {                                  \
            snprintf(err, errlen, "%s", s->be->err);        \
            return -1;                                      \
        }                                                   \
    } while (0)

/* Uploads the next micro-batch of the epoch order. */
static int upload_batch(amp_session *s, const amp_dataset *d, const int64_t *perm, int64_t start,
                        int rows, char *err, size_t errlen) {
    amp_dataset_gather(s->hx, s->hy, d, perm, start, rows);
    amp_mlp *m = s->mlp;
    BE_CHECK(s->be->ops->upload(s->be, m->x_f32, s->hx, (size_t)rows * d->features * sizeof(float)));
    BE_CHECK(s->be->ops->upload(s->be, m->labels, s->hy, (size_t)rows * sizeof(int32_t)));
    return 0;
}

static int optimizer_step(amp_session *s, double lr, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    amp_mlp *m = s->mlp;
    if (st->optim == AMP_OPTIM_SGD)
        BE_CHECK(s->be->ops->sgd_step(s->be, m->master, m->opt[0], m->grads, m->nparams, (float)lr,
                                      (float)st->momentum, (float)st->weight_decay));
    else
        BE_CHECK(s->be->ops->adamw_step(s->be, m->master, m->opt[0], m->opt[1], m->grads, m->nparams,
                                        (float)lr, (float)st->beta1, (float)st->beta2,
                                        (float)st->eps, (float)st->weight_decay, s->applied + 1));
    return 0;
}

int amp_session_step(amp_session *s, amp_step_record *rec, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    amp_mlp *m = s->mlp;
    amp_backend *be = s->be;
    const amp_scaler_vtable *sv = amp_plugin_scaler(&s->scaler);
    double t0 = now_ms();
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
     * as if they were real ones. */
    if (!((float)(scale * st->loss_weight) > 0.0f)) {
        snprintf(err, errlen,
                 "scaler plugin '%s' scale %g times [train] loss_weight %g is 0 as a float32: "
                 "every gradient would be zero; raise the scale or loss_weight",
                 s->scaler.entry->name, scale, st->loss_weight);
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
    int64_t per_step = (int64_t)st->batch_size * st->accumulate;
    if (s->cursor + per_step > s->train.n) { /* epoch boundary: drop the ragged tail */
        s->epoch++;
        s->cursor = 0;
        amp_dataset_order(s->perm, s->train.n, st->seed, s->epoch, st->shuffle);
    }
    BE_CHECK(be->ops->zero(be, m->stats, sizeof(amp_step_stats)));
    BE_CHECK(amp_mlp_cast_weights(m));
    for (int64_t micro = 0; micro < st->accumulate; micro++) {
        if (upload_batch(s, &s->train, s->perm, s->cursor, st->batch_size, err, errlen) != 0)
            return -1;
        s->cursor += st->batch_size;
        /* Grads stay scaled across micro-batches; unscaled once below. */
        BE_CHECK(amp_mlp_step(m, st->batch_size, 1, (float)(scale * st->loss_weight),
                              (float)per_step, micro > 0));
    }
    if (s->step == s->inject_inf_step) {
        float inf = INFINITY;
        BE_CHECK(be->ops->upload(be, m->grads, &inf, sizeof inf));
    }
    float inv_scale = (float)(1.0 / scale); /* as GradScaler: float(1/double(scale)) */
    BE_CHECK(be->ops->unscale_check(be, m->grads, m->stats, m->nparams, inv_scale));
    amp_step_stats hs;
    BE_CHECK(be->ops->download(be, &hs, m->stats, sizeof hs)); /* the step's one sync */

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
    for (int i = 0; i < 2 * m->nlayers; i++) {
        ss.underflow += (int64_t)hs.rounds[i].underflow;
        ss.overflow += (int64_t)hs.rounds[i].overflow;
        ss.rounded += (int64_t)hs.rounds[i].nonzero;
        s->totals[i].underflow += hs.rounds[i].underflow;
        s->totals[i].overflow += hs.rounds[i].overflow;
        s->totals[i].nonzero += hs.rounds[i].nonzero;
    }
    int skip = 0;
    s->scaler.host.err[0] = '\0';
    if (sv->update(s->scaler.self, &ss, &skip) != 0) {
        snprintf(err, errlen, "scaler plugin '%s' failed at step %lld: %s", s->scaler.entry->name,
                 (long long)s->step, s->scaler.host.err);
        return -1;
    }
    skip = skip || ss.found_inf; /* never step on non-finite gradients */
    double lr = 0.0;
    if (!skip) {
        if (st->grad_clip > 0.0 && ss.grad_norm > st->grad_clip)
            BE_CHECK(be->ops->scale(be, m->grads, m->nparams,
                                    (float)(st->grad_clip / (ss.grad_norm + 1e-6))));
        lr = amp_session_lr(s);
        if (optimizer_step(s, lr, err, errlen) != 0) return -1;
        s->applied++;
    } else {
        s->skipped++;
    }
    s->step++;
    rec->step = s->step;
    rec->epoch = s->epoch;
    rec->loss = hs.loss_sum / (double)per_step;
    rec->lr = lr;
    rec->scale = scale;
    rec->skipped = skip;
    rec->grad_norm = ss.grad_norm;
    rec->underflow = (uint64_t)ss.underflow;
    rec->overflow = (uint64_t)ss.overflow;
    rec->step_ms = now_ms() - t0;
    return 0;
}

int amp_session_evaluate(amp_session *s, double *loss, double *acc, char *err, size_t errlen) {
    amp_mlp *m = s->mlp;
    amp_backend *be = s->be;
    BE_CHECK(be->ops->zero(be, m->stats, sizeof(amp_step_stats)));
    BE_CHECK(amp_mlp_cast_weights(m));
    int B = s->set.batch_size;
    for (int64_t start = 0; start < s->test.n; start += B) {
        int rows = (int)(s->test.n - start < B ? s->test.n - start : B);
        if (upload_batch(s, &s->test, NULL, start, rows, err, errlen) != 0) return -1;
        BE_CHECK(amp_mlp_step(m, rows, 0, 1.0f, 1.0f, 0));
    }
    amp_step_stats hs;
    BE_CHECK(be->ops->download(be, &hs, m->stats, sizeof hs));
    *loss = hs.loss_sum / (double)s->test.n;
    *acc = (double)hs.correct / (double)s->test.n;
    return 0;
}

float *amp_session_weights(amp_session *s, char *err, size_t errlen) {
    amp_mlp *m = s->mlp;
    float *host = malloc(m->nparams * sizeof(float));
    if (!host) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    if (s->be->ops->download(s->be, host, m->master, m->nparams * sizeof(float)) != 0) {
        snprintf(err, errlen, "%s", s->be->err);
        free(host);
        return NULL;
    }
    return host;
}

int amp_session_save_weights(amp_session *s, const char *path, char *err, size_t errlen) {
    amp_mlp *m = s->mlp;
    float *host = amp_session_weights(s, err, errlen);
    if (!host) return -1;
    amp_st_tensor t[2 * AMP_MAX_LAYERS];
    char names[2 * AMP_MAX_LAYERS][32];
    for (int l = 0; l < m->nlayers; l++) {
        const amp_mlp_layer *L = &m->layers[l];
        snprintf(names[2 * l], sizeof names[0], "%s.weight", L->name);
        snprintf(names[2 * l + 1], sizeof names[0], "%s.bias", L->name);
        t[2 * l] = (amp_st_tensor){names[2 * l], host + L->w_off, 2, {L->out, L->in, 0, 0}};
        t[2 * l + 1] = (amp_st_tensor){names[2 * l + 1], host + L->b_off, 1, {L->out, 0, 0, 0}};
    }
    const char *meta[] = {"format", "pt", "producer", "amptrain " AMP_VERSION, NULL};
    int rc = amp_safetensors_write(path, t, 2 * m->nlayers, meta, err, errlen);
    free(host);
    return rc;
}

int amp_session_check_weights(amp_session *s, char *err, size_t errlen) {
    const amp_mlp *m = s->mlp;
    float *w = amp_session_weights(s, err, errlen);
    if (!w) return -1;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < m->nparams; i++)
        if (!isfinite(w[i]) && bad++ == 0) first = i;
    free(w);
    if (!bad) return 0;
    /* Name the tensor of the first one: "fc2.bias[3]". */
    char where[64] = "";
    for (int l = 0; l < m->nlayers && !where[0]; l++) {
        const amp_mlp_layer *L = &m->layers[l];
        size_t nw = (size_t)L->out * (size_t)L->in;
        if (first >= L->w_off && first < L->w_off + nw)
            snprintf(where, sizeof where, "%s.weight[%zu]", L->name, first - L->w_off);
        else if (first >= L->b_off && first < L->b_off + (size_t)L->out)
            snprintf(where, sizeof where, "%s.bias[%zu]", L->name, first - L->b_off);
    }
    snprintf(err, errlen,
             "after step %lld the master weights hold %zu non-finite value%s (the first is %s): "
             "an applied update overflowed; lower [optim] lr or set [optim] grad_clip",
             (long long)s->step, bad, bad == 1 ? "" : "s", where[0] ? where : "?");
    return 1;
}

void amp_session_resolve_path(const amp_session *s, const char *p, char *out, size_t outlen) {
    resolve_path(out, outlen, s->cfg, p);
}
