/* libFuzzer target: the JSON reader (core/io/json_read.c, jansson into
 * amp_jval trees) and what `amptrain ab` does with a tree.
 *
 * Input: any bytes, parsed once as a whole document (summary.json) and then
 * line by line (metrics.jsonl, each line with its own line number). A parse
 * must succeed with a tree or fail with a message; every value of a tree is
 * visited, its path formatted, and objects are looked up by each of their
 * keys (which must find that very member: duplicate keys are refused). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const amp_jval *v, int depth) {
    char path[512];
    amp_json_path(v, path, sizeof path);
    size_t n = 1 + strlen(path);
    if (depth > 4096) abort(); /* jansson stops at 2048 */
    switch (v->type) {
    case AMP_JSTR:
        if (!v->str) abort();
        n += strlen(v->str);
        break;
    case AMP_JARR:
    case AMP_JOBJ:
        if (v->n && !v->items) abort();
        for (size_t i = 0; i < v->n; i++) {
            if (v->items[i].parent != v) abort();
            if (v->type == AMP_JOBJ && amp_json_get(v, v->keys[i]) != &v->items[i])
                abort(); /* keys are unique */
            n += walk(&v->items[i], depth + 1);
        }
        break;
    default:
        break;
    }
    return n;
}

static void parse_one(const char *text, size_t len, const char *name, int line) {
    char err[512] = "";
    amp_jval *v = amp_json_parse(text, len, name, line, err, sizeof err);
    if (!v) {
        if (!err[0]) abort(); /* every failure says why */
        return;
    }
    if (v->parent || v->line != line) abort();
    (void)walk(v, 0);
    (void)amp_json_get_type(v, "step", AMP_JNUM);
    (void)amp_json_get_type(v, "layers", AMP_JARR);
    amp_json_free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    parse_one(text, size, "fuzz.json", 1);
    size_t start = 0;
    int line = 1;
    for (size_t i = 0; i <= size; i++) {
        if (i == size || text[i] == '\n') {
            parse_one(text + start, i - start, "fuzz.jsonl", line++);
            start = i + 1;
        }
    }
    return 0;
}
