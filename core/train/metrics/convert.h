/* One metrics.jsonl line (parsed) as a metrics.csv row and as a
 * TensorBoard event: the same numbers, nothing computed. */
#ifndef AMP_METRICS_CONVERT_H
#define AMP_METRICS_CONVERT_H

#include <stddef.h>

#include "io/json_read.h"
#include "tfrecord.h"

/* metrics.csv's header row (amp_metrics_columns), newline included. */
void amp_csv_header(amp_bytes *out);
/* The line as a row: each column's number as the shortest text that reads
 * back as the same double, true/false as in the line, empty where the line
 * has no such key or null (a value that was not finite). A top-level key
 * without a column is an error naming it (the table in metrics/lines.c
 * lags the line): -1 with err, else 0. */
int amp_csv_row(amp_bytes *out, const amp_jval *line, char *err, size_t errlen);

/* The line as one Event at its "step": a step line's keys as
 * "train/<key>", an evaluation line's as "eval/<key>" (true/false as 1/0,
 * null left out), and per scaled operand of "fp8" "underflow/<layer>/<role>"
 * (its flushed count) and "saturation/<layer>/<role>" (its saturated
 * count). */
void amp_tb_line(amp_bytes *out, const amp_jval *line, double wall_time);

#endif
