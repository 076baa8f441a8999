/* Invalid UTF-8 replaced as Python's errors="replace" and Rust's
 * String::from_utf8_lossy do (Unicode's "maximal subpart" practice): a
 * byte that cannot start a sequence, or the longest prefix of a sequence
 * that is valid so far, becomes one U+FFFD. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

/* The length of the valid sequence at s (1..4), or -(bytes of its maximal
 * invalid subpart). */
static int seq(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    int need;
    unsigned lo = 0x80, hi = 0xBF;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return -1;
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= n) return -k;
        unsigned d = s[k];
        if (k == 1 ? (d < lo || d > hi) : (d < 0x80 || d > 0xBF)) return -k;
    }
    return need + 1;
}

char *amp_utf8_lossy(const char *s, size_t n, size_t *outlen, size_t *count, size_t *first) {
    const unsigned char *u = (const unsigned char *)s;
    size_t bad = 0;
    for (size_t i = 0; i < n;) {
        int k = seq(u + i, n - i);
        if (k < 0) {
            if (!bad && first) *first = i;
            bad++;
            k = -k;
        }
        i += (size_t)k;
    }
    char *out = malloc(n + 2 * bad + 1); /* 1..: each replacement costs 3 bytes for >= 1 */
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        int k = seq(u + i, n - i);
        if (k < 0) {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += (size_t)-k;
        } else {
            memcpy(out + o, s + i, (size_t)k);
            o += (size_t)k;
            i += (size_t)k;
        }
    }
    out[o] = 0;
    *outlen = o;
    if (count) *count = bad;
    return out;
}
