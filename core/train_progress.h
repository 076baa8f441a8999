/* What `amptrain train` prints on stderr as a run goes: a step's line off
 * a terminal (log files, pipes), one line redrawn in place on a terminal. */
#ifndef AMP_TRAIN_PROGRESS_H
#define AMP_TRAIN_PROGRESS_H

#include "session.h"

/* The progress after step r (at the log_every cadence); tty: stderr is a
 * terminal. */
void amp_train_progress(const amp_session *s, const amp_step_record *r, int tty);

#endif
