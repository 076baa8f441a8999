/* A session's state to and from a checkpoint: everything the next step
 * reads (master weights, optimizer state, the scaler's state, the step,
 * applied/skipped counts, epoch and cursor, rounding totals) so that a
 * resumed run continues bit for bit. The data order is not stored: it is a
 * function of (seed, epoch) and is rebuilt. Gradients, working weights and
 * activations are rewritten by every step before they are read. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scaled_state.h"
#include "data/data_id.h"
#include "config/implied_keys.h"
#include "util/log.h"
#include "resume_config.h"
#include "session.h"


static char *resolved_config(const amp_config *cfg, size_t *len) {
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    if (!f) return NULL;
    int bad = amp_config_write_resolved(cfg, f) != 0;
    if (fclose(f) != 0) bad = 1;
    if (bad) {
        free(text);
        return NULL;
    }
    return text;
}

static uint8_t *download_le(amp_session *s, const float *dev, size_t n, char *err, size_t errlen) {
    uint8_t *p = malloc(n > 0 ? n * 4 : 1);
    if (!p) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    if (n && s->be->ops->download(s->be, p, dev, n * 4) != 0) {
        snprintf(err, errlen, "%s", s->be->err);
        free(p);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) { /* host floats -> little-endian, in place */
        float v;
        memcpy(&v, p + 4 * i, 4);
        amp_ckpt_put_f32(p, i, v);
    }
    return p;
}

/* The EXEC section: where this run executes (malloc'd text), and the GEMM
 * path of each shape ("gemm=<shape>\t<path>"), which a resume keeps. */
static char *exec_text(const amp_session *s) {
    const amp_backend_info *in = &s->be->info;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    fprintf(f, "backend=%s\nisa=%s\nthreads=%d\nscratch_peak=%zu\n", s->be->ops->name,
            in->isa[0] ? in->isa : "-", in->threads, in->scratch_bytes);
    for (int i = 0; i < in->n_gemm_choices; i++)
        fprintf(f, "gemm=%s\t%s\n", in->gemm_choices[i].key, in->gemm_choices[i].path);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* The checkpoint's GEMM paths back into the backend, so the resumed run
 * runs every shape as the run before it did. */
static int preload_gemm_paths(amp_session *s, const amp_checkpoint *ck, char *err, size_t errlen) {
    const char *t = ck->exec, *end = ck->exec ? ck->exec + ck->exec_len : NULL;
    while (t && t < end) {
        const char *e = memchr(t, '\n', (size_t)(end - t));
        if (!e) e = end;
        if (e - t > 5 && memcmp(t, "gemm=", 5) == 0) {
            char line[256];
            size_t n = (size_t)(e - t - 5) < sizeof line - 1 ? (size_t)(e - t - 5) : sizeof line - 1;
            memcpy(line, t + 5, n);
            line[n] = '\0';
            char *tab = strchr(line, '\t');
            if (tab) {
                *tab = '\0';
                if (amp_backend_gemm_preload(s->be, line, tab + 1, err, errlen) != 0) return -1;
            }
        }
        t = e + 1;
    }
    return 0;
}

/* The value of `key` in EXEC text, or "" (into out). */
static void exec_value(const char *text, size_t len, const char *key, char *out, size_t outlen) {
    out[0] = '\0';
    size_t kl = strlen(key);
    for (size_t i = 0; i < len;) {
        size_t e = i;
        while (e < len && text[e] != '\n') e++;
        if (e - i > kl && memcmp(text + i, key, kl) == 0 && text[i + kl] == '=') {
            size_t vl = e - i - kl - 1 < outlen - 1 ? e - i - kl - 1 : outlen - 1;
            memcpy(out, text + i + kl + 1, vl);
            out[vl] = '\0';
            return;
        }
        i = e + 1;
    }
}

/* Bits are repeatable only on the same backend, instruction-set path and
 * thread count: say so when a resume changes any of them. */
static void warn_exec_change(const amp_session *s, const amp_checkpoint *ck) {
    if (!ck->exec || ck->exec_len == 0) return;
    char *now = exec_text(s);
    if (!now) return;
    static const char *const keys[] = {"backend", "isa", "threads"};
    for (int k = 0; k < 3; k++) {
        char was[64], is[64];
        exec_value(ck->exec, ck->exec_len, keys[k], was, sizeof was);
        exec_value(now, strlen(now), keys[k], is, sizeof is);
        if (was[0] && strcmp(was, is) != 0)
            amp_log(AMP_LOG_WARN,
                    "resuming with %s %s where the checkpoint ran %s %s: the run continues "
                    "correctly, but its numbers will not be bit-identical to an uninterrupted run "
                    "(they are repeatable only on the same backend, instruction-set path and "
                    "thread count; set AMPTRAIN_ISA / AMPTRAIN_THREADS to match)",
                    keys[k], is, keys[k], was);
    }
    free(now);
}

/* The data's fingerprint (data_id.h), made once: the text corpus was
 * hashed as it was loaded; the IDX files are hashed when first asked (a run
 * without checkpoints never pays for it). NULL with err. */
static const char *data_id(amp_session *s, char *err, size_t errlen) {
    if (s->data_id) return s->data_id;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) {
        snprintf(err, errlen, "out of host memory");
        return NULL;
    }
    int rc = s->data_ops->fingerprint(&s->data, f, err, errlen);
    if (fclose(f) != 0 && rc == 0) {
        snprintf(err, errlen, "out of host memory");
        rc = -1;
    }
    if (rc != 0) {
        free(text);
        return NULL;
    }
    s->data_id = text;
    return text;
}

int amp_session_snapshot(amp_session *s, amp_checkpoint *ck, char *err, size_t errlen) {
    memset(ck, 0, sizeof *ck);
    const amp_model *m = s->model;
    const amp_model_desc *d = &m->desc;
    snprintf(ck->amptrain_version, sizeof ck->amptrain_version, "%s", AMP_VERSION);
    ck->abi_major = AMP_PLUGIN_ABI_MAJOR;
    ck->abi_minor = AMP_PLUGIN_ABI_MINOR;
    ck->step = s->step;
    ck->applied = s->applied;
    ck->skipped = s->skipped;
    ck->epoch = s->batcher->epoch;
    ck->cursor = s->batcher->cursor;
    ck->total_steps = s->total_steps;
    ck->seed = s->set.seed;
    ck->train_examples = s->train.n;
    ck->optim = (uint32_t)s->set.optim;
    ck->world_size = (uint32_t)s->world;
    ck->opt_buffers = (uint32_t)m->opt_buffers;
    snprintf(ck->model, sizeof ck->model, "%s", m->ops->name);
    ck->nlayers = (uint32_t)d->nlayers;
    ck->nparam_tensors = (uint32_t)d->nparam_tensors;
    amp_ckpt_param *params = calloc((size_t)d->nparam_tensors, sizeof *params);
    if (!params) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        snprintf(params[i].name, sizeof params[i].name, "%s", P->name);
        params[i].layer = (uint32_t)P->layer;
        params[i].ndim = (uint32_t)P->ndim;
        for (int k = 0; k < P->ndim; k++) params[i].shape[k] = (uint64_t)P->shape[k];
    }
    ck->params = params;
    ck->nparams = d->nparams;
    snprintf(ck->precision, sizeof ck->precision, "%s", s->precision.entry->name);
    snprintf(ck->precision_version, sizeof ck->precision_version, "%s", s->precision.entry->version);
    snprintf(ck->scaler, sizeof ck->scaler, "%s", s->scaler.entry->name);
    snprintf(ck->scaler_version, sizeof ck->scaler_version, "%s", s->scaler.entry->version);
    ck->totals = s->totals;

    size_t conf_len = 0;
    char *conf = resolved_config(s->cfg, &conf_len);
    if (!conf) {
        snprintf(err, errlen, "cannot render the resolved config for the checkpoint");
        return -1;
    }
    ck->config = conf;
    ck->config_len = conf_len;
    char *exec = exec_text(s);
    if (!exec) {
        snprintf(err, errlen, "out of host memory");
        goto fail;
    }
    ck->exec = exec;
    ck->exec_len = strlen(exec);
    ck->data_id = data_id(s, err, errlen); /* the session's: not freed with the snapshot */
    if (!ck->data_id) goto fail;
    ck->data_id_len = strlen(ck->data_id);
    size_t nparams = d->nparams;
    if (s->shard) { /* the masters gathered whole (amp_session_gather_optim) */
        float *w = amp_session_weights(s, err, errlen);
        uint8_t *le = w ? malloc(nparams * 4 + 1) : NULL;
        for (size_t i = 0; le && i < nparams; i++) amp_ckpt_put_f32(le, i, w[i]);
        if (w && !le) snprintf(err, errlen, "out of host memory");
        free(w);
        ck->master = le;
    } else {
        ck->master = download_le(s, m->master, nparams, err, errlen);
    }
    ck->master_len = nparams * 4;
    if (!ck->master) goto fail;
    if (ck->opt_buffers) {
        uint8_t *o = malloc(nparams * 4 * ck->opt_buffers);
        if (!o) {
            snprintf(err, errlen, "out of host memory");
            goto fail;
        }
        ck->optim_state = o;
        ck->optim_len = nparams * 4 * ck->opt_buffers;
        if (s->shard && s->opt_full_step != s->step) { /* no amp_session_gather_optim now */
            snprintf(err, errlen, "[dist] shard: the moments of step %lld were not "
                     "gathered, so rank 0 cannot write this checkpoint", (long long)s->step);
            goto fail;
        }
        for (uint32_t k = 0; k < ck->opt_buffers && s->shard; k++)
            for (size_t i = 0; i < nparams; i++)
                amp_ckpt_put_f32(o + (size_t)k * nparams * 4, i, s->opt_full[(size_t)k * nparams + i]);
        for (uint32_t k = 0; k < ck->opt_buffers && !s->shard; k++) {
            uint8_t *part = download_le(s, m->opt[k], nparams, err, errlen);
            if (!part) goto fail;
            memcpy(o + k * nparams * 4, part, nparams * 4);
            free(part);
        }
    }
    const amp_scaler_vtable *sv = amp_plugin_scaler(&s->scaler);
    if (sv->state_save) {
        /* Every length the plugin reports is checked: the size asked for
         * first must be sane and the second call must report that same size
         * (using the second length unchecked read past the buffer). A guard
         * after the buffer catches a plugin that writes past cap. */
        enum { GUARD = 64 };
        const char *name = s->scaler.entry->name;
        size_t need = 0, got = 0;
        s->scaler.host.err[0] = '\0';
        if (sv->state_save(s->scaler.self, NULL, 0, &need) != 0) {
            snprintf(err, errlen, "scaler plugin '%s': state_save failed: %s", name,
                     amp_plugin_reason(&s->scaler));
            goto fail;
        }
        if (need > AMP_SCALER_STATE_MAX) {
            snprintf(err, errlen, "scaler plugin '%s': state_save asks for %zu bytes; a scaler's "
                     "state may take at most %u", name, need, (unsigned)AMP_SCALER_STATE_MAX);
            goto fail;
        }
        uint8_t *st = malloc(need + GUARD);
        if (!st) {
            snprintf(err, errlen, "out of host memory");
            goto fail;
        }
        memset(st + need, 0xA5, GUARD);
        int rc = sv->state_save(s->scaler.self, st, need, &got);
        int overrun = 0;
        for (size_t i = 0; i < GUARD; i++) overrun |= st[need + i] != 0xA5;
        if (rc != 0 || got != need || overrun) {
            free(st);
            if (rc != 0)
                snprintf(err, errlen, "scaler plugin '%s': state_save failed: %s", name,
                         amp_plugin_reason(&s->scaler));
            else if (overrun)
                snprintf(err, errlen, "scaler plugin '%s': state_save wrote past the %zu bytes it "
                         "asked for", name, need);
            else
                snprintf(err, errlen, "scaler plugin '%s': state_save asked for %zu bytes, then "
                         "reported %zu for the same state; both calls must give one length",
                         name, need, got);
            goto fail;
        }
        ck->scaler_state = st;
        ck->scaler_len = need;
    }
    uint8_t *scaled = NULL;
    if (amp_scaled_state_save(s->scaled, &scaled, &ck->scaled_len) != 0) {
        snprintf(err, errlen, "out of host memory");
        goto fail;
    }
    ck->scaled_state = scaled;
    return 0;
fail:
    amp_session_snapshot_free(ck);
    return -1;
}

void amp_session_snapshot_free(amp_checkpoint *ck) {
    free((void *)ck->params);
    ck->params = NULL;
    free((void *)ck->config);
    free((void *)ck->master);
    free((void *)ck->optim_state);
    free((void *)ck->scaler_state);
    free((void *)ck->scaled_state);
    ck->scaled_state = NULL;
    free((void *)ck->exec);
    ck->exec = NULL;
    ck->config = NULL;
    ck->master = ck->optim_state = ck->scaler_state = NULL;
}

/* "<model>: <tensor> [d0, d1], ... (<n> parameters)", cut to fit. */
static void table_text(char *out, size_t outlen, const char *model, const amp_checkpoint *ck) {
    int len = snprintf(out, outlen, "%s:", model);
    for (uint32_t i = 0; i < ck->nparam_tensors && len >= 0 && (size_t)len + 32 < outlen; i++) {
        amp_ckpt_param P;
        amp_checkpoint_param(ck, i, &P);
        len += snprintf(out + len, outlen - (size_t)len, "%s %s [", i ? "," : "", P.name);
        for (uint32_t d = 0; d < P.ndim && (size_t)len < outlen; d++)
            len += snprintf(out + len, outlen - (size_t)len, "%s%llu", d ? ", " : "",
                            (unsigned long long)P.shape[d]);
        if ((size_t)len < outlen) len += snprintf(out + len, outlen - (size_t)len, "]");
    }
    if (len >= 0 && (size_t)len < outlen)
        snprintf(out + len, outlen - (size_t)len, " (%llu parameters)", (unsigned long long)ck->nparams);
}

/* 1 when the checkpoint's parameter table is the model's, tensor by tensor. */
static int same_table(const amp_checkpoint *ck, const amp_model *m) {
    const amp_model_desc *d = &m->desc;
    if (strcmp(ck->model, m->ops->name) != 0 || ck->nparam_tensors != (uint32_t)d->nparam_tensors ||
        ck->nlayers != (uint32_t)d->nlayers || ck->nparams != d->nparams)
        return 0;
    for (int i = 0; i < d->nparam_tensors; i++) {
        const amp_param_desc *P = &d->params[i];
        amp_ckpt_param Q;
        if (amp_checkpoint_param(ck, (uint32_t)i, &Q) != 0 || strcmp(Q.name, P->name) != 0 ||
            Q.ndim != (uint32_t)P->ndim || Q.layer != (uint32_t)P->layer)
            return 0;
        for (int k = 0; k < P->ndim; k++)
            if (Q.shape[k] != (uint64_t)P->shape[k]) return 0;
    }
    return 1;
}

/* ---- the resolved config as (section, key, value) triples */

typedef amp_conf_entry conf_entry;
#define conf_parse amp_conf_parse

static int free_to_differ(const conf_entry *e) { return amp_resume_key_free(e->section, e->key); }

/* A checkpoint written before relative paths were resolved holds the path
 * as the config gave it; the config now resolves it to an absolute one. */
static int same_value(const amp_config *cfg, const char *saved, const char *now) {
    if (strcmp(saved, now) == 0) return 1;
    char abs[PATH_MAX];
    return saved[0] && saved[0] != '/' && now[0] == '/' &&
           amp_settings_absolute_path(cfg, NULL, saved, abs, sizeof abs) == 0 && strcmp(abs, now) == 0;
}

static const conf_entry *conf_find(const conf_entry *v, size_t n, const conf_entry *e) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i].section, e->section) == 0 && strcmp(v[i].key, e->key) == 0) return &v[i];
    return NULL;
}

/* Adds the implied keys (implied_keys.h) an older checkpoint's config lacks. */
static conf_entry *conf_add_implied(conf_entry *v, size_t *n) {
    conf_entry name = {"model", "name", NULL, NULL};
    const conf_entry *model = conf_find(v, *n, &name);
    for (size_t i = 0; model && i < amp_implied_key_count; i++) {
        const amp_implied_key *k = &amp_implied_keys[i];
        conf_entry e = {k->section, k->key, k->value, "default"};
        if (!amp_implied_key_applies(k, model->value) || conf_find(v, *n, &e)) continue;
        conf_entry *q = realloc(v, (*n + 1) * sizeof *v);
        if (!q) {
            free(v);
            return NULL;
        }
        v = q;
        model = conf_find(v, *n, &name);
        v[(*n)++] = e;
    }
    return v;
}

/* The split of the global batch: free to differ when a resume on another
 * number of ranks keeps batch_size x accumulate x ranks (check_compatible). */
static int batch_split_key(const conf_entry *e) {
    return (strcmp(e->section, "data") == 0 && strcmp(e->key, "batch_size") == 0) ||
           (strcmp(e->section, "train") == 0 && strcmp(e->key, "accumulate") == 0);
}

/* Key section.key of a checkpoint's resolved config as an integer, or dflt. */
static long long saved_int(const amp_checkpoint *ck, const char *section, const char *key,
                           long long dflt) {
    char *text = malloc(ck->config_len + 1);
    size_t n = 0;
    conf_entry *v = NULL;
    if (text) {
        memcpy(text, ck->config, ck->config_len);
        text[ck->config_len] = '\0';
        v = conf_parse(text, &n);
    }
    conf_entry want = {section, key, NULL, NULL};
    const conf_entry *e = v ? conf_find(v, n, &want) : NULL;
    long long r = e ? strtoll(e->value, NULL, 10) : dflt;
    free(v);
    free(text);
    return r > 0 ? r : dflt;
}

static int origin_of_steps(void *user, const char *section, const char *key, const char *value,
                           const char *origin) {
    (void)value;
    if (strcmp(section, "train") != 0 || strcmp(key, "steps") != 0) return 0;
    *(int *)user = strncmp(origin, "--set ", 6) == 0;
    return 1;
}

/* Whether [train] steps came from --set: a resume may then run longer (or
 * stop sooner) than the checkpoint's run; a config file must agree. */
static int steps_from_set(const amp_config *cfg) {
    int set = 0;
    amp_config_each_resolved(cfg, origin_of_steps, &set);
    return set;
}

/* Appends "[s] k: checkpoint 'a', config 'b'" for every key that differs
 * (batch_free: but [data] batch_size and [train] accumulate; [train] steps
 * when --set gave it). */
static int config_diff(const char *saved, size_t saved_len, const amp_config *cfg, int batch_free,
                       char *out, size_t outlen) {
    int steps_free = steps_from_set(cfg);
    size_t now_len = 0;
    char *now = resolved_config(cfg, &now_len);
    char *then = malloc(saved_len + 1);
    size_t na = 0, nb = 0;
    conf_entry *a = NULL, *b = NULL;
    int differ = -1;
    if (now && then) {
        memcpy(then, saved, saved_len);
        then[saved_len] = '\0';
        a = conf_parse(then, &na);
        if (a) a = conf_add_implied(a, &na);
        b = conf_parse(now, &nb);
    }
    if (a && b) {
        differ = 0;
        size_t len = strlen(out);
        for (int pass = 0; pass < 2; pass++) {
            const conf_entry *v = pass ? b : a, *w = pass ? a : b;
            size_t nv = pass ? nb : na, nw = pass ? na : nb;
            for (size_t i = 0; i < nv; i++) {
                const conf_entry *o = conf_find(w, nw, &v[i]);
                if (free_to_differ(&v[i]) || (batch_free && batch_split_key(&v[i])) ||
                    (steps_free && strcmp(v[i].section, "train") == 0 &&
                     strcmp(v[i].key, "steps") == 0) ||
                    (o && same_value(cfg, pass ? o->value : v[i].value,
                                                             pass ? v[i].value : o->value)))
                    continue;
                if (pass && o) continue; /* reported in the first pass */
                const char *ck_val = pass ? "(not set)" : v[i].value;
                const char *cf_val = pass ? v[i].value : o ? o->value : "(not set)";
                if (len + 1 < outlen)
                    len += (size_t)snprintf(out + len, outlen - len, "%s[%s] %s: checkpoint '%s', config '%s'",
                                            differ ? "; " : "", v[i].section, v[i].key, ck_val, cf_val);
                if (len >= outlen) len = outlen - 1;
                differ++;
            }
        }
    }
    free(a);
    free(b);
    free(now);
    free(then);
    return differ;
}

static int check_compatible(amp_session *s, const amp_checkpoint *ck, char *err, size_t errlen) {
    const amp_model *m = s->model;
    if (ck->abi_major != AMP_PLUGIN_ABI_MAJOR || ck->abi_minor != AMP_PLUGIN_ABI_MINOR) {
        snprintf(err, errlen, "written with plugin ABI %u.%u (amptrain %s); this amptrain has ABI %d.%d",
                 (unsigned)ck->abi_major, (unsigned)ck->abi_minor, ck->amptrain_version,
                 AMP_PLUGIN_ABI_MAJOR, AMP_PLUGIN_ABI_MINOR);
        return -1;
    }
    const amp_plugin *plug[2] = {&s->precision, &s->scaler};
    const char *names[2] = {ck->precision, ck->scaler};
    const char *versions[2] = {ck->precision_version, ck->scaler_version};
    for (int i = 0; i < 2; i++) {
        if (strcmp(names[i], plug[i]->entry->name) != 0 ||
            strcmp(versions[i], plug[i]->entry->version) != 0) {
            snprintf(err, errlen, "written with %s plugin '%s' %s; this run uses '%s' %s (%s)",
                     i ? "scaler" : "precision", names[i], versions[i], plug[i]->entry->name,
                     plug[i]->entry->version, plug[i]->path);
            return -1;
        }
    }
    if (!same_table(ck, m)) {
        char a[384], b[384];
        table_text(a, sizeof a, ck->model, ck);
        amp_checkpoint now;
        memset(&now, 0, sizeof now);
        amp_ckpt_param *params = calloc((size_t)m->desc.nparam_tensors, sizeof *params);
        if (!params) {
            snprintf(err, errlen, "out of host memory");
            return -1;
        }
        for (int i = 0; i < m->desc.nparam_tensors; i++) {
            const amp_param_desc *P = &m->desc.params[i];
            snprintf(params[i].name, sizeof params[i].name, "%s", P->name);
            params[i].ndim = (uint32_t)P->ndim;
            for (int k = 0; k < P->ndim; k++) params[i].shape[k] = (uint64_t)P->shape[k];
        }
        now.params = params;
        now.nparam_tensors = (uint32_t)m->desc.nparam_tensors;
        now.nparams = m->desc.nparams;
        table_text(b, sizeof b, m->ops->name, &now);
        free(params);
        snprintf(err, errlen, "model shape differs: the checkpoint holds %s; the config gives %s", a, b);
        return -1;
    }
    /* The global batch is batch_size x accumulate x ranks, and each rank's
     * rows are one slice of it: another number of ranks is another
     * sequence of batches (and other partial sums), so it is refused. */
    /* Another number of ranks that keeps the global batch (batch_size x
     * accumulate x ranks) trains on the same rows step by step; only the
     * split of the gradient sums changes (FP32 summation order, and under
     * 16-bit policies the rounding of each rank's partial gradient). */
    long long ck_rows = saved_int(ck, "data", "batch_size", 0) *
                        saved_int(ck, "train", "accumulate", 1) * (long long)ck->world_size;
    long long rows = (long long)s->set.batch_size * s->set.accumulate * s->world;
    int other_ranks = ck->world_size != (uint32_t)s->world;
    if (other_ranks && ck_rows != rows) {
        char how[64], keep[160] = "";
        if (ck->world_size == 1)
            snprintf(how, sizeof how, "without mpirun (or with mpirun -np 1)");
        else
            snprintf(how, sizeof how, "with mpirun -np %u", (unsigned)ck->world_size);
        if (ck_rows > 0 && ck_rows % ((long long)s->set.accumulate * s->world) == 0)
            snprintf(keep, sizeof keep, ", or on %d rank%s keep its %lld rows per step with "
                     "--set data.batch_size=%lld", s->world, s->world == 1 ? "" : "s", ck_rows,
                     ck_rows / ((long long)s->set.accumulate * s->world));
        snprintf(err, errlen,
                 "written by a run on %u rank%s, and this run has %d: the global batch (batch_size "
                 "x accumulate x ranks) and its split across ranks would change. Resume it %s%s",
                 (unsigned)ck->world_size, ck->world_size == 1 ? "" : "s", s->world, how, keep);
        return -1;
    }
    if (other_ranks)
        amp_log(AMP_LOG_WARN,
                "resuming a checkpoint of %u rank%s on %d with the same %lld rows per step: the "
                "run continues on the same batches, but the gradients are summed in another "
                "split, so its numbers are not bit-identical to the run it continues",
                (unsigned)ck->world_size, ck->world_size == 1 ? "" : "s", s->world, rows);
    uint32_t opt_buffers = (uint32_t)m->opt_buffers;
    if (ck->optim != (uint32_t)s->set.optim || ck->opt_buffers != opt_buffers) {
        snprintf(err, errlen, "optimizer differs: the checkpoint holds %s state (%u arrays), the config gives %s (%u)",
                 ck->optim ? "adamw" : "sgd", (unsigned)ck->opt_buffers,
                 s->set.optim == AMP_OPTIM_ADAMW ? "adamw" : "sgd", (unsigned)opt_buffers);
        return -1;
    }
    /* The same data. A checkpoint from before DATA existed cannot tell,
     * except of generated data: its parameters are in the config compared
     * below. */
    const char *now = data_id(s, err, errlen);
    if (!now) return -1;
    if (!ck->data_id && s->data_ops->source) {
        char src[PATH_MAX + 64];
        s->data_ops->source(&s->data, src, sizeof src);
        amp_log(AMP_LOG_WARN, "the checkpoint records no fingerprint of its data (written by an "
                "older amptrain): the resume cannot check that %s is the data the run trained on",
                src);
    } else if (ck->data_id && amp_data_id_compare(ck->data_id, ck->data_id_len, now, err, errlen) != 0) {
        return -1;
    }
    /* --set train.steps on a resume: any length from the checkpoint's step on */
    int steps_ok = ck->total_steps == s->total_steps ||
                   (steps_from_set(s->cfg) && s->total_steps >= ck->step);
    if (!steps_ok && steps_from_set(s->cfg)) {
        snprintf(err, errlen, "--set train.steps=%lld: the checkpoint is at step %lld already; "
                 "give at least that many steps", (long long)s->total_steps, (long long)ck->step);
        return -1;
    }
    if (ck->train_examples != s->train.n || ck->seed != s->set.seed || !steps_ok) {
        snprintf(err, errlen, "the run differs: the checkpoint has %lld training examples, seed %llu, %lld steps; "
                 "the config gives %lld, %llu, %lld",
                 (long long)ck->train_examples, (unsigned long long)ck->seed, (long long)ck->total_steps,
                 (long long)s->train.n, (unsigned long long)s->set.seed, (long long)s->total_steps);
        return -1;
    }
    char diff[1536] = "";
    int nd = config_diff(ck->config, ck->config_len, s->cfg, other_ranks, diff, sizeof diff);
    if (nd < 0) {
        snprintf(err, errlen, "out of host memory comparing the configs");
        return -1;
    }
    if (nd > 0) {
        snprintf(err, errlen, "the config differs from the checkpoint's in %d key%s that change%s "
                 "the math: %s", nd, nd == 1 ? "" : "s", nd == 1 ? "s" : "", diff);
        return -1;
    }
    return 0;
}

static int upload_le(amp_session *s, float *dev, const uint8_t *le, size_t n, char *err, size_t errlen) {
    float *h = malloc(n ? n * 4 : 4);
    if (!h) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (size_t i = 0; i < n; i++) h[i] = amp_ckpt_f32(le, i);
    int rc = n ? s->be->ops->upload(s->be, dev, h, n * 4) : 0;
    if (rc != 0) snprintf(err, errlen, "%s", s->be->err);
    free(h);
    return rc ? -1 : 0;
}

int amp_session_restore(amp_session *s, const amp_checkpoint *ck, char *err, size_t errlen) {
    if (check_compatible(s, ck, err, errlen) != 0) return 2;
    const amp_scaler_vtable *sv = amp_plugin_scaler(&s->scaler);
    if (ck->scaler_len > 0 && !sv->state_load) {
        snprintf(err, errlen, "scaler plugin '%s' has no state_load, but the checkpoint holds its state",
                 s->scaler.entry->name);
        return 2;
    }
    if (ck->scaler_len > 0) {
        s->scaler.host.err[0] = '\0';
        if (sv->state_load(s->scaler.self, ck->scaler_state, ck->scaler_len) != 0) {
            snprintf(err, errlen, "scaler plugin '%s' refused the saved state: %s", s->scaler.entry->name,
                     amp_plugin_reason(&s->scaler));
            return 2;
        }
    } else if (sv->state_save) {
        amp_log(AMP_LOG_WARN, "the checkpoint holds no state for scaler '%s': it starts afresh",
                s->scaler.entry->name);
    }
    if (amp_scaled_state_load(s->scaled, ck->scaled_state, ck->scaled_len,
                              s->precision.entry->name, err, errlen) != 0)
        return 2;
    amp_model *m = s->model;
    size_t n = m->desc.nparams;
    if (s->shard) { /* this rank's shard and the FP32 weights; the copies follow */
        float *w = s->master_full ? s->master_full : malloc(n * sizeof(float)); /* rank 0's */
        if (!w) {
            snprintf(err, errlen, "out of host memory");
            return 1;
        }
        for (size_t i = 0; i < n; i++) w[i] = amp_ckpt_f32(ck->master, i);
        amp_session_count_bad(s, w);
        int put = amp_model_put_master(m, w);
        if (w != s->master_full) free(w);
        if (put != 0) {
            snprintf(err, errlen, "%s", s->be->err);
            return 1;
        }
        s->master_full_step = ck->step;
    } else if (upload_le(s, m->master, ck->master, n, err, errlen) != 0) {
        return 1;
    }
    /* sharded: this rank's part of the whole moments (the padding stays 0) */
    size_t nt = s->shard ? m->desc.ntrained : n; /* sharded: the trained elements */
    size_t lo = m->opt_lo < nt ? m->opt_lo : nt, mine = nt - lo < m->opt_len ? nt - lo : m->opt_len;
    for (uint32_t k = 0; k < ck->opt_buffers; k++)
        if (mine && upload_le(s, m->opt[k], ck->optim_state + ((size_t)k * n + lo) * 4, mine, err,
                              errlen) != 0)
            return 1;
    s->step = ck->step;
    s->applied = ck->applied;
    s->skipped = ck->skipped;
    for (uint32_t i = 0; i < 2 * ck->nlayers; i++) s->totals[i] = amp_checkpoint_total(ck, i);
    s->batcher->ops->restore(s->batcher, ck->epoch, ck->cursor, ck->step);
    warn_exec_change(s, ck);
    if (preload_gemm_paths(s, ck, err, errlen) != 0) return 1;
    /* The backend's scratch peak is the run's, not this process's: a resumed
     * run reports what the uninterrupted one would. */
    if (ck->exec) {
        char peak[32];
        exec_value(ck->exec, ck->exec_len, "scratch_peak", peak, sizeof peak);
        unsigned long long was = strtoull(peak, NULL, 10);
        if (was > s->be->info.scratch_bytes) s->be->info.scratch_bytes = (size_t)was;
    }
    return 0;
}
