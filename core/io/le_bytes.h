/* Little-endian integers in byte buffers: the one encoding of every binary
 * file amptrain writes (checkpoints and their sections), whatever the host's
 * byte order. */
#ifndef AMP_LE_BYTES_H
#define AMP_LE_BYTES_H

#include <stdint.h>

/* Writes the low `bytes` bytes of v at p; returns the byte after them. */
static inline uint8_t *amp_le_put(uint8_t *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (uint8_t)(v >> (8 * i));
    return p + bytes;
}

static inline uint64_t amp_le_get(const uint8_t *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Reads `bytes` bytes at *p and moves *p past them. */
static inline uint64_t amp_le_take(const uint8_t **p, int bytes) {
    uint64_t v = amp_le_get(*p, bytes);
    *p += bytes;
    return v;
}

static inline uint32_t amp_le_u32(const uint8_t *p) { return (uint32_t)amp_le_get(p, 4); }
static inline uint64_t amp_le_u64(const uint8_t *p) { return amp_le_get(p, 8); }
static inline void amp_le_put_u32(uint8_t *p, uint32_t v) { amp_le_put(p, v, 4); }
static inline void amp_le_put_u64(uint8_t *p, uint64_t v) { amp_le_put(p, v, 8); }

#endif
