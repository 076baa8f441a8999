/* TensorBoard's Event protobuf, encoded by hand (no protobuf library):
 * Event { double wall_time = 1; int64 step = 2; string file_version = 3;
 * Summary summary = 5; }, Summary { repeated Value value = 1; },
 * Value { string tag = 1; float simple_value = 2; }. Each event goes out as
 * one TFRecord (tfrecord.h). */
#ifndef AMP_METRICS_TB_EVENT_H
#define AMP_METRICS_TB_EVENT_H

#include <stdint.h>

#include "tfrecord.h"

/* Appends to summary one Value {tag, simple_value}. */
void amp_tb_value(amp_bytes *summary, const char *tag, float value);
/* Appends to out the record of an Event {wall_time, step, summary}. */
void amp_tb_event(amp_bytes *out, double wall_time, int64_t step, const amp_bytes *summary);
/* Appends to out the record of the file's first Event {wall_time,
 * file_version = "brain.Event:2"}. */
void amp_tb_version(amp_bytes *out, double wall_time);

#endif
