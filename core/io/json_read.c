/* JSON through jansson, copied into amp_jval trees (see json_read.h). */
#include "io/json_read.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/file.h"
#include "util/log.h"

static void free_contents(amp_jval *v) {
    if (v->type == AMP_JSTR) free(v->str);
    if (v->type == AMP_JARR || v->type == AMP_JOBJ) {
        for (size_t i = 0; i < v->n; i++) {
            free_contents(&v->items[i]);
            if (v->keys) free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
    memset(v, 0, sizeof *v);
}

void amp_json_free(amp_jval *v) {
    if (!v) return;
    free_contents(v);
    free(v);
}

/* Copies j into *out (zeroed by the caller). -1 when out of memory: what
 * was copied so far is left for free_contents. Depth is bounded by
 * jansson's parser (2048), so the recursion is too. */
static int copy_value(amp_jval *out, json_t *j, int line, const amp_jval *parent) {
    out->line = line;
    out->parent = parent;
    switch (json_typeof(j)) {
    case JSON_NULL: out->type = AMP_JNULL; return 0;
    case JSON_TRUE: out->type = AMP_JBOOL; out->b = 1; return 0;
    case JSON_FALSE: out->type = AMP_JBOOL; out->b = 0; return 0;
    case JSON_INTEGER: out->type = AMP_JNUM; out->num = (double)json_integer_value(j); return 0;
    case JSON_REAL: out->type = AMP_JNUM; out->num = json_real_value(j); return 0;
    case JSON_STRING:
        out->type = AMP_JSTR;
        out->str = strdup(json_string_value(j));
        return out->str ? 0 : -1;
    case JSON_ARRAY: {
        out->type = AMP_JARR;
        size_t n = json_array_size(j);
        if (!n) return 0;
        out->items = calloc(n, sizeof *out->items);
        if (!out->items) return -1;
        for (size_t i = 0; i < n; i++) {
            out->n = i + 1;
            if (copy_value(&out->items[i], json_array_get(j, i), line, out) != 0) return -1;
        }
        return 0;
    }
    case JSON_OBJECT: {
        out->type = AMP_JOBJ;
        size_t n = json_object_size(j);
        if (!n) return 0;
        out->items = calloc(n, sizeof *out->items);
        out->keys = calloc(n, sizeof *out->keys);
        if (!out->items || !out->keys) return -1;
        const char *key;
        json_t *m;
        size_t i = 0;
        /* jansson iterates in insertion order: the file's order. */
        json_object_foreach(j, key, m) {
            out->n = i + 1;
            out->keys[i] = strdup(key);
            if (!out->keys[i] || copy_value(&out->items[i], m, line, out) != 0) return -1;
            i++;
        }
        return 0;
    }
    }
    return -1;
}

amp_jval *amp_json_parse(const char *text, size_t len, const char *name, int first_line,
                         char *err, size_t errlen) {
    json_error_t je;
    json_t *j = json_loadb(text, len,
                           JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_DECODE_INT_AS_REAL, &je);
    if (!j) {
        amp_set_err(err, errlen, "%s:%d:%d: %s", name, first_line + (je.line > 0 ? je.line : 1) - 1,
                    je.column > 0 ? je.column : 1, je.text);
        return NULL;
    }
    amp_jval *v = calloc(1, sizeof *v);
    if (!v || copy_value(v, j, first_line, NULL) != 0) {
        amp_set_err(err, errlen, "%s: out of memory", name);
        if (v) free_contents(v);
        free(v);
        json_decref(j);
        return NULL;
    }
    json_decref(j);
    return v;
}

amp_jval *amp_json_parse_file(const char *path, char *err, size_t errlen) {
    char *buf;
    size_t len;
    if (amp_file_read_all(path, AMP_JSON_FILE_MAX, &buf, &len, err, errlen) != 0) return NULL;
    amp_jval *v = amp_json_parse(buf, len, path, 1, err, errlen);
    free(buf);
    return v;
}

const amp_jval *amp_json_get(const amp_jval *v, const char *key) {
    if (!v || v->type != AMP_JOBJ) return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(v->keys[i], key) == 0) return &v->items[i];
    return NULL;
}

const amp_jval *amp_json_get_type(const amp_jval *v, const char *key, amp_jtype type) {
    const amp_jval *m = amp_json_get(v, key);
    return m && m->type == type ? m : NULL;
}

char *amp_json_path(const amp_jval *v, char *out, size_t cap) {
    if (!cap) return out;
    out[0] = '\0';
    if (!v || !v->parent) return out;
    /* Walk up, then write the steps root first. */
    const amp_jval *chain[64];
    int depth = 0;
    for (const amp_jval *p = v; p->parent && depth < 64; p = p->parent) chain[depth++] = p;
    size_t n = 0;
    for (int d = depth - 1; d >= 0 && n < cap; d--) {
        const amp_jval *c = chain[d], *p = c->parent;
        size_t i = (size_t)(c - p->items);
        int w = p->type == AMP_JOBJ ? snprintf(out + n, cap - n, "%s%s", n ? "." : "", p->keys[i])
                                    : snprintf(out + n, cap - n, "[%zu]", i);
        if (w < 0) break;
        n += (size_t)w;
    }
    return out;
}
