/* SHA-256 (FIPS 180-4), for checking shipped data files. */
#ifndef AMP_SHA256_H
#define AMP_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct amp_sha256 {
    uint32_t h[8];
    uint64_t len;       /* bytes hashed so far */
    uint8_t buf[64];
    size_t fill;
} amp_sha256;

void amp_sha256_init(amp_sha256 *s);
void amp_sha256_update(amp_sha256 *s, const void *data, size_t len);
/* hex[65]: the digest as 64 lowercase hex digits and a NUL. */
void amp_sha256_final_hex(amp_sha256 *s, char hex[65]);

#endif
