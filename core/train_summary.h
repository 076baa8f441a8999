/* summary.json: what a finished run reports (model, plugins, backend,
 * losses, timings, memory, every layer's rounding counts). */
#ifndef AMP_TRAIN_SUMMARY_H
#define AMP_TRAIN_SUMMARY_H

#include <stdio.h>

#include "session.h"

/* What a finished run measured (summary.json). */
typedef struct amp_train_result {
    double final_loss, test_loss, test_acc, wall_s, median_ms, median_comm_ms;
    double median_cpu_ms;         /* process CPU time per step, all threads */
    double load_start, load_end;  /* 1-minute load average around the steps */
    size_t device_peak;
} amp_train_result;

void amp_train_write_summary(FILE *f, const amp_session *s, const amp_train_result *r);

#endif
