/* libFuzzer target: the IDX dataset reader (core/data/data.c), through its gzip
 * layer and without it.
 *
 * Input: flags (1 byte), L (2 bytes, little-endian), L bytes of the labels
 * file, then the images file. Flags bit 0 / bit 1: gzip the images / labels
 * before writing them, so mutations of the raw IDX bytes also travel through
 * zlib's inflate; without the bit the bytes are written as they are (and
 * zlib sees gzip only when they start with its magic, as with a damaged
 * .gz). Bits 2-3: the example limit (0 = all, else 1, 2 or 3). Both files
 * are memfds opened by path, so the real amp_dataset_load_idx runs. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "data/data.h"

typedef struct memfile {
    int fd;
    char path[64];
} memfile;

static void memfile_init(memfile *m, const char *name)
{
    m->fd = memfd_create(name, 0);
    if (m->fd < 0)
        abort();
    snprintf(m->path, sizeof m->path, "/proc/self/fd/%d", m->fd);
}

static void memfile_put(memfile *m, const uint8_t *data, size_t size)
{
    if (ftruncate(m->fd, 0) != 0 || (size && pwrite(m->fd, data, size, 0) != (ssize_t)size))
        abort();
}

/* A gzip member of data (deflate with the gzip wrapper: windowBits 15 + 16). */
static void memfile_put_gzip(memfile *m, const uint8_t *data, size_t size)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    uLong cap = deflateBound(&z, (uLong)size);
    uint8_t *out = malloc(cap);
    if (!out)
        abort();
    z.next_in = (Bytef *)(uintptr_t)data; /* zlib does not write through next_in */
    z.avail_in = (uInt)size;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    memfile_put(m, out, z.total_out);
    deflateEnd(&z);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static memfile images, labels;
    if (!images.path[0]) {
        memfile_init(&images, "images-idx3-ubyte");
        memfile_init(&labels, "labels-idx1-ubyte");
    }
    if (size < 3)
        return 0;
    unsigned flags = data[0];
    size_t llen = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3;
    size -= 3;
    if (llen > size)
        llen = size;
    if (flags & 2)
        memfile_put_gzip(&labels, data, llen);
    else
        memfile_put(&labels, data, llen);
    if (flags & 1)
        memfile_put_gzip(&images, data + llen, size - llen);
    else
        memfile_put(&images, data + llen, size - llen);

    amp_dataset d;
    char err[1024] = "";
    int64_t limit = (flags >> 2) & 3;
    if (amp_dataset_load_idx(&d, images.path, labels.path, limit, err, sizeof err) != 0) {
        if (!err[0] || d.x || d.y || d.n)
            abort(); /* a failure says why and leaves nothing allocated */
        return 0;
    }
    /* A loaded dataset must be what the header promised, every label in range. */
    if (d.n <= 0 || (limit && d.n > limit) || d.features != d.rows * d.cols || d.classes != 10)
        abort();
    for (int64_t i = 0; i < d.n; i++)
        if (d.y[i] < 0 || d.y[i] >= d.classes)
            abort();
    float sum = 0;
    for (int64_t i = 0; i < d.n * d.features; i++)
        sum += d.x[i];
    if (!(sum >= 0))
        abort();
    amp_dataset_free(&d);
    return 0;
}
