#include "text.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file.h"
#include "io/json.h"
#include "io/json_read.h"
#include "util/log.h"
#include "util/sha256.h"
#include "process/self_exe.h"
#include "windows.h"

int amp_same_file(const char *a, const char *b) {
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int amp_text_shipped_path(char *out, size_t len) {
    char exe[PATH_MAX], installed[PATH_MAX + 64] = "", source[PATH_MAX];
    struct stat st;
    if (amp_self_exe_dir(exe, sizeof exe) == 0) {
        char *slash = strrchr(exe, '/'); /* the prefix: the folder above bin/ */
        if (slash) *slash = '\0';
        snprintf(installed, sizeof installed, "%s/" AMP_DATA_INSTALL_SUBDIR "/" AMP_TEXT_DEFAULT_FILE,
                 slash ? exe : "..");
        if (stat(installed, &st) == 0) {
            snprintf(out, len, "%s", installed);
            return 0;
        }
    }
    snprintf(source, sizeof source, "%s/" AMP_TEXT_DEFAULT_FILE, AMP_DATA_SOURCE_DIR);
    if (stat(source, &st) == 0) {
        snprintf(out, len, "%s", source);
        return 0;
    }
    snprintf(out, len, "%s%s%s", installed, installed[0] ? " or " : "", source);
    return -1;
}

void amp_text_free(amp_text *t) {
    if (!t) return;
    free(t->tokens);
    memset(t, 0, sizeof *t);
}

int amp_text_read(const char *path, const char *expect_sha256, char **text, size_t *n,
                  char sha[65], char *abs, size_t abslen, char *err, size_t errlen) {
    /* Regular files only (a FIFO would block, /dev/zero never end), and a
     * bounded size, refused before anything is read. */
    char why[4400];
    *text = NULL;
    if (amp_file_read_all(path, AMP_TEXT_MAX_BYTES, text, n, why, sizeof why) != 0) {
        amp_set_err(err, errlen,
                    "%s; [data] path of a text run names a regular file of at most %d MiB (the "
                    "default, data/" AMP_TEXT_DEFAULT_FILE ", ships with amptrain)",
                    why, AMP_TEXT_MAX_BYTES >> 20);
        return -1;
    }
    amp_sha256 s;
    amp_sha256_init(&s);
    amp_sha256_update(&s, *text, *n);
    amp_sha256_final_hex(&s, sha);
    if (!realpath(path, abs)) snprintf(abs, abslen, "%s", path);
    if (expect_sha256 && strcmp(sha, expect_sha256) != 0) {
        free(*text);
        *text = NULL;
        amp_set_err(err, errlen,
                    "%s: sha256 %s, but the shipped " AMP_TEXT_DEFAULT_FILE " has %s; the "
                    "file is damaged or was replaced: restore it (git checkout data/"
                    AMP_TEXT_DEFAULT_FILE ") or point [data] path at your own file",
                    path, sha, expect_sha256);
        return -1;
    }
    return 0;
}

int amp_text_load(amp_text *t, const char *path, const char *expect_sha256, char *err,
                  size_t errlen) {
    memset(t, 0, sizeof *t);
    char *text = NULL;
    size_t n = 0;
    if (amp_text_read(path, expect_sha256, &text, &n, t->sha256, t->path, sizeof t->path, err,
                      errlen) != 0)
        return -1;
    const unsigned char *bytes = (const unsigned char *)text;
    int seen[256] = {0};
    for (size_t i = 0; i < n; i++) seen[bytes[i]] = 1;
    for (int c = 0; c < 256; c++) {
        t->ids[c] = -1;
        if (seen[c]) {
            t->ids[c] = (int16_t)t->vocab;
            t->chars[t->vocab++] = (unsigned char)c;
        }
    }
    t->tokens = malloc((n ? n : 1) * sizeof *t->tokens);
    if (!t->tokens) {
        free(text);
        amp_set_err(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    for (size_t i = 0; i < n; i++) t->tokens[i] = (uint8_t)t->ids[bytes[i]];
    free(text);
    t->n = (int64_t)n;
    t->n_train = (int64_t)(0.9 * (double)n); /* nanoGPT: int(n * 0.9) */
    return 0;
}

int amp_text_check_windows(const amp_text *t, int T, const char *path, char *err, size_t errlen) {
    int64_t nval = t->n - t->n_train;
    if (t->n_train > (int64_t)T + 1 && nval > (int64_t)T + 1) return 0;
    amp_set_err(err, errlen,
                "%s: %lld characters (%lld train, %lld validation) are too few for windows of "
                "[model] block_size = %d; each split needs more than block_size + 1",
                path, (long long)t->n, (long long)t->n_train, (long long)nval, T);
    return -1;
}

/* Windows of the corpus: training within the first n_train characters,
 * validation within the rest. */
static void text_copy(const void *ctx, int split, int64_t start, int T, int32_t *x, int32_t *y) {
    const amp_text *t = ctx;
    const uint8_t *src = t->tokens + (split == AMP_WINDOWS_VAL ? t->n_train : 0) + start;
    for (int i = 0; i < T; i++) x[i] = src[i], y[i] = src[i + 1];
}

amp_batcher *amp_batcher_text_create(const amp_text *t, uint64_t seed, int batch, int T,
                                     int64_t eval_windows) {
    amp_window_source src = {t->n_train, {t->n_train - T, t->n - t->n_train - T}, text_copy, t};
    return amp_batcher_windows_create(&src, seed, batch, T, eval_windows);
}

int amp_text_write_vocab(const amp_text *t, FILE *f) {
    fprintf(f, "{\n  \"vocab_size\": %d,\n  \"bytes\": [", t->vocab);
    for (int i = 0; i < t->vocab; i++) fprintf(f, "%s%d", i ? ", " : "", t->chars[i]);
    fputs("],\n  \"data\": ", f);
    amp_json_str(f, t->path);
    fputs(",\n  \"sha256\": ", f);
    amp_json_str(f, t->sha256);
    fputs("\n}\n", f);
    return ferror(f) ? -1 : 0;
}

int amp_text_read_vocab(const char *path, unsigned char *bytes, int *vocab, char *data,
                        size_t datalen, char sha[65], char *err, size_t errlen) {
    amp_jval *v = amp_json_parse_file(path, err, errlen);
    if (!v) return -1;
    const amp_jval *n = amp_json_get_type(v, "vocab_size", AMP_JNUM);
    const amp_jval *b = amp_json_get_type(v, "bytes", AMP_JARR);
    const amp_jval *d = amp_json_get_type(v, "data", AMP_JSTR);
    const amp_jval *h = amp_json_get_type(v, "sha256", AMP_JSTR);
    int ok = n && b && d && h && n->num >= 1 && n->num <= 256 && (size_t)n->num == b->n &&
             strlen(h->str) == 64;
    for (size_t i = 0; ok && i < b->n; i++) {
        const amp_jval *e = &b->items[i];
        ok = e->type == AMP_JNUM && e->num >= 0 && e->num <= 255 && e->num == (int)e->num &&
             (i == 0 || e->num > b->items[i - 1].num);
        if (ok) bytes[i] = (unsigned char)e->num;
    }
    if (!ok) {
        amp_set_err(err, errlen, "%s: not an amptrain vocabulary (vocab_size, ascending bytes, "
                    "data, sha256)", path);
        amp_json_free(v);
        return -1;
    }
    *vocab = (int)n->num;
    snprintf(data, datalen, "%s", d->str);
    memcpy(sha, h->str, 65);
    amp_json_free(v);
    return 0;
}

int amp_text_read_vocab_data(const char *path, char *data, size_t datalen, char sha[65], char *err,
                             size_t errlen) {
    amp_jval *v = amp_json_parse_file(path, err, errlen);
    if (!v) return -1;
    const amp_jval *d = amp_json_get_type(v, "data", AMP_JSTR);
    const amp_jval *h = amp_json_get_type(v, "sha256", AMP_JSTR);
    int ok = d && h && strlen(h->str) == 64;
    if (ok) {
        snprintf(data, datalen, "%s", d->str);
        memcpy(sha, h->str, 65);
    } else {
        amp_set_err(err, errlen, "%s: not an amptrain vocabulary (data, sha256)", path);
    }
    amp_json_free(v);
    return ok ? 0 : -1;
}
