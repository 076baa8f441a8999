/* What `amptrain ab` prints on stderr as its runs go. Off a terminal (a log
 * file, a pipe): a line per run, "[k/n] ARM seed S ... " when it starts and
 * its result when it ends ("test_acc A test_loss L (T s)" for a classifier,
 * "val_loss L (T s)" for a language model), as it always was. On a terminal
 * the same line once the run has ended, and below it one live line,
 * redrawn each second: the run (k/n, arm, seed), its step (read from its
 * train.log), its time, the study's elapsed time and its ETA. The ETA is
 * estimated from the finished runs' wall times: each run not yet finished
 * counts its arm's mean (an arm with none: the mean of every finished run),
 * less what the current run has taken; before any run has finished, from
 * the current run's pace over its steps. */
#ifndef AMP_AB_PROGRESS_H
#define AMP_AB_PROGRESS_H

#include <limits.h>
#include <stdint.h>

#include "ab/ab.h"

typedef struct amp_ab_progress {
    int tty, drawn;             /* stderr is a terminal; the live line is on it */
    int narms, nseeds, k;       /* k: the current run's number, from 1 */
    int arm;                    /* the current run's arm */
    const char *name;           /* its name */
    uint64_t seed;
    char log[PATH_MAX + 16];    /* its train.log */
    int log_ready;              /* the run has started it (a log of an earlier study is stale) */
    double t_study, t_run, last_draw;
    double wall_sum[AMP_AB_MAX_ARMS]; /* finished runs' wall seconds, per arm */
    int finished[AMP_AB_MAX_ARMS], started[AMP_AB_MAX_ARMS];
} amp_ab_progress;

/* Before the first run of a study of narms x nseeds runs. */
void amp_ab_progress_start(amp_ab_progress *p, int narms, int nseeds);

/* Run k+1 starts: arm `arm` (named name) with seed, its files in dir. */
void amp_ab_progress_run(amp_ab_progress *p, int arm, const char *name, uint64_t seed,
                         const char *dir);

/* While the run goes (called about once a second): redraws the live line. */
void amp_ab_progress_tick(amp_ab_progress *p);

/* The run ended and was read back into r. */
void amp_ab_progress_done(amp_ab_progress *p, const amp_ab_run *r);

/* The run failed (its reason follows on stderr). */
void amp_ab_progress_failed(amp_ab_progress *p);

#endif
