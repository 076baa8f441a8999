/* The pre-tokenizer: each step (a Split pattern, or ByteLevel with its
 * GPT-2 pattern and prefix space) cuts every piece the step before made;
 * the model then encodes the last pieces. Splits are "Isolated": a match
 * and the text between matches are pieces of their own. PCRE2 with UTF
 * and UCP gives \p{L}, \p{N}, \s and the look-ahead the patterns use. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "tokenizer/tokenizer_internal.h"

const char amp_gpt2_split_pattern[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

/* The library's patterns are Oniguruma's, whose \s is Unicode's White_Space;
 * PCRE2's (with UCP) also matches U+180E MONGOLIAN VOWEL SEPARATOR, a
 * format character since Unicode 6.3. So \s and \S are written out as
 * White_Space, in a character class and out of one. */
#define WHITE_SPACE "\\t\\n\\x{0b}\\f\\r \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}" \
                    "\\x{202f}\\x{205f}\\x{3000}"

/* The pattern with \s and \S replaced (malloc'd), or NULL: out of memory,
 * or \S inside a class (*unsupported set), which no tokenizer uses. */
static char *onig_spaces(const char *p, int *unsupported) {
    size_t n = strlen(p), k = 0;
    char *out = malloc(n * (sizeof WHITE_SPACE + 4) + 1);
    if (!out) return NULL;
    int in_class = 0;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char e = p[++i];
            if (e == 's' || e == 'S') {
                if (in_class && e == 'S') {
                    *unsupported = 1;
                    free(out);
                    return NULL;
                }
                const char *w = in_class ? WHITE_SPACE : e == 's' ? "[" WHITE_SPACE "]"
                                                                 : "[^" WHITE_SPACE "]";
                memcpy(out + k, w, strlen(w));
                k += strlen(w);
            } else {
                out[k++] = c;
                out[k++] = e;
            }
            continue;
        }
        if (c == '[' && !in_class) {
            in_class = 1;
            out[k++] = c;
            if (i + 1 < n && p[i + 1] == '^') out[k++] = p[++i];
            if (i + 1 < n && p[i + 1] == ']') out[k++] = p[++i]; /* a literal ] first */
            continue;
        }
        if (c == ']' && in_class) in_class = 0;
        out[k++] = c;
    }
    out[k] = 0;
    return out;
}

void *amp_split_compile(const char *pattern, char *err, size_t errlen) {
    int code, unsupported = 0;
    PCRE2_SIZE at;
    char *pcre = onig_spaces(pattern, &unsupported);
    if (!pcre) {
        amp_set_err(err, errlen, "split pattern \"%s\": %s", pattern,
                    unsupported ? "\\S inside a character class is not supported" : "out of memory");
        return NULL;
    }
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pcre, PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    free(pcre);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        amp_set_err(err, errlen, "split pattern \"%s\": %s", pattern, (char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* faster when the JIT is there; same matches */
    return re;
}

void amp_split_free(void *code) { pcre2_code_free(code); }

typedef struct walk {
    const amp_tokenizer *t;
    pcre2_match_data *md;
    amp_encode_out *o;
    const char *base;
    size_t total, reported;
    char *err;
    size_t errlen;
} walk;

static int step(walk *w, int k, const char *s, size_t n);

static int cut(walk *w, int k, const char *s, size_t n) {
    pcre2_code *re = w->t->steps[k].code;
    size_t prev = 0, from = 0;
    while (from < n) {
        int rc = pcre2_match(re, (PCRE2_SPTR)s, n, from, PCRE2_NO_UTF_CHECK, w->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            amp_set_err(w->err, w->errlen, "split pattern match failed: %s", (char *)msg);
            return -1;
        }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(w->md);
        size_t a = ov[0], b = ov[1];
        if (b == a) { /* an empty match makes no piece: go on one character later */
            from = a + 1;
            while (from < n && ((unsigned char)s[from] & 0xC0) == 0x80) from++;
            continue;
        }
        if (a > prev && step(w, k + 1, s + prev, a - prev) != 0) return -1;
        if (step(w, k + 1, s + a, b - a) != 0) return -1;
        prev = from = b;
        if (k == 0 && w->o->progress && (size_t)(s + b - w->base) >= w->reported + (1u << 20)) {
            w->reported = (size_t)(s + b - w->base);
            w->o->progress(w->o->ctx, w->reported, w->total);
        }
    }
    return prev < n ? step(w, k + 1, s + prev, n - prev) : 0;
}

static int step(walk *w, int k, const char *s, size_t n) {
    if (n == 0) return 0;
    if (k == w->t->nsteps) {
        if (amp_bpe_word(w->t, (const unsigned char *)s, n, w->o) == 0) return 0;
        amp_set_err(w->err, w->errlen, "out of memory");
        return -1;
    }
    const amp_pretok_step *st = &w->t->steps[k];
    if (st->add_prefix_space && s[0] != ' ') {
        char *p = malloc(n + 1);
        if (!p) {
            amp_set_err(w->err, w->errlen, "out of memory");
            return -1;
        }
        p[0] = ' ';
        memcpy(p + 1, s, n);
        int rc = st->code ? cut(w, k, p, n + 1) : step(w, k + 1, p, n + 1);
        free(p);
        return rc;
    }
    return st->code ? cut(w, k, s, n) : step(w, k + 1, s, n);
}

int amp_encode_plain(const amp_tokenizer *t, const char *s, size_t n, const char *base,
                     size_t total, amp_encode_out *o, char *err, size_t errlen) {
    walk w = {t, pcre2_match_data_create(2, NULL), o, base, total, (size_t)(s - base), err, errlen};
    if (!w.md) {
        amp_set_err(err, errlen, "out of memory");
        return -1;
    }
    int rc = step(&w, 0, s, n);
    pcre2_match_data_free(w.md);
    return rc;
}
