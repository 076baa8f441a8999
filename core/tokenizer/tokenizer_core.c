/* Building a tokenizer: the vocabulary, the merges by rank, and the checks
 * that make it byte-level (every byte has a token). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "tokenizer/tokenizer_internal.h"

amp_tokenizer *amp_tokenizer_new(void) { return calloc(1, sizeof(amp_tokenizer)); }

int amp_tokenizer_add_vocab(amp_tokenizer *t, const char *text, size_t len, uint32_t id) {
    if (id >= t->nids) {
        size_t c = t->nids ? t->nids : 1024;
        while (c <= id) c *= 2;
        char **p = realloc(t->id_text, c * sizeof *p);
        if (!p) return -1;
        memset(p + t->nids, 0, (c - t->nids) * sizeof *p);
        t->id_text = p;
        t->nids = c;
    }
    if (!t->id_text[id]) {
        t->id_text[id] = strndup(text, len);
        if (!t->id_text[id]) return -1;
    }
    return amp_strmap_put(&t->vocab, text, len, id) < 0 ? -1 : 0;
}

int amp_tokenizer_add_merge(amp_tokenizer *t, const char *name, const char *a, size_t alen,
                            const char *b, size_t blen, uint32_t rank, char *err, size_t errlen) {
    uint32_t ia, ib, im;
    if (!amp_strmap_get(&t->vocab, a, alen, &ia) || !amp_strmap_get(&t->vocab, b, blen, &ib)) {
        amp_set_err(err, errlen, "%s: merge %u (\"%.*s\" \"%.*s\"): a part is not in the "
                    "vocabulary", name, rank, (int)alen, a, (int)blen, b);
        return -1;
    }
    char *joined = malloc(alen + blen);
    if (!joined) {
        amp_set_err(err, errlen, "%s: out of memory", name);
        return -1;
    }
    memcpy(joined, a, alen);
    memcpy(joined + alen, b, blen);
    int found = amp_strmap_get(&t->vocab, joined, alen + blen, &im);
    free(joined);
    if (!found) {
        amp_set_err(err, errlen, "%s: merge %u (\"%.*s\" \"%.*s\"): the merged token is not in the "
                    "vocabulary", name, rank, (int)alen, a, (int)blen, b);
        return -1;
    }
    if (amp_pairmap_put(&t->merges, ia, ib, rank, im) < 0) {
        amp_set_err(err, errlen, "%s: out of memory", name);
        return -1;
    }
    return 0;
}

int amp_tokenizer_finish(amp_tokenizer *t, const char *name, char *err, size_t errlen) {
    for (unsigned b = 0; b < 256; b++) {
        unsigned char byte = (unsigned char)b;
        char s[2];
        size_t n = amp_byte_level(&byte, 1, s);
        if (!amp_strmap_get(&t->vocab, s, n, &t->byte_id[b])) {
            amp_set_err(err, errlen, "%s: the vocabulary has no token for byte 0x%02X (\"%.*s\"): "
                        "a byte-level BPE vocabulary holds all 256", name, b, (int)n, s);
            return -1;
        }
    }
    return 0;
}

int64_t amp_tokenizer_vocab_size(const amp_tokenizer *t) {
    int64_t top = 0;
    for (size_t i = 0; i < t->nids; i++)
        if (t->id_text[i]) top = (int64_t)i + 1;
    for (size_t i = 0; i < t->nadded; i++)
        if ((int64_t)t->added[i].id + 1 > top) top = (int64_t)t->added[i].id + 1;
    return top;
}

void amp_tokenizer_free(amp_tokenizer *t) {
    if (!t) return;
    amp_strmap_free(&t->vocab);
    amp_pairmap_free(&t->merges);
    for (size_t i = 0; i < t->nids; i++) free(t->id_text[i]);
    free(t->id_text);
    for (int i = 0; i < t->nsteps; i++)
        if (t->steps[i].code) amp_split_free(t->steps[i].code);
    for (size_t i = 0; i < t->nadded; i++) free(t->added[i].content);
    free(t->added);
    free(t);
}
