#include "host_trips.h"

#include <stdlib.h>

#include "io/json.h"

int amp_host_trips_fwd_bwd(amp_host_trips **t, amp_model *m, const amp_forward_args *fa,
                           const amp_backward_args *ba) {
    amp_backend *be = m->be;
    if (!*t) {
        *t = calloc(1, sizeof **t);
        if (!*t) {
            snprintf(be->err, sizeof be->err, "out of host memory");
            return 1;
        }
        amp_median_init(&(*t)->per_step);
    }
    unsigned long long before = be->host_round_trips;
    int rc = m->ops->forward(m, fa);
    if (rc == 0) rc = m->ops->backward(m, ba);
    (*t)->step += be->host_round_trips - before;
    return rc;
}

void amp_host_trips_step_end(amp_host_trips *t) {
    if (!t) return;
    amp_median_add(&t->per_step, (double)t->step);
    if (t->step > t->max) t->max = t->step;
    t->step = 0;
}

void amp_host_trips_json(FILE *f, amp_host_trips *t) {
    uint64_t steps = t ? t->per_step.seen : 0;
    fputs(", \"host_round_trips_per_step\": {\"median\": ", f);
    if (steps) amp_json_num(f, amp_median_get(&t->per_step));
    else fputs("null", f);
    if (steps) fprintf(f, ", \"max\": %llu", t->max);
    else fputs(", \"max\": null", f);
    fprintf(f, ", \"steps_counted\": %llu}", (unsigned long long)steps);
}
