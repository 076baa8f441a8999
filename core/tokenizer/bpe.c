/* BPE on one pre-tokenized piece: start from its bytes' tokens and merge the
 * adjacent pair of lowest rank (the leftmost of equals) until none merges,
 * as the library's Word::merge_all does: a heap of candidate pairs by
 * (rank, position), an entry skipped when its pair has changed since it was
 * pushed, so a piece of n bytes costs O(n log n) (a run of 100,000 spaces
 * is one piece). */
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

typedef struct cand {
    uint32_t rank, pos, id; /* the merge of symbol pos with its next, into id */
} cand;

static int before(const cand *a, const cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

typedef struct heap {
    cand *c;
    size_t n;
} heap;

static void heap_push(heap *h, cand x) {
    size_t i = h->n++;
    while (i > 0 && before(&x, &h->c[(i - 1) / 2])) {
        h->c[i] = h->c[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->c[i] = x;
}

static cand heap_pop(heap *h) {
    cand top = h->c[0], last = h->c[--h->n];
    size_t i = 0;
    for (;;) {
        size_t k = 2 * i + 1;
        if (k >= h->n) break;
        if (k + 1 < h->n && before(&h->c[k + 1], &h->c[k])) k++;
        if (!before(&h->c[k], &last)) break;
        h->c[i] = h->c[k];
        i = k;
    }
    if (h->n) h->c[i] = last;
    return top;
}

/* Pushes the merge of symbol p with its next one, when there is one. */
static void candidate(const amp_tokenizer *t, heap *h, const uint32_t *sym, const int32_t *next,
                      int32_t p) {
    uint32_t rank, id;
    if (p >= 0 && next[p] >= 0 && amp_pairmap_get(&t->merges, sym[p], sym[next[p]], &rank, &id))
        heap_push(h, (cand){rank, (uint32_t)p, id});
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
    if (n > INT32_MAX / 2) return -1;
    /* symbols as a linked list over the bytes; a merged-away one has alive 0 */
    uint32_t *sym = malloc(n * sizeof *sym);
    int32_t *prev = malloc(n * sizeof *prev), *next = malloc(n * sizeof *next);
    unsigned char *alive = malloc(n);
    heap h = {malloc(n * sizeof(cand)), 0}; /* at most one live entry per merge, n - 1 at first */
    size_t hcap = n;
    int rc = sym && prev && next && alive && h.c ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        sym[i] = t->byte_id[s[i]];
        prev[i] = (int32_t)i - 1;
        next[i] = i + 1 < n ? (int32_t)i + 1 : -1;
        alive[i] = 1;
    }
    for (size_t i = 0; rc == 0 && i + 1 < n; i++) candidate(t, &h, sym, next, (int32_t)i);
    while (rc == 0 && h.n) {
        cand c = heap_pop(&h);
        int32_t p = (int32_t)c.pos, q = next[p];
        uint32_t rank, id;
        if (!alive[p] || q < 0 || !amp_pairmap_get(&t->merges, sym[p], sym[q], &rank, &id) ||
            id != c.id)
            continue; /* the pair changed since it was pushed */
        sym[p] = c.id;
        alive[q] = 0;
        next[p] = next[q];
        if (next[q] >= 0) prev[next[q]] = p;
        if (h.n + 2 > hcap) { /* each merge pushes two and pops one */
            cand *g = realloc(h.c, 2 * hcap * sizeof *g);
            if (!g) {
                rc = -1;
                break;
            }
            h.c = g;
            hcap *= 2;
        }
        candidate(t, &h, sym, next, prev[p]);
        candidate(t, &h, sym, next, p);
    }
    for (int32_t i = 0; rc == 0 && i >= 0; i = next[i]) rc = amp_encode_push(o, sym[i]);
    free(sym);
    free(prev);
    free(next);
    free(alive);
    free(h.c);
    return rc;
}
