/* Finding and reading a tokenizer's files: a tokenizer.json, or GPT-2's
 * vocab.json + merges.txt (ByteLevel pre-tokenizer and decoder implied, no
 * added tokens: the files have none). */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/file.h"
#include "util/log.h"
#include "tokenizer/tokenizer_internal.h"

#define MAX_FILE ((size_t)1 << 30)


static int ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

static int merges_file(amp_tokenizer *t, const char *path, char *err, size_t errlen) {
    char *text;
    size_t len;
    if (amp_file_read_all(path, MAX_FILE, &text, &len, err, errlen) != 0) return -1;
    uint32_t rank = 0;
    int rc = 0, line = 0;
    for (char *p = text, *end = text + len; p < end && rc == 0;) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *e = nl ? nl : end;
        line++;
        size_t n = (size_t)(e - p);
        if (n && p[n - 1] == '\r') n--;
        if (n && !(line == 1 && n >= 8 && memcmp(p, "#version", 8) == 0)) {
            char *sp = memchr(p, ' ', n);
            if (!sp || sp == p || sp + 1 == p + n || memchr(sp + 1, ' ', (size_t)(p + n - sp - 1))) {
                amp_set_err(err, errlen, "%s:%d: not a merge (\"left right\")", path, line);
                rc = -1;
            } else {
                char where[PATH_MAX + 32];
                snprintf(where, sizeof where, "%s:%d", path, line);
                rc = amp_tokenizer_add_merge(t, where, p, (size_t)(sp - p), sp + 1,
                                             (size_t)(p + n - sp - 1), rank++, err, errlen);
            }
        }
        p = e + 1;
    }
    free(text);
    return rc;
}

static amp_tokenizer *gpt2_files(const char *vocab, const char *merges, char *err, size_t errlen) {
    char *text;
    size_t len;
    if (amp_file_read_all(vocab, MAX_FILE, &text, &len, err, errlen) != 0) return NULL;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!json_is_object(root)) {
        if (root) amp_set_err(err, errlen, "%s: not a vocab.json (not an object)", vocab);
        else amp_set_err(err, errlen, "%s:%d:%d: %s", vocab, je.line, je.column, je.text);
        json_decref(root);
        return NULL;
    }
    amp_tokenizer *t = amp_tokenizer_new();
    const char *key;
    json_t *v;
    int rc = t ? 0 : -1;
    json_object_foreach(root, key, v) {
        if (rc) break;
        json_int_t id = json_is_integer(v) ? json_integer_value(v) : -1;
        if (id < 0 || id >= AMP_TOKENIZER_MAX_ID) {
            amp_set_err(err, errlen, "%s: \"%s\" has no id in [0, 2^24)", vocab, key);
            rc = -1;
        } else if (amp_tokenizer_add_vocab(t, key, strlen(key), (uint32_t)id)) {
            amp_set_err(err, errlen, "%s: out of memory", vocab);
            rc = -1;
        }
    }
    json_decref(root);
    if (rc == 0) {
        rc = merges_file(t, merges, err, errlen);
    }
    if (rc == 0) {
        t->steps[0].code = amp_split_compile(amp_gpt2_split_pattern, err, errlen);
        t->nsteps = 1;
        rc = t->steps[0].code ? amp_tokenizer_finish(t, vocab, err, errlen) : -1;
    }
    if (rc) {
        amp_tokenizer_free(t);
        return NULL;
    }
    return t;
}

int amp_tokenizer_files(const char *path, char *a, char *b) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(a, PATH_MAX, "%s/tokenizer.json", path);
        if (stat(a, &st) == 0) return 1;
        snprintf(a, PATH_MAX, "%s/vocab.json", path);
        snprintf(b, PATH_MAX, "%s/merges.txt", path);
        return 2;
    }
    snprintf(a, PATH_MAX, "%s", path);
    if (ends_with(path, "vocab.json") && strlen(path) < PATH_MAX) {
        size_t stem = strlen(path) - strlen("vocab.json");
        snprintf(b, PATH_MAX, "%.*smerges.txt", (int)stem, path);
        return 2;
    }
    return 1;
}

amp_tokenizer *amp_tokenizer_load(const char *path, char *err, size_t errlen) {
    char a[PATH_MAX], b[PATH_MAX];
    if (amp_tokenizer_files(path, a, b) == 2) return gpt2_files(a, b, err, errlen);
    char *text;
    size_t len;
    if (amp_file_read_all(a, MAX_FILE, &text, &len, err, errlen) != 0) return NULL;
    amp_tokenizer *t = amp_tokenizer_from_json(a, text, len, err, errlen);
    free(text);
    return t;
}
