/* `amptrain train CONFIG.ini [--set section.key=value]... [--out DIR]`
 * Outputs (in DIR, default runs/<[run] name>): config.ini, metrics.jsonl,
 * summary.json, weights.safetensors. Each is written to a temporary name and
 * renamed into place, so a failed run leaves none of them half-written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "cli.h"
#include "json.h"
#include "log.h"
#include "session.h"

#define MAX_SETS 256

typedef struct train_args {
    const char *config;
    const char *out;
    const char *sets[MAX_SETS];
    int nsets;
} train_args;

static int parse_args(train_args *a, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if ((strcmp(arg, "--set") == 0 || strcmp(arg, "--out") == 0) && i + 1 >= argc) {
            fprintf(stderr, "amptrain train: %s needs a value\n", arg);
            return -1;
        }
        if (strcmp(arg, "--set") == 0) {
            if (a->nsets == MAX_SETS) {
                fprintf(stderr, "amptrain train: more than %d --set options\n", MAX_SETS);
                return -1;
            }
            a->sets[a->nsets++] = argv[++i];
        } else if (strncmp(arg, "--set=", 6) == 0 && a->nsets < MAX_SETS) {
            a->sets[a->nsets++] = arg + 6;
        } else if (strcmp(arg, "--out") == 0) {
            a->out = argv[++i];
        } else if (strncmp(arg, "--out=", 6) == 0) {
            a->out = arg + 6;
        } else if (arg[0] == '-') {
            fprintf(stderr, "amptrain train: unknown option '%s'\n", arg);
            return -1;
        } else if (!a->config) {
            a->config = arg;
        } else {
            fprintf(stderr, "amptrain train: more than one config given ('%s', '%s')\n", a->config, arg);
            return -1;
        }
    }
    if (!a->config) {
        fprintf(stderr,
                "usage: amptrain train CONFIG.ini [--set section.key=value]... [--out DIR]\n");
        return -1;
    }
    return 0;
}

static int mkdir_p(const char *path, char *err, size_t errlen) {
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
                snprintf(err, errlen, "%s: cannot create the output folder: %s", buf, strerror(errno));
                return -1;
            }
            *p = c;
            if (c == '\0') break;
        }
    }
    return 0;
}

/* Output files: written as NAME.partial, renamed when the run succeeds. */
typedef struct out_file {
    char final[PATH_MAX];
    char temp[PATH_MAX + 16];
    FILE *f;
} out_file;

static int out_open(out_file *o, const char *dir, const char *name, char *err, size_t errlen) {
    snprintf(o->final, sizeof o->final, "%s/%s", dir, name);
    snprintf(o->temp, sizeof o->temp, "%s.partial", o->final);
    o->f = fopen(o->temp, "w");
    if (!o->f) {
        snprintf(err, errlen, "%s: cannot write: %s", o->temp, strerror(errno));
        return -1;
    }
    return 0;
}

static int out_commit(out_file *o, char *err, size_t errlen) {
    int bad = ferror(o->f);
    if (fclose(o->f) != 0) bad = 1;
    o->f = NULL;
    if (bad || rename(o->temp, o->final) != 0) {
        snprintf(err, errlen, "%s: write failed: %s", o->final, strerror(errno));
        unlink(o->temp);
        return -1;
    }
    return 0;
}

static void out_abort(out_file *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->temp[0]) unlink(o->temp);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void write_metric(FILE *f, const amp_step_record *r) {
    fprintf(f, "{\"step\":%lld,\"epoch\":%lld,\"loss\":", (long long)r->step, (long long)r->epoch);
    amp_json_num(f, r->loss);
    fputs(",\"lr\":", f);
    amp_json_num(f, r->lr);
    fputs(",\"scale\":", f);
    amp_json_num(f, r->scale);
    fprintf(f, ",\"skipped\":%s,\"grad_norm\":", r->skipped ? "true" : "false");
    amp_json_num(f, r->grad_norm);
    fprintf(f, ",\"underflow\":%llu,\"overflow\":%llu,\"step_ms\":%.4f}\n",
            (unsigned long long)r->underflow, (unsigned long long)r->overflow, r->step_ms);
}

static void write_eval(FILE *f, const amp_session *s, double loss, double acc) {
    fprintf(f, "{\"step\":%lld,\"epoch\":%lld,\"test_loss\":", (long long)s->step,
            (long long)s->epoch);
    amp_json_num(f, loss);
    fputs(",\"test_acc\":", f);
    amp_json_num(f, acc);
    fputs("}\n", f);
}

static void write_plugin(FILE *f, const amp_plugin *p) {
    fputs("{\"name\":", f);
    amp_json_str(f, p->entry->name);
    fputs(",\"version\":", f);
    amp_json_str(f, p->entry->version);
    fputs(",\"path\":", f);
    amp_json_str(f, p->path);
    fputc('}', f);
}

typedef struct run_result {
    double final_loss, test_loss, test_acc, wall_s, median_ms;
    size_t device_peak;
} run_result;

static void write_summary(FILE *f, const amp_session *s, const run_result *r) {
    const amp_mlp *m = s->mlp;
    fputs("{\n  \"name\": ", f);
    amp_json_str(f, s->set.name);
    fputs(",\n  \"plugins\": {\"precision\": ", f);
    write_plugin(f, &s->precision);
    fputs(", \"scaler\": ", f);
    write_plugin(f, &s->scaler);
    fputs("},\n  \"device\": ", f);
    amp_json_str(f, s->be->ops->name);
    fprintf(f, ",\n  \"seed\": %llu,\n  \"steps\": %lld,\n  \"skipped_steps\": %lld,\n",
            (unsigned long long)s->set.seed, (long long)s->step, (long long)s->skipped);
    fputs("  \"final_train_loss\": ", f);
    amp_json_num(f, r->final_loss);
    fputs(",\n  \"test_loss\": ", f);
    amp_json_num(f, r->test_loss);
    fputs(",\n  \"test_acc\": ", f);
    amp_json_num(f, r->test_acc);
    fputs(",\n  \"final_scale\": ", f);
    amp_json_num(f, amp_plugin_scaler(&s->scaler)->get_scale(s->scaler.self));
    fputs(",\n  \"wall_seconds\": ", f);
    amp_json_num(f, r->wall_s);
    fputs(",\n  \"median_step_ms\": ", f);
    amp_json_num(f, r->median_ms);
    fprintf(f, ",\n  \"params\": %zu,\n  \"memory_peak_bytes\": {", m->nparams);
    size_t total = 0;
    for (int c = 0; c < AMP_MEM_COUNT; c++) {
        fprintf(f, "%s\"%s\": %zu", c ? ", " : "", amp_mem_category_names[c], m->mem[c].size);
        total += m->mem[c].size;
    }
    fprintf(f, ", \"total\": %zu, \"device_used\": %zu},\n  \"layers\": [", total, r->device_peak);
    unsigned long long tu = 0, to = 0, tn = 0;
    for (int l = 0; l < m->nlayers; l++) {
        const amp_round_count *fw = &s->totals[AMP_ROUND_SLOT(l, AMP_ROUND_FWD)];
        const amp_round_count *gr = &s->totals[AMP_ROUND_SLOT(l, AMP_ROUND_GRAD)];
        fprintf(f, "%s\n    {\"name\": ", l ? "," : "");
        amp_json_str(f, m->layers[l].name);
        fprintf(f,
                ", \"forward\": {\"underflow\": %llu, \"overflow\": %llu, \"rounded\": %llu}, "
                "\"grad\": {\"underflow\": %llu, \"overflow\": %llu, \"rounded\": %llu}}",
                fw->underflow, fw->overflow, fw->nonzero, gr->underflow, gr->overflow, gr->nonzero);
        tu += fw->underflow + gr->underflow;
        to += fw->overflow + gr->overflow;
        tn += fw->nonzero + gr->nonzero;
    }
    fprintf(f, "\n  ],\n  \"underflow\": %llu,\n  \"overflow\": %llu,\n  \"rounded\": %llu\n}\n", tu,
            to, tn);
}

static void progress(const amp_session *s, const amp_step_record *r, int tty) {
    if (tty) {
        int width = 30, done = (int)(width * r->step / s->total_steps);
        fprintf(stderr, "\r[%.*s%*s] %lld/%lld loss %.4f scale %g%s   ", done,
                "##############################", width - done, "", (long long)r->step,
                (long long)s->total_steps, r->loss, r->scale, r->skipped ? " (skipped)" : "");
        if (r->step == s->total_steps) fputc('\n', stderr);
    } else {
        fprintf(stderr, "step %lld/%lld epoch %lld loss %.4f scale %g grad_norm %.4g%s\n",
                (long long)r->step, (long long)s->total_steps, (long long)r->epoch, r->loss, r->scale,
                r->grad_norm, r->skipped ? " skipped" : "");
    }
}

/* The training loop proper; outputs stay .partial until the caller commits. */
static int run(amp_session *s, out_file *metrics, run_result *res, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    int tty = isatty(fileno(stderr));
    double *ms = malloc((size_t)s->total_steps * sizeof(double));
    double *losses = malloc((size_t)s->total_steps * sizeof(double));
    if (!ms || !losses) {
        free(ms);
        free(losses);
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    double t0 = wall_now();
    res->device_peak = 0;
    int rc = 0;
    int64_t last_epoch = 0;
    for (int64_t i = 0; i < s->total_steps && rc == 0; i++) {
        amp_step_record r;
        if ((rc = amp_session_step(s, &r, err, errlen)) != 0) break;
        ms[i] = r.step_ms;
        losses[i] = r.loss;
        size_t used = s->be->ops->device_bytes_used(s->be);
        if (used > res->device_peak) res->device_peak = used;
        if (r.step % st->log_every == 0 || r.step == s->total_steps) {
            write_metric(metrics->f, &r);
            progress(s, &r, tty);
        }
        /* eval_every = 0: evaluate at the end of every epoch */
        int epoch_end = (r.step % s->steps_per_epoch) == 0;
        int want_eval = st->eval_every > 0 ? r.step % st->eval_every == 0 : epoch_end;
        if (want_eval && r.step != s->total_steps) {
            double tl, ta;
            if ((rc = amp_session_evaluate(s, &tl, &ta, err, errlen)) != 0) break;
            write_eval(metrics->f, s, tl, ta);
            if (!tty) fprintf(stderr, "eval at step %lld: test_loss %.4f test_acc %.4f\n",
                              (long long)r.step, tl, ta);
        }
        last_epoch = r.epoch;
    }
    (void)last_epoch;
    if (rc == 0) rc = amp_session_evaluate(s, &res->test_loss, &res->test_acc, err, errlen);
    if (rc == 0) {
        write_eval(metrics->f, s, res->test_loss, res->test_acc);
        res->wall_s = wall_now() - t0;
        int64_t tail = s->total_steps < 100 ? s->total_steps : 100;
        double sum = 0.0;
        for (int64_t i = s->total_steps - tail; i < s->total_steps; i++) sum += losses[i];
        res->final_loss = sum / (double)tail;
        qsort(ms, (size_t)s->total_steps, sizeof(double), cmp_double);
        res->median_ms = ms[s->total_steps / 2];
    }
    free(ms);
    free(losses);
    return rc;
}

int amp_cmd_train(int argc, char **argv) {
    train_args a;
    if (parse_args(&a, argc, argv) != 0) return 2;
    char err[2048] = "";
    amp_config *cfg = amp_config_load(a.config, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "amptrain: %s\n", err);
        return 2;
    }
    for (int i = 0; i < a.nsets; i++) {
        if (amp_config_set(cfg, a.sets[i], err, sizeof err) != 0) {
            fprintf(stderr, "amptrain: %s\n", err);
            amp_config_free(cfg);
            return 2;
        }
    }
    amp_session *s = NULL;
    int code = amp_session_open(&s, cfg, err, sizeof err);
    if (code != 0) {
        fprintf(stderr, "amptrain: %s\n", err);
        amp_config_free(cfg);
        return code;
    }
    char outdir[PATH_MAX];
    if (a.out)
        snprintf(outdir, sizeof outdir, "%s", a.out);
    else
        snprintf(outdir, sizeof outdir, "runs/%s", s->set.name);
    out_file conf = {0}, metrics = {0}, summary = {0};
    run_result res;
    memset(&res, 0, sizeof res);
    code = 1;
    if (mkdir_p(outdir, err, sizeof err) != 0 || out_open(&conf, outdir, "config.ini", err, sizeof err) ||
        out_open(&metrics, outdir, "metrics.jsonl", err, sizeof err) ||
        out_open(&summary, outdir, "summary.json", err, sizeof err))
        goto done;
    amp_log(AMP_LOG_INFO, "%s: %s + %s scaler on %s, %lld steps (%lld per epoch), output in %s",
            s->set.name, s->precision.entry->name, s->scaler.entry->name, s->be->ops->name,
            (long long)s->total_steps, (long long)s->steps_per_epoch, outdir);
    if (amp_config_write_resolved(cfg, conf.f) != 0) {
        snprintf(err, sizeof err, "%s: cannot write the resolved config", conf.temp);
        goto done;
    }
    if (run(s, &metrics, &res, err, sizeof err) != 0) goto done;
    write_summary(summary.f, s, &res);
    char wpath[PATH_MAX + 32];
    snprintf(wpath, sizeof wpath, "%s/weights.safetensors", outdir);
    if (amp_session_save_weights(s, wpath, err, sizeof err) != 0) goto done;
    if (out_commit(&conf, err, sizeof err) || out_commit(&metrics, err, sizeof err) ||
        out_commit(&summary, err, sizeof err))
        goto done;
    fprintf(stderr, "amptrain: %s: test_acc %.4f test_loss %.4f, %lld steps (%lld skipped), %.1f s\n",
            s->set.name, res.test_acc, res.test_loss, (long long)s->step, (long long)s->skipped,
            res.wall_s);
    code = 0;
done:
    if (code != 0) {
        fprintf(stderr, "amptrain: %s\n", err);
        out_abort(&conf);
        out_abort(&metrics);
        out_abort(&summary);
    }
    amp_session_close(s);
    amp_config_free(cfg);
    return code;
}
