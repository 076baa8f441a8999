/* The lines of metrics.jsonl, and the columns metrics.csv gives them.
 * A step line: {"step","epoch","loss","lr","scale","skipped","grad_norm",
 * "underflow","overflow","step_ms","cpu_ms"[,"fp8":[per scaled operand]]};
 * an evaluation line: {"step","epoch","test_loss","test_acc"}. A key added
 * to a line needs its column in amp_metrics_columns: metrics.csv refuses a
 * line with a top-level key it has no column for (metrics/views.h). */
#ifndef AMP_METRICS_LINES_H
#define AMP_METRICS_LINES_H

#include <stdint.h>
#include <stdio.h>

#include "formats/scaled.h"
#include "train/session.h"

void amp_metrics_step_line(FILE *f, const amp_step_record *r, double cpu_ms,
                           const amp_scaled *scaled);
void amp_metrics_eval_line(FILE *f, int64_t step, int64_t epoch, double loss, double acc);

/* metrics.csv's columns, in order, NULL-terminated: every top-level key of
 * either line but the per-operand array "fp8" (in TensorBoard's files and
 * metrics.jsonl only). */
extern const char *const amp_metrics_columns[];

#endif
