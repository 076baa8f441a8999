/* What `amptrain train` prints on stderr as a run goes. Off a terminal
 * (log files, pipes): a line per logged step and one per evaluation, as
 * they always were. On a terminal: one live line, redrawn in place (at
 * most 10 times a second, and at the last step), with the step, the loss,
 * the last evaluation, ms per step, samples (or tokens) per second, the
 * elapsed time and the ETA; each evaluation printed above it. */
#ifndef AMP_TRAIN_PROGRESS_H
#define AMP_TRAIN_PROGRESS_H

#include "session.h"

typedef struct amp_progress {
    int talk, tty;           /* prints at all (rank 0 of a run); stderr is a terminal */
    int drawn;               /* the live line is on the screen, without its newline */
    double t0, prior_s;      /* this process's start; training seconds before a resume */
    double last_draw;        /* amp_clock_s of the last redraw */
    int64_t step0;           /* the step this process started from */
    int64_t eval_step;       /* the last evaluation's step, -1 none */
    double eval_loss;
} amp_progress;

/* Before the first step (talk 0: prints nothing). */
void amp_progress_start(amp_progress *p, const amp_session *s, int talk, double prior_s);

/* After step r; logged: the step has a metrics line (log_every). */
void amp_progress_step(amp_progress *p, const amp_session *s, const amp_step_record *r,
                       int logged);

/* An evaluation at the session's step. */
void amp_progress_eval(amp_progress *p, const amp_session *s, double loss, double acc);

/* The line a finished run ends with: "amptrain: NAME: test_acc A test_loss
 * L, ..." (a classifier) or "amptrain: NAME: val_loss L, ..." (a language
 * model), the steps, the skipped steps and the training seconds. */
void amp_progress_final(const amp_session *s, double loss, double acc, double wall_s);

/* A duration as the live lines show it: "1h02m", "3m07s", "12s". */
void amp_progress_duration(char *out, size_t n, double sec);

/* Ends the live line (a stop before the last step). */
void amp_progress_end(amp_progress *p);

#endif
