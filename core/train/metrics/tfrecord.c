#include "tfrecord.h"

#include <stdlib.h>
#include <string.h>

void amp_bytes_put(amp_bytes *b, const void *data, size_t n) {
    if (b->oom || n == 0) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n) cap *= 2;
        uint8_t *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

void amp_bytes_free(amp_bytes *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* Bit by bit: the records are small (a step's scalars), so a table buys
 * nothing worth its size. */
uint32_t amp_crc32c(const void *data, size_t n) {
    const uint8_t *p = data;
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
    }
    return c ^ 0xffffffffu;
}

uint32_t amp_tfrecord_mask(uint32_t crc) {
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

static void put_le(amp_bytes *out, uint64_t v, int nbytes) {
    uint8_t b[8];
    for (int i = 0; i < nbytes; i++) b[i] = (uint8_t)(v >> (8 * i));
    amp_bytes_put(out, b, (size_t)nbytes);
}

void amp_tfrecord_append(amp_bytes *out, const void *data, size_t n) {
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    amp_bytes_put(out, len, 8);
    put_le(out, amp_tfrecord_mask(amp_crc32c(len, 8)), 4);
    amp_bytes_put(out, data, n);
    put_le(out, amp_tfrecord_mask(amp_crc32c(data, n)), 4);
}
