/* Progress on stderr (train_progress.h). */
#include "train_progress.h"

#include <stdio.h>

void amp_train_progress(const amp_session *s, const amp_step_record *r, int tty) {
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
