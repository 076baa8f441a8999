/* `amptrain train CONFIG.ini [--set section.key=value]... [--out DIR | --resume DIR]`
 * Outputs (in DIR, default runs/<[run] name>): config.ini, metrics.jsonl,
 * summary.json, weights.safetensors. Each is written to a temporary name and
 * renamed into place, so a failed run leaves none of them half-written.
 * Checkpoints go to DIR/checkpoints every [train] checkpoint_every steps and
 * on SIGINT/SIGTERM (the step finishes, a checkpoint is written, exit
 * 128 + signal); --resume DIR continues from the newest valid one.
 * Under mpirun (core/dist/) every rank trains; rank 0 alone reads
 * checkpoints (it broadcasts the bytes), prints progress and writes the
 * outputs and checkpoints; failures and stop signals are agreed so all
 * ranks end together. */
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
#include "cli/cli.h"
#include "io/json.h"
#include "log.h"
#include "io/out_file.h"
#include "session.h"

#define MAX_SETS 256

typedef struct train_args {
    const char *config;
    const char *out;
    const char *resume;
    const char *sets[MAX_SETS];
    int nsets;
} train_args;

static int parse_args(train_args *a, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if ((strcmp(arg, "--set") == 0 || strcmp(arg, "--out") == 0 ||
             strcmp(arg, "--resume") == 0) &&
            i + 1 >= argc) {
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
        } else if (strcmp(arg, "--resume") == 0) {
            a->resume = argv[++i];
        } else if (strncmp(arg, "--resume=", 9) == 0) {
            a->resume = arg + 9;
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
        fprintf(stderr, "usage: amptrain train CONFIG.ini [--set section.key=value]... "
                        "[--out DIR | --resume DIR]\n");
        return -1;
    }
    if (a->resume && a->out && strcmp(a->resume, a->out) != 0) {
        fprintf(stderr, "amptrain train: --resume %s continues in that folder; drop --out %s\n",
                a->resume, a->out);
        return -1;
    }
    if (a->resume && !a->resume[0]) {
        fprintf(stderr, "amptrain train: --resume needs the run's output folder\n");
        return -1;
    }
    return 0;
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
    double final_loss, test_loss, test_acc, wall_s, median_ms, median_comm_ms;
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
    fprintf(f, ",\n  \"world_size\": %d,\n  \"dist_transport\": ", s->world);
    amp_json_str(f, amp_dist_grads_transport(s->grads));
    fputs(",\n  \"median_comm_ms\": ", f);
    amp_json_num(f, r->median_comm_ms);
    /* the bf16 send buffer, outside the model's memory categories */
    fprintf(f, ",\n  \"dist_buffer_bytes\": %zu", amp_dist_grads_bytes(s->grads));
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
    int stop_signal;         /* the signal all ranks agreed to stop on */
} run_ctx;

/* With several ranks a failure any rank meets is everyone's: the worst code
 * wins, and only the lowest rank holding it keeps its message (one message,
 * not one per rank). Alone: code itself. */
static int agree(amp_dist *d, int code, char *err) {
    int who = -1;
    int all = amp_dist_agree(d, code, &who);
    if (all != 0 && who != amp_dist_rank(d)) err[0] = '\0';
    return all;
}

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

/* One line to the metrics file and to the copy checkpoints carry (rank 0:
 * the others have no metrics file). */
static void log_metric(run_ctx *c, const amp_step_record *r) {
    if (!c->metrics->f) return;
    write_metric(c->metrics->f, r);
    write_metric(c->mlog, r);
}
static void log_eval(run_ctx *c, const amp_session *s, double loss, double acc) {
    if (!c->metrics->f) return;
    write_eval(c->metrics->f, s, loss, acc);
    write_eval(c->mlog, s, loss, acc);
}

/* The training loop proper, from wherever the session stands; outputs stay
 * .partial until the caller commits. 0 done, 1 stopped by a signal (a
 * checkpoint was written), -1 failed. */
static int run(amp_session *s, run_ctx *c, run_result *res, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    int tty = isatty(fileno(stderr)), talk = s->rank == 0;
    int64_t todo = s->total_steps - s->step;
    double *ms = malloc((size_t)(todo > 0 ? todo : 1) * sizeof(double));
    double *comm = malloc((size_t)(todo > 0 ? todo : 1) * sizeof(double));
    c->losses = malloc((size_t)(s->total_steps > 0 ? s->total_steps : 1) * sizeof(double));
    if (!ms || !comm || !c->losses) {
        free(ms);
        free(comm);
        free(c->losses);
        c->losses = NULL;
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    for (size_t i = 0; i < c->nprior; i++)
        c->losses[(size_t)s->step - c->nprior + i] = c->prior_losses[i];
    c->t0 = wall_now();
    s->stop_flag = &g_stop_signal;
    res->device_peak = c->prior_peak;
    int rc = 0;
    int64_t nrun = 0;
    while (s->step < s->total_steps && rc == 0) {
        amp_step_record r;
        if ((rc = amp_session_step(s, &r, err, errlen)) != 0) break;
        comm[nrun] = r.comm_ms;
        ms[nrun++] = r.step_ms;
        c->losses[r.step - 1] = r.loss;
        size_t used = s->be->ops->device_bytes_used(s->be);
        if (used > res->device_peak) res->device_peak = used;
        if (r.step % st->log_every == 0 || r.step == s->total_steps) {
            log_metric(c, &r);
            if (talk) progress(s, &r, tty);
        }
        /* eval_every = 0: evaluate at the end of every epoch */
        int epoch_end = (r.step % s->steps_per_epoch) == 0;
        int want_eval = st->eval_every > 0 ? r.step % st->eval_every == 0 : epoch_end;
        if (want_eval && r.step != s->total_steps) {
            double tl, ta;
            if ((rc = amp_session_evaluate(s, &tl, &ta, err, errlen)) != 0) break;
            log_eval(c, s, tl, ta);
            if (talk && !tty) fprintf(stderr, "eval at step %lld: test_loss %.4f test_acc %.4f\n",
                                      (long long)r.step, tl, ta);
        }
        /* A signal after the last step lets the run finish normally. Ranks
         * see a signal at different moments: the step's statistics carry
         * it, so they stop after the same step. */
        c->stop_signal = s->world > 1 ? r.stop_signal : (int)g_stop_signal;
        int stop = c->stop_signal && r.step < s->total_steps;
        if ((st->checkpoint_every > 0 && r.step % st->checkpoint_every == 0) || stop) {
            /* rank 0 writes; the others learn how that went */
            int wrote = s->rank == 0 ? write_checkpoint(s, c, res->device_peak, err, errlen) : 0;
            if (agree(s->dist, wrote ? 1 : 0, err) != 0) {
                rc = -1;
                break;
            }
        }
        if (stop) {
            if (talk && tty) fputc('\n', stderr);
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
        qsort(comm, (size_t)nrun, sizeof(double), cmp_double);
        res->median_comm_ms = nrun ? comm[nrun / 2] : 0.0;
    }
    free(ms);
    free(comm);
    free(c->losses);
    c->losses = NULL;
    return rc;
}

/* Rank 0: the bytes of the newest checkpoint in c->ckdir that reads and
 * parses (*buf, caller frees; its path in path). A damaged one is skipped
 * with a warning. 0, or 1 with err when none is valid. */
static int pick_checkpoint(run_ctx *c, const char *dir, uint8_t **buf, size_t *len, char *path,
                           size_t pathlen, char *err, size_t errlen) {
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(c->ckdir, &steps, &n, err, errlen) != 0) return 1;
    size_t damaged = 0;
    for (size_t i = 0; i < n; i++) {
        char why[512];
        amp_ckpt_store_path(path, pathlen, c->ckdir, steps[i]);
        amp_checkpoint ck;
        if (amp_ckpt_store_read(path, buf, len, why, sizeof why) != 0 ||
            amp_checkpoint_parse(*buf, *len, &ck, why, sizeof why) != 0) {
            damaged++;
            amp_log(AMP_LOG_WARN, "%s: %s; %s", path, why,
                    i + 1 < n ? "trying the previous checkpoint" : "no older checkpoint left");
            free(*buf);
            *buf = NULL;
            continue;
        }
        free(steps);
        return 0;
    }
    free(steps);
    snprintf(err, errlen, "--resume %s: no valid checkpoint in %s (%zu found, all damaged; see the "
                          "warnings above)",
             dir, c->ckdir, damaged);
    return 1;
}

/* Puts the session where the newest valid checkpoint in c->ckdir stands.
 * A damaged checkpoint is skipped with a warning; one from another model,
 * plugin, config or number of ranks is refused. Rank 0 reads it and sends
 * the bytes to the others. Returns the exit code (0 resumed). */
static int resume(amp_session *s, run_ctx *c, const char *dir, char *err, size_t errlen) {
    uint8_t *buf = NULL;
    size_t len = 0;
    char path[PATH_MAX + 32] = "";
    int code = s->rank == 0 ? pick_checkpoint(c, dir, &buf, &len, path, sizeof path, err, errlen) : 0;
    if ((code = agree(s->dist, code, err)) != 0) {
        free(buf);
        return code;
    }
    if (s->world > 1) {
        uint64_t n64 = len;
        amp_dist_bcast(s->dist, &n64, sizeof n64, err, errlen);
        len = (size_t)n64;
        if (s->rank != 0) buf = malloc(len ? len : 1);
        if (!buf) snprintf(err, errlen, "out of host memory for a %zu-byte checkpoint", len);
        if ((code = agree(s->dist, buf ? 0 : 1, err)) != 0) {
            free(buf);
            return code;
        }
        amp_dist_bcast(s->dist, buf, len, err, errlen);
        if (s->rank != 0) snprintf(path, sizeof path, "%s (from rank 0)", c->ckdir);
    }
    amp_checkpoint ck;
    char msg[1800];
    if (amp_checkpoint_parse(buf, len, &ck, msg, sizeof msg) != 0) {
        snprintf(err, errlen, "%s: %s", path, msg);
        free(buf);
        return 1;
    }
    code = amp_session_restore(s, &ck, msg, sizeof msg);
    if (code != 0) {
        snprintf(err, errlen, "%s: %s", path, msg);
    } else {
        if (c->metrics->f &&
            (fwrite(ck.metrics, 1, ck.metrics_len, c->metrics->f) != ck.metrics_len ||
             fwrite(ck.metrics, 1, ck.metrics_len, c->mlog) != ck.metrics_len)) {
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
    return code;
}

/* Rank 0: the output folder and its .partial files. Never mixes a new run's
 * checkpoints with an earlier run's, and never creates the folder of a run
 * that is not there to resume. Returns the exit code. */
static int open_outputs(const train_args *a, const char *outdir, run_ctx *c, amp_out_file *conf,
                        amp_out_file *metrics, amp_out_file *summary, char *err, size_t errlen) {
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(c->ckdir, &steps, &n, err, errlen) != 0) return 1;
    free(steps);
    if (a->resume && n == 0) {
        snprintf(err, errlen,
                 "--resume %s: no checkpoint in %s (ckpt-<step>.amp); give the output folder "
                 "of a run that had [train] checkpoint_every set or was stopped by a signal",
                 outdir, c->ckdir);
        return 2;
    }
    if (!a->resume && n > 0) {
        snprintf(err, errlen,
                 "%s holds %zu checkpoint%s of an earlier run: continue it with `amptrain train "
                 "%s --resume %s`, or delete %s to start over",
                 c->ckdir, n, n == 1 ? "" : "s", a->config, outdir, c->ckdir);
        return 2;
    }
    if (amp_mkdir_p(outdir, err, errlen) != 0 || amp_out_open(conf, outdir, "config.ini", err, errlen) ||
        amp_out_open(metrics, outdir, "metrics.jsonl", err, errlen) ||
        amp_out_open(summary, outdir, "summary.json", err, errlen))
        return 1;
    return 0;
}

/* Rank 0, after the last step: summary.json, the weights, and the renames
 * that make the outputs whole. 0, or 1 with err. */
static int write_outputs(amp_session *s, const char *outdir, const run_result *res,
                         amp_out_file *conf, amp_out_file *metrics, amp_out_file *summary,
                         char *err, size_t errlen) {
    write_summary(summary->f, s, res);
    char wpath[PATH_MAX + 32];
    snprintf(wpath, sizeof wpath, "%s/weights.safetensors", outdir);
    if (amp_session_save_weights(s, wpath, err, errlen) != 0) return 1;
    if (amp_out_commit(conf, err, errlen) || amp_out_commit(metrics, err, errlen) ||
        amp_out_commit(summary, err, errlen))
        return 1;
    return 0;
}

static void print_err(const amp_dist *d, const char *err) {
    if (!err[0]) return; /* another rank says why */
    if (amp_dist_world(d) > 1 && amp_dist_rank(d) > 0)
        fprintf(stderr, "amptrain: rank %d: %s\n", amp_dist_rank(d), err);
    else
        fprintf(stderr, "amptrain: %s\n", err);
}

int amp_cmd_train(int argc, char **argv) {
    train_args a;
    if (parse_args(&a, argc, argv) != 0) return 2;
    char err[2048] = "";
    /* Under an MPI launcher MPI starts here, and every rank runs what follows. */
    amp_dist *dist = amp_dist_init(&argc, &argv, err, sizeof err);
    if (!dist) {
        fprintf(stderr, "amptrain: %s\n", err);
        return 2;
    }
    amp_log_set_rank(amp_dist_rank(dist));
    int lead = amp_dist_rank(dist) == 0;
    amp_session *s = NULL;
    amp_out_file conf = {0}, metrics = {0}, summary = {0};
    run_result res;
    memset(&res, 0, sizeof res);
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.metrics = &metrics;
    char outdir[PATH_MAX];
    signal_guard guard;
    signals_install(&guard);
    amp_config *cfg = amp_config_load(a.config, err, sizeof err);
    int code = cfg ? 0 : 2;
    for (int i = 0; code == 0 && i < a.nsets; i++)
        if (amp_config_set(cfg, a.sets[i], err, sizeof err) != 0) code = 2;
    if (code == 0) code = amp_session_open_ex(&s, cfg, dist, err, sizeof err);
    if ((code = agree(dist, code, err)) != 0) goto done;
    if ((code = agree(dist, amp_session_check_ranks(s, err, sizeof err), err)) != 0) goto done;
    if (a.resume)
        snprintf(outdir, sizeof outdir, "%s", a.resume);
    else if (a.out)
        snprintf(outdir, sizeof outdir, "%s", a.out);
    else
        snprintf(outdir, sizeof outdir, "runs/%s", s->set.name);
    snprintf(ctx.ckdir, sizeof ctx.ckdir, "%s/checkpoints", outdir);
    ctx.mlog = open_memstream(&ctx.mtext, &ctx.mlen);
    if (!ctx.mlog) {
        snprintf(err, sizeof err, "out of host memory");
        code = 1;
    } else if (lead) {
        code = open_outputs(&a, outdir, &ctx, &conf, &metrics, &summary, err, sizeof err);
    }
    if ((code = agree(dist, code, err)) != 0) goto done;
    if (a.resume && (code = agree(dist, resume(s, &ctx, a.resume, err, sizeof err), err)) != 0)
        goto done;
    code = 1;
    if (s->world > 1)
        amp_log(AMP_LOG_INFO, "%s: %s + %s scaler on %d ranks (%s, gradients as %s), %lld steps (%lld "
                "per epoch), output in %s", s->set.name, s->precision.entry->name,
                s->scaler.entry->name, s->world, s->be->ops->name,
                s->set.dist_grad_bf16 ? "bf16" : "f32", (long long)s->total_steps,
                (long long)s->steps_per_epoch, outdir);
    else
        amp_log(AMP_LOG_INFO, "%s: %s + %s scaler on %s, %lld steps (%lld per epoch), output in %s",
                s->set.name, s->precision.entry->name, s->scaler.entry->name, s->be->ops->name,
                (long long)s->total_steps, (long long)s->steps_per_epoch, outdir);
    if (lead && amp_config_write_resolved(cfg, conf.f) != 0) {
        snprintf(err, sizeof err, "%s: cannot write the resolved config", conf.temp);
        goto done;
    }
    int rc = run(s, &ctx, &res, err, sizeof err);
    if (rc == 1) {
        int sig = ctx.stop_signal;
        char launch[64] = "";
        if (s->world > 1) snprintf(launch, sizeof launch, "mpirun -np %d ", s->world);
        if (lead)
            fprintf(stderr,
                    "amptrain: stopped by %s after step %lld of %lld; checkpoint %s\n"
                    "amptrain: continue with: %samptrain train %s --resume %s\n",
                    sig == SIGINT ? "SIGINT" : "SIGTERM", (long long)s->step,
                    (long long)s->total_steps, ctx.last_ckpt, launch, a.config, outdir);
        amp_out_abort(&conf);
        amp_out_abort(&metrics);
        amp_out_abort(&summary);
        code = 128 + sig;
        goto done;
    }
    if (rc != 0) goto done;
    code = lead ? write_outputs(s, outdir, &res, &conf, &metrics, &summary, err, sizeof err) : 0;
    if ((code = agree(dist, code, err)) == 0 && lead)
        fprintf(stderr, "amptrain: %s: test_acc %.4f test_loss %.4f, %lld steps (%lld skipped), %.1f s\n",
                s->set.name, res.test_acc, res.test_loss, (long long)s->step, (long long)s->skipped,
                res.wall_s);
done:
    if (code != 0 && code < 128) {
        print_err(dist, err);
        amp_out_abort(&conf);
        amp_out_abort(&metrics);
        amp_out_abort(&summary);
    }
    /* A failure of this rank alone: the others wait for it, so stop them. */
    amp_dist_exit(dist, code);
    if (ctx.mlog) fclose(ctx.mlog);
    free(ctx.mtext);
    amp_session_close(s);
    amp_config_free(cfg);
    signals_restore(&guard);
    amp_dist_finalize(dist);
    return code;
}
