/* The time-based checkpoint cadence (ckpt_clock.h). */
#include "ckpt_clock.h"

#include <stdint.h>

#include "util/clock.h"

int amp_ckpt_clock_due(amp_session *s, double last, char *err, size_t errlen) {
    double every = s->set.checkpoint_minutes * 60.0;
    if (every <= 0 || s->step >= s->total_steps) return 0;
    int32_t due = s->rank == 0 && amp_clock_s() - last >= every;
    if (s->world > 1 && amp_dist_bcast(s->dist, &due, sizeof due, err, errlen) != 0) return -1;
    return due ? 1 : 0;
}
