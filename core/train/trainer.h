/* The training loop: steps from wherever the session stands to its last,
 * with the evaluations, metrics.jsonl, checkpoints (cadence, pruning,
 * resume), the non-finite checks, stop signals and, with several ranks,
 * the agreement that ends all ranks together; then the final evaluation,
 * summary.json and the weights. `amptrain train` parses its options and
 * calls amp_train; a benchmark or a test runs a session it opened through
 * the same loop with amp_train_session, watching each step with a hook. */
#ifndef AMP_TRAINER_H
#define AMP_TRAINER_H

#include <stddef.h>

#include "session.h"
#include "train_summary.h"

typedef struct amp_train_hooks {
    void *user;
    /* After each step, before its evaluation and checkpoint: the step's
     * record and the process CPU time it took. 0 goes on; nonzero fails
     * the run with err. NULL: nothing watches. */
    int (*on_step)(void *user, amp_session *s, const amp_step_record *r, double cpu_ms,
                   char *err, size_t errlen);
} amp_train_hooks;

typedef struct amp_train_opts {
    const char *config_path;  /* the config file as given: messages, never written over */
    const char *out;          /* the output folder; NULL: runs/<[run] name> */
    const char *resume;       /* continue the run in this folder; NULL: a new run */
    int *argc;                /* main's, for MPI_Init under a launcher */
    char ***argv;
    amp_train_hooks hooks;
} amp_train_opts;

/* The whole run of a parsed config (cfg stays the caller's; NULL with
 * code 2 and err when it did not load: every rank still starts, so all
 * fail together). Starts MPI under a launcher ([dist] timeout bounds the
 * wait for the other ranks), installs the stop-signal handlers, opens the
 * session, locks and fills the output folder, trains. Prints what went
 * wrong (rank 0's message) and returns the exit code: 0, 1 runtime, 2
 * config, 128 + signal when a stop signal ended it (with a checkpoint). */
int amp_train(const amp_train_opts *o, amp_config *cfg, int code, char *err, size_t errlen);

/* The same loop over an open session, without a folder: no metrics file,
 * no checkpoints, no signal handlers (s->stop_flag as the caller set it),
 * no progress output; the evaluations at their cadence, the non-finite
 * checks and the final evaluation as in a run. 0 with res filled, 1
 * stopped by *s->stop_flag, -1 with err. */
int amp_train_session(amp_session *s, const amp_train_hooks *h, amp_train_result *res, char *err,
                      size_t errlen);

#endif
