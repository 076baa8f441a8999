/* The training loop of `amptrain train` (see trainer.h): outputs in DIR
 * (config.ini, metrics.jsonl with its views metrics.csv and, under [run]
 * tensorboard, tensorboard/: metrics/views.h; summary.json,
 * weights.safetensors), each written under a unique temporary name and
 * renamed into place,
 * summary.json last, so a failed run leaves none of them half-written;
 * metrics.jsonl is also the run's history once it has a checkpoint (see
 * run_ctx). The folder is locked for the whole run (io/run_lock.h), and no
 * output is renamed over an input. Checkpoints go to DIR/checkpoints every
 * [train] checkpoint_every steps, checkpoint_minutes (ckpt_clock.h) and on
 * a stop signal (stop_signals.h); a resume continues from the newest valid
 * one. Under mpirun
 * (core/dist/) every rank trains; rank 0 alone takes the folder's lock,
 * reads checkpoints (it broadcasts the bytes), prints progress and writes
 * the outputs and checkpoints; failures and stop signals are agreed so
 * all ranks end together. */
#include "trainer.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "ckpt_clock.h"
#include "util/clock.h"
#include "io/checkpoint_file.h"
#include "io/checkpoint_store.h"
#include "io/file.h"
#include "util/out_file.h"
#include "io/run_lock.h"
#include "util/log.h"
#include "train/metrics/lines.h"
#include "train/metrics/views.h"
#include "util/median.h"
#include "process/mem_limit.h"
#include "resume_config.h"
#include "process/stop_signals.h"
#include "scaled_state.h"
#include "train_progress.h"
#include "train_summary.h"

/* The 1-minute load average, NAN where the system has none. */
static double load_now(void) {
    double l[1];
    return getloadavg(l, 1) == 1 ? l[0] : NAN;
}

/* The outputs besides checkpoints/, written at the end (metrics.jsonl
 * also as the run goes); their dead writers' temporaries are removed when
 * the folder is locked. */
static const char *const output_names[] = {"config.ini", "metrics.jsonl", "metrics.csv",
                                           "summary.json", "weights.safetensors", NULL};

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

/* What the loop needs beyond the session. metrics.jsonl is the run's
 * history: a new run writes it under a temporary name until its first
 * checkpoint publishes it (renames it into place, replacing an earlier
 * run's files), then appends in place. Each checkpoint records its length
 * and CRC (MPOS), so a resume cuts it back to exactly that history. Lines
 * a failed write did not take stay in `pending`, stored in the checkpoint
 * (METR) that the failure forces. */
typedef struct run_ctx {
    amp_out_file metrics;
    amp_views views;         /* metrics.csv and TensorBoard's file, fed what metrics gets */
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
    double t0, ckpt_t;       /* the start; the last checkpoint (amp_clock_s) */
    /* the last AMP_CKPT_MAX_LOSSES step losses (checkpoints and the final
     * loss need no more), step i at [i % AMP_CKPT_MAX_LOSSES]: nothing here
     * grows with [train] steps */
    double losses[AMP_CKPT_MAX_LOSSES];
    char last_ckpt[PATH_MAX + 32];
    int stop_signal;         /* the signal all ranks agreed to stop on */
    int complete;            /* --resume of a finished run: nothing to do */
    int eval_owed;           /* resumed from a checkpoint whose step's evaluation a
                              * signal cut short: it runs first */
    amp_train_hooks hooks;
    amp_progress prog;       /* stderr: lines, or a live line on a terminal */
} run_ctx;

/* Appends text to the metrics file, or to `pending` once a write failed
 * (rank 0; a no-op on the other ranks). */
static void emit(run_ctx *c, const char *text, size_t n) {
    if (n == 0 || !c->writer) return; /* other ranks write no metrics */
    if (!c->mfail[0]) {
        int fd = fileno(c->metrics.f);
        if (amp_write_full(fd, text, n) != 0)
            snprintf(c->mfail, sizeof c->mfail, "%s: cannot write: %s", c->metrics.final,
                     strerror(errno));
        else if (amp_views_add(&c->views, text, n, c->mfail, sizeof c->mfail) == 0) {
            c->mlen += n;
            c->mcrc = (uint32_t)crc32(c->mcrc, (const Bytef *)text, (uInt)n);
            return;
        }
        /* Drop what part of it got out (all of it when a view failed: the
         * lines stay in step); the checkpoint keeps the line. */
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
        return amp_out_publish(&c->metrics, err, errlen) ||
               amp_views_publish(&c->views, err, errlen) ? -1 : 0;
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

/* DIR/<beside>: what the data writes beside the outputs (dataset.h: the
 * text run's vocabulary, so `amptrain sample` can decode), beside the
 * checkpoints too, for a run that has not finished. */
static int write_beside(const amp_session *s, const char *dir, char *err, size_t errlen) {
    const amp_data_kind *k = s->data_ops;
    if (!k->beside) return 0;
    amp_out_file v = {0};
    if (amp_out_open(&v, dir, k->beside, err, errlen) != 0) return -1;
    if (k->write_beside(&s->data, v.f) != 0) {
        amp_out_abort(&v);
        snprintf(err, errlen, "%s: cannot write", v.temp);
        return -1;
    }
    return amp_out_commit(&v, err, errlen);
}

/* The files other data kinds write beside the outputs: an earlier run's,
 * never this run's. */
static int remove_other_beside(const amp_session *s, const char *dir, char *err, size_t errlen) {
    for (const amp_data_kind *const *k = amp_data_kinds(); *k; k++) {
        const char *mine = s->data_ops->beside, *theirs = (*k)->beside;
        if (!theirs || (mine && strcmp(mine, theirs) == 0)) continue;
        char path[PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", dir, theirs);
        if (unlink(path) != 0 && errno != ENOENT) {
            snprintf(err, errlen, "%s: cannot remove an earlier run's file: %s", path,
                     strerror(errno));
            return -1;
        }
    }
    return 0;
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
    ck.wall_seconds = c->prior_wall + (amp_clock_s() - c->t0);
    ck.device_peak = device_peak;
    if (amp_checkpoint_encode(&ck, &buf, &len, err, errlen) != 0) goto done;
    if (metrics_durable(c, err, errlen) != 0) goto done;
    if (amp_ckpt_store_write(c->ckdir, s->step, buf, len, err, errlen) != 0) goto done;
    if (write_beside(s, c->ckdir, err, errlen) != 0) goto done;
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
static int eval_line(amp_session *s, run_ctx *c, FILE *lf, char *err, size_t errlen) {
    double tl, ta;
    if (amp_session_evaluate(s, &tl, &ta, err, errlen) != 0) return -1;
    if (s->eval_stopped) return 0;
    amp_metrics_eval_line(lf, s->step, s->batcher->epoch, tl, ta);
    amp_progress_eval(&c->prog, s, tl, ta);
    return 0;
}

/* The evaluation a stopped run owes its checkpoint's step, before any
 * further step, so the resumed history matches a run left alone. 0, 1
 * stopped again (the checkpoint resumed from stays the newest), -1. */
static int owed_eval(amp_session *s, run_ctx *c, char *err, size_t errlen) {
    char *line = NULL;
    size_t n = 0;
    FILE *lf = open_memstream(&line, &n);
    int rc = lf ? eval_line(s, c, lf, err, errlen) : -1;
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
static int run(amp_session *s, run_ctx *c, amp_train_result *res, char *err, size_t errlen) {
    const amp_settings *st = &s->set;
    int talk = s->rank == 0 && c->outdir;
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
    c->ckpt_t = c->t0 = amp_clock_s();
    res->load_start = load_now();
    if (c->outdir) { /* a run of its own: the process's stop signals stop it */
        s->stop_flag = amp_stop_flag();
        amp_stop_signals_training(1, !talk);
    }
    res->device_peak = c->prior_peak;
    amp_progress_start(&c->prog, s, talk, c->prior_wall);
    int rc = c->eval_owed ? owed_eval(s, c, err, errlen) : 0;
    amp_step_record last = {0};
    uint64_t sent[2] = {0, 0}; /* the last applied step's gradient and weight bytes */
    while (s->step < s->total_steps && rc == 0) {
        amp_step_record r;
        double cpu0 = amp_cpu_ms();
        if ((rc = amp_session_step(s, &r, err, errlen)) != 0) break;
        double step_cpu = amp_cpu_ms() - cpu0;
        amp_median_add(cpu, step_cpu);
        last = r;
        if (!r.skipped) {
            sent[0] = amp_dist_grads_sent(s->grads);
            sent[1] = s->weights_sent;
        }
        amp_median_add(comm, r.comm_ms);
        amp_median_add(ms, r.step_ms);
        c->losses[(size_t)(r.step - 1) % AMP_CKPT_MAX_LOSSES] = r.loss;
        size_t used = s->be->ops->device_bytes_used(s->be);
        if (used > res->device_peak) res->device_peak = used;
        if (c->hooks.on_step &&
            (rc = c->hooks.on_step(c->hooks.user, s, &r, step_cpu, err, errlen)) != 0) {
            rc = -1;
            break;
        }
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
        int logged = r.step % st->log_every == 0 || r.step == s->total_steps;
        if (logged) amp_metrics_step_line(lf, &r, step_cpu, s->scaled);
        amp_progress_step(&c->prog, s, &r, logged);
        /* Non-finite weights make every later step non-finite and skipped:
         * stop at once instead of skipping to the end. */
        if (r.skipped && !isfinite(r.loss) &&
            (amp_session_gather_optim(s, err, errlen) != 0 ||
             amp_session_check_weights(s, err, errlen) != 0))
            rc = -1;
        if (rc == 0 && eval_due(s, r.step)) rc = eval_line(s, c, lf, err, errlen);
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
        c->stop_signal = s->world > 1 ? r.stop_signal : s->stop_flag ? (int)*s->stop_flag : 0;
        if (s->eval_stopped > c->stop_signal) c->stop_signal = s->eval_stopped; /* agreed too */
        int stop = c->stop_signal && r.step < s->total_steps;
        int timed = c->outdir ? amp_ckpt_clock_due(s, c->ckpt_t, err, errlen) : 0;
        if ((rc = timed < 0 ? -1 : 0) != 0) break;
        /* every rank knows of these checkpoints, and agrees on how they went */
        int common = c->outdir && ((st->checkpoint_every > 0 && r.step % st->checkpoint_every == 0) ||
                                   stop || timed);
        if (common) c->ckpt_t = amp_clock_s();
        /* sharded moments: every rank sends its part before rank 0 writes */
        if (common && amp_session_gather_optim(s, err, errlen) != 0) return -1;
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
            amp_progress_end(&c->prog);
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
    /* every rank's memory and traffic, for rank 0's summary.json */
    if (rc == 0 && c->outdir && amp_train_gather_ranks(s, res, sent, err, errlen) != 0) rc = -1;
    /* sharded: the masters whole on every rank, for the check and the weights file */
    if (rc == 0 && (amp_session_gather_optim(s, err, errlen) != 0 ||
                    amp_session_check_weights(s, err, errlen) != 0))
        rc = -1;
    s->eval_stopped = 0;
    if (rc == 0) rc = amp_session_evaluate(s, &res->test_loss, &res->test_acc, err, errlen);
    if (rc == 0 && s->eval_stopped) {
        /* Stopped during the final evaluation: every step is done, and a
         * checkpoint of the last one lets --resume evaluate again and finish. */
        c->stop_signal = s->eval_stopped;
        if (c->outdir && amp_session_gather_optim(s, err, errlen) != 0) return -1;
        int wrote = s->rank == 0 && c->outdir
                        ? write_checkpoint(s, c, res->device_peak, err, errlen) : 0;
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
            amp_metrics_eval_line(lf, s->step, s->batcher->epoch, res->test_loss, res->test_acc);
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
        res->wall_s = c->prior_wall + (amp_clock_s() - c->t0);
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
    amp_progress_end(&c->prog); /* a failure's message on a line of its own */
    free(ms);
    return rc;
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
        else if (amp_file_crc_prefix(fd, ck->metrics_pos, &crc) != 0)
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
            /* the views anew from the history kept, published at once as it is */
            if (amp_views_open(&c->views, c->outdir, err, errlen) != 0 ||
                amp_views_replay(&c->views, fd, c->mlen, err, errlen) != 0 ||
                amp_views_publish(&c->views, err, errlen) != 0)
                return -1;
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
    if (amp_views_open(&c->views, c->outdir, err, errlen) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
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
 * {"step":<step>,"epoch":<e>,"test_loss": (amp_metrics_eval_line). */
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

static int no_checkpoint(const run_ctx *c, char *err, size_t errlen) {
    snprintf(err, errlen, "--resume %s: no checkpoint in %s (ckpt-<step>.amp); give the output "
             "folder of a run that wrote one (a signal or [train] checkpoint_every or "
             "checkpoint_minutes)", c->outdir, c->ckdir);
    return 2;
}

/* Rank 0: the output folder, locked for the whole run. Never creates the
 * folder of a run that is not there to resume, never mixes a new run's
 * checkpoints with an earlier run's, and never renames an output over a
 * file this run reads. Returns the exit code (128 + signal when stopped
 * before the first step, with err). */
static int open_outputs(const amp_train_opts *a, amp_session *s, run_ctx *c, amp_run_lock *lock,
                        char *err, size_t errlen) {
    const char *outdir = c->outdir;
    struct stat st;
    if (a->resume && (stat(outdir, &st) != 0 || !S_ISDIR(st.st_mode))) {
        return no_checkpoint(c, err, errlen);
    }
    if (!a->resume && amp_mkdir_p(outdir, err, errlen) != 0) return 1;
    /* One process per folder, from here to the end: everything below
     * reads and writes the folder. */
    int lr = amp_run_lock_acquire(lock, outdir, "train", err, errlen);
    if (lr != 0) return lr > 0 ? 2 : 1;
    amp_tmp_remove_stale(outdir, output_names);
    /* Stopped while starting: leave the folder as it was. */
    int sig = (int)*amp_stop_flag();
    if (sig) {
        snprintf(err, errlen, "stopped by %s before the first step; nothing was written",
                 amp_signal_name(sig));
        return 128 + sig;
    }
    int64_t *steps = NULL;
    size_t n = 0;
    if (amp_ckpt_store_list(c->ckdir, &steps, &n, err, errlen) != 0) return 1;
    free(steps);
    if (a->resume && n == 0) {
        return no_checkpoint(c, err, errlen);
    }
    if (!a->resume && n > 0) {
        char again[4 * PATH_MAX];
        amp_resume_command(again, sizeof again, s->world, outdir);
        snprintf(err, errlen, "%s holds %zu checkpoint%s of an earlier run: continue it with `%s`, "
                 "or delete %s to start over", c->ckdir, n, n == 1 ? "" : "s", again, c->ckdir);
        return 2;
    }
    /* The outputs are renamed over whatever has their names: never over a
     * file this run reads. */
    char init[PATH_MAX] = "";
    if (strcmp(s->set.init, "default") != 0) amp_session_resolve_path(s, s->set.init, init, sizeof init);
    const char *inputs[] = {a->config_path, init[0] ? init : NULL, s->precision.path, s->scaler.path};
    if (amp_out_check_inputs(outdir, output_names, inputs, 4, err, errlen) != 0) return 2;
    return 0;
}

/* Rank 0, after the last step: the results, summary.json last, so a folder
 * holding summary.json holds a complete run. An older summary goes first,
 * so a crash in between never leaves it beside the new files. 0, or 1
 * with err. */
static int write_outputs(amp_session *s, const amp_config *cfg, run_ctx *c, const amp_train_result *res,
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
    amp_train_write_summary(summary->f, s, res);
    if (unlink(old_summary) != 0 && errno != ENOENT) {
        snprintf(err, errlen, "%s: cannot replace it: %s", old_summary, strerror(errno));
        return 1;
    }
    if (amp_session_save_weights(s, wpath, err, errlen) != 0) return 1;
    if (write_beside(s, c->outdir, err, errlen) != 0 ||
        remove_other_beside(s, c->outdir, err, errlen) != 0)
        return 1;
    if (amp_out_commit(conf, err, errlen) || amp_out_commit(&c->metrics, err, errlen) ||
        amp_views_commit(&c->views, err, errlen) || amp_out_commit(summary, err, errlen))
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

int amp_train(const amp_train_opts *o, amp_config *cfg, int code, char *err, size_t errlen) {
    /* How long MPI_Init may wait for the other ranks: [dist] timeout, read
     * here already (a bad value is reported with the other settings). */
    char ignored[256];
    double join_s = 300.0;
    if (code == 0 && amp_config_get_double(cfg, "dist", "timeout", 300.0, 1.0, 1e7, &join_s,
                                           ignored, sizeof ignored) < 0)
        join_s = 300.0;
    /* Under an MPI launcher MPI starts here, and every rank runs what follows. */
    char derr[512];
    amp_dist *dist = amp_dist_init(o->argc, o->argv, join_s, derr, sizeof derr);
    if (!dist) {
        fprintf(stderr, "amptrain: %s\n", derr);
        return 2;
    }
    amp_log_set_rank(amp_dist_rank(dist));
    int lead = amp_dist_rank(dist) == 0;
    amp_session *s = NULL;
    amp_out_file conf = {0}, summary = {0};
    amp_run_lock lock = {-1, ""};
    amp_train_result res;
    memset(&res, 0, sizeof res);
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    char outdir[PATH_MAX] = "";
    ctx.outdir = outdir;
    ctx.fresh = !o->resume;
    ctx.hooks = o->hooks;
    ctx.writer = lead;
    int say_stop = 0; /* stopped before the first step: say so */
    amp_stop_guard guard;
    amp_stop_signals_install(&guard);
    if (code == 0) code = amp_session_open_ex(&s, cfg, dist, err, errlen);
    /* Under an address-space limit, refuse now what would fail (or crash a
     * library) mid-run. */
    if (code == 0 && amp_mem_check_room(amp_mem_run_reserve(s->model->desc.nparams), err,
                                         errlen) != 0)
        code = 1;
    /* every rank, failed or not, at the start line before the first collective */
    amp_dist_join(dist);
    if ((code = agree(dist, code, err)) != 0) goto done;
    if ((code = agree(dist, amp_session_check_ranks(s, err, errlen), err)) != 0) goto done;
    ctx.views.tensorboard = s->set.tensorboard;
    if (o->resume)
        snprintf(outdir, sizeof outdir, "%s", o->resume);
    else if (o->out)
        snprintf(outdir, sizeof outdir, "%s", o->out);
    else
        snprintf(outdir, sizeof outdir, "runs/%s", s->set.name);
    snprintf(ctx.ckdir, sizeof ctx.ckdir, "%s/checkpoints", outdir);
    /* Only rank 0 touches the folder (and holds its lock). */
    code = lead ? open_outputs(o, s, &ctx, &lock, err, errlen) : 0;
    if ((code = agree(dist, code, err)) != 0) {
        say_stop = code >= 128;
        goto done;
    }
    if (o->resume) {
        code = agree(dist, resume(s, &ctx, o->resume, err, errlen), err);
    } else {
        if (lead) {
            if (amp_out_open(&ctx.metrics, outdir, "metrics.jsonl", err, errlen) != 0 ||
                amp_views_open(&ctx.views, outdir, err, errlen) != 0)
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
    if (s->world > 1) {
        /* The threads per rank are said because bit equality with another rank
         * count holds only at equal thread counts (docs/data-parallel.md). */
        char per_rank[48] = "";
        if (s->be->info.threads > 0)
            snprintf(per_rank, sizeof per_rank, " x %d thread(s)", s->be->info.threads);
        amp_log(AMP_LOG_INFO, "%s: %s + %s scaler on %d ranks%s (%s, gradients as %s), "
                "%lld steps (%lld per epoch), output in %s", s->set.name, s->precision.entry->name,
                s->scaler.entry->name, s->world, per_rank, s->be->ops->name,
                s->set.dist_grad_bf16 ? "bf16" : "f32", (long long)s->total_steps,
                (long long)s->steps_per_epoch, outdir);
    } else
        amp_log(AMP_LOG_INFO, "%s: %s + %s scaler on %s, %lld steps (%lld per epoch), output in %s",
                s->set.name, s->precision.entry->name, s->scaler.entry->name, s->be->ops->name,
                (long long)s->total_steps, (long long)s->steps_per_epoch, outdir);
    int rc = run(s, &ctx, &res, err, errlen);
    if (rc == 1) {
        int sig = ctx.stop_signal;
        char again[4 * PATH_MAX]; /* the checkpoint holds the config, --set's included */
        amp_resume_command(again, sizeof again, s->world, outdir);
        if (lead)
            fprintf(stderr,
                    "amptrain: stopped by %s after step %lld of %lld; checkpoint %s\n"
                    "amptrain: continue with: %s\n",
                    amp_signal_name(sig), (long long)s->step, (long long)s->total_steps,
                    ctx.last_ckpt, again);
        code = 128 + sig;
        goto done;
    }
    if (rc != 0) goto done;
    code = lead ? write_outputs(s, cfg, &ctx, &res, &conf, &summary, err, errlen) : 0;
    if ((code = agree(dist, code, err)) != 0) goto done;
    if (lead) amp_progress_final(s, res.test_loss, res.test_acc, res.wall_s);
done:
    if (code != 0 && (code < 128 || say_stop)) print_err(dist, err);
    /* Temporaries go; a published metrics.jsonl stays: it is the history
     * the checkpoints point into (unless the new run's first checkpoint
     * failed after publishing it: then nothing points into it). */
    if (code != 0 && ctx.fresh && ctx.metrics.published && ctx.nvalid == 0) {
        unlink(ctx.metrics.final);
        amp_views_remove(&ctx.views);
    }
    amp_out_abort(&conf);
    amp_out_abort(&ctx.metrics);
    amp_views_abort(&ctx.views);
    amp_out_abort(&summary);
    free(ctx.pending);
    free(ctx.valid);
    free(res.per_rank);
    amp_run_lock_release(&lock);
    /* A failure of this rank alone: the others wait for it, so stop them. */
    amp_dist_exit(dist, code);
    amp_session_close(s);
    amp_stop_signals_restore(&guard);
    amp_dist_finalize(dist);
    return code;
}

int amp_train_session(amp_session *s, const amp_train_hooks *h, amp_train_result *res, char *err,
                      size_t errlen) {
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    if (h) ctx.hooks = *h;
    memset(res, 0, sizeof *res);
    int rc = run(s, &ctx, res, err, errlen);
    free(ctx.pending);
    return rc;
}
