#include "init_weights.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config/hf_config.h"
#include "io/json_read.h"
#include "io/name_map.h"
#include "io/safetensors.h"
#include "util/log.h"

#define ORIG_MOD "_orig_mod."
#define MAX_SHARDS 256

/* One tensor of the checkpoint: its name (prefix stripped) and its shard. */
typedef struct ck_tensor {
    const char *name, *stored; /* stored: the name in the file */
    int shard, used;
} ck_tensor;

typedef struct ckpt {
    const amp_name_map *map;
    char where[4200]; /* the file, or the index, for messages */
    int nshards;
    amp_safetensors *st[MAX_SHARDS];
    char *shard_path[MAX_SHARDS];
    int n;
    ck_tensor *t;
    amp_jval *index;
} ckpt;

static void ckpt_close(ckpt *c) {
    for (int i = 0; i < c->nshards; i++) {
        amp_safetensors_close(c->st[i]);
        free(c->shard_path[i]);
    }
    free(c->t);
    amp_json_free(c->index);
}

static const char *strip(const char *name) {
    return strncmp(name, ORIG_MOD, strlen(ORIG_MOD)) == 0 ? name + strlen(ORIG_MOD) : name;
}

/* Shard `path` (opened once), its index into c->st. */
static int shard_of(ckpt *c, const char *path, const char *tensor, char *err, size_t errlen) {
    for (int i = 0; i < c->nshards; i++)
        if (strcmp(c->shard_path[i], path) == 0) return i;
    if (c->nshards == MAX_SHARDS) {
        amp_set_err(err, errlen, "%s: more than %d shards", c->where, MAX_SHARDS);
        return -1;
    }
    char e[1024];
    if (amp_safetensors_open(&c->st[c->nshards], path, e, sizeof e) != 0) {
        amp_set_err(err, errlen, "%s (the shard the index names for '%s')", e, tensor);
        return -1;
    }
    c->shard_path[c->nshards] = strdup(path);
    return c->nshards++;
}

static int has_tensor(const amp_safetensors *st, const char *name) {
    for (int i = 0; i < amp_safetensors_count(st); i++)
        if (strcmp(amp_safetensors_name(st, i), name) == 0) return 1;
    return 0;
}

/* The tensors of a sharded folder: the index's weight_map. */
static int open_index(ckpt *c, const char *folder, char *err, size_t errlen) {
    c->index = amp_json_parse_file(c->where, err, errlen);
    if (!c->index) return -1;
    const amp_jval *wm = amp_json_get_type(c->index, "weight_map", AMP_JOBJ);
    if (!wm || wm->n == 0) {
        amp_set_err(err, errlen, "%s: no \"weight_map\" object naming the tensors' files", c->where);
        return -1;
    }
    c->t = calloc(wm->n, sizeof *c->t);
    if (!c->t) {
        amp_set_err(err, errlen, "out of host memory");
        return -1;
    }
    for (size_t i = 0; i < wm->n; i++) {
        const amp_jval *f = &wm->items[i];
        char path[4400];
        if (f->type != AMP_JSTR || strchr(f->str, '/') || !f->str[0]) {
            amp_set_err(err, errlen, "%s: weight_map['%s'] must name a file in the folder",
                        c->where, wm->keys[i]);
            return -1;
        }
        snprintf(path, sizeof path, "%s/%s", folder, f->str);
        int s = shard_of(c, path, wm->keys[i], err, errlen);
        if (s < 0) return -1;
        if (!has_tensor(c->st[s], wm->keys[i])) {
            amp_set_err(err, errlen, "%s: the index puts '%s' in %s, which does not hold it",
                        c->where, wm->keys[i], path);
            return -1;
        }
        c->t[c->n++] = (ck_tensor){strip(wm->keys[i]), wm->keys[i], s, 0};
    }
    return 0;
}

static int ckpt_open(ckpt *c, const char *path, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    struct stat sb;
    int folder = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
    c->map = amp_name_map_plain();
    if (folder) {
        if (amp_hf_folder_map(path, &c->map, err, errlen) != 0) return -1;
        snprintf(c->where, sizeof c->where, "%s/model.safetensors.index.json", path);
        if (stat(c->where, &sb) == 0) return open_index(c, path, err, errlen);
        snprintf(c->where, sizeof c->where, "%s/model.safetensors", path);
        if (stat(c->where, &sb) != 0) {
            amp_set_err(err, errlen, "%s: no model.safetensors nor model.safetensors.index.json "
                        "beside config.json", path);
            return -1;
        }
    } else {
        snprintf(c->where, sizeof c->where, "%s", path);
    }
    if (amp_safetensors_open(&c->st[0], c->where, err, errlen) != 0) return -1;
    c->shard_path[0] = strdup(c->where);
    c->nshards = 1;
    int n = amp_safetensors_count(c->st[0]);
    c->t = calloc(n ? (size_t)n : 1, sizeof *c->t);
    if (!c->t) {
        amp_set_err(err, errlen, "out of host memory");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *name = amp_safetensors_name(c->st[0], i);
        c->t[c->n++] = (ck_tensor){strip(name), name, 0, 0};
    }
    return 0;
}

static ck_tensor *find(ckpt *c, const char *name) {
    for (int i = 0; i < c->n; i++)
        if (strcmp(c->t[i].name, name) == 0) return &c->t[i];
    return NULL;
}

/* Tensor t into dst ([shape] of the kit), transposed from the file's
 * [shape[1], shape[0]] when the map says so. */
static int read_one(ckpt *c, ck_tensor *t, const amp_param_desc *P, int transpose, float *dst,
                    char *err, size_t errlen) {
    const amp_safetensors *st = c->st[t->shard];
    t->used = 1;
    if (!transpose || P->ndim != 2)
        return amp_safetensors_get_f32(st, t->stored, P->ndim, P->shape, dst, err, errlen);
    int64_t shape[2] = {P->shape[1], P->shape[0]};
    float *tmp = malloc((P->numel ? P->numel : 1) * sizeof *tmp);
    if (!tmp) {
        amp_set_err(err, errlen, "out of host memory");
        return -1;
    }
    int rc = amp_safetensors_get_f32(st, t->stored, 2, shape, tmp, err, errlen);
    for (int64_t i = 0; rc == 0 && i < shape[0]; i++)
        for (int64_t j = 0; j < shape[1]; j++) dst[j * shape[0] + i] = tmp[i * shape[1] + j];
    free(tmp);
    return rc;
}

/* Parameter P from the checkpoint: a tied weight (P->tied) under either
 * name, or both when they hold the same values. */
static int load_param(ckpt *c, const amp_param_desc *P, float *host, char *err, size_t errlen) {
    char name[AMP_MODEL_NAME_MAX + 16], tied[AMP_MODEL_NAME_MAX + 16];
    int tr = 0, tr_tied = 0;
    amp_name_map_to_file(c->map, P->name, name, sizeof name, &tr);
    ck_tensor *a = find(c, name), *b = NULL;
    if (P->tied[0]) {
        amp_name_map_to_file(c->map, P->tied, tied, sizeof tied, &tr_tied);
        b = find(c, tied);
        if (!a && !b) {
            amp_set_err(err, errlen, "%s: no tensor '%s' nor '%s' (the same weight, tied)",
                        c->where, name, tied);
            return -1;
        }
    }
    float *dst = host + P->offset;
    if (!a && !b) {
        if (c->nshards == 1 && !c->index) /* the reader's message says what is near */
            return amp_safetensors_get_f32(c->st[0], name, P->ndim, P->shape, dst, err, errlen);
        amp_set_err(err, errlen, "%s: no tensor '%s'", c->where, name);
        return -1;
    }
    if (read_one(c, a ? a : b, P, a ? tr : tr_tied, dst, err, errlen) != 0) return -1;
    if (!a || !b) return 0;
    float *other = malloc((P->numel ? P->numel : 1) * sizeof *other);
    if (!other) {
        amp_set_err(err, errlen, "out of host memory");
        return -1;
    }
    int rc = read_one(c, b, P, tr_tied, other, err, errlen);
    for (size_t i = 0; rc == 0 && i < P->numel; i++)
        if (memcmp(&dst[i], &other[i], sizeof *dst) != 0) {
            amp_set_err(err, errlen, "%s: holds both '%s' and '%s', which the model ties into one "
                        "tensor, and they differ (element %zu: %.9g vs %.9g); keep one of them, or "
                        "two equal copies", c->where, name, tied, i, (double)dst[i], (double)other[i]);
            rc = -1;
        }
    free(other);
    return rc;
}

void amp_param_at(const amp_model_desc *d, size_t i, char *out, size_t outlen) {
    snprintf(out, outlen, "parameter %zu", i);
    for (int k = 0; k < d->nparam_tensors; k++) {
        const amp_param_desc *P = &d->params[k];
        if (i >= P->offset && i < P->offset + P->numel) {
            snprintf(out, outlen, "%s[%zu]", P->name, i - P->offset);
            return;
        }
    }
}

/* What is left: buffers (skipped, said once) or tensors the model has no
 * place for (an error naming the first). */
static int check_rest(ckpt *c, const amp_model_desc *d, char *err, size_t errlen) {
    int buffers = 0, extra = 0, used = 0, stripped = 0;
    const ck_tensor *first_buffer = NULL, *first_extra = NULL;
    for (int i = 0; i < c->n; i++) {
        const ck_tensor *t = &c->t[i];
        stripped += t->name != t->stored;
        if (t->used) {
            used++;
        } else if (amp_name_map_is_buffer(c->map, t->name)) {
            if (!buffers++) first_buffer = t;
        } else if (!extra++) {
            first_extra = t;
        }
    }
    if (extra) {
        amp_set_err(err, errlen, "%s: holds %d tensors but the model has %d: '%s' is none of the "
                    "model's parameters%s", c->where, c->n - buffers, used, first_extra->stored,
                    extra > 1 ? " (nor are others)" : "");
        (void)d;
        return -1;
    }
    if (stripped)
        amp_log(AMP_LOG_INFO, "%s: the names' '" ORIG_MOD "' prefix (torch.compile) was stripped",
                c->where);
    if (buffers > 1)
        amp_log(AMP_LOG_INFO, "%s: skipped %d buffers that are not parameters (%s, ...)", c->where,
                buffers, first_buffer->stored);
    else if (buffers)
        amp_log(AMP_LOG_INFO, "%s: skipped a buffer that is not a parameter (%s)", c->where,
                first_buffer->stored);
    return 0;
}

int amp_init_weights_read(const amp_model_desc *d, const char *path, float *host, char *err,
                          size_t errlen) {
    ckpt c;
    int rc = ckpt_open(&c, path, err, errlen);
    for (int i = 0; rc == 0 && i < d->nparam_tensors; i++)
        rc = load_param(&c, &d->params[i], host, err, errlen);
    if (rc == 0) rc = check_rest(&c, d, err, errlen);
    /* Training from inf/NaN would skip every step (or worse): refuse it here. */
    for (size_t i = 0; rc == 0 && i < d->nparams; i++)
        if (!isfinite(host[i])) {
            char at[AMP_MODEL_NAME_MAX + 32];
            amp_param_at(d, i, at, sizeof at);
            amp_set_err(err, errlen, "%s: %s is %g; initial weights must be finite", c.where, at,
                        (double)host[i]);
            rc = -1;
        }
    ckpt_close(&c);
    return rc;
}
