/* Hash maps for the tokenizer (strmap.h): linear probing, grown at half full. */
#include "tokenizer/strmap.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static uint64_t hash_u64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return x;
}

static int str_grow(amp_strmap *m) {
    amp_strmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 1024;
    g.key = calloc(g.cap, sizeof *g.key);
    g.klen = calloc(g.cap, sizeof *g.klen);
    g.val = calloc(g.cap, sizeof *g.val);
    if (!g.key || !g.klen || !g.val) {
        amp_strmap_free(&g);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->key[i]) continue;
        size_t j = hash_bytes(m->key[i], m->klen[i]) & (g.cap - 1);
        while (g.key[j]) j = (j + 1) & (g.cap - 1);
        g.key[j] = m->key[i];
        g.klen[j] = m->klen[i];
        g.val[j] = m->val[i];
    }
    g.n = m->n;
    free(m->key);
    free(m->klen);
    free(m->val);
    *m = g;
    return 0;
}

int amp_strmap_put(amp_strmap *m, const char *key, size_t len, uint32_t val) {
    if ((m->n + 1) * 2 > m->cap && str_grow(m) != 0) return -1;
    size_t j = hash_bytes(key, len) & (m->cap - 1);
    for (; m->key[j]; j = (j + 1) & (m->cap - 1))
        if (m->klen[j] == len && memcmp(m->key[j], key, len) == 0) return 1;
    char *k = malloc(len + 1);
    if (!k) return -1;
    memcpy(k, key, len);
    k[len] = 0;
    m->key[j] = k;
    m->klen[j] = len;
    m->val[j] = val;
    m->n++;
    return 0;
}

int amp_strmap_get(const amp_strmap *m, const char *key, size_t len, uint32_t *val) {
    if (!m->cap) return 0;
    for (size_t j = hash_bytes(key, len) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1))
        if (m->klen[j] == len && memcmp(m->key[j], key, len) == 0) {
            *val = m->val[j];
            return 1;
        }
    return 0;
}

void amp_strmap_free(amp_strmap *m) {
    for (size_t i = 0; m->key && i < m->cap; i++) free(m->key[i]);
    free(m->key);
    free(m->klen);
    free(m->val);
    memset(m, 0, sizeof *m);
}

static int pair_grow(amp_pairmap *m) {
    amp_pairmap g = {0};
    g.cap = m->cap ? m->cap * 2 : 1024;
    g.key = calloc(g.cap, sizeof *g.key);
    g.rank = calloc(g.cap, sizeof *g.rank);
    g.id = calloc(g.cap, sizeof *g.id);
    if (!g.key || !g.rank || !g.id) {
        amp_pairmap_free(&g);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->key[i]) continue;
        size_t j = hash_u64(m->key[i]) & (g.cap - 1);
        while (g.key[j]) j = (j + 1) & (g.cap - 1);
        g.key[j] = m->key[i];
        g.rank[j] = m->rank[i];
        g.id[j] = m->id[i];
    }
    g.n = m->n;
    amp_pairmap_free(m);
    *m = g;
    return 0;
}

int amp_pairmap_put(amp_pairmap *m, uint32_t a, uint32_t b, uint32_t rank, uint32_t id) {
    if ((m->n + 1) * 2 > m->cap && pair_grow(m) != 0) return -1;
    uint64_t k = ((uint64_t)a << 32 | b) + 1;
    size_t j = hash_u64(k) & (m->cap - 1);
    for (; m->key[j]; j = (j + 1) & (m->cap - 1))
        if (m->key[j] == k) { /* the library's map keeps the last */
            m->rank[j] = rank;
            m->id[j] = id;
            return 1;
        }
    m->key[j] = k;
    m->rank[j] = rank;
    m->id[j] = id;
    m->n++;
    return 0;
}

int amp_pairmap_get(const amp_pairmap *m, uint32_t a, uint32_t b, uint32_t *rank, uint32_t *id) {
    if (!m->cap) return 0;
    uint64_t k = ((uint64_t)a << 32 | b) + 1;
    for (size_t j = hash_u64(k) & (m->cap - 1); m->key[j]; j = (j + 1) & (m->cap - 1))
        if (m->key[j] == k) {
            *rank = m->rank[j];
            *id = m->id[j];
            return 1;
        }
    return 0;
}

void amp_pairmap_free(amp_pairmap *m) {
    free(m->key);
    free(m->rank);
    free(m->id);
    memset(m, 0, sizeof *m);
}
