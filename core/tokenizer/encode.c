/* Encoding: invalid UTF-8 replaced, the added tokens cut out (the library's
 * AddedVocabulary: leftmost-longest matches, tokens with normalized=false
 * first, then those with normalized=true in the text between), and the
 * pre-tokenizer and model on the rest. */
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "tokenizer/tokenizer_internal.h"

typedef struct text {
    const char *base;
    size_t total;
} text;

/* The longest added token of pass `normalized` at s[0..n), or NULL. */
static const amp_added_token *match_at(const amp_tokenizer *t, int normalized, const char *s,
                                       size_t n) {
    const amp_added_token *best = NULL;
    for (size_t i = 0; i < t->nadded; i++) {
        const amp_added_token *a = &t->added[i];
        if (a->normalized != normalized || a->len > n || (best && a->len <= best->len)) continue;
        if (memcmp(a->content, s, a->len) == 0) best = a;
    }
    return best;
}

static int pass(const amp_tokenizer *t, int normalized, const text *x, const char *s, size_t n,
                amp_encode_out *o, char *err, size_t errlen) {
    if (normalized == 2) return amp_encode_plain(t, s, n, x->base, x->total, o, err, errlen);
    size_t prev = 0;
    for (size_t i = 0; i < n;) {
        /* most bytes start no added token: skip them without a look */
        const amp_added_token *a = t->added_first[(unsigned char)s[i]]
                                       ? match_at(t, normalized, s + i, n - i) : NULL;
        if (!a) {
            i++;
            continue;
        }
        if (i > prev && pass(t, normalized + 1, x, s + prev, i - prev, o, err, errlen)) return -1;
        if (amp_encode_push(o, a->id) != 0) {
            amp_set_err(err, errlen, "out of memory");
            return -1;
        }
        i += a->len;
        prev = i;
    }
    return prev < n ? pass(t, normalized + 1, x, s + prev, n - prev, o, err, errlen) : 0;
}

int amp_tokenizer_encode(const amp_tokenizer *t, const char *s, size_t len, amp_encode_out *o,
                         char *err, size_t errlen) {
    size_t clean_len, bad = 0, first = 0;
    char *clean = amp_utf8_lossy(s, len, &clean_len, &bad, &first);
    if (!clean) {
        amp_set_err(err, errlen, "out of memory");
        return -1;
    }
    if (bad && !o->replaced) o->first_bad = first;
    o->replaced += bad;
    text x = {clean, clean_len};
    int rc = pass(t, 0, &x, clean, clean_len, o, err, errlen);
    free(clean);
    return rc;
}
