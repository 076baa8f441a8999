/* Trainer hooks (core/train/trainer.h) the tests share. */
#ifndef AMP_TEST_TRAIN_HOOKS_H
#define AMP_TEST_TRAIN_HOOKS_H

#include "train/trainer.h"

/* Keeps each step's training loss: loss[step - 1], for steps 1..n. */
typedef struct loss_log {
    double *loss;
    int64_t n;
} loss_log;

static inline int keep_loss(void *user, amp_session *s, const amp_step_record *r, double cpu_ms,
                            char *err, size_t errlen) {
    (void)s;
    (void)cpu_ms;
    loss_log *l = user;
    if (r->step < 1 || r->step > l->n) {
        snprintf(err, errlen, "step %lld is past the %lld the test expected", (long long)r->step,
                 (long long)l->n);
        return -1;
    }
    l->loss[r->step - 1] = r->loss;
    return 0;
}

/* Trains s through the trainer's loop, as `amptrain train` runs it, keeping
 * each of its `steps` steps' loss in loss[]; the final evaluation in res.
 * 0, or -1 with err. */
static inline int train_keeping_losses(amp_session *s, double *loss, int64_t steps,
                                       amp_train_result *res, char *err, size_t errlen) {
    loss_log losses = {loss, steps};
    amp_train_hooks hooks = {&losses, keep_loss};
    if (amp_train_session(s, &hooks, res, err, errlen) != 0) return -1;
    if (s->step != steps) {
        snprintf(err, errlen, "ran %lld steps, not %lld", (long long)s->step, (long long)steps);
        return -1;
    }
    return 0;
}

#endif
