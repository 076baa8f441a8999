/* The time-based checkpoint cadence ([train] checkpoint_minutes): a long
 * run checkpoints every few minutes by default, so a crash or `kill -9`
 * loses minutes of training, whatever its steps take. */
#ifndef AMP_CKPT_CLOCK_H
#define AMP_CKPT_CLOCK_H

#include <stddef.h>

#include "session.h"

/* After a step (every rank calls it, in step): 1 when checkpoint_minutes
 * have passed since `last` (amp_clock_s of the last checkpoint, or of the
 * start) and steps remain, else 0. Rank 0's clock decides and the others
 * are told, so all write the same checkpoints. -1 with err when that
 * broadcast failed. */
int amp_ckpt_clock_due(amp_session *s, double last, char *err, size_t errlen);

#endif
