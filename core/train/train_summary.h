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
    /* Several ranks (NULL alone; the caller frees): rank r's row at
     * per_rank + r * AMP_RANK_ROW holds its arena bytes per memory
     * category, then the bytes it sent the other ranks in the last applied
     * step: the gradients, then the weights (sharded). */
    uint64_t *per_rank;
} amp_train_result;

#define AMP_RANK_ROW (AMP_MEM_COUNT + 2)

/* Every rank calls this at the end of a run: fills r->per_rank (all ranks
 * get every row). sent: this rank's gradient and weight bytes. 0, or -1. */
int amp_train_gather_ranks(const amp_session *s, amp_train_result *r, const uint64_t sent[2],
                           char *err, size_t errlen);

void amp_train_write_summary(FILE *f, const amp_session *s, const amp_train_result *r);

#endif
