/* Decoding: each id's text; a model token's byte-level characters turned
 * back into bytes (a token with other characters gives its text as it is,
 * as the library's ByteLevel decoder does). The library decodes each run of
 * model tokens between added tokens on its own, so a UTF-8 sequence cut by
 * an added token is replaced there, not joined across it. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

static const amp_added_token *added_of(const amp_tokenizer *t, uint32_t id) {
    for (size_t i = 0; i < t->nadded; i++)
        if (t->added[i].id == id) return &t->added[i];
    return NULL;
}

typedef struct buf {
    char *p;
    size_t n, cap;
} buf;

static int put(buf *b, const void *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t c = b->cap ? b->cap : 256;
        while (c < b->n + n + 1) c *= 2;
        char *p = realloc(b->p, c);
        if (!p) return -1;
        b->p = p;
        b->cap = c;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}

/* Appends run [from, b->n) made valid UTF-8 (lossy) in place of itself. */
static int settle(buf *b, size_t from) {
    size_t len;
    char *fixed = amp_utf8_lossy(b->p + from, b->n - from, &len, NULL, NULL);
    if (!fixed) return -1;
    b->n = from;
    int rc = put(b, fixed, len);
    free(fixed);
    return rc;
}

static int decode(const amp_tokenizer *t, const uint32_t *ids, size_t n, int skip_special,
                  int lossy, char **out, size_t *len) {
    buf b = {0};
    size_t run = 0; /* where the current run of model tokens began */
    int rc = put(&b, "", 0);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const amp_added_token *a = added_of(t, ids[i]);
        if (a) {
            if (skip_special && a->special) continue;
            if (lossy) rc = settle(&b, run);
            if (rc == 0) rc = put(&b, a->content, a->len);
            run = b.n;
            continue;
        }
        if (ids[i] >= t->nids || !t->id_text[ids[i]]) continue;
        const char *s = t->id_text[ids[i]];
        size_t sl = strlen(s);
        unsigned char stackbuf[256], *raw = sl <= sizeof stackbuf ? stackbuf : malloc(sl);
        if (!raw) {
            rc = -1;
            break;
        }
        long k = amp_byte_level_unmap(s, sl, raw);
        rc = k >= 0 ? put(&b, raw, (size_t)k) : put(&b, s, sl);
        if (raw != stackbuf) free(raw);
    }
    if (rc == 0 && lossy) rc = settle(&b, run);
    if (rc != 0) {
        free(b.p);
        return -1;
    }
    *out = b.p;
    *len = b.n;
    return 0;
}

int amp_tokenizer_decode_bytes(const amp_tokenizer *t, const uint32_t *ids, size_t n,
                               int skip_special, char **out, size_t *len) {
    return decode(t, ids, n, skip_special, 0, out, len);
}

int amp_tokenizer_decode(const amp_tokenizer *t, const uint32_t *ids, size_t n, int skip_special,
                         char **out, size_t *len) {
    return decode(t, ids, n, skip_special, 1, out, len);
}
