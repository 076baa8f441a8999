/* Open-addressing hash maps for the tokenizer: token text -> id, and a merge
 * pair of ids -> its rank and merged id. */
#ifndef AMP_TOKENIZER_STRMAP_H
#define AMP_TOKENIZER_STRMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct amp_strmap {
    char **key;
    size_t *klen;
    uint32_t *val;
    size_t cap, n; /* cap a power of two */
} amp_strmap;

/* Inserts (a copy of) key; an existing key keeps its value and returns 1.
 * 0 inserted, -1 out of memory. */
int amp_strmap_put(amp_strmap *m, const char *key, size_t len, uint32_t val);
/* 1 and *val when found, else 0. */
int amp_strmap_get(const amp_strmap *m, const char *key, size_t len, uint32_t *val);
void amp_strmap_free(amp_strmap *m);

typedef struct amp_pairmap {
    uint64_t *key; /* (a << 32 | b) + 1; 0 is empty */
    uint32_t *rank, *id;
    size_t cap, n;
} amp_pairmap;

/* Like amp_strmap_put, but an existing pair takes the new rank and id (1),
 * as a later duplicate line does in the library. */
int amp_pairmap_put(amp_pairmap *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t id);
int amp_pairmap_get(const amp_pairmap *m, uint32_t a, uint32_t b, uint32_t *rank, uint32_t *id);
void amp_pairmap_free(amp_pairmap *m);

#endif
