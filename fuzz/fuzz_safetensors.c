/* libFuzzer target: the safetensors reader (core/io/safetensors.c).
 *
 * Input: a whole .safetensors file. It is written to a memfd and opened by
 * its /proc/self/fd path, so the real amp_safetensors_open runs, file size
 * checks included. Every tensor is then read back as float32 (the path
 * `[model] init` takes), with its own shape and with a wrong one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz.safetensors", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
        abort();

    char err[1024] = "";
    amp_safetensors *st = NULL;
    if (amp_safetensors_open(&st, path, err, sizeof err) != 0) {
        if (st || !err[0])
            abort();
        return 0;
    }
    int n = amp_safetensors_count(st);
    for (int i = 0; i < n; i++) {
        const char *name = amp_safetensors_name(st, i), *dtype = NULL;
        const int64_t *shape = NULL;
        int ndim = -1;
        if (!name || amp_safetensors_info(st, i, &dtype, &ndim, &shape) != 0 || !dtype || ndim < 0)
            abort();
        /* The reader checked product(shape) * dtype size against the file,
         * so this cannot overflow or exceed the input by more than 8x (F4). */
        size_t numel = 1;
        for (int d = 0; d < ndim; d++)
            numel *= (size_t)shape[d];
        float *dst = malloc(numel ? numel * sizeof(float) : 1);
        if (!dst)
            abort();
        err[0] = '\0';
        if (amp_safetensors_get_f32(st, name, ndim, shape, dst, err, sizeof err) != 0 && !err[0])
            abort();
        int64_t wrong[AMP_ST_MAX_RANK + 1];
        for (int d = 0; d < ndim; d++)
            wrong[d] = shape[d];
        wrong[ndim] = 1;
        if (amp_safetensors_get_f32(st, name, ndim + 1, wrong, dst, err, sizeof err) == 0)
            abort(); /* a rank mismatch must be refused */
        free(dst);
    }
    /* Lookups that miss: the "did you mean" path. */
    float one;
    int64_t shp[1] = {1};
    if (amp_safetensors_get_f32(st, "fc1.weight", 1, shp, &one, err, sizeof err) != 0 && !err[0])
        abort();
    if (amp_safetensors_get_f32(st, "", 1, shp, &one, err, sizeof err) != 0 && !err[0])
        abort();
    (void)amp_safetensors_meta(st, "format");
    (void)amp_safetensors_name(st, n);
    amp_safetensors_close(st);
    return 0;
}
