/* Host round trips inside forward/backward, step by step: the backend's
 * counter (amp_backend.host_round_trips) read around the model's forward
 * and backward of every micro-batch, so the loss and skip-decision
 * download after them (and the batch upload before) do not count.
 * summary.json reports the median and the largest count over the steps
 * (backend.host_round_trips_per_step). */
#ifndef AMP_HOST_TRIPS_H
#define AMP_HOST_TRIPS_H

#include <stdint.h>
#include <stdio.h>

#include "model.h"
#include "util/median.h"

typedef struct amp_host_trips {
    unsigned long long step; /* this step's so far */
    unsigned long long max;  /* the most of any finished step */
    amp_median per_step;     /* of the finished steps */
} amp_host_trips;

/* The model's forward, then (when it succeeded) its backward, the backend's
 * round trips in them added to *t's step (allocated on first use). 0, or
 * non-zero with m->be->err (NULL *t: out of host memory). */
int amp_host_trips_fwd_bwd(amp_host_trips **t, amp_model *m, const amp_forward_args *fa,
                           const amp_backward_args *ba);
/* The end of a step: its count goes to the median and the maximum. */
void amp_host_trips_step_end(amp_host_trips *t);
/* ,"host_round_trips_per_step": {"median": M, "max": X, "steps_counted": N}
 * (median and max null when no step ran). */
void amp_host_trips_json(FILE *f, amp_host_trips *t);

#endif
