#include "settings.h"

#include "loader.h"
#include "model.h"
#include "text.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GET(call)                   \
    do {                            \
        if ((call) < 0) return -1;  \
    } while (0)

/* [run] name becomes the folder runs/<name> and the arm's label in ab: a
 * plain file name, never "..", a path or a hidden name. */
static int check_name(amp_config *cfg, const char *name, char *err, size_t errlen) {
    size_t n = strlen(name);
    int ok = n >= 1 && n <= 64 && name[0] != '.';
    for (size_t i = 0; ok && i < n; i++) {
        char c = name[i];
        ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-' || c == '+';
    }
    if (ok) return 0;
    const char *where = NULL;
    amp_config_lookup(cfg, "run", "name", &where);
    snprintf(err, errlen,
             "%s: [run] name = '%s': use 1 to 64 letters, digits and . _ - + not starting with '.' "
             "(it names the output folder runs/<name>)",
             where ? where : amp_config_path(cfg), name);
    return -1;
}

/* A relative path in a config is relative to the config's folder: made
 * absolute here, in the resolved config too, so config.ini (written to the
 * output folder) names the same file. */
int amp_settings_absolute_path(const amp_config *cfg, const char *p, char *out, size_t cap) {
    char tmp[PATH_MAX], cwd[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", amp_config_path(cfg));
    const char *dir = dirname(tmp);
    int n;
    if (p[0] == '/')
        n = snprintf(out, cap, "%s", p);
    else if (dir[0] == '/')
        n = snprintf(out, cap, "%s/%s", dir, p);
    else if (getcwd(cwd, sizeof cwd))
        n = strcmp(dir, ".") == 0 ? snprintf(out, cap, "%s/%s", cwd, p)
                                  : snprintf(out, cap, "%s/%s/%s", cwd, dir, p);
    else
        return -1;
    if (n < 0 || (size_t)n >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

static int absolute_path(amp_config *cfg, const char *section, const char *key, const char **path,
                         char *err, size_t errlen) {
    if (!*path || !(*path)[0] || (*path)[0] == '/') return 0;
    char abs[PATH_MAX];
    if (amp_settings_absolute_path(cfg, *path, abs, sizeof abs) != 0) {
        snprintf(err, errlen, "[%s] %s = '%s': cannot make it an absolute path: %s", section, key,
                 *path, strerror(errno));
        return -1;
    }
    const char *stored = amp_config_rewrite(cfg, section, key, abs, err, errlen);
    if (!stored) return -1;
    *path = stored;
    return 0;
}

/* The keys that only some choices read: a set key of another choice than
 * the one made is explained ("not used by dataset=tiny (used by:
 * fashion_mnist, text)"), not called unknown. */
typedef struct choice_keys {
    const char *choice;
    const char *const *keys; /* NULL-terminated */
} choice_keys;

static const choice_keys dataset_keys[] = {
    {"fashion_mnist", (const char *const[]){"path", "train_limit", "test_limit", NULL}},
    {"tiny", (const char *const[]){"train_size", "test_size", "features", "classes", "input_scale", NULL}},
    {"text", (const char *const[]){"path", "eval_iters", NULL}},
    {NULL, NULL}};
static const choice_keys optim_keys[] = {
    {"sgd", (const char *const[]){"momentum", NULL}},
    {"adamw", (const char *const[]){"beta1", "beta2", "eps", NULL}},
    {NULL, NULL}};
static const choice_keys schedule_keys[] = {
    {"cosine", (const char *const[]){"min_lr", NULL}},
    {NULL, NULL}};

static void explain_other_choices(amp_config *cfg, const char *section, const char *what,
                                  const char *chosen, const choice_keys *table) {
    char because[128];
    snprintf(because, sizeof because, "%s=%s", what, chosen);
    for (const choice_keys *c = table; c->choice; c++)
        if (strcmp(c->choice, chosen) != 0)
            for (const char *const *k = c->keys; *k; k++)
                amp_config_explain_unused(cfg, section, *k, because, c->choice);
}

/* The other models' own [model] keys (amp_model_ops.keys). */
static void explain_other_models(amp_config *cfg, const char *chosen) {
    char because[128];
    snprintf(because, sizeof because, "name=%s", chosen);
    for (const char *const *n = amp_model_names(); *n; n++) {
        const amp_model_ops *ops = amp_model_find(*n);
        if (!ops || strcmp(*n, chosen) == 0 || !ops->keys) continue;
        for (const char *const *k = ops->keys; *k; k++)
            amp_config_explain_unused(cfg, "model", *k, because, *n);
    }
}

int amp_settings_read(amp_settings *s, amp_config *cfg, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    int64_t i64;
    int idx;

    GET(amp_config_get_string(cfg, "run", "name", "run", &s->name, err, errlen));
    GET(check_name(cfg, s->name, err, errlen));
    GET(amp_config_get_int(cfg, "run", "seed", 0, 0, INT64_MAX, &i64, err, errlen));
    s->seed = (uint64_t)i64;
    static const char *const devices[] = {"auto", "cpu", "cuda", NULL};
    GET(amp_config_get_choice(cfg, "run", "device", "auto", devices, &idx, err, errlen));
    s->device = (amp_device_choice)idx;
    GET(amp_config_get_bool(cfg, "run", "deterministic", 0, &s->deterministic, err, errlen));

    static const char *const datasets[] = {"fashion_mnist", "tiny", "text", NULL};
    GET(amp_config_get_choice(cfg, "data", "dataset", "fashion_mnist", datasets, &idx, err, errlen));
    s->dataset = (amp_dataset_kind)idx;
    explain_other_choices(cfg, "data", "dataset", datasets[idx], dataset_keys);
    GET(amp_config_get_int(cfg, "data", "batch_size", 128, 1, 65536, &i64, err, errlen));
    s->batch_size = (int)i64;
    GET(amp_config_get_bool(cfg, "data", "shuffle", 1, &s->shuffle, err, errlen));
    if (s->dataset == AMP_DATA_FASHION_MNIST) {
        GET(amp_config_get_string(cfg, "data", "path", "/usr/share/datasets/fashion-mnist", &s->path,
                                  err, errlen));
        GET(absolute_path(cfg, "data", "path", &s->path, err, errlen));
        GET(amp_config_get_int(cfg, "data", "train_limit", 0, 0, INT64_MAX, &s->train_limit, err,
                               errlen));
        GET(amp_config_get_int(cfg, "data", "test_limit", 0, 0, INT64_MAX, &s->test_limit, err,
                               errlen));
    } else if (s->dataset == AMP_DATA_TEXT) {
        int found = amp_config_get_string(cfg, "data", "path", "data/" AMP_TEXT_DEFAULT_FILE,
                                          &s->path, err, errlen);
        if (found < 0) return -1;
        s->path_given = found;
        if (found) GET(absolute_path(cfg, "data", "path", &s->path, err, errlen));
        GET(amp_config_get_int(cfg, "data", "eval_iters", 200, 1, 1 << 20, &s->eval_iters, err,
                               errlen));
        /* the model's context is the data's window (nanoGPT's block_size) */
        GET(amp_config_get_int(cfg, "model", "block_size", AMP_TEXT_DEFAULT_BLOCK, 1, 1 << 16, &i64,
                               err, errlen));
        s->block_size = (int)i64;
    } else {
        GET(amp_config_get_int(cfg, "data", "train_size", 8192, 1, 1 << 24, &s->tiny_train, err,
                               errlen));
        GET(amp_config_get_int(cfg, "data", "test_size", 2048, 1, 1 << 24, &s->tiny_test, err,
                               errlen));
        GET(amp_config_get_int(cfg, "data", "features", 64, 1, 1 << 16, &i64, err, errlen));
        s->tiny_features = (int)i64;
        GET(amp_config_get_int(cfg, "data", "classes", 10, 2, 1024, &i64, err, errlen));
        s->tiny_classes = (int)i64;
        GET(amp_config_get_double(cfg, "data", "input_scale", 1.0, 1e-30, 1e30,
                                  &s->input_scale, err, errlen));
    }

    const char *const *models = amp_model_names();
    /* the registry's first model is the default */
    GET(amp_config_get_choice(cfg, "model", "name", models[0], models, &idx, err, errlen));
    s->model = models[idx];
    explain_other_models(cfg, s->model);
    GET(amp_config_get_string(cfg, "model", "init", "default", &s->init, err, errlen));
    if (strcmp(s->init, "default") != 0) GET(absolute_path(cfg, "model", "init", &s->init, err, errlen));

    static const char *const optims[] = {"sgd", "adamw", NULL};
    GET(amp_config_get_choice(cfg, "optim", "name", "sgd", optims, &idx, err, errlen));
    s->optim = (amp_optim_kind)idx;
    explain_other_choices(cfg, "optim", "name", optims[idx], optim_keys);
    GET(amp_config_get_double(cfg, "optim", "lr", s->optim == AMP_OPTIM_SGD ? 0.05 : 1e-3, 1e-12,
                              1e6, &s->lr, err, errlen));
    GET(amp_config_get_double(cfg, "optim", "weight_decay", s->optim == AMP_OPTIM_SGD ? 0.0 : 0.01,
                              0.0, 1.0, &s->weight_decay, err, errlen));
    GET(amp_config_get_double(cfg, "optim", "grad_clip", 0.0, 0.0, 1e12, &s->grad_clip, err, errlen));
    if (s->optim == AMP_OPTIM_SGD) {
        GET(amp_config_get_double(cfg, "optim", "momentum", 0.9, 0.0, 0.999999, &s->momentum, err,
                                  errlen));
    } else {
        GET(amp_config_get_double(cfg, "optim", "beta1", 0.9, 0.0, 0.999999, &s->beta1, err, errlen));
        GET(amp_config_get_double(cfg, "optim", "beta2", 0.999, 0.0, 0.999999999, &s->beta2, err,
                                  errlen));
        GET(amp_config_get_double(cfg, "optim", "eps", 1e-8, 1e-30, 1.0, &s->eps, err, errlen));
    }
    static const char *const schedules[] = {"constant", "cosine", NULL};
    GET(amp_config_get_choice(cfg, "optim", "schedule", "constant", schedules, &idx, err, errlen));
    s->schedule = (amp_schedule_kind)idx;
    explain_other_choices(cfg, "optim", "schedule", schedules[idx], schedule_keys);
    GET(amp_config_get_int(cfg, "optim", "warmup_steps", 0, 0, INT64_MAX / 2, &s->warmup_steps, err,
                           errlen));
    if (s->schedule == AMP_SCHED_COSINE) {
        GET(amp_config_get_double(cfg, "optim", "min_lr", 0.0, 0.0, 1e6, &s->min_lr, err, errlen));
        if (s->min_lr > s->lr) {
            const char *where = NULL;
            amp_config_lookup(cfg, "optim", "min_lr", &where);
            snprintf(err, errlen, "%s: [optim] min_lr = %g is above lr = %g; the cosine decays "
                     "from lr down to min_lr", where ? where : amp_config_path(cfg), s->min_lr, s->lr);
            return -1;
        }
    }

    GET(amp_config_get_int(cfg, "train", "epochs", 1, 1, 100000, &s->epochs, err, errlen));
    GET(amp_config_get_int(cfg, "train", "steps", 0, 0, INT64_MAX / 2, &s->steps, err, errlen));
    GET(amp_config_get_int(cfg, "train", "accumulate", 1, 1, 4096, &s->accumulate, err, errlen));
    GET(amp_config_get_int(cfg, "train", "log_every", 50, 1, INT64_MAX / 2, &s->log_every, err,
                           errlen));
    GET(amp_config_get_double(cfg, "train", "loss_weight", 1.0, 1e-30, 1e30, &s->loss_weight, err,
                              errlen));
    GET(amp_config_get_int(cfg, "train", "eval_every", 0, 0, INT64_MAX / 2, &s->eval_every, err,
                           errlen));
    GET(amp_config_get_int(cfg, "train", "checkpoint_every", 0, 0, INT64_MAX / 2,
                           &s->checkpoint_every, err, errlen));
    GET(amp_config_get_int(cfg, "train", "keep", 3, 1, 1000000, &s->keep, err, errlen));

    GET(amp_config_get_string(cfg, "precision", "plugin", "fp32", &s->precision_plugin, err, errlen));
    const char *scaler = NULL;
    int found = amp_config_get_string(cfg, "scaler", "plugin", "", &scaler, err, errlen);
    if (found < 0) return -1;
    /* empty is the default written back into a run's config.ini: no choice made */
    s->scaler_plugin = found && scaler[0] ? scaler : NULL;
    if (amp_plugin_spec_is_path(s->precision_plugin))
        GET(absolute_path(cfg, "precision", "plugin", &s->precision_plugin, err, errlen));
    if (s->scaler_plugin && amp_plugin_spec_is_path(s->scaler_plugin))
        GET(absolute_path(cfg, "scaler", "plugin", &s->scaler_plugin, err, errlen));

    static const char *const grad_dtypes[] = {"f32", "bf16", NULL};
    GET(amp_config_get_choice(cfg, "dist", "grad_dtype", "f32", grad_dtypes, &idx, err, errlen));
    s->dist_grad_bf16 = idx == 1;
    GET(amp_config_get_int(cfg, "dist", "bucket_kb", 1024, 1, 1 << 21, &s->dist_bucket_kb, err,
                           errlen));
    GET(amp_config_get_int(cfg, "dist", "check_every", 0, 0, INT64_MAX / 2, &s->dist_check_every,
                           err, errlen));
    GET(amp_config_get_double(cfg, "dist", "timeout", 300.0, 1.0, 1e7, &s->dist_timeout, err,
                              errlen));
    return 0;
}
