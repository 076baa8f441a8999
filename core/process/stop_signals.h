/* Stop signals of a training run: SIGINT, SIGTERM, SIGHUP (a closed
 * terminal) and SIGPIPE (`train ... | head -1`) are remembered, and the
 * trainer acts on them after the current step (a checkpoint, then exit
 * 128 + signal). A second stop signal stops the process at once, after
 * removing the temporaries it was writing; a repeated SIGPIPE never does.
 * One set of handlers per process: install before the session opens,
 * restore at the end. */
#ifndef AMP_STOP_SIGNALS_H
#define AMP_STOP_SIGNALS_H

#include <signal.h>

typedef struct amp_stop_guard {
    struct sigaction old[4], old_xfsz;
} amp_stop_guard;

/* Installs the handlers (and ignores SIGXFSZ, so a file-size limit fails
 * a write with EFBIG instead of killing a checkpoint), clearing any
 * earlier stop; an install inside another (the trainer's inside the CLI
 * start-up's, startup.h) keeps a stop already received. */
void amp_stop_signals_install(amp_stop_guard *g);
void amp_stop_signals_restore(const amp_stop_guard *g);

/* Records sig as the first stop, received before this process image (the
 * start-up restart carries it): the run then stops as it would on sig. */
void amp_stop_signals_carry(int sig);

/* The first stop signal's number, 0 while none came; set asynchronously
 * (for amp_session.stop_flag). */
const volatile sig_atomic_t *amp_stop_flag(void);

/* What the first signal's message says: training (a stop then
 * checkpoints) or still starting; quiet: this process does not speak for
 * the run (a rank other than 0). */
void amp_stop_signals_training(int training, int quiet);

/* "SIGINT", ..., "a signal". */
const char *amp_signal_name(int sig);

#endif
