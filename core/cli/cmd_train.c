/* `amptrain train CONFIG.ini [--set section.key=value]... [--out DIR | --resume DIR]`
 * Outputs (in DIR, default runs/<[run] name>): config.ini, metrics.jsonl,
 * summary.json, weights.safetensors. Each is written under a unique
 * temporary name and renamed into place, summary.json last, so a failed run
 * leaves none of them half-written; metrics.jsonl is also the run's history
 * once it has a checkpoint (see run_ctx). The folder is locked for the whole
 * run (io/run_lock.h), and no output is renamed over an input.
 * Checkpoints go to DIR/checkpoints every [train] checkpoint_every steps and
 * on SIGINT/SIGTERM/SIGHUP/SIGPIPE (the step finishes, a checkpoint is
 * written, exit 128 + signal); --resume DIR continues from the newest valid
 * one.
 * Under mpirun (core/dist/) every rank trains; rank 0 alone takes the
 * folder's lock, reads checkpoints (it broadcasts the bytes), prints
 * progress and writes the outputs and checkpoints; failures and stop
 * signals are agreed so all ranks end together. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "arena.h"
#include "io/checkpoint_store.h"
#include "io/checkpoint_file.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "cli/mem_limit.h"
#include "io/json.h"
#include "log.h"
#include "median.h"
#include "io/out_file.h"
#include "io/run_lock.h"
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

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Process CPU time (all threads): unlike wall time, other processes on the
 * machine cannot add to it, so `ab` can tell a slow step from a busy host. */
static double cpu_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The 1-minute load average, NAN where the system has none. */
static double load_now(void) {
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : NAN;
}

static void write_metric(FILE *f, const amp_step_record *r, double cpu_ms) {
    fprintf(f, "{\"step\":%lld,\"epoch\":%lld,\"loss\":", (long long)r->step, (long long)r->epoch);
    amp_json_num(f, r->loss);
    fputs(",\"lr\":", f);
    amp_json_num(f, r->lr);
    fputs(",\"scale\":", f);
    amp_json_num(f, r->scale);
    fprintf(f, ",\"skipped\":%s,\"grad_norm\":", r->skipped ? "true" : "false");
    amp_json_num(f, r->grad_norm);
    fprintf(f, ",\"underflow\":%llu,\"overflow\":%llu,\"step_ms\":%.4f,\"cpu_ms\":%.4f}\n",
            (unsigned long long)r->underflow, (unsigned long long)r->overflow, r->step_ms, cpu_ms);
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
    double median_cpu_ms;         /* process CPU time per step, all threads */
    double load_start, load_end;  /* 1-minute load average around the steps */
    size_t device_peak;
} run_result;

/* What the backend ran (instruction-set path, threads, GEMM kernels per
 * input dtype), when it reports it. */
static void write_backend_info(FILE *f, const amp_backend_info *in) {
    if (!in->isa[0]) return;
    fputs(",\n  \"backend\": {\"isa\": ", f);
    amp_json_str(f, in->isa);
    fputs(", \"isa_available\": ", f);
    amp_json_str(f, in->isa_available);
    fprintf(f, ", \"threads\": %d, \"gemm\": {", in->threads);
    static const char *const names[AMP_DTYPE_COUNT] = {"f32", "f16", "bf16"};
    int first = 1;
    for (int d = 0; d < AMP_DTYPE_COUNT; d++) {
        if (!in->gemm[d][0]) continue;
        fprintf(f, "%s\"%s\": ", first ? "" : ", ", names[d]);
        amp_json_str(f, in->gemm[d]);
        first = 0;
    }
    fputs("}}", f);
}

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
    write_backend_info(f, &s->be->info);
    fprintf(f, ",\n  \"seed\": %llu,\n  \"steps\": %lld,\n  \"skipped_steps\": %lld,\n",
            (unsigned long long)s->set.seed, (long long)s->step, (long long)s->skipped);
    fputs("  \"final_train_loss\": ", f);
    amp_json_num(f, r->final_loss);
    fputs(",\n  \"test_loss\": ", f);
    amp_json_num(f, r->test_loss);
    fputs(",\n  \"test_acc\": ", f);
    amp_json_num(f, r->test_acc);
    if (s->set.dataset == AMP_DATA_TEXT) { /* text: the evaluation split is the validation 10% */
        fputs(",\n  \"val_loss\": ", f);
        amp_json_num(f, r->test_loss);
    }
    fputs(",\n  \"final_scale\": ", f);
    amp_json_num(f, amp_plugin_scaler(&s->scaler)->get_scale(s->scaler.self));
    fputs(",\n  \"wall_seconds\": ", f);
    amp_json_num(f, r->wall_s);
    fputs(",\n  \"median_step_ms\": ", f);
    amp_json_num(f, r->median_ms);
    fputs(",\n  \"median_cpu_ms\": ", f);
    amp_json_num(f, r->median_cpu_ms);
    fputs(",\n  \"load_avg_start\": ", f);
    amp_json_num(f, r->load_start);
    fputs(",\n  \"load_avg_end\": ", f);
    amp_json_num(f, r->load_end);
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
    /* memory the backend holds for GEMMs (widened operands, library scratch) */
    fprintf(f, ", \"backend_scratch\": %zu", s->be->info.scratch_bytes);
    total += s->be->info.scratch_bytes;
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

/* SIGINT, SIGTERM, SIGHUP (a closed terminal) and SIGPIPE (`train ... |
 * head -1`): remembered here, acted on after the current step (a checkpoint,
 * then exit 128 + signal). A second stop signal stops the process at once,
 * after removing the temporaries it was writing (checkpoint writes are
 * atomic, so that is safe); a repeated SIGPIPE never does, since every write
 * to the closed pipe raises one (the write then fails with EPIPE, which the
 * progress output ignores). SIGHUP or SIGPIPE ignored when the run started
 * (nohup, a parent that handles EPIPE) stay ignored; SIGINT and SIGTERM are
 * always caught, also in a background job of a script (which starts with
 * SIGINT ignored), so that `kill -INT` stops it with a checkpoint. */
static volatile sig_atomic_t g_stop_signal;
static struct timespec g_stop_time; /* when the first stop signal came */

/* 1 once a handler has claimed the first stop (a lock-free atomic, safe in
 * a handler): signals to a process reach whichever thread has them
 * unblocked, so two handlers can run at once, and only one may be first. */
static int g_stop_claimed;

static double since_stop_s(void) {
    struct timespec now; /* clock_gettime is async-signal-safe */
    if (g_stop_time.tv_sec == 0 && g_stop_time.tv_nsec == 0) return 0.0; /* being set now */
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - g_stop_time.tv_sec) + (now.tv_nsec - g_stop_time.tv_nsec) / 1e9;
}

/* 1 once the training loop runs (a stop then checkpoints), and whether this
 * process speaks for the run (rank 0) */
static volatile sig_atomic_t g_training, g_quiet;

/* Says at once what the first signal will do: the step or evaluation under
 * way may take long, and silence looks like a hang. write(2) only: this
 * runs in the handler. */
static void say_stopping(int sig) {
    static const char *const names[] = {[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT",
                                        [SIGPIPE] = "SIGPIPE", [SIGTERM] = "SIGTERM"};
    const char *name = sig > 0 && sig <= SIGTERM && names[sig] ? names[sig] : "a signal";
    const char *what = g_training
        ? ": stopping after the current step (an evaluation under way stops at its next batch), "
          "with a checkpoint; a second signal stops at once without one\n"
        : ": stopping before the first step; a second signal stops at once\n";
    if (g_quiet || sig == SIGPIPE) return; /* SIGPIPE: stderr may be that pipe */
    ssize_t w = write(2, "amptrain: ", 10);
    w = write(2, name, strlen(name));
    w = write(2, what, strlen(what));
    (void)w;
}

static void on_stop_signal(int sig) {
    int unclaimed = 0;
    if (__atomic_compare_exchange_n(&g_stop_claimed, &unclaimed, 1, 0, __ATOMIC_SEQ_CST,
                                    __ATOMIC_SEQ_CST)) {
        g_stop_signal = sig;
        clock_gettime(CLOCK_MONOTONIC, &g_stop_time);
        say_stopping(sig);
        return;
    }
    if (sig == SIGPIPE) return;
    /* The same signal again within half a second is one request delivered
     * twice (mpirun's launcher, a terminal and its process group), not a
     * user insisting: keep stopping after the step. */
    if (sig == g_stop_signal && since_stop_s() < 0.5) return;
    amp_tmp_unlink_all();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* pending until this handler returns, then fatal */
}

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
#define NSTOP (int)(sizeof stop_signals / sizeof stop_signals[0])

typedef struct signal_guard {
    struct sigaction old[NSTOP], old_xfsz;
} signal_guard;

static const char *signal_name(int sig) {
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP"
         : sig == SIGPIPE ? "SIGPIPE" : "a signal";
}

static void signals_install(signal_guard *g) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < NSTOP; i++) sigaddset(&sa.sa_mask, stop_signals[i]);
    sa.sa_flags = SA_RESTART;
    g_stop_signal = 0;
    g_stop_claimed = 0;
    g_stop_time = (struct timespec){0, 0};
    g_training = 0;
    for (int i = 0; i < NSTOP; i++) {
        sigaction(stop_signals[i], NULL, &g->old[i]);
        int keep_ignored = g->old[i].sa_handler == SIG_IGN &&
                           (stop_signals[i] == SIGHUP || stop_signals[i] == SIGPIPE);
        if (!keep_ignored) sigaction(stop_signals[i], &sa, NULL);
    }
    /* A file-size limit (ulimit -f) must fail the write with EFBIG, which is
     * reported, instead of killing the process mid-checkpoint. */
    sa.sa_handler = SIG_IGN;
    sa.sa_flags = 0;
    sigaction(SIGXFSZ, &sa, &g->old_xfsz);
}

static void signals_restore(const signal_guard *g) {
    for (int i = 0; i < NSTOP; i++) sigaction(stop_signals[i], &g->old[i], NULL);
    sigaction(SIGXFSZ, &g->old_xfsz, NULL);
}

/* The outputs besides checkpoints/, written at the end (metrics.jsonl
 * also as the run goes); their dead writers' temporaries are removed when
 * the folder is locked. */
static const char *const output_names[] = {"config.ini", "metrics.jsonl", "summary.json",
                                           "weights.safetensors", NULL};

/* The result files of a finished run: removed when a run starts to replace
 * them (a new run's first checkpoint, or a resume), so that the folder never
 * shows one run's summary beside another history. summary.json, the last
 * file a run writes, goes first. */
static void remove_results(const char *outdir) {
    static const char *const results[] = {"summary.json", "weights.safetensors", "config.ini",
                                          "vocab.json"};
    for (int i = 0; i < 4; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/%s", outdir, results[i]);
        unlink(p);
    }
}

/* What the loop needs beyond the session.
 *
 * metrics.jsonl is the run's history. A new run writes it under a
 * temporary name until its first checkpoint, which publishes it (renames
 * it into place, replacing an earlier run's files) and from then on it is
 * appended in place. Each checkpoint records its length and CRC (MPOS), so
 * a resume cuts it back to exactly the history of that checkpoint. Every
 * write is checked: lines that could not be written are kept in `pending`
 * and stored in the checkpoint (METR) that the failure forces. */
typedef struct run_ctx {
    amp_out_file metrics;
    const char *outdir;
    int fresh;               /* a new run: replace the folder's older results on publishing */
    int writer;              /* rank 0: the one process that writes the folder */
    uint64_t mlen;           /* good bytes in the metrics file */
    uint32_t mcrc;           /* their CRC32 */
    char *pending;           /* lines the metrics file did not take */
    size_t npending;
    char mfail[512];         /* why it did not */
    int64_t *valid;          /* checkpoints known valid, oldest first (for pruning) */
    size_t nvalid;
    char ckdir[PATH_MAX + 16];
    double prior_wall;       /* training seconds before the resume */
    size_t prior_peak;
    double prior_losses[AMP_CKPT_MAX_LOSSES];
    size_t nprior;           /* losses of the steps just before the resume */
    double t0;
    /* the last AMP_CKPT_MAX_LOSSES step losses (checkpoints and the final
     * loss need no more), step i at [i % AMP_CKPT_MAX_LOSSES]: nothing here
     * grows with [train] steps */
    double losses[AMP_CKPT_MAX_LOSSES];
    char last_ckpt[PATH_MAX + 32];
    int stop_signal;         /* the signal all ranks agreed to stop on */
    int complete;            /* --resume of a finished run: nothing to do */
    int eval_owed;           /* resumed from a checkpoint whose step's evaluation a
                              * signal cut short: it runs first */
} run_ctx;

/* Appends text to the metrics file, or to `pending` once a write failed
 * (rank 0; a no-op on the other ranks). */
static void emit(run_ctx *c, const char *text, size_t n) {
    if (n == 0 || !c->writer) return; /* other ranks write no metrics */
    if (!c->mfail[0]) {
        int fd = fileno(c->metrics.f);
        if (amp_write_full(fd, text, n) == 0) {
            c->mlen += n;
            c->mcrc = (uint32_t)crc32(c->mcrc, (const Bytef *)text, (uInt)n);
            return;
        }
        snprintf(c->mfail, sizeof c->mfail, "%s: cannot write: %s", c->metrics.final,
                 strerror(errno));
        /* Drop what part of it got out; the checkpoint keeps the line. */
        if (ftruncate(fd, (off_t)c->mlen) != 0 || lseek(fd, (off_t)c->mlen, SEEK_SET) < 0) {
            size_t k = strlen(c->mfail);
            snprintf(c->mfail + k, sizeof c->mfail - k, " (and cannot cut it back: %s)",
                     strerror(errno));
        }
    }
    char *p = realloc(c->pending, c->npending + n);
    if (!p) return; /* the checkpoint below then misses these lines; the error says why */
    memcpy(p + c->npending, text, n);
    c->pending = p;
    c->npending += n;
}

/* Records a checkpoint known valid and keeps only the newest `keep`. */
static int note_valid(run_ctx *c, int64_t step, int64_t keep) {
    int64_t *v = realloc(c->valid, (c->nvalid + 1) * sizeof *v);
    if (!v) return -1;
    c->valid = v;
    c->valid[c->nvalid++] = step;
    if ((int64_t)c->nvalid > keep) {
        size_t drop = c->nvalid - (size_t)keep;
        memmove(c->valid, c->valid + drop, (c->nvalid - drop) * sizeof *v);
        c->nvalid -= drop;
    }
    return 0;
}

/* The metrics history must be on disk before a checkpoint that points into
 * it: publish it the first time (replacing an older run's results), else
 * sync it. */
static int metrics_durable(run_ctx *c, char *err, size_t errlen) {
    if (!c->metrics.published) {
        if (c->fresh) remove_results(c->outdir);
        return amp_out_publish(&c->metrics, err, errlen);
    }
    if (fdatasync(fileno(c->metrics.f)) != 0) {
        snprintf(err, errlen, "%s: cannot sync: %s", c->metrics.final, strerror(errno));
        return -1;
    }
    return 0;
}

/* With several ranks a failure any rank meets is everyone's: the worst code
 * wins, and only the lowest rank holding it keeps its message (one message,
 * not one per rank). Alone: code itself. */
static int agree(amp_dist *d, int code, char *err) {
    int who = -1;
    int all = amp_dist_agree(d, code, &who);
    if (all != 0 && who != amp_dist_rank(d)) err[0] = '\0';
    return all;
}

/* DIR/vocab.json: the text run's vocabulary, so `amptrain sample` can decode
 * (written beside the checkpoints too, for a run that has not finished). */
static int write_vocab(const amp_session *s, const char *dir, char *err, size_t errlen) {
    amp_out_file v = {0};
    if (amp_out_open(&v, dir, "vocab.json", err, errlen) != 0) return -1;
    if (amp_text_write_vocab(&s->text, v.f) != 0) {
        amp_out_abort(&v);
        snprintf(err, errlen, "%s: cannot write", v.temp);
        return -1;
    }
    return amp_out_commit(&v, err, errlen);
}

static int write_checkpoint(amp_session *s, run_ctx *c, size_t device_peak, char *err,
                            size_t errlen) {
    /* A checkpoint of inf/NaN weights would count as the newest valid one
     * and push the good ones out. */
    if (amp_session_check_weights(s, err, errlen) != 0) return -1;
    amp_checkpoint ck;
    if (amp_session_snapshot(s, &ck, err, errlen) != 0) return -1;
    int rc = -1;
    uint8_t *buf = NULL, *losses = NULL;
    size_t len = 0, nl = s->step < (int64_t)AMP_CKPT_MAX_LOSSES ? (size_t)s->step : AMP_CKPT_MAX_LOSSES;
    losses = malloc(nl * 8 + 1);
    if (!losses) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    for (size_t i = 0; i < nl; i++)
        amp_ckpt_put_f64(losses, i, c->losses[((size_t)s->step - nl + i) % AMP_CKPT_MAX_LOSSES]);
    ck.losses = losses;
    ck.nlosses = nl;
    ck.has_metrics_pos = 1;
    ck.metrics_pos = c->mlen;
    ck.metrics_crc = c->mcrc;
    ck.metrics = c->pending;
    ck.metrics_len = c->npending;
    ck.wall_seconds = c->prior_wall + (wall_now() - c->t0);
    ck.device_peak = device_peak;
    if (amp_checkpoint_encode(&ck, &buf, &len, err, errlen) != 0) goto done;
    if (metrics_durable(c, err, errlen) != 0) goto done;
    if (amp_ckpt_store_write(c->ckdir, s->step, buf, len, err, errlen) != 0) goto done;
    if (s->set.dataset == AMP_DATA_TEXT && write_vocab(s, c->ckdir, err, errlen) != 0) goto done;
    amp_ckpt_store_path(c->last_ckpt, sizeof c->last_ckpt, c->ckdir, s->step);
    amp_log(AMP_LOG_DEBUG, "checkpoint %s (%zu bytes)", c->last_ckpt, len);
    if (note_valid(c, s->step, s->set.keep) != 0) {
        snprintf(err, errlen, "out of host memory");
        goto done;
    }
    if (amp_ckpt_store_prune(c->ckdir, s->set.keep, c->valid, c->nvalid, err, errlen) != 0) goto done;
    rc = 0;
done:
    free(buf);
    free(losses);
    amp_session_snapshot_free(&ck);
    return rc;
}

/* Whether the step just run has an evaluation (eval_every = 0: at the end
 * of every epoch; the last step's is the final one, done after the loop). */
static int eval_due(const amp_session *s, int64_t step) {
    if (step >= s->total_steps) return 0;
    return s->set.eval_every > 0 ? step % s->set.eval_every == 0 : step % s->steps_per_epoch == 0;
}

/* Evaluates and writes the line to lf, unless a signal cut the evaluation
 * short (s->eval_stopped): that one is not logged, and a --resume from
 * the checkpoint the stop writes runs it again (run_ctx.eval_owed). */
static int eval_line(amp_session *s, FILE *lf, int talk, int tty, char *err, size_t errlen) {
    double tl, ta;
    if (amp_session_evaluate(s, &tl, &ta, err, errlen) != 0) return -1;
    if (s->eval_stopped) return 0;
    write_eval(lf, s, tl, ta);
    if (talk && !tty)
        fprintf(stderr, "eval at step %lld: test_loss %.4f test_acc %.4f\n", (long long)s->step, tl,
                ta);
    return 0;
}

/* The evaluation a stopped run owes its checkpoint's step, before any
 * further step, so the resumed history matches a run left alone. 0, 1
 * stopped again (the checkpoint resumed from stays the newest), -1. */
static int owed_eval(amp_session *s, run_ctx *c, int talk, int tty, char *err, size_t errlen) {
    char *line = NULL;
    size_t n = 0;
    FILE *lf = open_memstream(&line, &n);
    int rc = lf ? eval_line(s, lf, talk, tty, err, errlen) : -1;
    if (lf && fclose(lf) != 0 && rc == 0) rc = -1;
    if (rc != 0 && !err[0]) snprintf(err, errlen, "out of host memory");
    if (rc == 0 && s->eval_stopped) {
        c->stop_signal = s->eval_stopped;
        rc = 1;
    } else if (rc == 0) {
        emit(c, line, n);
        c->eval_owed = 0;
    }
    free(line);
    return rc;
}

/* The training loop proper, from wherever the session stands; the result
 * files stay temporaries until the caller commits. 0 done, 1 stopped by a
 * signal (a checkpoint was written), -1 failed. */
static int run(amp_session *s, run_ctx *c, run_result *res, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    int tty = isatty(fileno(stderr)), talk = s->rank == 0;
    /* step times: bounded streaming medians, whatever the step count */
    amp_median *ms = malloc(3 * sizeof *ms), *comm = ms + 1, *cpu = ms + 2;
    if (!ms) {
        snprintf(err, errlen, "out of host memory");
        return -1;
    }
    amp_median_init(ms);
    amp_median_init(comm);
    amp_median_init(cpu);
    for (size_t i = 0; i < c->nprior; i++)
        c->losses[((size_t)s->step - c->nprior + i) % AMP_CKPT_MAX_LOSSES] = c->prior_losses[i];
    c->t0 = wall_now();
    res->load_start = load_now();
    s->stop_flag = &g_stop_signal;
    g_quiet = !talk;
    g_training = 1;
    res->device_peak = c->prior_peak;
    int rc = c->eval_owed ? owed_eval(s, c, talk, tty, err, errlen) : 0;
    amp_step_record last = {0};
    while (s->step < s->total_steps && rc == 0) {
        amp_step_record r;
        double cpu0 = cpu_now_ms();
        if ((rc = amp_session_step(s, &r, err, errlen)) != 0) break;
        double step_cpu = cpu_now_ms() - cpu0;
        amp_median_add(cpu, step_cpu);
        last = r;
        amp_median_add(comm, r.comm_ms);
        amp_median_add(ms, r.step_ms);
        c->losses[(size_t)(r.step - 1) % AMP_CKPT_MAX_LOSSES] = r.loss;
        size_t used = s->be->ops->device_bytes_used(s->be);
        if (used > res->device_peak) res->device_peak = used;
        /* The step's lines (its record, then its evaluation) are written
         * together after the step. */
        char *lines = NULL;
        size_t nlines = 0;
        FILE *lf = open_memstream(&lines, &nlines);
        if (!lf) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
            break;
        }
        if (r.step % st->log_every == 0 || r.step == s->total_steps) {
            write_metric(lf, &r, step_cpu);
            if (talk) progress(s, &r, tty);
        }
        /* Non-finite weights make every later step non-finite and skipped:
         * stop at once instead of skipping to the end. */
        if (r.skipped && !isfinite(r.loss) && amp_session_check_weights(s, err, errlen) != 0)
            rc = -1;
        if (rc == 0 && eval_due(s, r.step)) rc = eval_line(s, lf, talk, tty, err, errlen);
        int bad = fclose(lf) != 0;
        if (rc == 0 && bad) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
        }
        if (rc == 0) emit(c, lines, nlines);
        free(lines);
        if (rc != 0) break;
        /* A signal after the last step lets the run finish normally. Ranks
         * see a signal at different moments: the step's statistics carry
         * it, so they stop after the same step. A failed metrics write
         * (rank 0's alone) stops the run here, with a checkpoint that holds
         * the lines the file did not take; with several ranks rank 0 then
         * fails alone, which stops the others (amp_dist_exit). */
        c->stop_signal = s->world > 1 ? r.stop_signal : (int)g_stop_signal;
        if (s->eval_stopped > c->stop_signal) c->stop_signal = s->eval_stopped; /* agreed too */
        int stop = c->stop_signal && r.step < s->total_steps;
        /* every rank knows of these checkpoints, and agrees on how they went */
        int common = (st->checkpoint_every > 0 && r.step % st->checkpoint_every == 0) || stop;
        if (common || c->mfail[0]) {
            /* rank 0 writes; the others learn how that went */
            int wrote = s->rank == 0 ? write_checkpoint(s, c, res->device_peak, err, errlen) : 0;
            if (wrote != 0 && c->mfail[0]) { /* say both */
                char why[1024];
                snprintf(why, sizeof why, "%s", err);
                snprintf(err, errlen, "%s; then the checkpoint failed too: %s", c->mfail, why);
            }
            if (common ? agree(s->dist, wrote ? 1 : 0, err) != 0 : wrote != 0) {
                rc = -1;
                break;
            }
        }
        if (c->mfail[0]) {
            snprintf(err, errlen,
                     "%s; stopped after step %lld of %lld with checkpoint %s, which keeps the "
                     "lines that did not fit: make room, then continue with --resume %s",
                     c->mfail, (long long)r.step, (long long)s->total_steps, c->last_ckpt,
                     c->outdir);
            rc = -1;
            break;
        }
        if (stop) {
            if (talk && tty) fputc('\n', stderr);
            rc = 1;
        }
    }
    /* A run that never moved its weights, or moved them to inf/NaN, has no
     * result: exit 1 instead of reporting one. */
    if (rc == 0 && s->applied == 0) {
        snprintf(err, errlen,
                 "all %lld steps were skipped (non-finite gradients or the scaler's decision), so "
                 "the weights never moved; the last step had loss %g at scale %g: look at the "
                 "scaler's settings (a smaller initial scale) and the loss",
                 (long long)s->step, last.loss, last.scale);
        rc = -1;
    }
    if (rc == 0 && amp_session_check_weights(s, err, errlen) != 0) rc = -1;
    s->eval_stopped = 0;
    if (rc == 0) rc = amp_session_evaluate(s, &res->test_loss, &res->test_acc, err, errlen);
    if (rc == 0 && s->eval_stopped) {
        /* Stopped during the final evaluation: every step is done, and a
         * checkpoint of the last one lets --resume evaluate again and finish. */
        c->stop_signal = s->eval_stopped;
        int wrote = s->rank == 0 ? write_checkpoint(s, c, res->device_peak, err, errlen) : 0;
        rc = agree(s->dist, wrote ? 1 : 0, err) != 0 ? -1 : 1;
    }
    if (rc == 0 && !isfinite(res->test_loss)) {
        snprintf(err, errlen,
                 "the final test loss is %g: the weights are finite but the model's outputs are "
                 "not (%lld of %lld steps were skipped); lower [optim] lr or set [optim] grad_clip",
                 res->test_loss, (long long)s->skipped, (long long)s->step);
        rc = -1;
    }
    if (rc == 0) {
        char *line = NULL;
        size_t n = 0;
        FILE *lf = open_memstream(&line, &n);
        if (lf) {
            write_eval(lf, s, res->test_loss, res->test_acc);
            if (fclose(lf) != 0) n = 0;
        }
        if (!line || !n) {
            snprintf(err, errlen, "out of host memory");
            rc = -1;
        } else {
            emit(c, line, n);
        }
        free(line);
        if (rc == 0 && c->mfail[0]) {
            /* Every step is done: a checkpoint of the last one lets --resume
             * finish the run (its evaluation is logged again then). */
            c->npending = 0;
            if (write_checkpoint(s, c, res->device_peak, err, errlen) == 0)
                snprintf(err, errlen, "%s; all %lld steps are done and checkpoint %s holds the "
                         "last: make room, then finish with --resume %s",
                         c->mfail, (long long)s->step, c->last_ckpt, c->outdir);
            else {
                char why[1024];
                snprintf(why, sizeof why, "%s", err);
                snprintf(err, errlen, "%s; then the checkpoint failed too: %s", c->mfail, why);
            }
            rc = -1;
        }
    }
    if (rc == 0) {
        res->wall_s = c->prior_wall + (wall_now() - c->t0);
        int64_t tail = s->total_steps < (int64_t)AMP_CKPT_MAX_LOSSES ? s->total_steps
                                                                : (int64_t)AMP_CKPT_MAX_LOSSES;
        double sum = 0.0;
        for (int64_t i = s->total_steps - tail; i < s->total_steps; i++)
            sum += c->losses[(size_t)i % AMP_CKPT_MAX_LOSSES];
        res->final_loss = sum / (double)tail;
        /* the median of the steps this process ran (amp_median: exact up to
         * AMP_MEDIAN_KEEP steps, a uniform sample's beyond); none (a resume
         * from the last step's checkpoint): not measured, null in summary.json */
        res->median_ms = amp_median_get(ms);
        res->median_comm_ms = amp_median_get(comm);
        res->median_cpu_ms = amp_median_get(cpu);
        res->load_end = load_now();
    }
    free(ms);
    return rc;
}

/* CRC32 of the first n bytes of fd; -1 when it cannot read them all. */
static int crc_prefix(int fd, uint64_t n, uint32_t *crc) {
    static unsigned char buf[1 << 16];
    uLong c = crc32(0L, Z_NULL, 0);
    uint64_t done = 0;
    while (done < n) {
        size_t want = n - done < sizeof buf ? (size_t)(n - done) : sizeof buf;
        ssize_t got = pread(fd, buf, want, (off_t)done);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return -1;
        c = crc32(c, buf, (uInt)got);
        done += (uint64_t)got;
    }
    *crc = (uint32_t)c;
    return 0;
}

/* Sets up metrics.jsonl for a run resumed from ck: the file cut back to the
 * checkpoint's history (MPOS) and the lines the checkpoint kept (METR)
 * appended. A checkpoint from before MPOS existed carries the whole history
 * in METR. When the file does not hold the checkpoint's history (removed,
 * edited) the history restarts at the checkpoint, with a warning. 0, or -1
 * with err. */
static int resume_metrics(run_ctx *c, const amp_checkpoint *ck, char *err, size_t errlen) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", c->outdir);
    char why[256] = "";
    /* O_NOFOLLOW: a symlink planted as metrics.jsonl is never written through. */
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
        close(fd);
        fd = -1;
        snprintf(why, sizeof why, "it is not a regular file");
    } else if (fd < 0) {
        snprintf(why, sizeof why, "%s", strerror(errno));
    }
    if (ck->has_metrics_pos && fd >= 0) {
        uint32_t crc = 0;
        if ((uint64_t)st.st_size < ck->metrics_pos)
            snprintf(why, sizeof why, "it has %lld bytes, the checkpoint's history %llu",
                     (long long)st.st_size, (unsigned long long)ck->metrics_pos);
        else if (crc_prefix(fd, ck->metrics_pos, &crc) != 0)
            snprintf(why, sizeof why, "cannot read it: %s", strerror(errno));
        else if (crc != ck->metrics_crc)
            snprintf(why, sizeof why, "its first %llu bytes differ from the checkpoint's history",
                     (unsigned long long)ck->metrics_pos);
        else if (ftruncate(fd, (off_t)ck->metrics_pos) != 0 ||
                 lseek(fd, (off_t)ck->metrics_pos, SEEK_SET) < 0) {
            snprintf(err, errlen, "%s: cannot cut it back to the checkpoint: %s", path, strerror(errno));
            close(fd);
            return -1;
        } else {
            FILE *f = fdopen(fd, "r+");
            if (!f) {
                snprintf(err, errlen, "%s: %s", path, strerror(errno));
                close(fd);
                return -1;
            }
            memset(&c->metrics, 0, sizeof c->metrics);
            snprintf(c->metrics.final, sizeof c->metrics.final, "%s", path);
            c->metrics.f = f;
            c->metrics.published = 1;
            c->mlen = ck->metrics_pos;
            c->mcrc = crc;
            emit(c, ck->metrics, ck->metrics_len);
            if (c->mfail[0]) {
                snprintf(err, errlen, "%s", c->mfail);
                return -1;
            }
            return 0;
        }
    }
    /* A fresh history in a temporary, published at the first checkpoint. */
    if (amp_out_open(&c->metrics, c->outdir, "metrics.jsonl", err, errlen) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    c->mlen = 0;
    c->mcrc = (uint32_t)crc32(0L, Z_NULL, 0);
    if (ck->has_metrics_pos)
        amp_log(AMP_LOG_WARN,
                "%s does not hold this checkpoint's history (%s): its lines cannot be told from "
                "another run's, so the history starts again at step %lld and the file is replaced "
                "at the next checkpoint",
                path, why, (long long)ck->step + 1);
    if (fd >= 0) close(fd);
    emit(c, ck->metrics, ck->metrics_len);
    if (c->mfail[0]) {
        snprintf(err, errlen, "%s", c->mfail);
        return -1;
    }
    return 0;
}

/* Rank 0: the newest checkpoint in c->ckdir that reads, parses and holds
 * finite weights, restored into the session (*buf holds its bytes, caller
 * frees; *ck points into them; its path in path). A damaged checkpoint (or
 * one whose weights are not finite) is skipped with a warning; one from
 * another model, plugin, config or number of ranks is refused. Returns the
 * exit code (0 restored). */
static int pick_checkpoint(amp_session *s, run_ctx *c, const char *dir, uint8_t **buf, size_t *len,
                           amp_checkpoint *ck, char *path, size_t pathlen, char *err,
                           size_t errlen) {
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(c->ckdir, &steps, &n, err, errlen) != 0) return 1;
    size_t damaged = 0;
    for (size_t i = 0; i < n; i++) {
        char why[512];
        amp_ckpt_store_path(path, pathlen, c->ckdir, steps[i]);
        *buf = NULL;
        *len = 0;
        int lr = amp_ckpt_store_load(path, steps[i], buf, len, ck, why, sizeof why);
        if (lr == AMP_CKPT_GONE) continue; /* pruned since listed: an older one is next */
        if (lr != 0) {
            damaged++;
            amp_log(AMP_LOG_WARN, "%s: %s; %s", path, why,
                    i + 1 < n ? "trying the previous checkpoint" : "no older checkpoint left");
            continue;
        }
        char msg[1800];
        int code = amp_session_restore(s, ck, msg, sizeof msg);
        if (code == 0 && amp_session_check_weights(s, why, sizeof why) != 0) {
            /* written by an amptrain that did not check: as good as damaged */
            damaged++;
            amp_log(AMP_LOG_WARN, "%s: %s; %s", path, why,
                    i + 1 < n ? "trying the previous checkpoint" : "no older checkpoint left");
            free(*buf);
            *buf = NULL;
            continue;
        }
        if (code != 0) {
            snprintf(err, errlen, "%s: %s", path, msg);
            free(*buf);
            *buf = NULL;
        } else if (note_valid(c, steps[i], s->set.keep) != 0) {
            snprintf(err, errlen, "out of host memory");
            code = 1;
            free(*buf);
            *buf = NULL;
        }
        free(steps);
        return code;
    }
    free(steps);
    snprintf(err, errlen, "--resume %s: no valid checkpoint in %s (%zu found, all damaged; see the "
                          "warnings above)",
             dir, c->ckdir, damaged);
    return 1;
}

/* Puts the session where the newest valid checkpoint in c->ckdir stands
 * (see pick_checkpoint). Rank 0 picks it and sends the bytes to the
 * others; rank 0 alone sets up metrics.jsonl. All ranks call this. Returns
 * the exit code (0 resumed). */
/* Whether the metrics history (rank 0's, as resume_metrics left it) ends
 * with the evaluation line of `step`: its last line starts
 * {"step":<step>,"epoch":<e>,"test_loss": (write_eval). */
static int history_has_eval(const run_ctx *c, int64_t step) {
    char tail[257];
    size_t n = c->mlen < 256 ? (size_t)c->mlen : 256;
    if (!c->metrics.f || n < 2 || fflush(c->metrics.f) != 0 ||
        pread(fileno(c->metrics.f), tail, n, (off_t)(c->mlen - n)) != (ssize_t)n)
        return 0;
    tail[n - 1] = '\0'; /* the last line's newline */
    char *line = strrchr(tail, '\n');
    line = line ? line + 1 : tail;
    long long at = -1, epoch = -1;
    int used = 0;
    return sscanf(line, "{\"step\":%lld,\"epoch\":%lld,\"test_loss\":%n", &at, &epoch, &used) == 2 &&
           used > 0 && at == step;
}

static int resume(amp_session *s, run_ctx *c, const char *dir, char *err, size_t errlen) {
    uint8_t *buf = NULL;
    size_t len = 0;
    char path[PATH_MAX + 32] = "";
    amp_checkpoint ck;
    memset(&ck, 0, sizeof ck);
    int code = s->rank == 0
                   ? pick_checkpoint(s, c, dir, &buf, &len, &ck, path, sizeof path, err, errlen)
                   : 0;
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
        if (s->rank != 0) {
            snprintf(path, sizeof path, "%s (from rank 0)", c->ckdir);
            char msg[1800];
            if (amp_checkpoint_parse(buf, len, &ck, msg, sizeof msg) != 0) {
                snprintf(err, errlen, "%s: %s", path, msg);
                free(buf);
                return 1;
            }
            code = amp_session_restore(s, &ck, msg, sizeof msg);
            if (code != 0) {
                snprintf(err, errlen, "%s: %s", path, msg);
                free(buf);
                return code;
            }
        }
    }
    /* The last step's checkpoint beside summary.json (a run's last file):
     * the run is finished and its results stay as they are. */
    char done_path[PATH_MAX + 32];
    snprintf(done_path, sizeof done_path, "%s/summary.json", c->outdir);
    struct stat st;
    int complete = s->rank == 0 && s->step == s->total_steps && stat(done_path, &st) == 0 &&
                   S_ISREG(st.st_mode);
    if (s->world > 1) amp_dist_bcast(s->dist, &complete, sizeof complete, err, errlen);
    if (complete) {
        c->complete = 1;
        snprintf(c->last_ckpt, sizeof c->last_ckpt, "%s", path);
        free(buf);
        return 0;
    }
    if (s->rank == 0) {
        /* The folder now continues this checkpoint's run: results of a
         * finished run there describe another history. */
        remove_results(c->outdir);
        if (resume_metrics(c, &ck, err, errlen) != 0) {
            if (!err[0]) snprintf(err, errlen, "out of host memory");
            code = 1;
        }
        c->eval_owed = code == 0 && eval_due(s, s->step) && !history_has_eval(c, s->step);
    }
    if (s->world > 1) { /* the evaluation is collective: every rank owes it */
        int32_t owed = c->eval_owed;
        amp_dist_bcast(s->dist, &owed, sizeof owed, err, errlen);
        c->eval_owed = owed;
    }
    c->nprior = ck.nlosses;
    for (size_t k = 0; k < ck.nlosses; k++) c->prior_losses[k] = amp_ckpt_f64(ck.losses, k);
    c->prior_wall = isfinite(ck.wall_seconds) && ck.wall_seconds > 0 ? ck.wall_seconds : 0.0;
    c->prior_peak = (size_t)ck.device_peak;
    snprintf(c->last_ckpt, sizeof c->last_ckpt, "%s", path);
    if (code == 0)
        amp_log(AMP_LOG_INFO, "resuming from %s: step %lld of %lld (epoch %lld)", path,
                (long long)s->step, (long long)s->total_steps, (long long)s->batcher->epoch);
    free(buf);
    return code;
}

/* Empty paths are usage errors ("" would read as the current folder, or
 * worse). */
static int check_paths(const train_args *a) {
    const char *what = !a->config[0] ? "the config" : a->out && !a->out[0] ? "--out"
                     : a->resume && !a->resume[0] ? "--resume" : NULL;
    if (!what) return 0;
    fprintf(stderr, "amptrain train: %s is an empty string; give a path\n", what);
    return -1;
}

/* Rank 0: the output folder, locked for the whole run. Never creates the
 * folder of a run that is not there to resume, never mixes a new run's
 * checkpoints with an earlier run's, and never renames an output over a
 * file this run reads. Returns the exit code (128 + signal when stopped
 * before the first step, with err). */
static int open_outputs(const train_args *a, amp_session *s, run_ctx *c, amp_run_lock *lock,
                        char *err, size_t errlen) {
    const char *outdir = c->outdir;
    struct stat st;
    if (a->resume && (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        snprintf(err, errlen,
                 "--resume %s: no checkpoint in %s (ckpt-<step>.amp); give the output folder "
                 "of a run that had [train] checkpoint_every set or was stopped by a signal",
                 outdir, c->ckdir);
        return 2;
    }
    if (!a->resume && amp_mkdir_p(outdir, err, errlen) != 0) return 1;
    /* One process per folder, from here to the end: everything below
     * reads and writes the folder. */
    int lr = amp_run_lock_acquire(lock, outdir, "train", err, errlen);
    if (lr != 0) return lr > 0 ? 2 : 1;
    amp_tmp_remove_stale(outdir, output_names);
    /* Stopped while starting: leave the folder as it was. */
    if (g_stop_signal) {
        snprintf(err, errlen, "stopped by %s before the first step; nothing was written",
                 signal_name((int)g_stop_signal));
        return 128 + (int)g_stop_signal;
    }
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
    /* The outputs are renamed over whatever has their names: never over a
     * file this run reads. */
    char init[PATH_MAX] = "";
    if (strcmp(s->set.init, "default") != 0) amp_session_resolve_path(s, s->set.init, init, sizeof init);
    const char *inputs[] = {a->config, init[0] ? init : NULL, s->precision.path, s->scaler.path};
    if (amp_out_check_inputs(outdir, output_names, inputs, 4, err, errlen) != 0) return 2;
    return 0;
}

/* Rank 0, after the last step: the results, summary.json last, so a folder
 * holding summary.json holds a complete run. An older summary goes first,
 * so a crash in between never leaves it beside the new files. 0, or 1
 * with err. */
static int write_outputs(amp_session *s, const amp_config *cfg, run_ctx *c, const run_result *res,
                         amp_out_file *conf, amp_out_file *summary, char *err, size_t errlen) {
    char old_summary[PATH_MAX + 32], wpath[PATH_MAX + 32];
    snprintf(old_summary, sizeof old_summary, "%s/summary.json", c->outdir);
    snprintf(wpath, sizeof wpath, "%s/weights.safetensors", c->outdir);
    if (amp_out_open(conf, c->outdir, "config.ini", err, errlen) != 0 ||
        amp_out_open(summary, c->outdir, "summary.json", err, errlen) != 0)
        return 1;
    if (amp_config_write_resolved(cfg, conf->f) != 0) {
        snprintf(err, errlen, "%s: cannot write the resolved config", conf->temp);
        return 1;
    }
    write_summary(summary->f, s, res);
    if (unlink(old_summary) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "%s: cannot replace it: %s", old_summary, strerror(errno));
        return 1;
    }
    if (amp_session_save_weights(s, wpath, err, errlen) != 0) return 1;
    if (s->set.dataset == AMP_DATA_TEXT && write_vocab(s, c->outdir, err, errlen) != 0) return 1;
    if (s->set.dataset != AMP_DATA_TEXT) { /* an earlier text run's, never this run's */
        char vpath[PATH_MAX + 32];
        snprintf(vpath, sizeof vpath, "%s/vocab.json", c->outdir);
        if (unlink(vpath) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "%s: cannot remove an earlier run's vocabulary: %s", vpath,
                     strerror(errno));
            return 1;
        }
    }
    if (amp_out_commit(conf, err, errlen) || amp_out_commit(&c->metrics, err, errlen) ||
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
    int prc = parse_args(&a, argc, argv);
    if (prc != 0) return prc > 0 ? 0 : 2;
    if (check_paths(&a) != 0) return 2;
    char err[2048] = "";
    amp_config *cfg = amp_config_load(a.config, err, sizeof err);
    int code = cfg ? 0 : 2;
    for (int i = 0; code == 0 && i < a.nsets; i++)
        if (amp_config_set(cfg, a.sets[i], err, sizeof err) != 0) code = 2;
    free(a.sets);
    /* How long MPI_Init may wait for the other ranks: [dist] timeout, read
     * here already (a bad value is reported with the other settings). */
    char ignored[256];
    double join_s = 300.0;
    if (code == 0 && amp_config_get_double(cfg, "dist", "timeout", 300.0, 1.0, 1e7, &join_s,
                                           ignored, sizeof ignored) < 0)
        join_s = 300.0;
    /* Under an MPI launcher MPI starts here, and every rank runs what follows. */
    char derr[512];
    amp_dist *dist = amp_dist_init(&argc, &argv, join_s, derr, sizeof derr);
    if (!dist) {
        fprintf(stderr, "amptrain: %s\n", derr);
        amp_config_free(cfg);
        return 2;
    }
    amp_log_set_rank(amp_dist_rank(dist));
    int lead = amp_dist_rank(dist) == 0;
    amp_session *s = NULL;
    amp_out_file conf = {0}, summary = {0};
    amp_run_lock lock = {-1, ""};
    run_result res;
    memset(&res, 0, sizeof res);
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    char outdir[PATH_MAX] = "";
    ctx.outdir = outdir;
    ctx.fresh = !a.resume;
    ctx.writer = lead;
    int say_stop = 0; /* stopped before the first step: say so */
    signal_guard guard;
    signals_install(&guard);
    if (code == 0) code = amp_session_open_ex(&s, cfg, dist, err, sizeof err);
    /* Under an address-space limit, refuse now what would fail (or crash a
     * library) mid-run. */
    if (code == 0 && amp_mem_check_room(amp_mem_run_reserve(s->model->desc.nparams), err,
                                         sizeof err) != 0)
        code = 1;
    /* every rank, failed or not, at the start line before the first collective */
    amp_dist_join(dist);
    if ((code = agree(dist, code, err)) != 0) goto done;
    if ((code = agree(dist, amp_session_check_ranks(s, err, sizeof err), err)) != 0) goto done;
    if (a.resume)
        snprintf(outdir, sizeof outdir, "%s", a.resume);
    else if (a.out)
        snprintf(outdir, sizeof outdir, "%s", a.out);
    else
        snprintf(outdir, sizeof outdir, "runs/%s", s->set.name);
    snprintf(ctx.ckdir, sizeof ctx.ckdir, "%s/checkpoints", outdir);
    /* Only rank 0 touches the folder (and holds its lock). */
    code = lead ? open_outputs(&a, s, &ctx, &lock, err, sizeof err) : 0;
    if ((code = agree(dist, code, err)) != 0) {
        say_stop = code >= 128;
        goto done;
    }
    if (a.resume) {
        code = agree(dist, resume(s, &ctx, a.resume, err, sizeof err), err);
    } else {
        if (lead) {
            if (amp_out_open(&ctx.metrics, outdir, "metrics.jsonl", err, sizeof err) != 0)
                code = 1;
            else
                ctx.mcrc = (uint32_t)crc32(0L, Z_NULL, 0);
        }
        code = agree(dist, code, err);
    }
    if (code != 0) goto done;
    if (ctx.complete) {
        if (lead)
            fprintf(stderr, "amptrain: %s: the run is already complete (%s is step %lld of %lld); "
                    "its results in %s are left as they are\n", s->set.name, ctx.last_ckpt,
                    (long long)s->step, (long long)s->total_steps, outdir);
        goto done;
    }
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
    int rc = run(s, &ctx, &res, err, sizeof err);
    if (rc == 1) {
        int sig = ctx.stop_signal;
        char launch[64] = "";
        if (s->world > 1) snprintf(launch, sizeof launch, "mpirun -np %d ", s->world);
        if (lead)
            fprintf(stderr,
                    "amptrain: stopped by %s after step %lld of %lld; checkpoint %s\n"
                    "amptrain: continue with: %samptrain train %s --resume %s\n",
                    signal_name(sig), (long long)s->step, (long long)s->total_steps,
                    ctx.last_ckpt, launch, a.config, outdir);
        code = 128 + sig;
        goto done;
    }
    if (rc != 0) goto done;
    code = lead ? write_outputs(s, cfg, &ctx, &res, &conf, &summary, err, sizeof err) : 0;
    if ((code = agree(dist, code, err)) != 0) goto done;
    if (lead)
        fprintf(stderr, "amptrain: %s: test_acc %.4f test_loss %.4f, %lld steps (%lld skipped), %.1f s\n",
                s->set.name, res.test_acc, res.test_loss, (long long)s->step, (long long)s->skipped,
                res.wall_s);
done:
    if (code != 0 && (code < 128 || say_stop)) print_err(dist, err);
    /* Temporaries go; a published metrics.jsonl stays: it is the history
     * the checkpoints point into (unless the new run's first checkpoint
     * failed after publishing it: then nothing points into it). */
    if (code != 0 && ctx.fresh && ctx.metrics.published && ctx.nvalid == 0) unlink(ctx.metrics.final);
    amp_out_abort(&conf);
    amp_out_abort(&ctx.metrics);
    amp_out_abort(&summary);
    free(ctx.pending);
    free(ctx.valid);
    amp_run_lock_release(&lock);
    /* A failure of this rank alone: the others wait for it, so stop them. */
    amp_dist_exit(dist, code);
    amp_session_close(s);
    amp_config_free(cfg);
    signals_restore(&guard);
    amp_dist_finalize(dist);
    return code;
}
