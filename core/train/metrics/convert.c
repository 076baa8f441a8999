#include "convert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lines.h"
#include "tb_event.h"

void amp_csv_header(amp_bytes *out) {
    for (int i = 0; amp_metrics_columns[i]; i++) {
        if (i) amp_bytes_put(out, ",", 1);
        amp_bytes_put(out, amp_metrics_columns[i], strlen(amp_metrics_columns[i]));
    }
    amp_bytes_put(out, "\n", 1);
}

/* The shortest %.Ng (N >= 10, as metrics.jsonl writes) that strtod reads
 * back as v. */
static void put_num(amp_bytes *out, double v) {
    static const char *const fmt[] = {"%.10g", "%.11g", "%.12g", "%.13g",
                                      "%.14g", "%.15g", "%.16g", "%.17g"};
    char buf[40];
    for (int i = 0; i < 8; i++) {
        snprintf(buf, sizeof buf, fmt[i], v);
        if (strtod(buf, NULL) == v) break;
    }
    amp_bytes_put(out, buf, strlen(buf));
}

static int has_column(const char *key) {
    for (int i = 0; amp_metrics_columns[i]; i++)
        if (strcmp(amp_metrics_columns[i], key) == 0) return 1;
    return 0;
}

int amp_csv_row(amp_bytes *out, const amp_jval *line, char *err, size_t errlen) {
    for (size_t k = 0; k < line->n; k++)
        if (strcmp(line->keys[k], "fp8") != 0 && !has_column(line->keys[k])) {
            snprintf(err, errlen, "the metrics.jsonl key \"%s\" has no metrics.csv column "
                     "(core/train/metrics/lines.c)", line->keys[k]);
            return -1;
        }
    for (int i = 0; amp_metrics_columns[i]; i++) {
        if (i) amp_bytes_put(out, ",", 1);
        const amp_jval *v = amp_json_get(line, amp_metrics_columns[i]);
        if (v && v->type == AMP_JNUM)
            put_num(out, v->num);
        else if (v && v->type == AMP_JBOOL)
            amp_bytes_put(out, v->b ? "true" : "false", v->b ? 4 : 5);
    }
    amp_bytes_put(out, "\n", 1);
    return 0;
}

static void operand_tags(amp_bytes *summary, const amp_jval *fp8) {
    for (size_t i = 0; fp8 && i < fp8->n; i++) {
        const amp_jval *op = &fp8->items[i];
        const amp_jval *layer = amp_json_get_type(op, "layer", AMP_JSTR);
        const amp_jval *role = amp_json_get_type(op, "role", AMP_JSTR);
        if (!layer || !role) continue;
        static const char *const counts[][2] = {{"flushed", "underflow"}, {"saturated", "saturation"}};
        for (int c = 0; c < 2; c++) {
            const amp_jval *v = amp_json_get_type(op, counts[c][0], AMP_JNUM);
            if (!v) continue;
            size_t len = strlen(counts[c][1]) + strlen(layer->str) + strlen(role->str) + 3;
            char *tag = malloc(len);
            if (!tag) {
                summary->oom = 1;
                return;
            }
            snprintf(tag, len, "%s/%s/%s", counts[c][1], layer->str, role->str);
            amp_tb_value(summary, tag, (float)v->num);
            free(tag);
        }
    }
}

void amp_tb_line(amp_bytes *out, const amp_jval *line, double wall_time) {
    const char *group = amp_json_get(line, "loss") ? "train" : "eval";
    const amp_jval *step = amp_json_get_type(line, "step", AMP_JNUM);
    amp_bytes summary = {0};
    for (size_t k = 0; k < line->n; k++) {
        const char *key = line->keys[k];
        const amp_jval *v = &line->items[k];
        if (strcmp(key, "step") == 0 || strcmp(key, "epoch") == 0) continue;
        if (v->type != AMP_JNUM && v->type != AMP_JBOOL) continue; /* null: not finite */
        char tag[256];
        snprintf(tag, sizeof tag, "%s/%s", group, key);
        amp_tb_value(&summary, tag, v->type == AMP_JNUM ? (float)v->num : (float)v->b);
    }
    operand_tags(&summary, amp_json_get_type(line, "fp8", AMP_JARR));
    amp_tb_event(out, wall_time, step ? (int64_t)step->num : 0, &summary);
    if (summary.oom) out->oom = 1;
    amp_bytes_free(&summary);
}
