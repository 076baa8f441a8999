/* Reads one run's summary.json and metrics.jsonl back for the A/B study,
 * and the statistics built from them. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ab/ab.h"
#include "io/file.h"

#define AMP_AB_MAX_LINE (1 << 20)

/* "file:line: " for a value at the top of a record (a .jsonl line, or the
 * whole document), "file: in PATH: " for one inside (jansson keeps no
 * position per value). */
static const char *where(char *buf, size_t cap, const char *file, const amp_jval *v) {
    char path[256];
    if (!v || !v->parent)
        snprintf(buf, cap, "%s:%d: ", file, v ? v->line : 1);
    else
        snprintf(buf, cap, "%s: in %s: ", file, amp_json_path(v, path, sizeof path));
    return buf;
}

/* A required member of the given type, or an error naming file and place. */
static const amp_jval *need(const amp_jval *obj, const char *key, amp_jtype type,
                            const char *file, char *err, size_t errlen) {
    static const char *const tn[] = {"null", "a boolean", "a number", "a string", "an array",
                                     "an object"};
    char at[400];
    const amp_jval *v = amp_json_get(obj, key);
    if (!v) {
        snprintf(err, errlen, "%smissing \"%s\"", where(at, sizeof at, file, obj), key);
        return NULL;
    }
    if (v->type != type) {
        snprintf(err, errlen, "%s\"%s\" is %s, expected %s", where(at, sizeof at, file, obj), key,
                 tn[v->type], tn[type]);
        return NULL;
    }
    return v;
}

/* A number that summary.json may write as null (not finite): NAN. */
static int num_or_null(const amp_jval *obj, const char *key, double *out, const char *file,
                       char *err, size_t errlen) {
    const amp_jval *v = amp_json_get(obj, key);
    if (v && v->type == AMP_JNULL) {
        *out = NAN;
        return 0;
    }
    if (!(v = need(obj, key, AMP_JNUM, file, err, errlen))) return -1;
    *out = v->num;
    return 0;
}

/* A number that older files lack: *out keeps its value when absent. */
static int opt_num(const amp_jval *obj, const char *key, double *out, const char *file,
                   char *err, size_t errlen) {
    return amp_json_get(obj, key) ? num_or_null(obj, key, out, file, err, errlen) : 0;
}

static int copy_str(char *dst, size_t cap, const amp_jval *obj, const char *key, const char *file,
                    char *err, size_t errlen) {
    const amp_jval *v = need(obj, key, AMP_JSTR, file, err, errlen);
    if (!v) return -1;
    snprintf(dst, cap, "%s", v->str);
    return 0;
}

static int load_layer(amp_ab_layer *L, const amp_jval *o, const char *file, char *err,
                      size_t errlen) {
    if (copy_str(L->name, sizeof L->name, o, "name", file, err, errlen)) return -1;
    const amp_jval *fw = need(o, "forward", AMP_JOBJ, file, err, errlen);
    const amp_jval *gr = fw ? need(o, "grad", AMP_JOBJ, file, err, errlen) : NULL;
    if (!gr) return -1;
    return num_or_null(fw, "underflow", &L->fwd_under, file, err, errlen) ||
                   num_or_null(fw, "overflow", &L->fwd_over, file, err, errlen) ||
                   num_or_null(fw, "rounded", &L->fwd_rounded, file, err, errlen) ||
                   num_or_null(gr, "underflow", &L->grad_under, file, err, errlen) ||
                   num_or_null(gr, "overflow", &L->grad_over, file, err, errlen) ||
                   num_or_null(gr, "rounded", &L->grad_rounded, file, err, errlen)
               ? -1
               : 0;
}

static int load_summary(amp_ab_run *r, amp_ab_study *st, const char *file, char *err,
                        size_t errlen) {
    const amp_jval *s = r->summary = amp_json_parse_file(file, err, errlen);
    if (!s) return -1;
    if (s->type != AMP_JOBJ) {
        snprintf(err, errlen, "%s:1: expected an object", file);
        return -1;
    }
    const amp_jval *plugins = need(s, "plugins", AMP_JOBJ, file, err, errlen);
    const amp_jval *pp = plugins ? need(plugins, "precision", AMP_JOBJ, file, err, errlen) : NULL;
    const amp_jval *sp = pp ? need(plugins, "scaler", AMP_JOBJ, file, err, errlen) : NULL;
    if (!sp || copy_str(r->precision, sizeof r->precision, pp, "name", file, err, errlen) ||
        copy_str(r->scaler, sizeof r->scaler, sp, "name", file, err, errlen) ||
        copy_str(r->device, sizeof r->device, s, "device", file, err, errlen) ||
        num_or_null(s, "steps", &r->steps, file, err, errlen) ||
        num_or_null(s, "skipped_steps", &r->skipped, file, err, errlen) ||
        num_or_null(s, "final_train_loss", &r->final_loss, file, err, errlen) ||
        num_or_null(s, "test_loss", &r->test_loss, file, err, errlen) ||
        num_or_null(s, "test_acc", &r->test_acc, file, err, errlen) ||
        num_or_null(s, "final_scale", &r->final_scale, file, err, errlen) ||
        num_or_null(s, "wall_seconds", &r->wall_s, file, err, errlen) ||
        num_or_null(s, "median_step_ms", &r->median_ms, file, err, errlen) ||
        num_or_null(s, "underflow", &r->underflow, file, err, errlen) ||
        num_or_null(s, "overflow", &r->overflow, file, err, errlen) ||
        num_or_null(s, "rounded", &r->rounded, file, err, errlen))
        return -1;
    /* written since CPU time was measured; older summaries have no CPU time */
    r->median_cpu_ms = r->load_start = r->load_end = NAN;
    if (opt_num(s, "median_cpu_ms", &r->median_cpu_ms, file, err, errlen) ||
        opt_num(s, "load_avg_start", &r->load_start, file, err, errlen) ||
        opt_num(s, "load_avg_end", &r->load_end, file, err, errlen))
        return -1;
    r->has_val_loss = amp_json_get(s, "val_loss") != NULL;
    /* written since data-parallel training; older summaries ran on one rank */
    r->world_size = 1;
    r->median_comm_ms = 0;
    if (opt_num(s, "world_size", &r->world_size, file, err, errlen) ||
        opt_num(s, "median_comm_ms", &r->median_comm_ms, file, err, errlen))
        return -1;
    const amp_jval *mem = need(s, "memory_peak_bytes", AMP_JOBJ, file, err, errlen);
    if (!mem) return -1;
    if (st->nmem == 0) { /* the first run fixes the categories */
        if (mem->n == 0 || mem->n > AMP_AB_MAX_MEM) {
            snprintf(err, errlen, "%s: memory_peak_bytes has %zu categories (1..%d expected)",
                     file, mem->n, AMP_AB_MAX_MEM);
            return -1;
        }
        for (size_t i = 0; i < mem->n; i++)
            snprintf(st->mem_names[i], sizeof st->mem_names[i], "%s", mem->keys[i]);
        st->nmem = (int)mem->n;
    }
    for (int i = 0; i < st->nmem; i++)
        if (num_or_null(mem, st->mem_names[i], &r->mem[i], file, err, errlen)) return -1;
    const amp_jval *layers = need(s, "layers", AMP_JARR, file, err, errlen);
    if (!layers) return -1;
    if (layers->n > (1u << 20)) {
        snprintf(err, errlen, "%s: %zu layers, at most %u expected", file, layers->n, 1u << 20);
        return -1;
    }
    r->layers = calloc(layers->n ? layers->n : 1, sizeof *r->layers);
    if (!r->layers) {
        snprintf(err, errlen, "out of memory reading %s", file);
        return -1;
    }
    r->nlayers = (int)layers->n;
    for (size_t i = 0; i < layers->n; i++)
        if (load_layer(&r->layers[i], &layers->items[i], file, err, errlen)) return -1;
    return 0;
}

/* Grows *arr (of elem-sized items) to hold n + 1. */
static int grow(void **arr, size_t *cap, size_t n, size_t elem) {
    if (n < *cap) return 0;
    size_t nc = *cap ? 2 * *cap : 1024;
    void *p = realloc(*arr, nc * elem);
    if (!p) return -1;
    *arr = p;
    *cap = nc;
    return 0;
}

static int load_metrics(amp_ab_run *r, const char *file, char *err, size_t errlen) {
    FILE *f = amp_file_fopen_read(file, NULL, err, errlen);
    if (!f) return -1;
    char *line = NULL;
    size_t lcap = 0, pcap = 0, ecap = 0, len = 0;
    int lineno = 0, rc = 0, got;
    /* A record is a few hundred bytes; a longer line is not one amptrain
     * wrote, and reading it whole (getline) could take all memory. */
    while (rc == 0 && (got = amp_file_read_line(f, AMP_AB_MAX_LINE, &line, &lcap, &len)) != 0) {
        lineno++;
        if (got < 0) {
            if (got == -2)
                snprintf(err, errlen, "%s:%d: longer than %d bytes: not a metrics record", file,
                         lineno, AMP_AB_MAX_LINE);
            else
                snprintf(err, errlen, "%s:%d: cannot read: %s", file, lineno, strerror(errno));
            rc = -1;
            break;
        }
        amp_jval *v = amp_json_parse(line, len, file, lineno, err, errlen);
        if (!v) {
            rc = -1;
            break;
        }
        const amp_jval *step = need(v, "step", AMP_JNUM, file, err, errlen);
        /* Converted to int64 below: a step out of its range (1e300) would be
         * undefined behaviour, a fraction or NaN nonsense. */
        if (step && !(step->num >= 0 && step->num <= 9007199254740992.0 &&
                      step->num == floor(step->num))) {
            snprintf(err, errlen, "%s:%d: \"step\" is %.17g, not a whole number in [0, 2^53]",
                     file, lineno, step->num);
            step = NULL;
        }
        if (!step) {
            rc = -1;
        } else if (amp_json_get(v, "test_acc")) {
            if (grow((void **)&r->evals, &ecap, r->nevals, sizeof *r->evals)) {
                snprintf(err, errlen, "%s: out of memory", file);
                rc = -1;
            } else {
                amp_ab_eval *e = &r->evals[r->nevals];
                e->step = (int64_t)step->num;
                rc = num_or_null(v, "test_loss", &e->test_loss, file, err, errlen) ||
                             num_or_null(v, "test_acc", &e->test_acc, file, err, errlen)
                         ? -1
                         : 0;
                if (rc == 0) r->nevals++;
            }
        } else if (grow((void **)&r->pts, &pcap, r->npts, sizeof *r->pts)) {
            snprintf(err, errlen, "%s: out of memory", file);
            rc = -1;
        } else {
            amp_ab_point *p = &r->pts[r->npts];
            const amp_jval *sk = need(v, "skipped", AMP_JBOOL, file, err, errlen);
            p->step = (int64_t)step->num;
            p->cpu_ms = NAN;
            rc = !sk || opt_num(v, "cpu_ms", &p->cpu_ms, file, err, errlen) || num_or_null(v, "loss", &p->loss, file, err, errlen) ||
                         num_or_null(v, "scale", &p->scale, file, err, errlen) ||
                         num_or_null(v, "step_ms", &p->step_ms, file, err, errlen) ||
                         num_or_null(v, "underflow", &p->underflow, file, err, errlen) ||
                         num_or_null(v, "overflow", &p->overflow, file, err, errlen)
                     ? -1
                     : 0;
            if (rc == 0) rc = amp_ab_fp8_add(&r->fp8, v, file, lineno, err, errlen);
            if (rc == 0) {
                p->skipped = sk->b;
                r->npts++;
            }
        }
        amp_json_free(v);
    }
    free(line);
    fclose(f);
    if (rc == 0 && r->npts == 0) {
        snprintf(err, errlen, "%s: no step records", file);
        rc = -1;
    }
    return rc;
}

int amp_ab_run_load(amp_ab_run *r, amp_ab_study *st, char *err, size_t errlen) {
    char file[PATH_MAX + 32];
    snprintf(file, sizeof file, "%s/summary.json", r->dir);
    if (load_summary(r, st, file, err, errlen)) return -1;
    snprintf(file, sizeof file, "%s/metrics.jsonl", r->dir);
    return load_metrics(r, file, err, errlen);
}

void amp_ab_run_free(amp_ab_run *r) {
    amp_json_free(r->summary);
    free(r->pts);
    free(r->evals);
    free(r->layers);
    amp_ab_fp8_free(&r->fp8);
    r->layers = NULL;
    r->nlayers = 0;
    r->summary = NULL;
    r->pts = NULL;
    r->evals = NULL;
    r->npts = r->nevals = 0;
}

void amp_ab_arm_stats(amp_ab_arm *arm, int nmem) {
    int n = arm->nruns;
    double *x = calloc((size_t)(n > 0 ? n : 1), sizeof *x);
    if (!x) n = 0; /* summaries then say n = 0 and NAN */
#define SUMMARIZE(field, dst)                                   \
    do {                                                        \
        for (int i = 0; i < n; i++) x[i] = arm->runs[i].field;  \
        amp_ab_summarize(&arm->dst, x, n);                      \
    } while (0)
    SUMMARIZE(final_loss, final_loss);
    SUMMARIZE(test_loss, test_loss);
    SUMMARIZE(test_acc, test_acc);
    SUMMARIZE(median_ms, median_ms);
    SUMMARIZE(median_cpu_ms, cpu_ms);
    SUMMARIZE(wall_s, wall_s);
    SUMMARIZE(skipped, skipped);
    SUMMARIZE(underflow, underflow);
    SUMMARIZE(overflow, overflow);
    for (int m = 0; m < nmem; m++) SUMMARIZE(mem[m], mem[m]);
#undef SUMMARIZE
    free(x);
}

const char *amp_ab_metric_name(const amp_ab_study *st) {
    return st->metric == AMP_AB_METRIC_LOSS ? "validation loss" : "test accuracy";
}

int amp_ab_mem_total(const amp_ab_study *st) {
    for (int m = 0; m < st->nmem; m++)
        if (strcmp(st->mem_names[m], "total") == 0) return m;
    return -1;
}
