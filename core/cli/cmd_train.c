/* `amptrain train CONFIG.ini [--set section.key=value]... [--out DIR | --resume DIR]`
 * Outputs (in DIR, default runs/<[run] name>): config.ini, metrics.jsonl,
 * summary.json, weights.safetensors. Each is written to a temporary name and
 * renamed into place, so a failed run leaves none of them half-written.
 * Checkpoints go to DIR/checkpoints every [train] checkpoint_every steps and
 * on SIGINT/SIGTERM (the step finishes, a checkpoint is written, exit
 * 128 + signal); --resume DIR continues from the newest valid one. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "io/checkpoint_store.h"
#include "io/checkpoint_file.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "io/json.h"
#include "log.h"
#include "io/out_file.h"
#include "session.h"

static const char train_usage[] =
    "usage: amptrain train CONFIG.ini [--set section.key=value]... [--out DIR | --resume DIR]\n";

typedef struct train_args {
    const char *config;
    const char *out;
    const char *resume;
    const char **sets; /* [argc]: every --set in order, no fixed limit; freed once applied */
    int nsets;
} train_args;

static int train_opt(void *user, int opt, const char *arg) {
    train_args *a = user;
    switch (opt) {
    case 's':
        a->sets[a->nsets++] = arg;
        return 0;
    case 'o':
    case 'r': {
        const char **slot = opt == 'o' ? &a->out : &a->resume;
        if (*slot) {
            fprintf(stderr, "amptrain train: --%s given twice ('%s', '%s')\n",
                    opt == 'o' ? "out" : "resume", *slot, arg);
            return -1;
        }
        *slot = arg;
        return 0;
    }
    case 'h':
        fputs(train_usage, stdout);
        return 1;
    case 1:
        if (!arg[0]) {
            fprintf(stderr, "amptrain train: the config path is empty\n%s", train_usage);
            return -1;
        }
        if (a->config) {
            fprintf(stderr, "amptrain train: more than one config given ('%s', '%s')\n", a->config,
                    arg);
            return -1;
        }
        a->config = arg;
        return 0;
    }
    return -1;
}

/* 0, 1 (--help printed), or -1 (a usage error, printed). */
static int parse_args(train_args *a, int argc, char **argv) {
    static const struct option opts[] = {{"set", required_argument, NULL, 's'},
                                         {"out", required_argument, NULL, 'o'},
                                         {"resume", required_argument, NULL, 'r'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    memset(a, 0, sizeof *a);
    a->sets = calloc((size_t)(argc > 0 ? argc : 1), sizeof *a->sets);
    if (!a->sets) {
        fprintf(stderr, "amptrain train: out of memory\n");
        return -1;
    }
    int rc = amp_cli_parse("train", argc, argv, "h", opts, train_opt, a, train_usage);
    if (rc == 0 && !a->config) {
        fputs(train_usage, stderr);
        rc = -1;
    }
    if (rc == 0 && a->resume && a->out && strcmp(a->resume, a->out) != 0) {
        fprintf(stderr, "amptrain train: --resume %s continues in that folder; drop --out %s\n",
                a->resume, a->out);
        rc = -1;
    }
    if (rc != 0) {
        free(a->sets);
        a->sets = NULL;
    }
    return rc;
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
            (long long)s->batcher->epoch);
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
    const amp_model *m = s->model;
    fputs("{\n  \"name\": ", f);
    amp_json_str(f, s->set.name);
    fputs(",\n  \"model\": ", f);
    amp_json_str(f, m->ops->name);
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
    fprintf(f, ",\n  \"params\": %zu,\n  \"memory_peak_bytes\": {", m->desc.nparams);
    size_t total = 0;
    for (int c = 0; c < AMP_MEM_COUNT; c++) {
        fprintf(f, "%s\"%s\": %zu", c ? ", " : "", amp_mem_category_names[c], m->mem[c].size);
        total += m->mem[c].size;
    }
    fprintf(f, ", \"total\": %zu, \"device_used\": %zu},\n  \"layers\": [", total, r->device_peak);
    unsigned long long tu = 0, to = 0, tn = 0;
    for (int l = 0; l < m->desc.nlayers; l++) {
        const amp_round_count *fw = &s->totals[2 * l + AMP_ROUND_FWD];
        const amp_round_count *gr = &s->totals[2 * l + AMP_ROUND_GRAD];
        fprintf(f, "%s\n    {\"name\": ", l ? "," : "");
        amp_json_str(f, m->desc.layers[l].name);
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

/* SIGINT/SIGTERM: remembered here, acted on after the current step. The
 * handler resets itself, so a second signal stops the process at once
 * (checkpoint writes are atomic, so that is safe too). */
static volatile sig_atomic_t g_stop_signal;

static void on_stop_signal(int sig) { g_stop_signal = sig; }

typedef struct signal_guard {
    struct sigaction old_int, old_term, old_xfsz;
} signal_guard;

static void signals_install(signal_guard *g) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_RESTART;
    g_stop_signal = 0;
    sigaction(SIGINT, &sa, &g->old_int);
    sigaction(SIGTERM, &sa, &g->old_term);
    /* A file-size limit (ulimit -f) must fail the write with EFBIG, which is
     * reported, instead of killing the process mid-checkpoint. */
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGXFSZ, &sa, &g->old_xfsz);
}

static void signals_restore(const signal_guard *g) {
    sigaction(SIGINT, &g->old_int, NULL);
    sigaction(SIGTERM, &g->old_term, NULL);
    sigaction(SIGXFSZ, &g->old_xfsz, NULL);
}

/* What the loop needs beyond the session: the outputs, a copy of every
 * metrics line (a checkpoint carries the metrics so far, so a resumed run's
 * metrics.jsonl is whole), and what came before a resume. */
typedef struct run_ctx {
    amp_out_file *metrics;
    FILE *mlog;
    char *mtext;
    size_t mlen;
    char ckdir[PATH_MAX + 16];
    double prior_wall;       /* training seconds before the resume */
    size_t prior_peak;
    double prior_losses[AMP_CKPT_MAX_LOSSES];
    size_t nprior;           /* losses of the steps just before the resume */
    double t0;
    double *losses;          /* [total_steps], by step */
    char last_ckpt[PATH_MAX + 32];
} run_ctx;

static int write_checkpoint(amp_session *s, run_ctx *c, size_t device_peak, char *err,
                            size_t errlen) {
    amp_checkpoint ck;
    if (amp_session_snapshot(s, &ck, err, errlen) != 0) return -1;
    int rc = -1;
    uint8_t *buf = NULL, *losses = NULL;
    size_t len = 0, nl = s->step < (int64_t)AMP_CKPT_MAX_LOSSES ? (size_t)s->step : AMP_CKPT_MAX_LOSSES;
    if (fflush(c->mlog) != 0) {
        snprintf(err, errlen, "out of host memory for the metrics copy");
        goto done;
    }
    losses = malloc(nl * 8 + 1);
    if (!losses) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < nl; i++)
        amp_ckpt_put_f64(losses, i, c->losses[(size_t)s->step - nl + i]);
    ck.losses = losses;
    ck.nlosses = nl;
    ck.metrics = c->mtext;
    ck.metrics_len = c->mlen;
    ck.wall_seconds = c->prior_wall + (wall_now() - c->t0);
    ck.device_peak = device_peak;
    if (amp_checkpoint_encode(&ck, &buf, &len, err, errlen) != 0) goto done;
    if (amp_ckpt_store_write(c->ckdir, s->step, buf, len, s->set.keep, err, errlen) != 0) goto done;
    amp_ckpt_store_path(c->last_ckpt, sizeof c->last_ckpt, c->ckdir, s->step);
    amp_log(AMP_LOG_DEBUG, "checkpoint %s (%zu bytes)", c->last_ckpt, len);
    rc = 0;
done:
    free(buf);
    free(losses);
    amp_session_snapshot_free(&ck);
    return rc;
}

/* One line to the metrics file and to the copy checkpoints carry. */
static void log_metric(run_ctx *c, const amp_step_record *r) {
    write_metric(c->metrics->f, r);
    write_metric(c->mlog, r);
}
static void log_eval(run_ctx *c, const amp_session *s, double loss, double acc) {
    write_eval(c->metrics->f, s, loss, acc);
    write_eval(c->mlog, s, loss, acc);
}

/* The training loop proper, from wherever the session stands; outputs stay
 * .partial until the caller commits. 0 done, 1 stopped by a signal (a
 * checkpoint was written), -1 failed. */
static int run(amp_session *s, run_ctx *c, run_result *res, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    int tty = isatty(fileno(stderr));
    int64_t todo = s->total_steps - s->step;
    double *ms = malloc((size_t)(todo > 0 ? todo : 1) * sizeof(double));
    c->losses = malloc((size_t)(s->total_steps > 0 ? s->total_steps : 1) * sizeof(double));
    if (!ms || !c->losses) {
        free(ms);
        free(c->losses);
        c->losses = NULL;
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (size_t i = 0; i < c->nprior; i++)
        c->losses[(size_t)s->step - c->nprior + i] = c->prior_losses[i];
    c->t0 = wall_now();
    res->device_peak = c->prior_peak;
    int rc = 0;
    int64_t nrun = 0;
    while (s->step < s->total_steps && rc == 0) {
        amp_step_record r;
        if ((rc = amp_session_step(s, &r, err, errlen)) != 0) break;
        ms[nrun++] = r.step_ms;
        c->losses[r.step - 1] = r.loss;
        size_t used = s->be->ops->device_bytes_used(s->be);
        if (used > res->device_peak) res->device_peak = used;
        if (r.step % st->log_every == 0 || r.step == s->total_steps) {
            log_metric(c, &r);
            progress(s, &r, tty);
        }
        /* eval_every = 0: evaluate at the end of every epoch */
        int epoch_end = (r.step % s->steps_per_epoch) == 0;
        int want_eval = st->eval_every > 0 ? r.step % st->eval_every == 0 : epoch_end;
        if (want_eval && r.step != s->total_steps) {
            double tl, ta;
            if ((rc = amp_session_evaluate(s, &tl, &ta, err, errlen)) != 0) break;
            log_eval(c, s, tl, ta);
            if (!tty) fprintf(stderr, "eval at step %lld: test_loss %.4f test_acc %.4f\n",
                              (long long)r.step, tl, ta);
        }
        /* A signal after the last step lets the run finish normally. */
        int stop = g_stop_signal && r.step < s->total_steps;
        if ((st->checkpoint_every > 0 && r.step % st->checkpoint_every == 0) || stop) {
            if ((rc = write_checkpoint(s, c, res->device_peak, err, errlen)) != 0) break;
        }
        if (stop) {
            if (tty) fputc('\n', stderr);
            rc = 1;
        }
    }
    if (rc == 0) rc = amp_session_evaluate(s, &res->test_loss, &res->test_acc, err, errlen);
    if (rc == 0) {
        log_eval(c, s, res->test_loss, res->test_acc);
        res->wall_s = c->prior_wall + (wall_now() - c->t0);
        int64_t tail = s->total_steps < 100 ? s->total_steps : 100;
        double sum = 0.0;
        for (int64_t i = s->total_steps - tail; i < s->total_steps; i++) sum += c->losses[i];
        res->final_loss = sum / (double)tail;
        /* the median of the steps this process ran */
        qsort(ms, (size_t)nrun, sizeof(double), cmp_double);
        res->median_ms = nrun ? ms[nrun / 2] : 0.0;
    }
    free(ms);
    free(c->losses);
    c->losses = NULL;
    return rc;
}

/* Puts the session where the newest valid checkpoint in c->ckdir stands.
 * A damaged checkpoint is skipped with a warning; one from another model,
 * plugin or config is refused. Returns the exit code (0 resumed). */
static int resume(amp_session *s, run_ctx *c, const char *dir, char *err, size_t errlen) {
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(c->ckdir, &steps, &n, err, errlen) != 0) return 1;
    int code = 1;
    size_t damaged = 0;
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX + 32], why[512];
        amp_ckpt_store_path(path, sizeof path, c->ckdir, steps[i]);
        uint8_t *buf = NULL;
        size_t len = 0;
        amp_checkpoint ck;
        if (amp_checkpoint_read_file(path, &buf, &len, why, sizeof why) != 0 ||
            amp_checkpoint_parse(buf, len, &ck, why, sizeof why) != 0) {
            damaged++;
            amp_log(AMP_LOG_WARN, "%s: %s; %s", path, why,
                    i + 1 < n ? "trying the previous checkpoint" : "no older checkpoint left");
            free(buf);
            continue;
        }
        char msg[1800];
        code = amp_session_restore(s, &ck, msg, sizeof msg);
        if (code != 0) {
            snprintf(err, errlen, "%s: %s", path, msg);
        } else {
            if (fwrite(ck.metrics, 1, ck.metrics_len, c->metrics->f) != ck.metrics_len ||
                fwrite(ck.metrics, 1, ck.metrics_len, c->mlog) != ck.metrics_len) {
                snprintf(err, errlen, "%s: cannot write: %s", c->metrics->temp, strerror(errno));
                code = 1;
            }
            c->nprior = ck.nlosses;
            for (size_t k = 0; k < ck.nlosses; k++) c->prior_losses[k] = amp_ckpt_f64(ck.losses, k);
            c->prior_wall = isfinite(ck.wall_seconds) && ck.wall_seconds > 0 ? ck.wall_seconds : 0.0;
            c->prior_peak = (size_t)ck.device_peak;
            snprintf(c->last_ckpt, sizeof c->last_ckpt, "%s", path);
            amp_log(AMP_LOG_INFO, "resuming from %s: step %lld of %lld (epoch %lld)", path,
                    (long long)s->step, (long long)s->total_steps, (long long)s->batcher->epoch);
        }
        free(buf);
        free(steps);
        return code;
    }
    free(steps);
    snprintf(err, errlen, "--resume %s: no valid checkpoint in %s (%zu found, all damaged; see the "
                          "warnings above)",
             dir, c->ckdir, damaged);
    return 1;
}

int amp_cmd_train(int argc, char **argv) {
    train_args a;
    int prc = parse_args(&a, argc, argv);
    if (prc != 0) return prc > 0 ? 0 : 2;
    char err[2048] = "";
    amp_config *cfg = amp_config_load(a.config, err, sizeof err);
    if (!cfg) {
        fprintf(stderr, "amptrain: %s\n", err);
        free(a.sets);
        return 2;
    }
    for (int i = 0; i < a.nsets; i++) {
        if (amp_config_set(cfg, a.sets[i], err, sizeof err) != 0) {
            fprintf(stderr, "amptrain: %s\n", err);
            amp_config_free(cfg);
            free(a.sets);
            return 2;
        }
    }
    free(a.sets);
    signal_guard guard;
    signals_install(&guard);
    amp_session *s = NULL;
    int code = amp_session_open(&s, cfg, err, sizeof err);
    if (code != 0) {
        fprintf(stderr, "amptrain: %s\n", err);
        amp_config_free(cfg);
        signals_restore(&guard);
        return code;
    }
    char outdir[PATH_MAX];
    if (a.resume)
        snprintf(outdir, sizeof outdir, "%s", a.resume);
    else if (a.out)
        snprintf(outdir, sizeof outdir, "%s", a.out);
    else
        snprintf(outdir, sizeof outdir, "runs/%s", s->set.name);
    amp_out_file conf = {0}, metrics = {0}, summary = {0};
    run_result res;
    memset(&res, 0, sizeof res);
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.metrics = &metrics;
    snprintf(ctx.ckdir, sizeof ctx.ckdir, "%s/checkpoints", outdir);
    code = 1;
    ctx.mlog = open_memstream(&ctx.mtext, &ctx.mlen);
    if (!ctx.mlog) {
        snprintf(err, sizeof err, "out of host memory");
        goto done;
    }
    {
        /* Never mix a new run's checkpoints with an earlier run's, and never
         * create the folder of a run that is not there to resume. */
        int64_t *steps = NULL;
        size_t n = 0;
        if (amp_ckpt_store_list(ctx.ckdir, &steps, &n, err, sizeof err) != 0) goto done;
        free(steps);
        if (a.resume && n == 0) {
            snprintf(err, sizeof err,
                     "--resume %s: no checkpoint in %s (ckpt-<step>.amp); give the output folder "
                     "of a run that had [train] checkpoint_every set or was stopped by a signal",
                     outdir, ctx.ckdir);
            code = 2;
            goto done;
        }
        if (!a.resume && n > 0) {
            snprintf(err, sizeof err,
                     "%s holds %zu checkpoint%s of an earlier run: continue it with `amptrain train "
                     "%s --resume %s`, or delete %s to start over",
                     ctx.ckdir, n, n == 1 ? "" : "s", a.config, outdir, ctx.ckdir);
            code = 2;
            goto done;
        }
    }
    if (amp_mkdir_p(outdir, err, sizeof err) != 0 || amp_out_open(&conf, outdir, "config.ini", err, sizeof err) ||
        amp_out_open(&metrics, outdir, "metrics.jsonl", err, sizeof err) ||
        amp_out_open(&summary, outdir, "summary.json", err, sizeof err))
        goto done;
    if (a.resume && (code = resume(s, &ctx, a.resume, err, sizeof err)) != 0) goto done;
    code = 1;
    amp_log(AMP_LOG_INFO, "%s: %s + %s scaler on %s, %lld steps (%lld per epoch), output in %s",
            s->set.name, s->precision.entry->name, s->scaler.entry->name, s->be->ops->name,
            (long long)s->total_steps, (long long)s->steps_per_epoch, outdir);
    if (amp_config_write_resolved(cfg, conf.f) != 0) {
        snprintf(err, sizeof err, "%s: cannot write the resolved config", conf.temp);
        goto done;
    }
    int rc = run(s, &ctx, &res, err, sizeof err);
    if (rc == 1) {
        int sig = (int)g_stop_signal;
        fprintf(stderr,
                "amptrain: stopped by %s after step %lld of %lld; checkpoint %s\n"
                "amptrain: continue with: amptrain train %s --resume %s\n",
                sig == SIGINT ? "SIGINT" : "SIGTERM", (long long)s->step,
                (long long)s->total_steps, ctx.last_ckpt, a.config, outdir);
        amp_out_abort(&conf);
        amp_out_abort(&metrics);
        amp_out_abort(&summary);
        code = 128 + sig;
        goto done;
    }
    if (rc != 0) goto done;
    write_summary(summary.f, s, &res);
    char wpath[PATH_MAX + 32];
    snprintf(wpath, sizeof wpath, "%s/weights.safetensors", outdir);
    if (amp_session_save_weights(s, wpath, err, sizeof err) != 0) goto done;
    if (amp_out_commit(&conf, err, sizeof err) || amp_out_commit(&metrics, err, sizeof err) ||
        amp_out_commit(&summary, err, sizeof err))
        goto done;
    fprintf(stderr, "amptrain: %s: test_acc %.4f test_loss %.4f, %lld steps (%lld skipped), %.1f s\n",
            s->set.name, res.test_acc, res.test_loss, (long long)s->step, (long long)s->skipped,
            res.wall_s);
    code = 0;
done:
    if (code != 0 && code < 128) {
        fprintf(stderr, "amptrain: %s\n", err);
        amp_out_abort(&conf);
        amp_out_abort(&metrics);
        amp_out_abort(&summary);
    }
    if (ctx.mlog) fclose(ctx.mlog);
    free(ctx.mtext);
    amp_session_close(s);
    amp_config_free(cfg);
    signals_restore(&guard);
    return code;
}
