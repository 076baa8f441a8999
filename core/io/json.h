/* Just enough JSON writing for metrics.jsonl and summary.json. */
#ifndef AMP_JSON_H
#define AMP_JSON_H

#include <stdio.h>

/* A number, or null when it is not finite (JSON has no inf/NaN). */
void amp_json_num(FILE *f, double v);
/* A quoted, escaped string. */
void amp_json_str(FILE *f, const char *s);

#endif
