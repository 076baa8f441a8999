/* BPE on one pre-tokenized piece: start from its bytes' tokens and merge the
 * adjacent pair of lowest rank (the leftmost of equals) until none merges,
 * the order of the library's Word::merge_all. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer_internal.h"

int amp_encode_push(amp_encode_out *o, uint32_t id) {
    if (o->n == o->cap) {
        size_t c = o->cap ? o->cap * 2 : 1024;
        uint32_t *p = realloc(o->ids, c * sizeof *p);
        if (!p) return -1;
        o->ids = p;
        o->cap = c;
    }
    o->ids[o->n++] = id;
    return 0;
}

int amp_bpe_word(const amp_tokenizer *t, const unsigned char *s, size_t n, amp_encode_out *o) {
    if (n == 0) return 0;
    if (t->ignore_merges) { /* a piece in the vocabulary is one token */
        char stackbuf[512], *bl = 2 * n <= sizeof stackbuf ? stackbuf : malloc(2 * n);
        if (!bl) return -1;
        size_t bn = amp_byte_level(s, n, bl);
        uint32_t id;
        int hit = amp_strmap_get(&t->vocab, bl, bn, &id);
        if (bl != stackbuf) free(bl);
        if (hit) return amp_encode_push(o, id);
    }
    uint32_t stack[256], *sym = n <= 256 ? stack : malloc(n * sizeof *sym);
    if (!sym) return -1;
    size_t m = n;
    for (size_t i = 0; i < n; i++) sym[i] = t->byte_id[s[i]];
    for (;;) {
        uint32_t best = UINT32_MAX, bestid = 0, rank, id;
        size_t at = 0;
        for (size_t i = 0; i + 1 < m; i++)
            if (amp_pairmap_get(&t->merges, sym[i], sym[i + 1], &rank, &id) && rank < best) {
                best = rank;
                bestid = id;
                at = i;
            }
        if (best == UINT32_MAX) break;
        sym[at] = bestid;
        memmove(sym + at + 1, sym + at + 2, (m - at - 2) * sizeof *sym);
        m--;
    }
    int rc = 0;
    for (size_t i = 0; i < m && rc == 0; i++) rc = amp_encode_push(o, sym[i]);
    if (sym != stack) free(sym);
    return rc;
}
