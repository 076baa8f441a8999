/* Token file splits (token_files.h). */
#include "token_files.h"

#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/file.h"
#include "util/log.h"
#include "util/sha256.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "token files are little-endian: reading them on this host needs byte swaps"
#endif

/* Validation and hashing walk the mapping in chunks of this many bytes,
 * dropping each from the process after use: resident memory stays bounded
 * whatever the file's size. */
#define CHUNK ((size_t)8 << 20)

static int64_t token_at(const unsigned char *p, amp_token_dtype dt) {
    if (dt == AMP_TOKEN_U16) {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    if (dt == AMP_TOKEN_I32) {
        int32_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The least and greatest of n ids of `type` at p into lo, hi. */
#define MIN_MAX(type, lo, hi)                                                                      \
    do {                                                                                           \
        type a_ = 0, b_ = 0;                                                                       \
        for (size_t i = 0; i < n; i++) {                                                           \
            type v;                                                                                \
            memcpy(&v, p + sizeof v * i, sizeof v);                                                \
            a_ = v < a_ ? v : a_;                                                                  \
            b_ = v > b_ ? v : b_;                                                                  \
        }                                                                                          \
        lo = a_, hi = b_;                                                                          \
    } while (0)

/* The first token of p[0 .. n) outside [0, vocab), or -1. A branch-free
 * min/max pass first (the common case: all in range). */
static int64_t first_bad(const unsigned char *p, size_t n, amp_token_dtype dt, int64_t vocab) {
    int64_t lo, hi;
    int w = dt == AMP_TOKEN_U16 ? 2 : 4;
    if (dt == AMP_TOKEN_U16) MIN_MAX(uint16_t, lo, hi);
    else if (dt == AMP_TOKEN_I32) MIN_MAX(int32_t, lo, hi);
    else MIN_MAX(uint32_t, lo, hi);
    if (lo >= 0 && hi < vocab) return -1;
    for (size_t i = 0; i < n; i++) {
        int64_t v = token_at(p + (size_t)w * i, dt);
        if (v < 0 || v >= vocab) return (int64_t)i;
    }
    return -1;
}

/* Checks every token of a mapped shard and hashes the whole file. */
static int validate(amp_token_shard *sh, int64_t vocab, char *err, size_t errlen) {
    const amp_token_layout *l = &sh->layout;
    amp_sha256 s;
    amp_sha256_init(&s);
    amp_sha256_update(&s, sh->map, (size_t)l->offset);
    size_t per = CHUNK / (size_t)l->width;
    for (int64_t at = 0; at < l->n; at += (int64_t)per) {
        size_t n = (size_t)(l->n - at) < per ? (size_t)(l->n - at) : per;
        const unsigned char *p = sh->map + l->offset + (size_t)at * (size_t)l->width;
        int64_t bad = first_bad(p, n, l->dtype, vocab);
        if (bad >= 0) {
            int64_t i = at + bad;
            amp_set_err(err, errlen, "%s: token %" PRId64 " (byte %" PRIu64 ") is id %" PRId64
                        ", outside [0, %" PRId64 ") of [data] vocab_size = %" PRId64, sh->src.path,
                        i, l->offset + (uint64_t)i * (uint64_t)l->width,
                        token_at(p + (size_t)bad * (size_t)l->width, l->dtype), vocab, vocab);
            return -1;
        }
        amp_sha256_update(&s, p, n * (size_t)l->width);
        /* page-aligned start (the mapping is); the kernel keeps the page cache */
        uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
        (void)madvise((void *)a, (size_t)((uintptr_t)p + n * (size_t)l->width - a), MADV_DONTNEED);
    }
    amp_sha256_final_hex(&s, sh->sha256);
    (void)madvise((void *)sh->map, sh->map_len, MADV_RANDOM); /* windows from anywhere */
    return 0;
}

static int open_shard(amp_token_shard *sh, const char *path, amp_token_format format,
                      int64_t vocab, char *err, size_t errlen) {
    struct stat st;
    char real[PATH_MAX];
    int fd = amp_file_open_read(path, &st, err, errlen);
    if (fd < 0) return -1;
    amp_data_source_note(&sh->src, realpath(path, real) ? real : path, &st);
    sh->map_len = (size_t)st.st_size;
    if (sh->map_len) {
        void *m = mmap(NULL, sh->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            amp_set_err(err, errlen, "%s: cannot map %zu bytes: %s", path, sh->map_len,
                        strerror(errno));
            close(fd);
            return -1;
        }
        sh->map = m;
    }
    close(fd);
    size_t head = sh->map_len < AMP_TOKEN_HEAD_MAX ? sh->map_len : AMP_TOKEN_HEAD_MAX;
    static const unsigned char none[1];
    if (amp_token_layout_parse(sh->map ? sh->map : none, head, sh->map_len, format,
                               sh->src.path, &sh->layout, err, errlen) != 0)
        return -1;
    return validate(sh, vocab, err, errlen);
}

void amp_token_split_close(amp_token_split *s) {
    if (!s) return;
    for (int i = 0; i < s->nshards; i++)
        if (s->shards[i].map) munmap((void *)s->shards[i].map, s->shards[i].map_len);
    free(s->shards);
    free(s->first);
    memset(s, 0, sizeof *s);
}

int amp_token_split_open(amp_token_split *s, const char *key, const char *pattern,
                         amp_token_format format, int64_t vocab, int T, char *err, size_t errlen) {
    memset(s, 0, sizeof *s);
    glob_t g;
    int rc = glob(pattern, GLOB_ERR, NULL, &g);
    if (rc != 0) {
        amp_set_err(err, errlen, "%s = '%s': %s", key, pattern,
                    rc == GLOB_NOMATCH ? "no such file (nor files matching it as a glob)"
                    : rc == GLOB_NOSPACE ? "out of memory" : "cannot read a folder of the pattern");
        if (rc != GLOB_NOMATCH) globfree(&g);
        return rc == GLOB_NOSPACE ? 1 : 2;
    }
    s->shards = calloc(g.gl_pathc, sizeof *s->shards);
    s->first = calloc(g.gl_pathc + 1, sizeof *s->first);
    if (!s->shards || !s->first || g.gl_pathc > INT_MAX) {
        globfree(&g);
        amp_token_split_close(s);
        amp_set_err(err, errlen, "%s: out of host memory for %zu files", key, g.gl_pathc);
        return 1;
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        amp_token_shard *sh = &s->shards[s->nshards++];
        if (open_shard(sh, g.gl_pathv[i], format, vocab, err, errlen) != 0) {
            globfree(&g);
            amp_token_split_close(s);
            return 2;
        }
        s->n += sh->layout.n;
        s->starts += sh->layout.n > T ? sh->layout.n - T : 0;
        s->first[i + 1] = s->starts;
    }
    globfree(&g);
    if (s->starts > 0) return 0;
    if (s->n == 0)
        amp_set_err(err, errlen, "%s = '%s': an empty split: %s hold%s no tokens", key, pattern,
                    s->nshards == 1 ? s->shards[0].src.path : "the files it matches",
                    s->nshards == 1 ? "s" : "");
    else
        amp_set_err(err, errlen, "%s = '%s': %" PRId64 " tokens in %d file%s, too few for one "
                    "window of [model] block_size = %d: a window needs a file of more than "
                    "block_size tokens", key, pattern, s->n, s->nshards,
                    s->nshards == 1 ? "" : "s", T);
    amp_token_split_close(s);
    return 2;
}

void amp_token_split_window(const amp_token_split *s, int64_t start, int T, int32_t *x, int32_t *y) {
    int lo = 0, hi = s->nshards - 1; /* the shard k with first[k] <= start < first[k + 1] */
    while (lo < hi) {
        int mid = lo + (hi - lo + 1) / 2;
        if (s->first[mid] <= start) lo = mid;
        else hi = mid - 1;
    }
    const amp_token_shard *sh = &s->shards[lo];
    const amp_token_layout *l = &sh->layout;
    const unsigned char *p = sh->map + l->offset + (size_t)(start - s->first[lo]) * (size_t)l->width;
    int32_t prev = (int32_t)token_at(p, l->dtype);
    for (int i = 0; i < T; i++) {
        int32_t next = (int32_t)token_at(p + (size_t)(i + 1) * (size_t)l->width, l->dtype);
        x[i] = prev, y[i] = next;
        prev = next;
    }
}

int amp_token_split_fingerprint(const amp_token_split *s, FILE *f, char *err, size_t errlen) {
    for (int i = 0; i < s->nshards; i++) {
        const amp_token_shard *sh = &s->shards[i];
        if (amp_data_source_check(&sh->src, NULL, err, errlen) != 0) return -1;
        fprintf(f, "file %s %" PRIu64 " %s\n", sh->sha256, sh->src.size, sh->src.path);
    }
    return 0;
}
