/* TFRecord framing, as TensorBoard's event files use it: each record is a
 * little-endian uint64 length, the masked CRC-32C of those 8 bytes, the
 * data, and the masked CRC-32C of the data. mask(c) = ((c >> 15) |
 * (c << 17)) + 0xa282ead8, in 32 bits. Records are built in memory (an
 * amp_bytes buffer) so that a file gets whole records or none. */
#ifndef AMP_METRICS_TFRECORD_H
#define AMP_METRICS_TFRECORD_H

#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer; zero-initialise, free with amp_bytes_free. A
 * failed allocation sets `oom` and later appends do nothing. */
typedef struct amp_bytes {
    uint8_t *p;
    size_t n, cap;
    int oom;
} amp_bytes;

void amp_bytes_put(amp_bytes *b, const void *data, size_t n);
void amp_bytes_free(amp_bytes *b);

/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78) of data[0..n). */
uint32_t amp_crc32c(const void *data, size_t n);
/* The masked CRC TFRecord stores. */
uint32_t amp_tfrecord_mask(uint32_t crc);
/* Appends data[0..n) to out as one framed record. */
void amp_tfrecord_append(amp_bytes *out, const void *data, size_t n);

#endif
